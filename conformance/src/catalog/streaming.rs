//! Owns the checks of time in a stream: events reach the consumer while the command still
//! runs (a recipe that waits for the suite to answer its first line makes "silent until
//! exit" observable without timing anything), stdout reaches EOF when the process exits,
//! and `up` applies a VM's recipes after boot with stage/log events under `cmd:"up"`.

use std::time::Duration;

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at, unused_port, Banner};
use super::live::{Next, Watched};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Rule};
use crate::finding::Level::Must;
use crate::run::Case;
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "STREAM.events-before-exit",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "Lines are flushed as they are produced, so a buffered stdout does not turn streaming into \"silent until exit\".",
        title: "`apply work`: the recipe's first log line reaches the consumer while the recipe is still running (the recipe waits for the suite to see it)",
        tags: &["apply", "events", "streaming"],
        ..scenario(events_before_exit)
    },
    CheckDef {
        id: "STREAM.eof-at-exit",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#consumer-contract",
        quote: "Exactly one line has \"type\":\"result\", and it is last. Read to EOF and take it.",
        title: "stdout reaches EOF when the process exits, for `version` and for `up work` (which leaves qemu running)",
        tags: &["streaming", "up"],
        ..scenario(eof_at_exit)
    },
    CheckDef {
        id: "UP.applies-recipes",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "up emits the stage and log events of the apply it runs after boot, with \"cmd\":\"up\", and its result comes after that apply has finished.",
        title: "`up work` on a VM listing a recipe streams stage {recipe} and the recipe's log lines with cmd up, the result last, and `get` then records the recipe applied",
        tags: &["up", "apply", "events"],
        editions: Editions::V3 { change: "contract 2's up emits no stage or log events" },
        ..scenario(up_applies)
    },
];

/// Writes `<root>/recipes/<name>/` with a manifest (alpine) and `script` as install.sh.
pub(super) fn write_recipe(
    sandbox: &Sandbox,
    name: &str,
    script: &str,
) -> Result<(), HarnessError> {
    let dir = sandbox.data.join("recipes").join(name);
    std::fs::create_dir_all(&dir).map_err(|e| HarnessError::io(&dir, e))?;
    let manifest = format!(
        "name = \"{name}\"\ndescription = \"written by stoat-conformance\"\nversion = \"1.0\"\nos = [\"alpine\"]\nscript = \"install.sh\"\n"
    );
    for (file, text) in [
        ("recipe.toml", manifest),
        ("install.sh", script.to_string()),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| HarnessError::io(&path, e))?;
    }
    crate::sandbox::set_mode(&dir.join("install.sh"), 0o755)
}

/// A running live VM `work` listing `recipe`, reachable through `banner`, whose recipes
/// the fake ssh runs under the local /bin/sh.
fn recipe_vm(
    case: &Case<'_>,
    sshport: u16,
    recipe: &str,
    running: bool,
) -> Result<Sandbox, HarnessError> {
    let mut sandbox = case.sandbox()?;
    let mut vm = VmFixture::live("work").sshport(sshport);
    vm.recipes = vec![recipe.to_string()];
    let dir = sandbox.write_vm(&vm)?;
    bootable_files(&sandbox, &dir)?;
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            run_locally: true,
            ..Default::default()
        },
    ))?;
    if running {
        sandbox.start_running("work")?;
    }
    Ok(sandbox)
}

/// The files a live VM boots from (the ISO in isos/, its extracted kernel and initramfs).
pub(super) fn bootable_files(sandbox: &Sandbox, dir: &std::path::Path) -> Result<(), HarnessError> {
    let isos = sandbox.data.join("isos");
    std::fs::create_dir_all(&isos).map_err(|e| HarnessError::io(&isos, e))?;
    for (path, bytes) in [
        (
            isos.join("alpine-virt-3.20.3-x86_64.iso"),
            &b"fake iso\n"[..],
        ),
        (dir.join("vmlinuz"), b"fake kernel\n"),
        (dir.join("initramfs"), b"fake initramfs\n"),
    ] {
        std::fs::write(&path, bytes).map_err(|e| HarnessError::io(&path, e))?;
    }
    Ok(())
}

fn events_before_exit(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let release = format!("release-{}", case.seed());
    let sandbox = recipe_vm(case, banner.port, "slow", true)?;
    let release_file = sandbox.work.join(&release);
    let ready = format!("ready-{}", case.seed());
    // The recipe prints one line, then waits (bounded) for the suite to have read it.
    let script = format!(
        "#!/bin/sh\necho {ready}\ni=0\nwhile [ ! -e '{file}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\nif [ -e '{file}' ]; then echo released-while-running; else echo never-released; fi\n",
        file = release_file.display()
    );
    write_recipe(&sandbox, "slow", &script)?;
    let mut watched = Watched::spawn(case, &sandbox, &["--json", "apply", "work"], false)?;
    let mut seen_ready_while_running = None;
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60).max(case.timeout());
    loop {
        match watched.next(Duration::from_millis(500)) {
            Next::Line(line) => {
                if seen_ready_while_running.is_none() && log_line_contains(&line, &ready) {
                    let running = watched.exited().is_none();
                    seen_ready_while_running = Some(running);
                    std::fs::write(&release_file, b"go")
                        .map_err(|e| HarnessError::io(&release_file, e))?;
                }
                lines.push(line);
            }
            Next::Eof => break,
            Next::Timeout if std::time::Instant::now() > deadline => {
                case.fail("stdout", "apply did not finish within the timeout");
                return Ok(());
            }
            Next::Timeout => {}
        }
    }
    let released = lines
        .iter()
        .any(|l| log_line_contains(l, "released-while-running"));
    match seen_ready_while_running {
        None => case.fail(
            "stdout",
            format!("no line carried the recipe's first output {ready:?}; stdout: {}", crate::oracle::excerpt(&lines.join("\n"))),
        ),
        Some(_) if !released => case.fail(
            "stdout",
            "the recipe's first log line reached the consumer only after the recipe gave up waiting: the stream is held back (\"silent until exit\")",
        ),
        Some(_) => {}
    }
    Ok(())
}

