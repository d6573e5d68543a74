//! Owns the mutant kit: `stoat-conformance mutate --op OP -- <sut...>` wraps ANY SUT and
//! breaks exactly one rule of the contract in what it answers (or in the argv it passes on).
//! The self-test proves every harmful operator is caught by the checks it names, and that
//! the benign ones (unknown event type, extra field, stderr noise) are NOT flagged.

use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde_json::{json, Value};

/// One mutation operator.
#[derive(Clone, Copy, Debug)]
pub struct Operator {
    pub name: &'static str,
    pub breaks: &'static str,
    /// Checks that must flag it; empty for a benign operator that must pass clean.
    pub caught_by: &'static [&'static str],
}

/// Every operator, harmful ones first.
pub const OPERATORS: &[Operator] = &[
    Operator {
        name: "two-results",
        breaks: "a second result line",
        caught_by: &["ENV.one-result"],
    },
    Operator {
        name: "result-not-last",
        breaks: "an event after the result",
        caught_by: &["ENV.result-last"],
    },
    Operator {
        name: "no-result",
        breaks: "the result line dropped (exit 1)",
        caught_by: &["ENV.result-present"],
    },
    Operator {
        name: "no-result-exit-0",
        breaks: "the result line dropped, exit 0",
        caught_by: &["EXIT.crash-nonzero", "ENV.result-present"],
    },
    Operator {
        name: "prose-line",
        breaks: "a line of prose before the result",
        caught_by: &["ENV.json-lines"],
    },
    Operator {
        name: "null-list",
        breaks: "an empty list emitted as null",
        caught_by: &["LIST.never-null"],
    },
    Operator {
        name: "ok-on-event",
        breaks: "an event carrying ok",
        caught_by: &["ENV.ok-only-on-result"],
    },
    Operator {
        name: "ok-missing",
        breaks: "the result without ok",
        caught_by: &["ENV.ok-bool"],
    },
    Operator {
        name: "data-and-error",
        breaks: "data and error together",
        caught_by: &["ENV.data-xor-error"],
    },
    Operator {
        name: "exit-3",
        breaks: "exit 3 instead of 1",
        caught_by: &["EXIT.status-range"],
    },
    Operator {
        name: "usage-exit-1",
        breaks: "a usage error exiting 1",
        caught_by: &["EXIT.usage-is-2"],
    },
    Operator {
        name: "usage-exit-0",
        breaks: "a usage error exiting 0",
        caught_by: &["EXIT.usage-is-2", "EXIT.error-nonzero"],
    },
    Operator {
        name: "error-exit-0",
        breaks: "a failed result exiting 0",
        caught_by: &["EXIT.error-nonzero"],
    },
    Operator {
        name: "ok-exit-1",
        breaks: "an ok result exiting 1",
        caught_by: &["EXIT.ok-is-0"],
    },
    Operator {
        name: "ansi-raw",
        breaks: "ANSI colour around a line",
        caught_by: &["ENV.no-ansi", "ENV.json-lines"],
    },
    Operator {
        name: "ansi-in-string",
        breaks: "ANSI colour inside a string value",
        caught_by: &["ENV.no-ansi"],
    },
    Operator {
        name: "leak-data-root",
        breaks: "a path under STOAT_HOME in data",
        caught_by: &["LEAK.host-path"],
    },
    Operator {
        name: "leak-password",
        breaks: "the console password in data",
        caught_by: &["LEAK.console-password"],
    },
    Operator {
        name: "exec-exit-passthrough",
        breaks: "exec --json exiting with the guest's status",
        caught_by: &["EXIT.exec-ran-is-0"],
    },
    Operator {
        name: "exec-lossy",
        breaks: "non-UTF-8 exec output emitted lossily as plain text",
        caught_by: &["EXEC.base64-stdout", "EXEC.base64-stderr"],
    },
    Operator {
        name: "exec-omit-empty",
        breaks: "empty exec streams omitted",
        caught_by: &["EXEC.empty-is-string", "EXEC.empty-streams"],
    },
    Operator {
        name: "exec-both-fields",
        breaks: "a plain field next to its base64 twin",
        caught_by: &["EXEC.stream-exclusive"],
    },
    Operator {
        name: "json-eaten-after-exec",
        breaks: "--json after exec's VM name taken as stoat's",
        caught_by: &["ARGV.json-after-exec-name", "ARGV.json-before-exec"],
    },
    Operator {
        name: "v-2",
        breaks: "v:2 on every line",
        caught_by: &["ENV.v-is-3"],
    },
    Operator {
        name: "wrong-cmd",
        breaks: "the result naming another cmd",
        caught_by: &["ENV.cmd-matches"],
    },
    Operator {
        name: "doctor-unhealthy-exit-1",
        breaks: "doctor exiting 1 when unhealthy",
        caught_by: &["EXIT.doctor-unhealthy-is-0"],
    },
    Operator {
        name: "read-stdin",
        breaks: "stdin consumed (a prompt)",
        caught_by: &["RM.confirmation-required-no-stdin"],
    },
    Operator {
        name: "base64-for-utf8",
        breaks: "base64 for valid UTF-8 output (SHOULD)",
        caught_by: &["EXEC.base64-only-non-utf8"],
    },
    Operator {
        name: "progress-repeat",
        breaks: "a progress event repeated with the same percentage",
        caught_by: &["PULL.progress-monotonic"],
    },
    Operator {
        name: "event-without-data",
        breaks: "a progress/stage/log event without its data object",
        caught_by: &["ENV.event-data"],
    },
    Operator {
        name: "write-home",
        breaks: "a file written under HOME although STOAT_HOME is set",
        caught_by: &["SANDBOX.no-writes-outside"],
    },
    Operator {
        name: "leak-password-base64",
        breaks: "the console password base64-encoded in a VM object",
        caught_by: &["LEAK.console-password"],
    },
    Operator {
        name: "leak-password-escaped",
        breaks: "the console password JSON-escaped (\\uXXXX) in a VM object",
        caught_by: &["LEAK.console-password"],
    },
    Operator {
        name: "leak-password-url",
        breaks: "the console password URL-encoded in a VM object",
        caught_by: &["LEAK.console-password"],
    },
    Operator {
        name: "leak-path-in-message",
        breaks: "the data root named in an error message",
        caught_by: &["LEAK.host-path-in-message"],
    },
    Operator {
        name: "update-unnamed",
        breaks: "update also changing cpus, a field that was not passed (and not reporting it)",
        caught_by: &["STATE.update-unnamed-unchanged"],
    },
    Operator {
        name: "restore-noop",
        breaks: "snapshot --restore answering ok and restoring nothing",
        caught_by: &["STATE.snapshot-restore-restores"],
    },
    Operator {
        name: "stream-buffered",
        breaks: "events held back until the process exits",
        caught_by: &["STREAM.events-before-exit"],
    },
    Operator {
        name: "stdout-held-open",
        breaks: "a child left holding stdout open after the process exits",
        caught_by: &["STREAM.eof-at-exit"],
    },
    Operator {
        name: "progress-kib",
        breaks: "progress done/total in KiB instead of bytes",
        caught_by: &["PULL.progress-bytes"],
    },
    Operator {
        name: "waited-us",
        breaks: "wait's waited_ms in microseconds",
        caught_by: &["WAIT.waited-ms-wall"],
    },
    Operator {
        name: "clone-forwards-contradict",
        breaks: "clone storing the source's forwards while answering forwards_copied:false",
        caught_by: &["CLONE.forwards-agree"],
    },
    Operator {
        name: "ls-prefield-deny",
        breaks: "ls giving a VM that predates allow_exec allow_exec:false",
        caught_by: &["LS.allow-exec-prefield"],
    },
    Operator {
        name: "applied-null",
        breaks: "apply answering applied: null when nothing ran",
        caught_by: &["APPLY.nothing-to-run"],
    },
    Operator {
        name: "share-internal",
        breaks: "a missing share answered with internal instead of share_invalid",
        caught_by: &["ERRORS.share-invalid"],
    },
    Operator {
        name: "recipe-pin-short",
        breaks: "recipe add/lock/sync/update answering the 7-character commit instead of the full resolved one",
        caught_by: &[
            "RECIPE.remote-add-pins",
            "RECIPE.remote-lock-sync-keep",
            "RECIPE.remote-update-moves",
        ],
    },
    Operator {
        name: "recipe-update-stale",
        breaks: "recipe update that keeps every recipe at its old pin (runs a sync instead)",
        caught_by: &["RECIPE.remote-update-moves"],
    },
    Operator {
        name: "recipe-rm-noop",
        breaks: "recipe rm answering {name, scope} and removing nothing, even a recipe a VM lists",
        caught_by: &["RECIPE.remote-rm", "RECIPE.remote-rm-in-use"],
    },
    Operator {
        name: "recipe-list-no-pin",
        breaks: "recipe list rows of remote recipes without source, ref and commit",
        caught_by: &["RECIPE.remote-list-row", "RECIPE.remote-project-scope"],
    },
    Operator {
        name: "git-required-internal",
        breaks: "a missing git answered with internal instead of git_required",
        caught_by: &["RECIPE.git-required"],
    },
    Operator {
        name: "show-unknown-internal",
        breaks: "recipe show of an unknown recipe answered with internal",
        caught_by: &["RECIPE.show-unknown"],
    },
    Operator {
        name: "refresh-all-current",
        breaks: "recipe refresh calling every file current, a file the user changed included",
        caught_by: &["RECIPE.refresh-statuses"],
    },
    Operator {
        name: "search-drops-os",
        breaks: "recipe search answering every IndexEntry with os: []",
        caught_by: &["RECIPE.search-index"],
    },
    Operator {
        name: "monitor-rejected-internal",
        breaks: "qemu refusing a monitor command answered with internal instead of monitor_rejected",
        caught_by: &["ERRORS.monitor-rejected"],
    },
    Operator {
        name: "up-no-apply",
        breaks: "up that never applies the VM's recipes after boot (the reference's --no-apply added to every `up VM`)",
        caught_by: &["UP.applies-recipes"],
    },
    Operator {
        name: "recipe-new-internal",
        breaks: "recipe new validation answered with internal instead of invalid_spec",
        caught_by: &["ERRORS.recipe-new-invalid"],
    },
    Operator {
        name: "update-recipes-accepted",
        breaks: "update --recipes accepting a recipe that does not exist (stored, answered ok)",
        caught_by: &["ERRORS.update-recipes-unknown"],
    },
    Operator {
        name: "leak-password-logs",
        breaks: "the console password in a line of `logs` (after up of a cloud VM)",
        caught_by: &["LEAK.console-password"],
    },
    Operator {
        name: "monitor-unreachable-internal",
        breaks: "a qemu without a monitor socket answered with internal instead of monitor_unreachable",
        caught_by: &["ERRORS.monitor-unreachable"],
    },
    Operator {
        name: "wait-applied-as-reachable",
        breaks: "wait --until applied treated as reachable (answering until: reachable)",
        caught_by: &["WAIT.until-applied"],
    },
    Operator {
        name: "fanout-reversed",
        breaks: "a ProjectRun listing the declared VMs in reverse declaration order",
        caught_by: &["PROJECT.fanout-order-skipped", "PROJECT.fanout-commands"],
    },
    Operator {
        name: "fanout-prose",
        breaks: "an up/down/apply fan-out writing a human progress line before its ProjectRun (the defect the contract tolerates, which the design rule forbids)",
        caught_by: &["PROJECT.fanout-json-lines"],
    },
    Operator {
        name: "status-no-drift",
        breaks: "status reporting no drift although stoat.toml changed a field",
        caught_by: &["STATUS.drift"],
    },
    Operator {
        name: "init-relative-path",
        breaks: "init answering a relative path instead of the stoat.toml it wrote",
        caught_by: &["INIT.result"],
    },
    Operator {
        name: "ls-project-no-key",
        breaks: "ls rows of project VMs without their declaration key (key: \"\")",
        caught_by: &["PROJECT.ls-fields"],
    },
    Operator {
        name: "cli-enforces-access",
        breaks: "CLI exec refusing a VM whose agent_access is below exec with access_denied (only MCP enforces it)",
        caught_by: &["EXEC.cli-ignores-agent-access"],
    },
    Operator {
        name: "image-missing-not-found",
        breaks: "create of a catalog image not yet pulled answered not_found instead of image_not_downloaded",
        caught_by: &["CREATE.image-not-downloaded"],
    },
    Operator {
        name: "guest-show-other",
        breaks: "guest show answering a guest other than the one named",
        caught_by: &["GUEST.show"],
    },
    Operator {
        name: "mcp-denied-internal",
        breaks: "an MCP call refused for agent_access answered with internal instead of access_denied",
        caught_by: &["MCP.access-denied"],
    },
    Operator {
        name: "mcp-leak-password",
        breaks: "the console password inside every MCP result",
        caught_by: &["MCP.call-per-class", "MCP.access-denied"],
    },
    Operator {
        name: "mcp-doctor-contract-2",
        breaks: "mcp doctor naming contract 2 while version names 3",
        caught_by: &["MCP.doctor"],
    },
    Operator {
        name: "mcp-install-noop",
        breaks: "mcp install answering ok and writing no entry",
        caught_by: &["MCP.install", "MCP.install-current"],
    },
    Operator {
        name: "mcp-doctor-stale",
        breaks: "mcp doctor calling every entry stale (current: false), the one this binary just wrote included",
        caught_by: &["MCP.install-current"],
    },
    Operator {
        name: "unknown-event",
        breaks: "nothing: an unknown event type must be tolerated",
        caught_by: &[],
    },
    Operator {
        name: "unknown-event-first",
        breaks: "nothing: an unknown event type may come anywhere before the result",
        caught_by: &[],
    },
    Operator {
        name: "unknown-event-interleaved",
        breaks: "nothing: an unknown event type before every event line (between progress, stage and log events) is allowed",
        caught_by: &[],
    },
    Operator {
        name: "extra-field-deep",
        breaks: "nothing: an extra member in every object at every depth is allowed",
        caught_by: &[],
    },
    Operator {
        name: "field-order",
        breaks: "nothing: a consumer may not rely on field order",
        caught_by: &[],
    },
    Operator {
        name: "json-escape-all",
        breaks: "nothing: every string character written as a \\uXXXX escape is valid JSON",
        caught_by: &[],
    },
    Operator {
        name: "extra-field",
        breaks: "nothing: additive fields are allowed",
        caught_by: &[],
    },
    Operator {
        name: "stderr-noise",
        breaks: "nothing: stderr is outside the contract",
        caught_by: &[],
    },
];

