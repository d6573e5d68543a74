//! The real tier's helpers: the test guest that `STOAT_REAL_GUEST` names, one boot at a time
//! per test binary, and a guard that stops a real QEMU by its PID whatever happened.
//!
//! Real-tier tests are `#[ignore]`d, so they run only when asked for (`--include-ignored`, as
//! `make test` does); asked for without the guest, they fail rather than pass unseen.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The guest build directory `STOAT_REAL_GUEST` names (the OUTDIR of
/// `conformance/guest/build.sh`); panics naming the fix when it is unset.
pub fn real_guest_dir() -> PathBuf {
    std::env::var_os("STOAT_REAL_GUEST")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .expect("set STOAT_REAL_GUEST to the guest build directory (conformance/guest/build.sh)")
}

/// The real test guest, and this test's turn to boot it: real-tier tests in one binary run
/// one at a time (the hosts this runs on have few cores, shared with other guests).
pub struct RealGuest {
    /// The cloud image, `<STOAT_REAL_GUEST>/stoat-testguest-cloud.qcow2`.
    pub image: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

/// Waits for this test's turn and returns the guest [`real_guest_dir`] holds.
pub fn real_guest() -> RealGuest {
    static TURN: Mutex<()> = Mutex::new(());
    let image = real_guest_dir().join("stoat-testguest-cloud.qcow2");
    assert!(image.is_file(), "no guest image at {}", image.display());
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    RealGuest { image, _turn: turn }
}

/// Stops a real QEMU by the PID in `<vm dir>/qemu.pid` on drop, and its network process by
/// the PID in `<vm dir>/passt.pid`, once `/proc` shows that PID is this VM's (its cmdline
/// names the VM directory).
pub struct RealGuard(pub PathBuf);

impl Drop for RealGuard {
    fn drop(&mut self) {
        for pidfile in ["qemu.pid", "passt.pid"] {
            kill_pidfile_of(&self.0, pidfile);
        }
    }
}

/// SIGKILL to the PID in `<dir>/<pidfile>` when its cmdline names `<dir>/`.
pub fn kill_pidfile_of(dir: &std::path::Path, pidfile: &str) {
    if let Some(pid) = std::fs::read_to_string(dir.join(pidfile))
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        .filter(|pid| *pid > 1)
    {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&format!("{}/", dir.display())) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Runs `f` and prints how long it took (a `TIMING` line in the test's output, for people
/// reading a slow run; nothing asserts on it).
pub fn timed<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    println!("TIMING {label}: {:.2?}", started.elapsed());
    out
}