/// Whether `line` is a log event whose (decoded) line contains `needle`.
fn log_line_contains(line: &str, needle: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .is_some_and(|event| {
            str_at(&event, "/type") == Some("log")
                && str_at(&event, "/data/line").is_some_and(|l| l.contains(needle))
        })
}

/// Reads `args` to EOF; a finding when EOF comes later than `grace` after the exit.
fn expect_eof_at_exit(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    args: &[&str],
) -> Result<Option<Vec<String>>, HarnessError> {
    let grace = Duration::from_secs(2);
    let mut watched = Watched::spawn(case, sandbox, args, false)?;
    let mut lines = Vec::new();
    let limit = case.timeout();
    let started = std::time::Instant::now();
    loop {
        match watched.next(Duration::from_millis(200)) {
            Next::Line(line) => lines.push(line),
            Next::Eof => break,
            Next::Timeout => {
                if let Some((exited_at, _)) = watched.exited() {
                    if exited_at.elapsed() > grace {
                        case.fail(
                            "stdout",
                            format!(
                                "`{}`: the process exited but stdout was still open {} ms later (something it started holds stdout; a consumer reading to EOF hangs)",
                                args.join(" "),
                                exited_at.elapsed().as_millis()
                            ),
                        );
                        return Ok(None);
                    }
                } else if started.elapsed() > limit {
                    case.fail(
                        "stdout",
                        format!("`{}` did not exit within the timeout", args.join(" ")),
                    );
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(lines))
}

fn eof_at_exit(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    expect_eof_at_exit(case, &sandbox, &["--json", "version"])?;
    // `up` starts the fake QEMU, which answers ssh on the port as a real one's hostfwd does:
    // nothing may hold the port before (stoat may check it is free).
    let port = unused_port()?;
    let sandbox = recipe_vm(case, port, "none-such", false)?;
    // No recipes to apply: `up` only boots.
    let mut vm = VmFixture::live("work").sshport(port);
    vm.recipes = Vec::new();
    sandbox.write_vm(&vm)?;
    if let Some(lines) = expect_eof_at_exit(case, &sandbox, &["--json", "up", "work"])? {
        let last: Option<Value> = lines.last().and_then(|l| serde_json::from_str(l).ok());
        case.ensure(
            last.as_ref()
                .and_then(|v| v.get("type"))
                .and_then(Value::as_str)
                == Some("result"),
            "stdout",
            "`up work` ended without a result line",
        );
    }
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

fn up_applies(case: &mut Case<'_>) -> Result<(), HarnessError> {
    // The fake QEMU `up` starts answers ssh on the port (see eof_at_exit).
    let sandbox = recipe_vm(case, unused_port()?, "hello", false)?;
    let greeting = format!("hello-at-up-{}", case.seed());
    write_recipe(&sandbox, "hello", &format!("#!/bin/sh\necho {greeting}\n"))?;
    let ran = case.json(&sandbox, &["up", "work"])?;
    let data = case.expect_ok(&ran).cloned();
    let events: Vec<Value> = ran.judgement.events().into_iter().cloned().collect();
    let stage = events.iter().position(|e| {
        str_at(e, "/type") == Some("stage") && str_at(e, "/data/recipe") == Some("hello")
    });
    let log = events.iter().position(|e| {
        str_at(e, "/type") == Some("log")
            && str_at(e, "/data/line").is_some_and(|l| l.contains(&greeting))
    });
    match (stage, log) {
        (Some(stage), Some(log)) => {
            case.ensure(stage < log, "stdout", "the recipe's output came before its stage event");
            for index in [stage, log] {
                expect_eq(case, &events[index], "/cmd", &json!("up"));
            }
        }
        (None, _) => case.fail("stdout", "`up` of a VM listing recipe hello emitted no stage event {\"recipe\":\"hello\"}: it did not apply the VM's recipes after boot"),
        (_, None) => case.fail("stdout", format!("no log event of `up` carries the recipe's output {greeting:?}")),
    }
    if data.is_some() {
        let got = case.json(&sandbox, &["get", "work"])?;
        if let Some(vm) = case.expect_ok(&got).and_then(|d| d.get("vm")).cloned() {
            let detail = vm
                .get("recipes_detail")
                .and_then(Value::as_array)
                .and_then(|list| {
                    list.iter()
                        .find(|d| str_at(d, "/name") == Some("hello"))
                        .cloned()
                });
            match detail {
                Some(detail) => {
                    expect_eq(case, &detail, "/applied", &json!(true));
                }
                None => case.fail(
                    "/data/vm/recipes_detail",
                    "after `up` applied hello, get has no recipes_detail entry for it",
                ),
            }
        }
    }
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}