/// The scenarios whose invocations `op` acts on: what a mutant run must select so the
/// operator has something to break (the self-tests' model of each operator).
pub fn triggers(op: &str) -> &'static [&'static str] {
    match op {
        "null-list" => &["LS.empty-is-array"],
        "exit-3" | "error-exit-0" => &["GET.not-found"],
        "usage-exit-1" | "usage-exit-0" => &["USAGE.unknown-command"],
        "leak-password" => &["GET.vm-status"],
        "exec-exit-passthrough" => &["EXEC.exit-code"],
        "exec-lossy" => &["EXEC.base64-stdout", "EXEC.base64-stderr"],
        "exec-omit-empty" => &["EXEC.empty-streams"],
        "exec-both-fields" => &["EXEC.base64-stdout"],
        "json-eaten-after-exec" => &["ARGV.json-after-exec-name", "ARGV.json-before-exec"],
        "doctor-unhealthy-exit-1" => &["DOCTOR.unhealthy-exit-0"],
        "read-stdin" => &["RM.confirmation-required-no-stdin"],
        "base64-for-utf8" => &["EXEC.utf8-plain"],
        "progress-repeat" => &["PULL.progress-monotonic"],
        "event-without-data" | "ok-on-event" => {
            &["PULL.progress-monotonic", "APPLY.streams-stage-log"]
        }
        "leak-password-base64" | "leak-password-escaped" | "leak-password-url" => {
            &["GET.vm-status", "LS.lists-fixture"]
        }
        "leak-path-in-message" => &["GET.not-found"],
        "update-unnamed" => &["STATE.update-unnamed-unchanged"],
        "restore-noop" => &["STATE.snapshot-restore-restores"],
        "stream-buffered" => &["STREAM.events-before-exit"],
        "stdout-held-open" => &["STREAM.eof-at-exit"],
        "progress-kib" => &["PULL.progress-bytes"],
        "waited-us" => &["WAIT.waited-ms-wall"],
        "clone-forwards-contradict" => &["CLONE.forwards-agree"],
        "ls-prefield-deny" => &["LS.allow-exec-prefield"],
        "recipe-pin-short" => &["RECIPE.remote-add-pins", "RECIPE.remote-lock-sync-keep"],
        "recipe-update-stale" => &["RECIPE.remote-update-moves"],
        "recipe-rm-noop" => &["RECIPE.remote-rm", "RECIPE.remote-rm-in-use"],
        "recipe-list-no-pin" => &["RECIPE.remote-list-row", "RECIPE.remote-project-scope"],
        "git-required-internal" => &["RECIPE.git-required"],
        "show-unknown-internal" => &["RECIPE.show-unknown"],
        "refresh-all-current" => &["RECIPE.refresh-statuses"],
        "search-drops-os" => &["RECIPE.search-index"],
        "monitor-rejected-internal" => &["ERRORS.monitor-rejected"],
        "up-no-apply" => &["UP.applies-recipes"],
        "recipe-new-internal" => &["ERRORS.recipe-new-invalid"],
        "update-recipes-accepted" => &["ERRORS.update-recipes-unknown"],
        "leak-password-logs" => &["LEAK.after-cloud-up"],
        "monitor-unreachable-internal" => &["ERRORS.monitor-unreachable"],
        "wait-applied-as-reachable" => &["WAIT.until-applied"],
        "fanout-reversed" | "fanout-prose" => {
            &["PROJECT.fanout-order-skipped", "PROJECT.fanout-commands"]
        }
        "status-no-drift" => &["STATUS.drift"],
        "init-relative-path" => &["INIT.result"],
        "ls-project-no-key" => &["PROJECT.ls-fields"],
        "cli-enforces-access" => &["EXEC.cli-ignores-agent-access"],
        "image-missing-not-found" => &["CREATE.image-not-downloaded"],
        "guest-show-other" => &["GUEST.show"],
        "mcp-denied-internal" => &["MCP.access-denied"],
        "mcp-leak-password" => &["MCP.call-per-class", "MCP.access-denied"],
        "mcp-doctor-contract-2" => &["MCP.doctor"],
        "mcp-install-noop" | "mcp-doctor-stale" => &["MCP.install", "MCP.install-current"],
        "unknown-event"
        | "extra-field"
        | "stderr-noise"
        | "unknown-event-first"
        | "unknown-event-interleaved"
        | "extra-field-deep"
        | "field-order"
        | "json-escape-all" => &[
            "GET.forwards-shape",
            "FORWARD.set-stopped",
            "APPLY.dry-run-plan",
            "APPLY.streams-stage-log",
            "STREAM.events-before-exit",
            "LEAK.sweep",
            "LS.lists-fixture",
            "GET.vm-status",
            "GET.not-found",
            "USAGE.unknown-command",
            "EXEC.utf8-plain",
            "EXEC.base64-stdout",
            "RM.deletes",
            "GUEST.cmd-is-guest",
            "PULL.progress-monotonic",
            "PULL.progress-bytes",
            "UP.applies-recipes",
            "RECIPE.remote-add-pins",
            "RECIPE.remote-list-row",
            "RECIPE.remote-project-scope",
            "RECIPE.remote-update-moves",
            "RECIPE.remote-rm-in-use",
            "RECIPE.git-required",
            "RECIPE.show-unknown",
            "RECIPE.refresh-statuses",
            "RECIPE.search-index",
            "ERRORS.monitor-rejected",
        ],
        _ => &["LS.lists-fixture", "GET.not-found"],
    }
}

