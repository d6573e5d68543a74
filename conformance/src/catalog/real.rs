//! Owns the real tier: a real SUT booting the conformance test guest (conformance/guest/,
//! `--guest <dir>`) under real QEMU (`STOAT_ACCEL=tcg`), every invocation judged by the same
//! oracle. The sandbox's PATH is the host's `/usr/bin:/bin`, its data root lives under
//! `/var/tmp` (user xattrs), and any QEMU left behind is killed by PID when it drops.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::helpers::{expect_eq, str_at};
use super::{scenario, CheckDef, Tier};
use crate::error::HarnessError;
use crate::finding::Level::Must;
use crate::run::{Case, Inv};
use crate::sandbox::Sandbox;

/// The guest image `conformance/guest/build.sh` writes.
pub const GUEST_IMAGE: &str = "stoat-testguest-cloud.qcow2";

pub(super) const CHECKS: &[CheckDef] = &[
    scenario("REAL.lifecycle", Must, Tier::Real, "json-v3#per-command-data", "up (one VM) {\"vm\":VM} (re-read after start, so state is authoritative)",
        "the test guest end to end: create (BYO qcow2, --ram 256 --cpus 1), up, wait reachable, exec echo, exec non-UTF-8 (stdout_base64 \"//4=\"), cp both ways byte-exact, down, wait stopped, rm -y; no QEMU left", &["real", "lifecycle", "exec", "cp"], lifecycle),
];

const VM: &str = "rt";

/// The guest image to boot, or why the check cannot run here.
fn guest_image(case: &Case<'_>) -> Result<PathBuf, String> {
    let dir = case
        .guest()
        .ok_or("the real tier needs --guest <dir> (the output of conformance/guest/build.sh)")?;
    let image = dir.join(GUEST_IMAGE);
    if !image.is_file() {
        return Err(format!("no {GUEST_IMAGE} in {}", dir.display()));
    }
    if !Path::new("/usr/bin/qemu-system-x86_64").exists() {
        return Err("no /usr/bin/qemu-system-x86_64 on this host".into());
    }
    Ok(image)
}

fn lifecycle(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let image = match guest_image(case) {
        Ok(image) => image,
        Err(reason) => {
            case.skip(reason);
            return Ok(());
        }
    };
    let sandbox = case.real_sandbox()?;
    let image = image.to_string_lossy().into_owned();
    let created = case.json(
        &sandbox,
        &[
            "create", VM, "--image", &image, "--ram", "256", "--cpus", "1",
        ],
    )?;
    if case.expect_ok(&created).is_none() {
        return Ok(());
    }
    if !boot(case, &sandbox)? {
        return Ok(());
    }
    exec_checks(case, &sandbox)?;
    cp_checks(case, &sandbox)?;
    shut_down(case, &sandbox)?;
    remove(case, &sandbox)
}

