//! The runtime: starting and stopping a VM's QEMU, waiting for it, and reaching into a running
//! guest (exec, cp, screenshot, online snapshots). Implements json-v3#per-command-data with the behaviour of docs/contract.md behaviour#qemu and behaviour#ssh and behaviour#host-commands

pub mod cp;
pub mod cp_stream;
pub mod down;
pub mod exec;
pub mod screenshot;
pub mod up;
pub mod wait;

use std::time::Duration;

use crate::qemu::{self, Qmp, VmPaths};
use crate::ssh::mux::Mux;
use crate::vm::{self, StoredVm};
use crate::{Error, Result, Root};

/// How long to wait for QMP to accept and greet.
pub const QMP_TIMEOUT: Duration = Duration::from_secs(10);

/// Loads a VM that must be running: `not_found`, `broken`, then `not_running`.
pub fn load_running(root: &Root, name: &str) -> Result<(StoredVm, u32)> {
    let stored = vm::load_ok(root, name)?;
    match qemu::running(&stored.dir) {
        Some(pid) => Ok((stored, pid)),
        None => Err(Error::NotRunning { name: stored.name }),
    }
}

/// Opens this VM's QMP monitor.
pub fn connect_qmp(stored: &StoredVm) -> Result<Qmp> {
    Ok(Qmp::connect(
        &VmPaths::new(&stored.dir).qmp_socket,
        QMP_TIMEOUT,
    )?)
}

/// A running VM made ready for one ssh or scp call.
pub(crate) struct Reached {
    pub stored: StoredVm,
    /// stoat's private key for the guest.
    pub key: std::path::PathBuf,
    /// The client's path (ssh or scp).
    pub client: std::path::PathBuf,
    pub mux: Mux,
}

/// How a call that reaches into the guest first learns the guest can take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstContact {
    /// Log in first (`login`), unless the VM's master answers: for a call that may do half
    /// its work before a connection drops (scp).
    LogIn,
    /// The call's own login is the check: it tells a failure before any session apart and
    /// tries again (exec).
    ItsOwnLogin,
}

/// Loads `name`, which must be running, finds `client` (ssh or scp), and, for
/// [`FirstContact::LogIn`], waits up to `reach_wait` until stoat can log in, unless the VM's
/// reused connection's master answers (it holds a live login). A login made here becomes
/// that master, so the call that follows goes through it. What exec, cp and `cp -` share.
pub(crate) fn reach(
    root: &Root,
    env: &crate::Env,
    name: &str,
    client: &str,
    first: FirstContact,
    reach_wait: Duration,
    cancel: &crate::Cancel,
) -> Result<Reached> {
    let (stored, _pid) = load_running(root, name)?;
    let key = crate::keys::ensure(root, env)?;
    let client = env.require_tool(client, "openssh-client")?;
    let mux = Mux::for_vm(&key, &stored);
    if first == FirstContact::LogIn && !mux.answers() {
        crate::ssh::login::until_reachable(root, env, &stored, reach_wait, cancel)?;
    }
    Ok(Reached {
        stored,
        key,
        client,
        mux,
    })
}

#[cfg(test)]
mod tests {
    use crate::qemu::QemuError;
    use crate::Error;
    use stoat_wire::ErrorCode;

    #[test]
    fn qemu_errors_map_to_their_contract_codes() {
        let cases = [
            (
                QemuError::QemuMissing {
                    binary: "q".into(),
                    reason: "r".into(),
                },
                ErrorCode::QemuMissing,
            ),
            (
                QemuError::QemuStartFailed {
                    stderr: "boom".into(),
                    hint: None,
                },
                ErrorCode::QemuStartFailed,
            ),
            (
                QemuError::KvmUnusable {
                    device: "/dev/kvm".into(),
                    reason: "r".into(),
                },
                ErrorCode::KvmUnusable,
            ),
            (
                QemuError::UnknownAccel { value: "x".into() },
                ErrorCode::InvalidSpec,
            ),
            (
                QemuError::InvalidOptionValue {
                    what: "w",
                    value: "v".into(),
                    reason: "r",
                },
                ErrorCode::InvalidSpec,
            ),
            (
                QemuError::MonitorUnreachable {
                    socket: "/s".into(),
                    reason: "r".into(),
                },
                ErrorCode::MonitorUnreachable,
            ),
            (
                QemuError::MonitorRejected {
                    command: "c".into(),
                    class: "k".into(),
                    desc: "d".into(),
                },
                ErrorCode::MonitorRejected,
            ),
            (
                QemuError::MonitorTimeout {
                    command: "c".into(),
                    after: std::time::Duration::from_secs(1),
                },
                ErrorCode::Timeout,
            ),
            (
                QemuError::MonitorProtocol { detail: "d".into() },
                ErrorCode::Internal,
            ),
        ];
        for (qemu, code) in cases {
            assert_eq!(Error::from(qemu).code(), code);
        }
        let start = Error::from(QemuError::QemuStartFailed {
            stderr: "boom".into(),
            hint: None,
        });
        assert_eq!(start.to_string(), "qemu failed to start: boom");
    }
}