pub fn find(name: &str) -> Option<&'static Operator> {
    OPERATORS.iter().find(|op| op.name == name)
}

/// Runs `sut` with the operator applied; returns the exit status to use.
///
/// Lines before the result are passed on as the SUT writes them (rewritten one by one), so
/// only `stream-buffered` turns a stream into "silent until exit"; the result line and what
/// follows it are held until the SUT exits, then rewritten as a whole.
pub fn run(op: &Operator, sut: &[String]) -> i32 {
    let Some((program, leading)) = sut.split_first() else {
        eprintln!("mutate: no SUT given");
        return 2;
    };
    if let Some(code) = answer_without_sut(op, leading) {
        return code;
    }
    let forwarded = transform_argv(op, leading.to_vec());
    let mut stdin_bytes = None;
    if op.name == "read-stdin" {
        let mut buffer = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut buffer);
        stdin_bytes = Some(buffer);
    }
    let mut command = Command::new(program);
    command
        .args(&forwarded)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command.stdin(if stdin_bytes.is_some() {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("mutate: cannot run {program}: {error}");
            return 1;
        }
    };
    if let (Some(bytes), Some(mut stdin)) = (stdin_bytes, child.stdin.take()) {
        let _ = stdin.write_all(&bytes);
    }
    let mut held: Vec<u8> = Vec::new();
    let mut first = true;
    if let Some(out) = child.stdout.take() {
        let mut reader = std::io::BufReader::new(out);
        let mut stdout = std::io::stdout();
        loop {
            let mut raw = Vec::new();
            match std::io::BufRead::read_until(&mut reader, b'\n', &mut raw) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let body = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let line = String::from_utf8_lossy(body).into_owned();
            // Only in front of a JSON stream: human output is not the contract's.
            let cmd = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|v| v.get("cmd").and_then(Value::as_str).map(str::to_string));
            if let (true, "unknown-event-first", Some(cmd)) = (first, op.name, cmd) {
                let unknown = json!({"v": 3, "type": "heartbeat", "cmd": cmd, "data": {}});
                let _ = writeln!(stdout, "{unknown}");
            }
            first = false;
            let streaming =
                held.is_empty() && op.name != "stream-buffered" && !is_event(&line, "result");
            if streaming {
                let _ = stdout.write_all(&rewrite_bytes(op, &raw));
                let _ = stdout.flush();
            } else {
                held.extend_from_slice(&raw);
            }
        }
    }
    let code = child.wait().ok().and_then(|s| s.code()).unwrap_or(1);
    let (tail, code) = transform_output(op, held, code, leading);
    let out = rewrite_bytes(op, &tail);
    if op.name == "clone-forwards-contradict" {
        copy_forwards_behind_the_answer(&String::from_utf8_lossy(&out));
    }
    let _ = std::io::stdout().write_all(&out);
    let _ = std::io::stdout().flush();
    if op.name == "stdout-held-open"
        && result_cmd(&String::from_utf8_lossy(&out)).as_deref() == Some("up")
    {
        // A child that inherits stdout and outlives us, as a daemon that kept it would.
        let _ = Command::new("/bin/sleep")
            .arg("6")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
    if op.name == "write-home" {
        if let Some(home) = std::env::var_os("HOME") {
            let _ = std::fs::write(std::path::Path::new(&home).join(".stoat-mutant"), b"x");
        }
    }
    if op.name == "stderr-noise" {
        eprintln!("note: stderr noise from the mutant kit");
    }
    code
}

