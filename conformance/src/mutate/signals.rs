//! Owns passing SIGINT and SIGTERM on to the wrapped SUT. A signal meant for the SUT (a
//! supervisor's SIGTERM to the process it started, a `kill -INT`) reaches the kit, which is
//! that process: without this the kit would die of it and the SUT would run on, unanswered.
//! The kit keeps reading the SUT's answer and exits with its status, as for any other run.
//!
//! The handlers are in place before the SUT is spawned (a signal that comes while it starts
//! is held and passed on once its pid is known; exec resets them to the default in the
//! child). The SUT stays in the kit's process group (so a timeout's kill of the group stops
//! both): a signal sent to the whole group therefore reaches the SUT twice, once directly
//! and once passed on.

use std::sync::atomic::{AtomicI32, Ordering};

/// The SUT's pid while it runs; 0 before it starts and once it was reaped.
static SUT: AtomicI32 = AtomicI32::new(0);
/// A signal that came before the SUT's pid was known (0: none).
static HELD: AtomicI32 = AtomicI32::new(0);

#[allow(unsafe_code)]
extern "C" fn pass_on(signal: libc::c_int) {
    let pid = SUT.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe; the pid is the child this kit started and
        // has not reaped yet.
        unsafe {
            libc::kill(pid, signal);
        }
    } else {
        HELD.store(signal, Ordering::SeqCst);
    }
}

/// From now on SIGINT and SIGTERM sent to the kit go to the SUT (held until it started).
#[allow(unsafe_code)]
pub(super) fn pass_on_to_sut() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler that only touches atomics and calls
        // kill(2); SA_RESTART so the kit's own reads and waits carry on.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = pass_on as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The SUT runs as `pid`: a signal held so far goes to it now.
pub(super) fn sut_started(pid: u32) {
    SUT.store(pid as i32, Ordering::SeqCst);
    let held = HELD.swap(0, Ordering::SeqCst);
    // The child just spawned.
    let target = rustix::process::Pid::from_raw(pid as i32)
        .zip(rustix::process::Signal::from_named_raw(held));
    if let Some((pid, signal)) = target {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The SUT was reaped: its pid may be reused, so nothing is passed on any more.
pub(super) fn sut_gone() {
    SUT.store(0, Ordering::SeqCst);
}

/// Ends the kit the way the SUT ended: killed by `signal` (its default action restored).
#[allow(unsafe_code)]
pub(super) fn die_of(signal: i32) {
    // SAFETY: restoring the default action and raising the signal at ourselves.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
