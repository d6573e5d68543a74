//! Test-only fault points. In a debug build, `STOAT_FAULT=<point>` makes the process SIGKILL
//! itself when it reaches the point of that name, so a test can check what a kill at exactly
//! that moment leaves behind (nothing half-done); a pause point stops the process there
//! instead (SIGSTOP), so a test can signal it at exactly that moment and let it go on.
//! Release builds compile the points away.
//! This is the one place core reads the process environment: a test hook, not behaviour.

#[cfg(debug_assertions)]
use rustix::process::Signal;

/// Dies here with SIGKILL when `STOAT_FAULT` names this point (debug builds only).
pub fn point(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("STOAT_FAULT").is_some_and(|v| v == name) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::KILL);
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// Stops here with SIGSTOP, until a SIGCONT, when `STOAT_FAULT` names this point (debug
/// builds only).
pub fn pause(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("STOAT_FAULT").is_some_and(|v| v == name) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::STOP);
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}
