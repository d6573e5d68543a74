//! The Guest DTO (`guest ls`, `guest show`): a guest OS registry entry.
//!
//! `svc` and `cmd` hold template strings; `backend` passes each backend table through opaque.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// How a guest installs packages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestPkg {
    pub setup: String,
    pub install: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub runtime_packages: BTreeMap<String, String>,
}

/// One guest OS definition; `source` is `bundled`, `user` or `bundled+user`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guest {
    pub name: String,
    pub init: String,
    pub shell: String,
    pub installer: String,
    pub default_backend: String,
    pub default_ssh_user: String,
    pub escalate: Vec<String>,
    pub capabilities: Vec<String>,
    pub aliases: Vec<String>,
    pub filename_hints: Vec<String>,
    pub seed_packages: Vec<String>,
    pub pkg: GuestPkg,
    pub svc: BTreeMap<String, String>,
    pub cmd: BTreeMap<String, String>,
    pub backend: BTreeMap<String, Value>,
    pub source: String,
}

/// `guest ls` data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuestListData {
    pub guests: Vec<Guest>,
}

/// `guest show` data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuestShowData {
    pub guest: Guest,
}
