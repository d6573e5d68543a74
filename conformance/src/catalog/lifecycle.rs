//! Owns the lifecycle checks through the fake qemu: up, down, refusals, a missing qemu,
//! screenshot over QMP, and cp through the fake scp.

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at, unused_port, with_running_work};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, QemuScript, Rule, ScriptBytes};
use crate::finding::Level::{Must, Should};
use crate::run::Case;
use crate::sandbox::{Sandbox, SandboxOptions, VmFixture, FAKE_TOOLS};
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "UP.starts",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "up (one VM) {\"vm\":VM} (re-read after start, so state is authoritative)",
        title: "`up work` starts qemu and answers {vm} with state running",
        tags: &["up", "lifecycle"],
        ..scenario(up_starts)
    },
    CheckDef {
        id: "DOWN.stops",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "A single-VM down result can also report state: \"running\" while QEMU is still exiting",
        title: "`down work` after `up` answers {vm}; `wait --until stopped` then reaches stopped",
        tags: &["down", "lifecycle"],
        ..scenario(down_stops)
    },
    CheckDef {
        id: "UP.already-running",
        level: Should,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "already_running the operation needs a stopped VM",
        title: "`up` on a running VM fails with already_running",
        tags: &["up", "state"],
        ..scenario(up_already_running)
    },
    CheckDef {
        id: "UP.qemu-refused",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "qemu_start_failed qemu ran and refused to start the VM",
        title: "qemu exiting 1 at start fails up with qemu_start_failed",
        tags: &["up", "errors"],
        editions: Editions::V3 { change: "contract 2 has no qemu_start_failed code" },
        ..scenario(up_refused)
    },
    CheckDef {
        id: "UP.qemu-missing",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "qemu_missing qemu-system-x86_64 is not on PATH",
        title: "no qemu-system-x86_64 on PATH fails up with qemu_missing",
        tags: &["up", "errors"],
        editions: Editions::V3 { change: "contract 2 has no qemu_missing code" },
        ..scenario(up_missing)
    },
    CheckDef {
        id: "SCREENSHOT.png",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "screenshot {\"vm\":\"work\",\"path\":",
        title: "`screenshot` of a running VM answers {vm, path, bytes, width, height} matching the file",
        tags: &["screenshot"],
        editions: Editions::V3 { change: "contract 2 has no screenshot command" },
        ..scenario(screenshot)
    },
    CheckDef {
        id: "SCREENSHOT.failed",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "screenshot_failed qemu refused the screendump",
        title: "qemu refusing the screendump fails screenshot with screenshot_failed",
        tags: &["screenshot", "errors"],
        editions: Editions::V3 { change: "contract 2 has no screenshot command" },
        ..scenario(screenshot_failed)
    },
    CheckDef {
        id: "CP.local-absolute",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "local is always resolved to an absolute path, even if given relative or ~-prefixed",
        title: "`cp f.txt work:/tmp/f.txt` answers to_guest with the absolute local path and runs scp",
        tags: &["cp"],
        ..scenario(cp_to_guest)
    },
    CheckDef {
        id: "CP.from-guest",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "cp {\"vm\":\"work\",\"direction\":\"to_guest\",\"local\":\"/home/u/f\",\"remote\":\"/tmp/f\"}",
        title: "`cp work:/etc/hostname out.txt` answers from_guest with the absolute local path",
        tags: &["cp"],
        ..scenario(cp_from_guest)
    },
];

/// A live Alpine VM whose ISO and extracted kernel exist, so `up` needs only qemu.
fn bootable(case: &Case<'_>) -> Result<Sandbox, HarnessError> {
    let sandbox = case.sandbox()?;
    prepare_bootable(&sandbox)?;
    Ok(sandbox)
}

