//! Project DTOs: `init`, `status` and the ProjectRun of a fan-out.
//!
//! Implements json-v3#types (InitResult, Drift, ProjectStatus, ProjectRun).

use serde::Serialize;

/// `init` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitResult {
    pub path: String,
    pub project: String,
    pub gitignore_updated: bool,
}

/// One field whose declared value differs from the VM's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    pub field: String,
    pub from: String,
    pub to: String,
    pub needs_restart: bool,
}

/// One declared VM in `status`; `state` is absent when it does not exist yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectStatusVm {
    pub key: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub health: String,
    pub drift: Vec<Drift>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `status` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectStatus {
    pub project: String,
    pub dir: String,
    pub vms: Vec<ProjectStatusVm>,
}

/// One declared VM's outcome in a fan-out: `ok`, `error` or `skipped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectRunVm {
    pub key: String,
    pub name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What an `ok` did to this VM ("started", "already running", "not created"), for the
    /// human table only: the wire's status is the contract's `ok`.
    #[serde(skip)]
    pub done: Option<&'static str>,
}

/// The data of `up`, `down`, `apply`, `wait` and `rm` at project scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectRun {
    pub project: String,
    pub vms: Vec<ProjectRunVm>,
}
