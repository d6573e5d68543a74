//! Whether QEMU runs a VM, and a VM that must be running: loading it (`not_found`,
//! `broken`, then `not_running`) and opening its QMP monitor.

use std::path::Path;
use std::time::Duration;

use crate::qemu::{self, Qmp};
use crate::{Error, Result, Root};

use super::{StoredVm, VmDir};

/// How long to wait for QMP to accept and greet.
const QMP_TIMEOUT: Duration = Duration::from_secs(10);

/// Loads a VM that must be running: `not_found`, `broken`, then `not_running`.
pub fn load_running(root: &Root, name: &str) -> Result<(StoredVm, u32)> {
    let stored = super::load_ok(root, name)?;
    match stored.running_pid() {
        Some(pid) => Ok((stored, pid)),
        None => Err(Error::NotRunning { name: stored.name }),
    }
}

/// Opens this VM's QMP monitor.
pub fn connect_qmp(stored: &StoredVm) -> Result<Qmp> {
    Ok(Qmp::connect(&stored.files().qmp(), QMP_TIMEOUT)?)
}

/// The pid of the QEMU running the VM in `dir`, or None; a stale pidfile is removed. One
/// implementation, the QEMU launcher's.
pub fn running_pid(dir: &Path) -> Option<u32> {
    qemu::running(&VmDir::at(dir).qemu())
}
