//! SIGINT/SIGTERM: cancel the running operation, forward the cancel to the tools it runs,
//! and let the operation answer once they have ended and it has undone (or finished) what
//! they started. `canceled` then means nothing changed.
//!
//! The signal handler itself sets the cancel flag; a thread then does the rest (stops the
//! tools, watches the operation, answers for it when it must).
//!
//! The signals are held (blocked, so they stay pending) from before `main` until the
//! handler is in place, so a signal at any instant still ends a `--json` run with exactly
//! one result line. Only a second signal, an operation that stays quiet (no tool running, no
//! undo in progress, and none seen since the cancel: it is blocked in stoat itself, on a read
//! say) for [`QUIET`], or one that does not stop within a long grace period, makes this
//! thread answer for it and exit: that is a kill, which leaves each command done or not done.

use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use stoat_core::Cancel;
use stoat_wire::{ErrorCode, Terminator, WireError};

/// The most an operation gets to stop its tools, undo what it started and answer by itself.
const GRACE: Duration = Duration::from_secs(30);

/// How long an operation may stay quiet after the cancel (no tool of its own running, no undo
/// in progress) before this thread answers for it: an operation that is not blocked answers
/// far sooner, and a blocked one must not hold a SIGTERM for [`GRACE`]
/// (docs/decisions/runtime.md "cancellation").
const QUIET: Duration = Duration::from_millis(1500);

/// Blocks SIGINT and SIGTERM. Runs before `main` (see main.rs), when the process has one
/// thread; [`install`] unblocks them.
pub fn hold() {
    set_mask(libc::SIG_BLOCK);
    stoat_core::app::process::pause("first-instruction");
}

#[allow(unsafe_code)] // the signal mask (docs/decisions/unsafe.md)
fn set_mask(how: libc::c_int) {
    // SAFETY: plain signal-mask calls on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Puts the handler in place, then lets held signals through; starts the signal thread.
/// The handler itself sets the cancel flag, before the thread wakes: a tool that shares the
/// terminal's process group (ssh) dies of the same Ctrl-C, and the work that sees it die must
/// already read the cancel, or it answers with the tool's status instead of `canceled`.
pub fn install(cancel: Cancel, terminator: Option<Terminator>) {
    for signal in [SIGINT, SIGTERM] {
        let _ = signal_hook::flag::register(signal, cancel.flag());
    }
    let signals = Signals::new([SIGINT, SIGTERM]);
    set_mask(libc::SIG_UNBLOCK);
    let Ok(mut signals) = signals else {
        return;
    };
    std::thread::spawn(move || {
        let Some(signal) = signals.forever().next() else {
            return;
        };
        cancel.cancel();
        stoat_core::app::process::stop_all();
        let name = if signal == SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        // The operation answers by itself (and the process ends) unless a second signal
        // comes or it is still running when the grace period ends.
        // Once the operation was seen finishing work that decides its answer (a resize that
        // took, a launch), that answer follows the work: quiet afterwards (saving the record,
        // writing the answer on a starved host) is no reason to answer for it.
        let start = std::time::Instant::now();
        let mut last_busy = start;
        let mut committed = false;
        while start.elapsed() < GRACE {
            if signals.pending().next().is_some() {
                break;
            }
            committed |= stoat_core::app::process::finishing_now();
            if stoat_core::app::process::busy() {
                last_busy = std::time::Instant::now();
            } else if !committed && last_busy.elapsed() >= QUIET {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let error = WireError::new(
            ErrorCode::Canceled,
            format!("canceled by {name} before the command had stopped; like a kill, it is left done or not done"),
        );
        // --json: the contract's 1; a person's shell reads 130 as "interrupted" (output.rs).
        match &terminator {
            Some(terminator) => {
                terminator.terminate(&error);
                std::process::exit(1);
            }
            None => {
                eprintln!("stoat: {}", error.message);
                std::process::exit(130);
            }
        }
    });
}