/// The positional arguments after the subcommand `name` (flags and their values skipped
/// only when they are `--flag=value` or bare switches this kit knows).
fn positionals_after<'a>(args: &'a [String], name: &str) -> Option<Vec<&'a str>> {
    let start = args.iter().position(|a| a == name)?;
    Some(
        args[start + 1..]
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect(),
    )
}

/// Operators that answer for the SUT without running it (a command that does nothing).
fn answer_without_sut(op: &Operator, args: &[String]) -> Option<i32> {
    if op.name == "recipe-rm-noop" {
        let operands = positionals_after(args, "recipe")?;
        let name = match operands.as_slice() {
            ["rm", name, ..] => name,
            _ => return None,
        };
        let line = json!({"v": 3, "type": "result", "cmd": "recipe", "ok": true,
            "data": {"name": name, "scope": "global"}});
        println!("{line}");
        return Some(0);
    }
    if op.name == "mcp-install-noop" {
        let named = words(args);
        let ["mcp", "install", client, ..] = named.as_slice() else {
            return None;
        };
        let home = std::env::var("HOME").unwrap_or_default();
        let line = json!({"v": 3, "type": "result", "cmd": "mcp", "ok": true,
            "data": {"client": client, "path": format!("{home}/.{client}/mcp.json"), "json": "{}"}});
        println!("{line}");
        return Some(0);
    }
    if op.name == "cli-enforces-access" {
        return refuse_exec_below_exec(args);
    }
    if op.name == "update-recipes-accepted" {
        return accept_recipes(args);
    }
    if op.name != "restore-noop" || !args.iter().any(|a| a == "--restore") {
        return None;
    }
    let operands = positionals_after(args, "snapshot")?;
    let (vm, tag) = (operands.first()?, operands.get(1)?);
    let line = json!({"v": 3, "type": "result", "cmd": "snapshot", "ok": true,
        "data": {"vm": vm, "tag": tag, "action": "restore"}});
    println!("{line}");
    Some(0)
}

