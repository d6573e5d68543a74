//! `down`: stop a VM's QEMU. QMP `system_powerdown` (the guest shuts down cleanly), a bounded
//! wait, then QMP `quit`, then SIGTERM by PID. Unlike upstream (docs/contract.md behaviour#qemu) it waits for
//! the process to go, so the result reports `stopped` whenever QEMU really exited. The VM's
//! reused ssh connection is ended first.

use std::time::Duration;

use stoat_wire::dto::Vm;

use super::{connect_qmp, load_running};
use crate::host::ssh_mux;
use crate::qemu;
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
    let _guard = lock::exclusive(&dir.join(".lock"))?;
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

fn powerdown_timeout(env: &Env) -> Duration {
    env.get("STOAT_DOWN_TIMEOUT_SECS")
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_POWERDOWN_TIMEOUT)
}

/// Escalates until QEMU is gone; returns how it went (for the log).
fn stop(dir: &std::path::Path, pid: u32, stored: &vm::StoredVm, grace: Duration) -> &'static str {
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
