//! Host-side DTOs: doctor checks, prune items, snapshots, logs, screenshots.
//!
//! The host paths here (`PruneItem.path`, `ScreenshotData.path`) are ones the contract shows.

use serde::Serialize;

/// One doctor check; `fix` is an argv to run, `[]` when there is nothing to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    pub fix: Vec<String>,
    pub optional: bool,
}

/// `doctor` data: `healthy` is the host's readiness, not the command's success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorData {
    pub healthy: bool,
    pub checks: Vec<Check>,
}

/// One thing `prune` would delete (or deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneItem {
    pub class: String,
    pub path: String,
}

/// `prune` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneData {
    pub dry_run: bool,
    pub items: Vec<PruneItem>,
}

/// One qcow2 snapshot; the `*_display` fields are qemu's own text, opaque.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub tag: String,
    pub vm_state: bool,
    pub size_display: String,
    pub created_display: String,
}

/// `snapshot` data when listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotListData {
    pub vm: String,
    pub snapshots: Vec<Snapshot>,
}

/// `snapshot` data after save, restore or delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotActData {
    pub vm: String,
    pub tag: String,
    pub action: String,
}

/// `logs` data: with a VM it names the VM and the log; without, stoat's own log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogsData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub which: Option<String>,
    pub lines: Vec<String>,
}

/// `screenshot` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScreenshotData {
    pub vm: String,
    pub path: String,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
}