/// `clone-forwards-contradict`: after a clone that answered forwards_copied:false, give the
/// clone the source's stored forwards anyway (copied between the two vm.toml files).
fn copy_forwards_behind_the_answer(out: &str) {
    let Some(result) = out
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
    else {
        return;
    };
    if result.get("cmd") != Some(&json!("clone")) || result.get("ok") != Some(&json!(true)) {
        return;
    }
    let (Some(source), Some(clone), Some(root)) = (
        result.pointer("/data/source").and_then(Value::as_str),
        result.pointer("/data/vm/name").and_then(Value::as_str),
        std::env::var_os("STOAT_HOME"),
    ) else {
        return;
    };
    let root = std::path::Path::new(&root);
    let read = |name: &str| -> Option<toml::Table> {
        std::fs::read_to_string(root.join(name).join("vm.toml"))
            .ok()?
            .parse()
            .ok()
    };
    let (Some(from), Some(mut to)) = (read(source), read(clone)) else {
        return;
    };
    if let Some(forwards) = from.get("forwards") {
        to.insert("forwards".into(), forwards.clone());
        let _ = std::fs::write(root.join(clone).join("vm.toml"), to.to_string());
    }
}

/// The words of a command line that are not flags (a flag's value counts as a word).
fn words(args: &[String]) -> Vec<&str> {
    args.iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect()
}

fn str_nonempty(value: &Value, key: &str) -> bool {
    value
        .get(key)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// A ProjectRun: a fan-out's result, whose rows carry a status.
fn is_project_run(result: &Value) -> bool {
    result.pointer("/data/project").is_some()
        && result
            .pointer("/data/vms")
            .and_then(Value::as_array)
            .is_some_and(|rows| rows.iter().all(|r| r.get("status").is_some()))
}

/// `update-recipes-accepted`: `update VM --recipes NAME` stores NAME without looking it up
/// and answers ok, as an update that validates nothing would.
fn accept_recipes(args: &[String]) -> Option<i32> {
    let named = words(args);
    let vm = match named.as_slice() {
        ["update", vm, ..] => vm.to_string(),
        _ => return None,
    };
    let at = args.iter().position(|a| a == "--recipes")?;
    let recipe = args.get(at + 1)?.clone();
    let root = std::env::var_os("STOAT_HOME")?;
    let file = std::path::Path::new(&root).join(&vm).join("vm.toml");
    let mut table: toml::Table = std::fs::read_to_string(&file).ok()?.parse().ok()?;
    table.insert(
        "recipes".into(),
        toml::Value::Array(vec![toml::Value::String(recipe)]),
    );
    let _ = std::fs::write(&file, table.to_string());
    let line = json!({"v": 3, "type": "result", "cmd": "update", "ok": true,
        "data": {"vm": {"name": vm}, "changed": ["recipes"], "applies_at": "now"}});
    println!("{line}");
    Some(0)
}

/// `cli-enforces-access`: `exec VM ...` refused when the VM's stored agent_access is below
/// exec, as if the CLI applied MCP's permission levels.
fn refuse_exec_below_exec(args: &[String]) -> Option<i32> {
    let named = words(args);
    let vm = match named.as_slice() {
        ["exec", vm, ..] => vm.to_string(),
        _ => return None,
    };
    let root = std::env::var_os("STOAT_HOME")?;
    let text =
        std::fs::read_to_string(std::path::Path::new(&root).join(&vm).join("vm.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    // The contract's mapping: an explicit allow_exec = false reads as manage.
    let level = match (
        table.get("agent_access").and_then(|v| v.as_str()),
        table.get("allow_exec").and_then(|v| v.as_bool()),
    ) {
        (Some(level), _) => level.to_string(),
        (None, Some(false)) => "manage".to_string(),
        _ => return None,
    };
    if !matches!(level.as_str(), "none" | "observe" | "manage") {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "exec", "ok": false,
        "error": {"code": "access_denied", "message": format!("agent_access {level} does not allow exec")}});
    println!("{line}");
    Some(1)
}

fn result_cmd(out: &str) -> Option<String> {
    out.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| v.get("cmd").and_then(Value::as_str).map(str::to_string))
}

/// Rewrites the JSON lines of `bytes`; anything else (human output, exact guest bytes)
/// passes through byte for byte, its final newline or lack of one included.
fn rewrite_bytes(op: &Operator, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for segment in bytes.split_inclusive(|b| *b == b'\n') {
        let (body, newline) = match segment.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (segment, false),
        };
        if serde_json::from_slice::<Value>(body).is_err() {
            out.extend_from_slice(segment);
            continue;
        }
        let rewritten = rewrite_line(op, &String::from_utf8_lossy(body)).join("\n");
        out.extend_from_slice(rewritten.as_bytes());
        if newline {
            out.push(b'\n');
        }
    }
    out
}