/// `up`, then `wait --until reachable`; false when the guest never came up.
fn boot(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<bool, HarnessError> {
    let up = case.run(
        sandbox,
        Inv::json(&["up", VM]).timeout(Duration::from_secs(120)),
    )?;
    let Some(data) = case.expect_ok(&up).cloned() else {
        return Ok(false);
    };
    expect_eq(case, &data, "/vm/state", &json!("running"));
    let waited = case.run(
        sandbox,
        Inv::json(&["wait", VM, "--until", "reachable", "--timeout", "180s"])
            .timeout(Duration::from_secs(200)),
    )?;
    let Some(data) = case.expect_ok(&waited).cloned() else {
        return Ok(false);
    };
    Ok(expect_eq(case, &data, "/reached", &json!(true)))
}

fn exec_checks(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<(), HarnessError> {
    let long = Duration::from_secs(60);
    let echo = case.run(
        sandbox,
        Inv::json(&["exec", VM, "echo", "hello stoat"]).timeout(long),
    )?;
    if let Some(data) = case.expect_ok(&echo).cloned() {
        expect_eq(case, &data, "/stdout", &json!("hello stoat\n"));
        expect_eq(case, &data, "/exit_code", &json!(0));
    }
    let bytes = case.run(
        sandbox,
        Inv::json(&["exec", VM, "printf", "\\377\\376"]).timeout(long),
    )?;
    if let Some(data) = case.expect_ok(&bytes).cloned() {
        expect_eq(case, &data, "/stdout_base64", &json!("//4="));
        case.ensure(
            data.get("stdout").is_none(),
            "/data/stdout",
            "stdout must be absent when stdout_base64 is present",
        );
    }
    Ok(())
}

fn cp_checks(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<(), HarnessError> {
    let payload: Vec<u8> = b"\x00\x01\xff stoat-conformance real tier\n".to_vec();
    let local = sandbox.write_work_file("in.bin", &payload)?;
    let remote = format!("{VM}:/tmp/in.bin");
    let long = Duration::from_secs(60);
    let to = case.run(sandbox, Inv::json(&["cp", "in.bin", &remote]).timeout(long))?;
    if let Some(data) = case.expect_ok(&to).cloned() {
        expect_eq(case, &data, "/direction", &json!("to_guest"));
        expect_eq(case, &data, "/local", &json!(local.to_string_lossy()));
    }
    let from = case.run(
        sandbox,
        Inv::json(&["cp", &remote, "back.bin"]).timeout(long),
    )?;
    if let Some(data) = case.expect_ok(&from).cloned() {
        expect_eq(case, &data, "/direction", &json!("from_guest"));
        let back = std::fs::read(sandbox.work.join("back.bin")).unwrap_or_default();
        case.ensure(
            back == payload,
            "back.bin",
            format!(
                "the round trip changed the bytes: sent {}, got {}",
                base64::engine::general_purpose::STANDARD.encode(&payload),
                base64::engine::general_purpose::STANDARD.encode(&back)
            ),
        );
    }
    Ok(())
}

fn shut_down(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<(), HarnessError> {
    let pid = qemu_pid(sandbox);
    let down = case.run(
        sandbox,
        Inv::json(&["down", VM]).timeout(Duration::from_secs(120)),
    )?;
    if case.expect_ok(&down).is_none() {
        return Ok(());
    }
    let waited = case.run(
        sandbox,
        Inv::json(&["wait", VM, "--until", "stopped", "--timeout", "60s"])
            .timeout(Duration::from_secs(90)),
    )?;
    if let Some(data) = case.expect_ok(&waited).cloned() {
        expect_eq(case, &data, "/reached", &json!(true));
    }
    if let Some(pid) = pid {
        let alive = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(&*sandbox.root.to_string_lossy()))
            .unwrap_or(false);
        case.ensure(
            !alive,
            "qemu.pid",
            format!("QEMU (pid {pid}) still runs after down and wait --until stopped"),
        );
    }
    Ok(())
}

fn remove(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<(), HarnessError> {
    let ran = case.json(sandbox, &["rm", VM, "-y"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/name", &json!(VM));
        expect_eq(case, &data, "/deleted", &json!(true));
        case.ensure(
            !sandbox.vm_dir(VM).exists(),
            "filesystem",
            "rm -y answered deleted:true but the VM's directory is still there",
        );
    }
    let listed = case.json(sandbox, &["ls"])?;
    if let Some(data) = case.expect_ok(&listed).cloned() {
        let names: Vec<&str> = data
            .get("vms")
            .and_then(Value::as_array)
            .map(|vms| vms.iter().filter_map(|v| str_at(v, "/name")).collect())
            .unwrap_or_default();
        case.ensure(
            !names.contains(&VM),
            "/data/vms",
            "ls still lists the removed VM",
        );
    }
    Ok(())
}

fn qemu_pid(sandbox: &Sandbox) -> Option<i32> {
    std::fs::read_to_string(sandbox.vm_dir(VM).join("qemu.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
