//! How long operations report progress and learn they were cancelled, without knowing
//! whether the caller prints JSON lines, prose, or nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use stoat_wire::dto::{LogData, ProgressData, ProjectRunVm, StageData};

/// Receives non-terminal events; the CLI turns them into lines or prose.
pub trait EventSink: Send + Sync {
    fn progress(&self, data: &ProgressData);
    fn stage(&self, data: &StageData);
    fn log(&self, data: &LogData);
    /// One VM of a project fan-out starting or ending (a `vm` event).
    fn vm(&self, _data: &ProjectRunVm) {}
    /// A remark for a human watching (never part of the wire).
    fn note(&self, _text: &str) {}
}

/// A sink that drops everything.
pub struct NullSink;

impl EventSink for NullSink {
    fn progress(&self, _: &ProgressData) {}
    fn stage(&self, _: &StageData) {}
    fn log(&self, _: &LogData) {}
}

/// A cancellation flag shared between the signal handler and the work it interrupts.
#[derive(Clone, Default, Debug)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Marks the work cancelled.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// The flag itself, for a signal handler to set (async-signal-safe: a plain store).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    /// Returns whether the work was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Fails with [`crate::Error::Canceled`] once cancelled.
    pub fn check(&self) -> crate::Result<()> {
        if self.is_cancelled() {
            Err(crate::Error::Canceled)
        } else {
            Ok(())
        }
    }
}