/// Rewrites one line on its way out (event lines as they stream, the rest at exit).
fn rewrite_line(op: &Operator, line: &str) -> Vec<String> {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return vec![line.to_string()];
    };
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match op.name {
        "v-2" => value["v"] = json!(2),
        "event-without-data" if matches!(kind.as_str(), "progress" | "stage" | "log") => {
            if let Some(map) = value.as_object_mut() {
                map.remove("data");
            }
        }
        "progress-repeat" if kind == "progress" => return vec![line.to_string(), line.to_string()],
        "unknown-event-interleaved" if matches!(kind.as_str(), "progress" | "stage" | "log") => {
            let cmd = value.get("cmd").cloned().unwrap_or(Value::Null);
            let unknown = json!({"v": value.get("v").cloned().unwrap_or(json!(3)), "type": "x_checkpoint",
                "cmd": cmd, "data": {"of": kind, "nested": {"list": [1, "two"]}}});
            return vec![unknown.to_string(), line.to_string()];
        }
        "progress-kib" if kind == "progress" => {
            for field in ["done", "total"] {
                if let Some(bytes) = value
                    .pointer(&format!("/data/{field}"))
                    .and_then(Value::as_u64)
                {
                    value["data"][field] = json!(bytes / 1024);
                }
            }
        }
        "mcp-denied-internal" if value.get("jsonrpc").is_some() => {
            return vec![line.replace("access_denied", "internal")];
        }
        "mcp-leak-password" if value.get("result").is_some_and(Value::is_object) => {
            if let Some(password) = planted_password() {
                value["result"]["x_console"] = json!(password);
            }
        }
        "extra-field-deep" => add_member_everywhere(&mut value),
        "field-order" => return vec![render(&value, true, false)],
        "json-escape-all" => return vec![render(&value, false, true)],
        _ => return vec![line.to_string()],
    }
    vec![value.to_string()]
}

fn add_member_everywhere(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (_, child) in map.iter_mut() {
                add_member_everywhere(child);
            }
            // Shaped like its siblings: to a DTO object it is an extra field, to a map (Guest.svc
            // of strings, Guest.backend of tables, a recipe detail's params) an extra entry of the
            // map's own kind, both of which a producer may add.
            let tables = !map.is_empty() && map.values().all(Value::is_object);
            let extra = if tables {
                json!({"added": true})
            } else {
                json!("added")
            };
            map.insert("x_future_member".into(), extra);
        }
        Value::Array(items) => items.iter_mut().for_each(add_member_everywhere),
        _ => {}
    }
}

