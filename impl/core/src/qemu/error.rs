//! The typed errors of the `qemu` module: one enum, one variant per way that
//! starting or talking to QEMU can fail. It owns no mapping to wire codes (the
//! core's error table does that) and never formats a console password.

use std::path::PathBuf;
use std::time::Duration;

/// Everything `qemu::*` can fail with. The comment on each variant names the
/// contract code the lead's error table is expected to map it to.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// `qemu_missing`: the QEMU binary could not be executed at all.
    #[error("{binary} not found or not executable: {reason}")]
    QemuMissing { binary: String, reason: String },

    /// `qemu_start_failed`: QEMU ran but exited non-zero (or left no pidfile).
    /// `stderr` is QEMU's own message, trimmed; `hint` says what to do when
    /// the cause is known (no graphical display).
    #[error("qemu failed to start: {stderr}{}", hint.map(|h| format!(" ({h})")).unwrap_or_default())]
    QemuStartFailed {
        stderr: String,
        hint: Option<&'static str>,
    },

    /// `qemu_start_failed`: the network (passt) could not listen on host port `port`, which
    /// another program took after stoat's check. `detail` is passt's own words, as the
    /// message of a plain [`QemuError::QemuStartFailed`] of passt's would carry them.
    #[error("qemu failed to start: the network (passt) did not start: {detail}")]
    HostPortTaken { port: u16, detail: String },

    /// `kvm_unusable`: STOAT_ACCEL=kvm (the default) but /dev/kvm cannot be
    /// opened read-write. `reason` is the OS error.
    #[error(
        "KVM is not usable: {device}: {reason} (set STOAT_ACCEL=tcg to use software emulation)"
    )]
    KvmUnusable { device: PathBuf, reason: String },

    /// `invalid_spec` (usage): STOAT_ACCEL holds something other than kvm or tcg.
    #[error("STOAT_ACCEL must be kvm or tcg, not {value:?}")]
    UnknownAccel { value: String },

    /// `invalid_spec`: a value cannot be put on QEMU's command line safely
    /// (relative path, `=` where QEMU would read a key, a socket path too long
    /// for sockaddr_un, a path that is not UTF-8...).
    #[error("cannot pass {what} to QEMU: {value:?}: {reason}")]
    InvalidOptionValue {
        what: &'static str,
        value: String,
        reason: &'static str,
    },

    /// `monitor_unreachable`: the QMP socket is missing, refuses connections,
    /// or QEMU closed the connection.
    /// The message names the socket's file only: a host path never reaches the wire.
    #[error(
        "QEMU monitor unreachable ({}): {reason}",
        socket.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    )]
    MonitorUnreachable { socket: PathBuf, reason: String },

    /// `monitor_rejected`: QEMU answered the command with an error (QMP
    /// `error` object, or text from a human-monitor command that fails).
    #[error("QEMU refused {command}: {desc}")]
    MonitorRejected {
        command: String,
        class: String,
        desc: String,
    },

    /// `timeout`: no answer from the monitor within the deadline. The
    /// connection is in an unknown state afterwards: drop it.
    #[error("QEMU monitor did not answer {command} within {after:?}")]
    MonitorTimeout { command: String, after: Duration },

    /// `internal`: the monitor said something that is not QMP.
    #[error("QEMU monitor protocol error: {detail}")]
    MonitorProtocol { detail: String },

    /// `internal`: a local file operation (pidfile...) failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl QemuError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        QemuError::Io {
            context: context.into(),
            source,
        }
    }
}
