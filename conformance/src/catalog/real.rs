//! Owns the real tier: a real SUT booting the guest of a guest directory (`--guest <dir>`:
//! conformance/guest/'s test guest, or any guest whose `guest.toml` says what it needs, see
//! [`guest`]) under real QEMU (`STOAT_ACCEL=tcg`), every invocation judged by the same
//! oracle. The sandbox's PATH is the host's `/usr/bin:/bin`, its data root lives under
//! `/var/tmp` (user xattrs), and any QEMU left behind is killed by PID when it drops.

mod guest;

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at};
use crate::error::HarnessError;
use crate::finding::Level::Must;
use crate::run::{Case, Inv};
use crate::sandbox::Sandbox;

pub use guest::GUEST_IMAGE;
use guest::{Guest, GuestError};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "REAL.lifecycle",
        level: Must,
        tier: Tier::Real,
        spec: "json-v3#per-command-data",
        quote: "up (one VM) {\"vm\":VM} (re-read after start, so state is authoritative)",
        title: "the guest end to end: create (BYO qcow2, --ram/--cpus from the guest directory, 256/1 by default), up, wait reachable, exec true until a login works (ssh's 255 only), exec echo, exec non-UTF-8 (stdout_base64 \"//4=\"), cp both ways byte-exact, down, wait stopped, rm -y; no QEMU left",
        tags: &["real", "lifecycle", "exec", "cp"],
        ..scenario(lifecycle)
    },
];

const VM: &str = "rt";

/// The guest to boot; `Ok(Err(reason))` when the check cannot run here.
fn guest(case: &Case<'_>) -> Result<Result<Guest, String>, HarnessError> {
    let Some(dir) = case.guest() else {
        return Ok(Err(
            "the real tier needs --guest <dir> (the output of conformance/guest/build.sh)".into(),
        ));
    };
    let guest = match guest::open(dir) {
        Ok(guest) => guest,
        Err(GuestError::NoImage(dir)) => {
            return Ok(Err(format!("no {GUEST_IMAGE} in {}", dir.display())))
        }
        Err(GuestError::Invalid { path, message }) => {
            return Err(HarnessError::BadInput { path, message })
        }
    };
    if !Path::new("/usr/bin/qemu-system-x86_64").exists() {
        return Ok(Err("no /usr/bin/qemu-system-x86_64 on this host".into()));
    }
    Ok(Ok(guest))
}

fn lifecycle(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let guest = match guest(case)? {
        Ok(guest) => guest,
        Err(reason) => {
            case.skip(reason);
            return Ok(());
        }
    };
    let sandbox = case.real_sandbox()?;
    let image = guest.image.to_string_lossy().into_owned();
    let (ram, cpus) = (guest.ram_mib.to_string(), guest.cpus.to_string());
    let created = case.json(
        &sandbox,
        &[
            "create", VM, "--image", &image, "--ram", &ram, "--cpus", &cpus,
        ],
    )?;
    if case.expect_ok(&created).is_none() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    if !boot(case, &sandbox, guest.boot_timeout)? {
        return Ok(());
    }
    settle(
        case,
        &sandbox,
        guest.boot_timeout.saturating_sub(started.elapsed()),
    )?;
    exec_checks(case, &sandbox)?;
    cp_checks(case, &sandbox)?;
    shut_down(case, &sandbox)?;
    remove(case, &sandbox)
}

/// `up`, then `wait --until reachable`, each within the guest's boot timeout; false when the
/// guest never came up.
fn boot(case: &mut Case<'_>, sandbox: &Sandbox, limit: Duration) -> Result<bool, HarnessError> {
    let up = case.run(sandbox, Inv::json(&["up", VM]).timeout(limit))?;
    let Some(data) = case.expect_ok(&up).cloned() else {
        return Ok(false);
    };
    expect_eq(case, &data, "/vm/state", &json!("running"));
    // The SUT's own wait ends first, so a slow guest reads as `reached:false`, not a kill.
    let wait_for = format!("{}s", limit.as_secs());
    let waited = case.run(
        sandbox,
        Inv::json(&["wait", VM, "--until", "reachable", "--timeout", &wait_for])
            .timeout(limit + Duration::from_secs(20)),
    )?;
    let Some(data) = case.expect_ok(&waited).cloned() else {
        return Ok(false);
    };
    Ok(expect_eq(case, &data, "/reached", &json!(true)))
}

/// Waits until a login works. Reachable means sshd answers its banner, not that a login
/// succeeds: a cloud image's cloud-init restarts sshd after writing its configuration, seconds
/// after the banner first answered, and an exec in that window ends with ssh's own status 255.
/// Polls `exec true` while it answers 255, within what is left of the boot timeout; any other
/// answer ends the wait, and the checks that follow judge exec as before.
fn settle(case: &mut Case<'_>, sandbox: &Sandbox, left: Duration) -> Result<(), HarnessError> {
    let deadline = std::time::Instant::now() + left;
    loop {
        let ran = case.run(
            sandbox,
            Inv::json(&["exec", VM, "true"]).timeout(Duration::from_secs(60)),
        )?;
        let ssh_failed = ran
            .data()
            .and_then(|d| d.get("exit_code"))
            .and_then(Value::as_i64)
            == Some(255);
        if !ssh_failed || std::time::Instant::now() >= deadline {
            return Ok(());
        }
        // A poll interval, not a synchronisation: the next attempt asks the guest again.
        std::thread::sleep(Duration::from_secs(1));
    }
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