/// Serializes `value` with object members in reverse order and/or every string character
/// as a `\\uXXXX` escape: both are the same JSON to any conforming parser.
fn render(value: &Value, reverse: bool, escape_all: bool) -> String {
    let string = |text: &str| -> String {
        if !escape_all {
            return Value::String(text.to_string()).to_string();
        }
        let mut out = String::from("\"");
        for unit in text.encode_utf16() {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        out.push('"');
        out
    };
    match value {
        Value::String(text) => string(text),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| render(v, reverse, escape_all))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(map) => {
            let mut members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", string(k), render(v, reverse, escape_all)))
                .collect();
            if reverse {
                members.reverse();
            }
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

/// The SUT's leading args are the wrapped SUT's args; the rest of argv comes after `--`.
fn transform_argv(op: &Operator, args: Vec<String>) -> Vec<String> {
    if op.name == "update-unnamed"
        && args.iter().any(|a| a == "update")
        && !args.iter().any(|a| a.starts_with("--cpus"))
    {
        let mut args = args;
        args.extend(["--cpus".to_string(), "3".to_string()]);
        return args;
    }
    if op.name == "up-no-apply" {
        let named = words(&args);
        if named.first() == Some(&"up") && named.len() >= 2 {
            let mut args = args;
            args.push("--no-apply".to_string());
            return args;
        }
        return args;
    }
    if op.name == "recipe-update-stale" {
        let mut args = args;
        let recipe = args.iter().position(|a| a == "recipe");
        if let Some(at) = recipe.and_then(|r| {
            args[r + 1..]
                .iter()
                .position(|a| a == "update")
                .map(|u| r + 1 + u)
        }) {
            args[at] = "sync".to_string();
        }
        return args;
    }
    if op.name != "json-eaten-after-exec" {
        return args;
    }
    // Emulate upstream's quirk: every --json is stoat's, even after exec's VM name.
    let had_json = args.iter().any(|a| a == "--json");
    let mut out: Vec<String> = args.into_iter().filter(|a| a != "--json").collect();
    if had_json {
        out.insert(0, "--json".to_string());
    }
    out
}

fn transform_output(op: &Operator, stdout: Vec<u8>, code: i32, args: &[String]) -> (Vec<u8>, i32) {
    let text = String::from_utf8_lossy(&stdout).into_owned();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let Some(result_index) = lines.iter().rposition(|l| {
        serde_json::from_str::<Value>(l)
            .ok()
            .and_then(|v| v.get("type").cloned())
            == Some(json!("result"))
    }) else {
        return (stdout, code);
    };
    let Ok(mut result) = serde_json::from_str::<Value>(&lines[result_index]) else {
        return (stdout, code);
    };
    let cmd = result
        .get("cmd")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ok = result.get("ok").and_then(Value::as_bool);
    let error_code = result
        .pointer("/error/code")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut code = code;
    match op.name {
        "two-results" => lines.push(lines[result_index].clone()),
        "result-not-last" => lines
            .push(json!({"v": 3, "type": "log", "cmd": cmd, "data": {"line": "late"}}).to_string()),
        "no-result" => {
            lines.remove(result_index);
            code = 1;
        }
        "no-result-exit-0" => {
            lines.remove(result_index);
            code = 0;
        }
        "prose-line" => lines.insert(result_index, format!("running {cmd}...")),
        "null-list" => {
            if let Some(data) = result.get_mut("data") {
                null_first_list(data);
            }
            lines[result_index] = result.to_string();
        }
        "ok-on-event" => lines.insert(
            result_index,
            json!({"v": 3, "type": "log", "cmd": cmd, "ok": true, "data": {"line": "x"}})
                .to_string(),
        ),
        "ok-missing" => {
            if let Some(map) = result.as_object_mut() {
                map.remove("ok");
            }
            lines[result_index] = result.to_string();
        }
        "data-and-error" => {
            if ok == Some(true) {
                result["error"] = json!({"code": "internal", "message": "both"});
            } else {
                result["data"] = json!({});
            }
            lines[result_index] = result.to_string();
        }
        "exit-3" if code == 1 => code = 3,
        "usage-exit-1" if error_code.as_deref() == Some("usage") => code = 1,
        "usage-exit-0" if error_code.as_deref() == Some("usage") => code = 0,
        "error-exit-0" if ok == Some(false) => code = 0,
        "ok-exit-1" if ok == Some(true) && cmd != "exec" && cmd != "doctor" => code = 1,
        "ansi-raw" => lines[result_index] = format!("\x1b[32m{}\x1b[0m", lines[result_index]),
        "ansi-in-string" => {
            if let Some(data) = result.get_mut("data") {
                colour_first_string(data);
            }
            lines[result_index] = result.to_string();
        }
        "leak-data-root" => {
            let root = std::env::var("STOAT_HOME").unwrap_or_default();
            if let Some(target) = payload_object(&mut result) {
                target.insert("disk_path".into(), json!(format!("{root}/work/disk.qcow2")));
            }
            lines[result_index] = result.to_string();
        }
        "leak-password" => {
            if let Some(password) = planted_password() {
                if let Some(target) = payload_object(&mut result) {
                    target.insert("console".into(), json!(password));
                }
            }
            lines[result_index] = result.to_string();
        }
        "exec-exit-passthrough" if cmd == "exec" && ok == Some(true) => {
            code = result
                .pointer("/data/exit_code")
                .and_then(Value::as_i64)
                .unwrap_or(0) as i32;
        }
        "exec-lossy" if cmd == "exec" => {
            if let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) {
                for stream in ["stdout", "stderr"] {
                    if let Some(encoded) = data.remove(&format!("{stream}_base64")) {
                        data.remove(&format!("{stream}_encoding"));
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(encoded.as_str().unwrap_or(""))
                            .unwrap_or_default();
                        data.insert(stream.into(), json!(String::from_utf8_lossy(&bytes)));
                    }
                }
            }
            lines[result_index] = result.to_string();
        }
        "exec-omit-empty" if cmd == "exec" => {
            if let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) {
                data.retain(|k, v| !((k == "stdout" || k == "stderr") && v == &json!("")));
            }
            lines[result_index] = result.to_string();
        }
        "exec-both-fields" if cmd == "exec" => {
            if let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) {
                for stream in ["stdout", "stderr"] {
                    if data.contains_key(&format!("{stream}_base64")) {
                        data.insert(stream.into(), json!(""));
                    }
                }
            }
            lines[result_index] = result.to_string();
        }
        "base64-for-utf8" if cmd == "exec" => {
            if let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) {
                if let Some(Value::String(text)) = data.remove("stdout") {
                    data.insert(
                        "stdout_base64".into(),
                        json!(base64::engine::general_purpose::STANDARD.encode(text.as_bytes())),
                    );
                    data.insert("stdout_encoding".into(), json!("base64"));
                }
            }
            lines[result_index] = result.to_string();
        }
        "wrong-cmd" => {
            result["cmd"] = json!(format!("x{cmd}"));
            lines[result_index] = result.to_string();
        }
        "doctor-unhealthy-exit-1"
            if cmd == "doctor" && result.pointer("/data/healthy") == Some(&json!(false)) =>
        {
            code = 1
        }
        "leak-password-base64" | "leak-password-url" | "leak-password-escaped" => {
            if let Some(password) = planted_password() {
                let encoded = match op.name {
                    "leak-password-base64" => base64::engine::general_purpose::STANDARD
                        .encode(format!("console={password}")),
                    "leak-password-url" => password
                        .bytes()
                        .map(|b| format!("%{b:02X}"))
                        .collect::<String>(),
                    _ => "@@ESCAPED@@".to_string(),
                };
                if let Some(target) = payload_object(&mut result) {
                    target.insert("note".into(), json!(encoded));
                }
                let escaped: String = password
                    .encode_utf16()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect();
                lines[result_index] = result.to_string().replace("@@ESCAPED@@", &escaped);
            }
        }
        "leak-path-in-message" if ok == Some(false) => {
            let root = std::env::var("STOAT_HOME").unwrap_or_default();
            if let Some(Value::String(message)) = result.pointer_mut("/error/message") {
                message.push_str(&format!(" (under {root}/work)"));
            }
            lines[result_index] = result.to_string();
        }
        "update-unnamed" if cmd == "update" => {
            if let Some(Value::Array(changed)) = result.pointer_mut("/data/changed") {
                changed.retain(|c| c != "cpus");
            }
            lines[result_index] = result.to_string();
        }
        "waited-us" if cmd == "wait" => {
            if let Some(ms) = result.pointer("/data/waited_ms").and_then(Value::as_u64) {
                result["data"]["waited_ms"] = json!(ms * 1000 + 1000);
            }
            lines[result_index] = result.to_string();
        }
        "ls-prefield-deny" if cmd == "ls" => {
            let root = std::env::var_os("STOAT_HOME").unwrap_or_default();
            if let Some(Value::Array(vms)) = result.pointer_mut("/data/vms") {
                for vm in vms {
                    let name = vm
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let stored = std::fs::read_to_string(
                        std::path::Path::new(&root).join(&name).join("vm.toml"),
                    )
                    .unwrap_or_default();
                    if !name.is_empty() && !stored.contains("allow_exec") {
                        vm["allow_exec"] = json!(false);
                    }
                }
            }
            lines[result_index] = result.to_string();
        }
        "applied-null" if cmd == "apply" && ok == Some(true) => {
            if result
                .pointer("/data/applied")
                .is_some_and(|a| a == &json!([]))
            {
                result["data"]["applied"] = Value::Null;
            }
            lines[result_index] = result.to_string();
        }
        "share-internal" if error_code.as_deref() == Some("share_invalid") => {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "git-required-internal" if error_code.as_deref() == Some("git_required") => {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "monitor-rejected-internal" if error_code.as_deref() == Some("monitor_rejected") => {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "show-unknown-internal"
            if cmd == "recipe"
                && matches!(error_code.as_deref(), Some("not_found" | "invalid_spec")) =>
        {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "recipe-pin-short" if cmd == "recipe" && ok == Some(true) => {
            let data = &mut result["data"];
            let shorten = |entry: &mut Value| {
                if let Some(commit) = entry.get("commit").and_then(Value::as_str) {
                    if commit.len() == 40 {
                        entry["commit"] = json!(commit[..7].to_string());
                    }
                }
            };
            shorten(data);
            if let Some(Value::Array(rows)) = data.get_mut("recipes") {
                rows.iter_mut().for_each(shorten);
            }
            lines[result_index] = result.to_string();
        }
        "recipe-list-no-pin" if cmd == "recipe" && ok == Some(true) => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/recipes") {
                for row in rows.iter_mut().filter(|r| {
                    matches!(
                        r.get("scope").and_then(Value::as_str),
                        Some("global" | "project")
                    )
                }) {
                    if let Some(map) = row.as_object_mut() {
                        for key in ["source", "ref", "commit"] {
                            map.remove(key);
                        }
                    }
                }
            }
            lines[result_index] = result.to_string();
        }
        "refresh-all-current" if cmd == "recipe" && ok == Some(true) => {
            if let Some(Value::Array(files)) = result.pointer_mut("/data/files") {
                for file in files.iter_mut().filter(|f| f.get("status").is_some()) {
                    file["status"] = json!("current");
                }
            }
            lines[result_index] = result.to_string();
        }
        "search-drops-os" if cmd == "recipe" && ok == Some(true) => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/recipes") {
                for row in rows.iter_mut().filter(|r| r.get("os").is_some()) {
                    row["os"] = json!([]);
                }
            }
            lines[result_index] = result.to_string();
        }
        "recipe-new-internal"
            if cmd == "recipe"
                && error_code.as_deref() == Some("invalid_spec")
                && words(args).first() == Some(&"recipe")
                && words(args).get(1) == Some(&"new") =>
        {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "image-missing-not-found" if error_code.as_deref() == Some("image_not_downloaded") => {
            result["error"]["code"] = json!("not_found");
            lines[result_index] = result.to_string();
        }
        "monitor-unreachable-internal" if error_code.as_deref() == Some("monitor_unreachable") => {
            result["error"]["code"] = json!("internal");
            lines[result_index] = result.to_string();
        }
        "leak-password-logs" if cmd == "logs" && ok == Some(true) => {
            if let (Some(password), Some(Value::Array(logged))) =
                (planted_password(), result.pointer_mut("/data/lines"))
            {
                logged.push(json!(format!("cloud-init: console password is {password}")));
            }
            lines[result_index] = result.to_string();
        }
        "wait-applied-as-reachable"
            if cmd == "wait" && result.pointer("/data/until") == Some(&json!("applied")) =>
        {
            result["data"]["until"] = json!("reachable");
            lines[result_index] = result.to_string();
        }
        "fanout-reversed" if is_project_run(&result) => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/vms") {
                rows.reverse();
            }
            lines[result_index] = result.to_string();
        }
        // Only where the contract tolerates it: prose before an up/down/apply ProjectRun.
        "fanout-prose"
            if is_project_run(&result) && matches!(cmd.as_str(), "up" | "down" | "apply") =>
        {
            lines.insert(result_index, format!("==> {cmd}: every VM of the project"));
        }
        "status-no-drift" if cmd == "status" && ok == Some(true) => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/vms") {
                for row in rows.iter_mut().filter(|r| r.get("drift").is_some()) {
                    row["drift"] = json!([]);
                }
            }
            lines[result_index] = result.to_string();
        }
        "ls-project-no-key" if cmd == "ls" && ok == Some(true) => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/vms") {
                for row in rows.iter_mut().filter(|r| str_nonempty(r, "project")) {
                    row["key"] = json!("");
                }
            }
            lines[result_index] = result.to_string();
        }
        "init-relative-path" if cmd == "init" && ok == Some(true) => {
            result["data"]["path"] = json!("stoat.toml");
            lines[result_index] = result.to_string();
        }
        "guest-show-other" if cmd == "guest" => {
            if let Some(Value::String(name)) = result.pointer_mut("/data/guest/name") {
                *name = format!("not-{name}");
            }
            lines[result_index] = result.to_string();
        }
        "mcp-doctor-contract-2" if cmd == "mcp" && result.pointer("/data/transport").is_some() => {
            result["data"]["contract"] = json!(2);
            lines[result_index] = result.to_string();
        }
        "mcp-doctor-stale" if cmd == "mcp" => {
            if let Some(Value::Array(rows)) = result.pointer_mut("/data/clients") {
                for row in rows.iter_mut() {
                    row["current"] = json!(false);
                }
            }
            lines[result_index] = result.to_string();
        }
        "unknown-event" => lines.insert(
            result_index,
            json!({"v": 3, "type": "heartbeat", "cmd": cmd, "data": {"beat": 1}}).to_string(),
        ),
        "extra-field" => {
            if let Some(data) = result.get_mut("data").and_then(Value::as_object_mut) {
                data.insert("x_future_field".into(), json!(1));
            }
            lines[result_index] = result.to_string();
        }
        _ => {}
    }
    let mut out = lines.join("\n").into_bytes();
    if !out.is_empty() {
        out.push(b'\n');
    }
    (out, code)
}

