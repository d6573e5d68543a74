//! Owns where a `repro` run stops: the invocation to stop after, and what it made there (the
//! kept sandbox and the exact call), shared by the case that runs it and the `repro` verb.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::capture::Capture;

/// `repro`'s target: stop the scenario right after this invocation, keeping its sandbox.
#[derive(Default)]
pub struct Stop {
    /// The invocation to stop after (0-based; `None`: after the scenario's last).
    pub at: Option<usize>,
    /// Filled in when the scenario made that invocation.
    pub reached: Mutex<Option<Reached>>,
}

/// The invocation `repro` made, with what a person needs to make it again by hand.
#[derive(Clone, Debug)]
pub struct Reached {
    /// The sandbox, kept.
    pub root: PathBuf,
    pub cwd: PathBuf,
    /// The whole environment the SUT got (it starts from an empty one).
    pub env: Vec<(String, String)>,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub capture: Capture,
}

/// Shared by the cases of a `repro` run.
pub type StopAt = Arc<Stop>;
