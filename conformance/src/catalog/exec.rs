//! Owns the exec checks run through the fake `ssh`: exact bytes back per stream (plain or
//! base64), empty streams, the guest's exit code, human-mode passthrough, guest argv quoting,
//! and `--json` after exec's VM name belonging to the guest.

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, with_running_work, Rng};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Rule, ScriptBytes};
use crate::finding::Level::Must;
use crate::oracle::decode_stream;
use crate::run::{Case, Inv};
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "EXEC.cli-ignores-agent-access",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "MCP permissions must use agent_access; direct stoat exec and stoat cp commands do not enforce it.",
        title: "`exec work true` on a running VM whose stored allow_exec = false (agent_access manage, below exec) still runs the command: ok, exit_code 0, never access_denied",
        tags: &["exec", "access"],
        editions: Editions::V3 { change: "contract 2 has allow_exec but no agent_access" },
        ..scenario(cli_ignores_agent_access)
    },
    CheckDef {
        id: "EXEC.utf8-plain",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exec-bytes",
        quote: "An absent *_encoding means UTF-8.",
        title: "valid UTF-8 guest output comes back as plain stdout/stderr, byte-exact, without *_base64",
        tags: &["exec"],
        ..scenario(utf8_plain)
    },
    CheckDef {
        id: "EXEC.base64-stdout",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exec-bytes",
        quote: "Stoat therefore uses base64 for a stream that is not valid UTF-8",
        title: "non-UTF-8 stdout comes back as stdout_base64 decoding to the exact bytes; stderr stays plain",
        tags: &["exec", "bytes"],
        ..scenario(base64_stdout)
    },
    CheckDef {
        id: "EXEC.base64-stderr",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exec-bytes",
        quote: "Encoding is reported per stream, because stdout and stderr can independently be invalid.",
        title: "non-UTF-8 stderr comes back as stderr_base64 decoding to the exact bytes; stdout stays plain",
        tags: &["exec", "bytes"],
        ..scenario(base64_stderr)
    },
    CheckDef {
        id: "EXEC.base64-both",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exec-bytes",
        quote: "Encoding is reported per stream, because stdout and stderr can independently be invalid.",
        title: "both streams non-UTF-8: both come back base64, byte-exact",
        tags: &["exec", "bytes"],
        ..scenario(base64_both)
    },
    CheckDef {
        id: "EXEC.empty-streams",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "exec {\"vm\":\"work\",\"exit_code\":1,\"stdout\":\"...\",\"stderr\":\"...\"}",
        title: "a guest command that prints nothing answers stdout \"\" and stderr \"\"",
        tags: &["exec"],
        ..scenario(empty_streams)
    },
    CheckDef {
        id: "EXEC.exit-code",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exit-codes",
        quote: "The guest's status is in data.exit_code.",
        title: "a guest exiting 3 answers ok:true with data.exit_code 3 (and stoat exits 0)",
        tags: &["exec", "exit"],
        ..scenario(exit_code)
    },
    CheckDef {
        id: "EXEC.human-passthrough",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exit-codes",
        quote: "Without --json, exec passes the guest's status through like ssh does",
        title: "without --json, exec exits with the guest's status and passes its bytes through raw",
        tags: &["exec", "exit"],
        ..scenario(human_passthrough)
    },
    CheckDef {
        id: "EXEC.guest-argv-untouched",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#flag-position",
        quote: "everything there belongs to the guest",
        title: "guest arguments with spaces, quotes, $, globs, ; and empty strings reach the guest shell intact",
        tags: &["exec", "argv"],
        ..scenario(argv_untouched)
    },
    CheckDef {
        id: "EXEC.generated-bytes",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#exec-bytes",
        quote: "Stoat therefore uses base64 for a stream that is not valid UTF-8",
        title: "seeded random byte strings on both streams come back exactly",
        tags: &["exec", "bytes", "generated"],
        ..scenario(generated_bytes)
    },
    CheckDef {
        id: "ARGV.json-after-exec-name",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#flag-position",
        quote: "stoat exec work ls --json # the guest's, untouched",
        title: "--json after exec's VM name reaches the guest and does not switch stoat to JSON",
        tags: &["argv", "exec"],
        ..scenario(json_after_name)
    },
    CheckDef {
        id: "ARGV.json-before-exec",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#flag-position",
        quote: "It is recognized anywhere EXCEPT after exec's VM name",
        title: "`-q --json exec work cmd --json`: the first --json is stoat's, the last the guest's",
        tags: &["argv", "exec"],
        ..scenario(json_before_exec)
    },
    CheckDef {
        id: "ARGV.json-between-exec-and-name",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#flag-position",
        quote: "stoat exec --json work ls -la # stoat's",
        title: "`exec --json work cmd` is JSON mode",
        tags: &["argv", "exec"],
        ..scenario(json_between)
    },
];

