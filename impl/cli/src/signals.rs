//! SIGINT/SIGTERM: cancel the running operation; if it has not answered within a short grace
//! period, answer for it (`canceled` under --json) and exit 1.
//!
//! Implements design#signals: a cancelled `--json` run still ends with exactly
//! one result line.

use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use stoat_core::Cancel;
use stoat_wire::{ErrorCode, Terminator, WireError};

/// How long an operation gets to clean up (remove a .part file, stop a child) and answer.
const GRACE: Duration = Duration::from_secs(5);

/// Starts the signal thread.
pub fn install(cancel: Cancel, terminator: Option<Terminator>) {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        let Some(signal) = signals.forever().next() else {
            return;
        };
        cancel.cancel();
        let name = if signal == SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        // A second signal, or the grace period running out, ends the process now.
        let deadline = std::time::Instant::now() + GRACE;
        while std::time::Instant::now() < deadline {
            if signals.pending().next().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let error = WireError::new(ErrorCode::Canceled, format!("canceled by {name}"));
        match &terminator {
            Some(terminator) => {
                terminator.terminate(&error);
            }
            None => eprintln!("stoat: canceled by {name}"),
        }
        std::process::exit(1);
    });
}
