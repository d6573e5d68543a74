//! stoat-fakes: the fake host tools. ONE multi-call binary (`stoat-fake`) answering as
//! `ssh`, `scp`, `ssh-keygen`, `qemu-img`, `qemu-system-x86_64`, `xorriso` and `passt`, dispatching
//! on the name it was called by ([`dispatch`]). Scripted by data (`STOAT_FAKE_SCRIPT`, see
//! [`script`]) and logging every call as a JSON line (`STOAT_FAKE_LOG`, see [`log`]). The
//! script format is documented in docs/conformance-fakes.md and is stable. The conformance
//! suite's `stoat-fake` binary is this crate's entry point; the reference's test kit depends
//! on the crate too and builds that binary when a test first asks for it.
//!
//! Never reads the network; never touches anything outside the paths it is given.

#![deny(unsafe_code)]

pub mod bytes;
mod daemon;
pub mod dispatch;
pub mod keygen;
pub mod log;
pub mod passt;
pub mod qemu;
pub mod qemu_img;
pub mod qmp;
pub mod script;
pub mod ssh;
pub mod xorriso;

use std::io::Write as _;
use std::time::Duration;

/// The environment variable naming the script file.
pub const SCRIPT_ENV: &str = "STOAT_FAKE_SCRIPT";
/// The environment variable naming the JSON-lines call log.
pub const LOG_ENV: &str = "STOAT_FAKE_LOG";
/// The environment variable naming the file daemons append their pid to (for cleanup).
pub const PIDS_ENV: &str = "STOAT_FAKE_PIDS";
/// The environment variable naming the file the fake qemu writes its argv to, one argument a
/// line (relative: beside its `-pidfile`). Unset: no file.
pub const QEMU_ARGV_ENV: &str = "STOAT_FAKE_QEMU_ARGV";
/// The environment variable that, set to `1`, makes the fake qemu open neither its QMP nor its
/// human-monitor socket (a QEMU only signals reach).
pub const QEMU_NO_MONITOR_ENV: &str = "STOAT_FAKE_QEMU_NO_MONITOR";
/// The environment variable that makes the fake qemu write about that many bytes of numbered
/// lines to a socket console, then `stoat-fake: console done`. Unset: a silent console.
pub const QEMU_CONSOLE_BYTES_ENV: &str = "STOAT_FAKE_QEMU_CONSOLE_BYTES";
/// The environment variable that, set to `1`, does what the script's `qemu.no_ssh` does.
pub const QEMU_NO_SSH_ENV: &str = "STOAT_FAKE_QEMU_NO_SSH";
/// The environment variable that, set to `1`, makes the fake `ssh` and `scp` first reach the
/// server as the real clients do (an SSH banner on the port they name, else exit 255): for a
/// caller testing how a client waits for a guest. Unset, they answer without a server.
pub const SSH_CONNECT_ENV: &str = "STOAT_FAKE_SSH_CONNECT";

pub(crate) fn max_lifetime() -> Duration {
    let secs = std::env::var("STOAT_FAKE_MAX_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// Writes bytes to stdout and stderr as scripted.
pub(crate) fn emit(stdout: &[u8], stderr: &[u8]) {
    let _ = std::io::stdout().write_all(stdout);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(stderr);
    let _ = std::io::stderr().flush();
}