/// Scripts the fake ssh to answer with these bytes and status.
fn script_ssh(
    sandbox: &Sandbox,
    stdout: &[u8],
    stderr: &[u8],
    exit: i32,
) -> Result<(), HarnessError> {
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            stdout: Some(ScriptBytes::bytes(stdout)),
            stderr: Some(ScriptBytes::bytes(stderr)),
            exit: Some(exit),
            ..Default::default()
        },
    ))
}

fn run_locally(sandbox: &Sandbox) -> Result<(), HarnessError> {
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            run_locally: true,
            ..Default::default()
        },
    ))
}

/// Runs `exec work guest` with the scripted bytes and checks both streams decode exactly.
fn round_trip(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    stdout: &[u8],
    stderr: &[u8],
) -> Result<Option<Value>, HarnessError> {
    script_ssh(sandbox, stdout, stderr, 0)?;
    let ran = case.json(sandbox, &["exec", "work", "guest-command"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(None);
    };
    for (name, expected) in [("stdout", stdout), ("stderr", stderr)] {
        match decode_stream(&data, name) {
            Ok(bytes) if bytes == expected => {}
            Ok(bytes) => case.fail(
                format!("/data/{name}"),
                format!(
                    "{name} decodes to {:02x?}, the guest wrote {:02x?}",
                    bytes, expected
                ),
            ),
            Err(why) => case.fail(format!("/data/{name}"), why),
        }
    }
    Ok(Some(data))
}

fn utf8_plain(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    if let Some(data) = round_trip(
        case,
        &sandbox,
        "hello <&> \"world\"\n".as_bytes(),
        "warn: ünïcode ✓\n".as_bytes(),
    )? {
        for key in [
            "stdout_base64",
            "stderr_base64",
            "stdout_encoding",
            "stderr_encoding",
        ] {
            case.ensure(
                data.get(key).is_none(),
                &format!("/data/{key}"),
                format!("{key} present for valid UTF-8"),
            );
        }
    }
    Ok(())
}

const INVALID: &[u8] = &[0xff, 0xfe, 0x00, 0x01, b'a', 0xc3, b'\n'];

fn base64_stdout(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    if let Some(data) = round_trip(case, &sandbox, INVALID, b"plain\n")? {
        case.ensure(
            data.get("stdout").is_none(),
            "/data/stdout",
            "stdout must be absent when stdout_base64 is present",
        );
        expect_eq(case, &data, "/stdout_encoding", &json!("base64"));
        expect_eq(case, &data, "/stderr", &json!("plain\n"));
    }
    Ok(())
}

fn base64_stderr(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    if let Some(data) = round_trip(case, &sandbox, b"plain\n", INVALID)? {
        case.ensure(
            data.get("stderr").is_none(),
            "/data/stderr",
            "stderr must be absent when stderr_base64 is present",
        );
        expect_eq(case, &data, "/stderr_encoding", &json!("base64"));
        expect_eq(case, &data, "/stdout", &json!("plain\n"));
    }
    Ok(())
}

fn base64_both(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    if let Some(data) = round_trip(case, &sandbox, INVALID, &[0x80, 0x81])? {
        expect_eq(case, &data, "/stdout_encoding", &json!("base64"));
        expect_eq(case, &data, "/stderr_encoding", &json!("base64"));
    }
    Ok(())
}

fn empty_streams(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    if let Some(data) = round_trip(case, &sandbox, b"", b"")? {
        expect_eq(case, &data, "/stdout", &json!(""));
        expect_eq(case, &data, "/stderr", &json!(""));
    }
    Ok(())
}

fn exit_code(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    script_ssh(&sandbox, b"", b"failed\n", 3)?;
    let ran = case.json(&sandbox, &["exec", "work", "false"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/exit_code", &json!(3));
        expect_eq(case, &data, "/vm", &json!("work"));
    }
    case.expect_exit(&ran, 0);
    Ok(())
}

fn cli_ignores_agent_access(case: &mut Case<'_>) -> Result<(), HarnessError> {
    // A stored allow_exec = false maps to manage, below exec: MCP would refuse exec.
    let mut sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").allow_exec(Some(false)))?;
    sandbox.start_running("work")?;
    script_ssh(&sandbox, b"ran\n", b"", 0)?;
    let ran = case.json(&sandbox, &["exec", "work", "true"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/exit_code", &json!(0));
    }
    Ok(())
}

fn human_passthrough(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    script_ssh(&sandbox, INVALID, b"", 3)?;
    let ran = case.run(&sandbox, Inv::human(&["exec", "work", "false"]))?;
    case.expect_exit(&ran, 3);
    case.ensure(
        ran.capture.stdout.0 == INVALID,
        "stdout",
        format!(
            "stdout must be the guest's raw bytes {:02x?}, got {:02x?}",
            INVALID, ran.capture.stdout.0
        ),
    );
    Ok(())
}

/// Guest argv and what `printf '[%s]\n' ARGS...` prints for it.
const TRICKY: &[&str] = &[
    "a b",
    "$HOME",
    "it's",
    "",
    "\"q\"",
    "*",
    ";echo x",
    "--json",
    "-la",
    "back\\slash",
];

fn tricky_expected() -> String {
    TRICKY.iter().map(|a| format!("[{a}]\n")).collect()
}

fn argv_untouched(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    run_locally(&sandbox)?;
    let mut args = vec!["exec", "work", "printf", "[%s]\\n"];
    args.extend(TRICKY);
    let ran = case.json(&sandbox, &args)?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/stdout", &json!(tricky_expected()));
        expect_eq(case, &data, "/exit_code", &json!(0));
    }
    Ok(())
}

fn generated_bytes(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let mut rng = Rng::new(case.seed(), 0x6279_7465);
    for _ in 0..4 {
        let stdout = rng.bytes(48);
        let stderr = rng.bytes(48);
        round_trip(case, &sandbox, &stdout, &stderr)?;
    }
    Ok(())
}

fn json_after_name(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    run_locally(&sandbox)?;
    let human = case.run(
        &sandbox,
        Inv::human(&["exec", "work", "printf", "[%s]", "--json"]),
    )?;
    case.ensure(
        human.capture.stdout.0 == b"[--json]",
        "stdout",
        format!(
            "`exec work printf [%s] --json` must print the guest's [--json] raw, got {:?}",
            String::from_utf8_lossy(&human.capture.stdout.0)
        ),
    );
    case.expect_exit(&human, 0);
    let json_mode = case.json(&sandbox, &["exec", "work", "printf", "[%s]", "--json"])?;
    if let Some(data) = case.expect_ok(&json_mode).cloned() {
        expect_eq(case, &data, "/stdout", &json!("[--json]"));
    }
    Ok(())
}

fn json_before_exec(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    run_locally(&sandbox)?;
    let ran = case.run(
        &sandbox,
        Inv::json_raw(&["-q", "--json", "exec", "work", "printf", "[%s]", "--json"]),
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/stdout", &json!("[--json]"));
    }
    Ok(())
}

fn json_between(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    run_locally(&sandbox)?;
    let ran = case.run(
        &sandbox,
        Inv::json_raw(&["exec", "--json", "work", "printf", "ok"]),
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/stdout", &json!("ok"));
    }
    Ok(())
}