fn is_event(line: &str, kind: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("type").cloned())
        == Some(json!(kind))
}

fn payload_object(result: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let data = result.get_mut("data")?;
    if data.get("vm").is_some_and(Value::is_object) {
        return data.get_mut("vm")?.as_object_mut();
    }
    data.as_object_mut()
}

fn null_first_list(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            for (_, child) in map.iter_mut() {
                if child.as_array().is_some_and(Vec::is_empty) {
                    *child = Value::Null;
                    return true;
                }
            }
            map.iter_mut().any(|(_, child)| null_first_list(child))
        }
        Value::Array(items) => items.iter_mut().any(null_first_list),
        _ => false,
    }
}

fn colour_first_string(value: &mut Value) -> bool {
    match value {
        Value::String(text) => {
            *text = format!("\u{1b}[1m{text}\u{1b}[0m");
            true
        }
        Value::Object(map) => map
            .iter_mut()
            .filter(|(k, _)| !matches!(k.as_str(), "stdout" | "stderr"))
            .any(|(_, child)| colour_first_string(child)),
        Value::Array(items) => items.iter_mut().any(colour_first_string),
        _ => false,
    }
}

/// The console password of any VM under `$STOAT_HOME` (what a careless DTO would copy).
fn planted_password() -> Option<String> {
    let root = std::env::var_os("STOAT_HOME")?;
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("vm.toml")) else {
            continue;
        };
        let Ok(value) = toml::from_str::<toml::Value>(&text) else {
            continue;
        };
        if let Some(password) = value.get("console_password").and_then(|p| p.as_str()) {
            return Some(password.to_string());
        }
    }
    None
}