pub(super) fn prepare_bootable(sandbox: &Sandbox) -> Result<(), HarnessError> {
    // A port nothing holds: parallel checks' fake VMs answer on the fixture's 2200, and a
    // stoat may refuse to start a VM whose host port is taken.
    let dir = sandbox.write_vm(&VmFixture::live("work").sshport(unused_port()?))?;
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

fn up(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<Value>, HarnessError> {
    let ran = case.json(sandbox, &["up", "work"])?;
    Ok(case.expect_ok(&ran).cloned())
}

fn up_starts(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = bootable(case)?;
    if let Some(data) = up(case, &sandbox)? {
        expect_eq(case, &data, "/vm/state", &json!("running"));
    }
    let started = sandbox
        .fake_calls()
        .iter()
        .any(|c| c.tool == "qemu-system-x86_64");
    case.ensure(
        started,
        "fake-log",
        "up answered without running qemu-system-x86_64",
    );
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

fn down_stops(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = bootable(case)?;
    if up(case, &sandbox)?.is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["down", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            matches!(str_at(&data, "/vm/state"), Some("stopped" | "running")),
            "/data/vm/state",
            "down answers the VM with state stopped (or running while qemu exits)",
        );
    }
    let waited = case.json(
        &sandbox,
        &["wait", "work", "--until", "stopped", "--timeout", "10s"],
    )?;
    if let Some(data) = case.expect_ok(&waited).cloned() {
        expect_eq(case, &data, "/reached", &json!(true));
    }
    Ok(())
}

fn up_already_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["up", "work"])?;
    case.expect_error(&ran, "already_running");
    Ok(())
}

fn up_refused(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = bootable(case)?;
    sandbox.write_script(&FakeScript {
        qemu: QemuScript {
            refuse: Some(Rule {
                stderr: Some(ScriptBytes::text(
                    "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Permission denied\n",
                )),
                exit: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    })?;
    let ran = case.json(&sandbox, &["up", "work"])?;
    if case.expect_error(&ran, "qemu_start_failed") {
        case.expect_exit(&ran, 1);
    }
    Ok(())
}

fn up_missing(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let tools: Vec<&'static str> = FAKE_TOOLS
        .iter()
        .copied()
        .filter(|t| *t != "qemu-system-x86_64")
        .collect();
    let sandbox = case.sandbox_from(SandboxOptions {
        fakes: case.fakes(),
        only_tools: Some(tools),
        seed_keys: true,
        ..Default::default()
    })?;
    prepare_bootable(&sandbox)?;
    let ran = case.json(&sandbox, &["up", "work"])?;
    case.expect_error(&ran, "qemu_missing");
    Ok(())
}

fn screenshot(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = bootable(case)?;
    if up(case, &sandbox)?.is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["screenshot", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let (width, height) = crate::fakes::qmp::SCREEN;
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/width", &json!(width));
        expect_eq(case, &data, "/height", &json!(height));
        let path = str_at(&data, "/path").unwrap_or("").to_string();
        match std::fs::metadata(&path) {
            Ok(meta) => {
                expect_eq(case, &data, "/bytes", &json!(meta.len()));
            }
            Err(_) => case.fail(
                "/data/path",
                format!("the screenshot file {path:?} does not exist"),
            ),
        }
    }
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

fn screenshot_failed(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = bootable(case)?;
    sandbox.write_script(&FakeScript {
        qemu: QemuScript {
            screendump_error: Some("Could not open display surface".into()),
            ..Default::default()
        },
        ..Default::default()
    })?;
    if up(case, &sandbox)?.is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["screenshot", "work"])?;
    case.expect_error(&ran, "screenshot_failed");
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

fn cp_to_guest(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let local = sandbox.write_work_file("f.txt", b"payload\n")?;
    let ran = case.json(&sandbox, &["cp", "f.txt", "work:/tmp/f.txt"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/direction", &json!("to_guest"));
        expect_eq(case, &data, "/local", &json!(local.to_string_lossy()));
        expect_eq(case, &data, "/remote", &json!("/tmp/f.txt"));
    }
    let copied = sandbox.fake_calls().iter().any(|c| c.tool == "scp");
    case.ensure(copied, "fake-log", "cp answered without running scp");
    Ok(())
}

fn cp_from_guest(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    sandbox.write_script(&FakeScript::default().rule(
        "scp",
        Rule {
            stdout: Some(ScriptBytes::text("work\n")),
            ..Default::default()
        },
    ))?;
    let ran = case.json(&sandbox, &["cp", "work:/etc/hostname", "out.txt"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/direction", &json!("from_guest"));
        expect_eq(
            case,
            &data,
            "/local",
            &json!(sandbox.work.join("out.txt").to_string_lossy()),
        );
    }
    Ok(())
}
