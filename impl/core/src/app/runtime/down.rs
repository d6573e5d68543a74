//! `down`: stop a VM's QEMU. QMP `system_powerdown` (the guest shuts down cleanly), a bounded
//! wait, then QMP `quit`, then SIGTERM by PID. Unlike upstream (docs/contract.md behaviour#qemu) it waits for
//! the process to go, so the result reports `stopped` whenever QEMU really exited. The VM's
//! reused ssh connection is ended first.

use std::time::Duration;

use stoat_wire::dto::Vm;

use crate::qemu;
use crate::ssh::mux as ssh_mux;
use crate::vm::{connect_qmp, load_running};
use crate::{lock, log, vm, Env, Result, Root};

/// How long the guest gets to power off after the ACPI button, unless STOAT_DOWN_TIMEOUT_SECS.
pub const DEFAULT_POWERDOWN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `quit` and SIGTERM each get before the next step.
const FORCE_STEP_TIMEOUT: Duration = Duration::from_secs(5);

/// Stops `name` and returns the VM re-read afterwards.
pub fn down(root: &Root, env: &Env, name: &str) -> Result<Vm> {
    // The VM's lock first: a `down` during an `up` still starting waits for it to settle
    // (running or not), then decides.
    let dir = vm::load_ok(root, name)?.dir;
    let _guard = lock::exclusive_in_vm(&dir)?;
    let (stored, pid) = load_running(root, name)?;
    ssh_mux::close(env, &stored);
    let how = stop(&dir, pid, &stored, powerdown_timeout(env));
    log::append(
        root,
        "info",
        &format!("down {} pid={pid}: {how}", stored.name),
    );
    Ok(vm::load_ok(root, name)?.to_wire(env))
}

/// Undoes the start of an `up` that was cancelled (Ctrl-C while it waited for the guest or
/// applied): the QEMU it started stops at once (QMP `quit`, then SIGTERM), as the guest
/// never finished booting for the user. Best effort: the cancel answers either way.
pub fn stop_canceled_start(root: &Root, env: &Env, name: &str) {
    let _finishing = crate::child::finishing();
    let Ok(dir) = vm::load_ok(root, name).map(|stored| stored.dir) else {
        return;
    };
    let Ok(_guard) = lock::exclusive_in_vm(&dir) else {
        return;
    };
    let Ok((stored, pid)) = load_running(root, name) else {
        return;
    };
    ssh_mux::close(env, &stored);
    let how = stop(&dir, pid, &stored, Duration::ZERO);
    log::append(
        root,
        "info",
        &format!("up {} canceled: pid={pid} {how}", stored.name),
    );
}

fn powerdown_timeout(env: &Env) -> Duration {
    env.get("STOAT_DOWN_TIMEOUT_SECS")
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_POWERDOWN_TIMEOUT)
}

/// Escalates until QEMU is gone, then makes sure its network process (passt) went too;
/// returns how it went (for the log).
fn stop(dir: &std::path::Path, pid: u32, stored: &vm::StoredVm, grace: Duration) -> &'static str {
    let how = stop_qemu(dir, pid, stored, grace);
    if !qemu::launch::is_qemu_of(pid, dir) {
        // passt ends by itself once QEMU's connection closes; a short wait, then by PID.
        let paths = stored.files().qemu();
        qemu::passt::wait_gone(&paths, Duration::from_secs(1));
        qemu::passt::stop(&paths);
    }
    how
}

fn stop_qemu(
    dir: &std::path::Path,
    pid: u32,
    stored: &vm::StoredVm,
    grace: Duration,
) -> &'static str {
    if let Ok(mut qmp) = connect_qmp(stored) {
        if qmp.system_powerdown().is_ok() && qemu::launch::wait_stopped(dir, pid, grace) {
            return "powered off";
        }
        if qmp.quit().is_ok() && qemu::launch::wait_stopped(dir, pid, FORCE_STEP_TIMEOUT) {
            return "quit";
        }
    }
    if qemu::launch::terminate(dir, pid) && qemu::launch::wait_stopped(dir, pid, FORCE_STEP_TIMEOUT)
    {
        return "terminated";
    }
    "still stopping"
}
