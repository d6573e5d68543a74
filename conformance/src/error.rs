//! Owns [`HarnessError`]: the suite itself failed (sandbox, spawn, report I/O).
//!
//! Never used for a SUT that breaks the contract; that is a [`crate::Finding`].

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("cannot prepare the sandbox: {0}")]
    Sandbox(#[source] std::io::Error),
    #[error("cannot start the system under test `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("i/o on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {message}")]
    BadInput { path: PathBuf, message: String },
    #[error("the fake tools binary was not found (looked for {0}); pass --fakes PATH")]
    FakesMissing(PathBuf),
    #[error("{0}")]
    Other(String),
    /// `repro` stops a scenario right after the invocation it reproduces.
    #[error("stopped after the invocation to reproduce")]
    Stopped,
}

impl HarnessError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HarnessError::Io {
            path: path.into(),
            source,
        }
    }
}
