//! The `capabilities` report (schema 1).
//!
//! Implements json-v3#capabilities. Every list is `[]` when empty.

use serde::Serialize;

/// Host facts of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityHost {
    pub os: String,
    pub arch: String,
    /// `available`, `absent` or `unknown`.
    pub project_state: String,
}

/// The stored snapshot of the target VM, when one was named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityTarget {
    pub name: String,
    pub mode: String,
    pub agent_access: String,
}

/// Who enforces `agent_access`, and on which CLI commands it is not enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessPolicy {
    pub mcp_agent_access_enforced: bool,
    pub cli_agent_access_enforced: bool,
    pub cli_commands: Vec<String>,
}

/// A reason or limit code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityCode {
    pub code: String,
}

/// One observation behind an entry's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    pub kind: String,
    pub source: String,
    pub result: String,
}

/// One profile or capability: `supported`, `limited`, `unsupported` or `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityEntry {
    pub name: String,
    pub status: String,
    pub scope: String,
    pub requirements: Vec<String>,
    pub limits: Vec<CapabilityCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<CapabilityCode>,
    pub evidence: Vec<Evidence>,
}

/// `capabilities` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityReport {
    pub schema: u32,
    pub stoat_version: String,
    pub host: CapabilityHost,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<CapabilityTarget>,
    pub access_policy: AccessPolicy,
    pub profiles: Vec<CapabilityEntry>,
    pub capabilities: Vec<CapabilityEntry>,
    pub unavailable: Vec<CapabilityEntry>,
}
