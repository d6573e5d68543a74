//! The MCP DTOs: `mcp doctor` and `mcp install` data, and the tool results whose shape differs
//! from the CLI row (CopyResult, ForwardList, ApplyResult, wait's healthy).

use serde::Serialize;

/// One MCP client's configuration as `mcp doctor` found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpClient {
    pub client: String,
    pub path: String,
    pub installed: bool,
    pub command: String,
    /// False when the entry names a different binary than the running one.
    pub current: bool,
}

/// `mcp doctor` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpDoctorData {
    pub contract: u32,
    pub version: String,
    pub transport: String,
    pub binary: String,
    pub clients: Vec<McpClient>,
}

/// `mcp install` data: `json` is the entry written, as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpInstallData {
    pub client: String,
    pub path: String,
    pub json: String,
}

/// MCP `copy_to` / `copy_from` result: `local` is the resolved host path inside the VM's
/// export; `to_remote` is true for copy_to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyResult {
    pub vm: String,
    pub local: String,
    pub remote: String,
    pub to_remote: bool,
}

/// MCP `forward` result: the VM's forwards after the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForwardList {
    pub forwards: Vec<super::Forward>,
}

/// MCP `apply_recipes` result: the VM and its stored per-recipe state after the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApplyResult {
    pub vm: String,
    pub recipes_detail: Vec<super::RecipeDetail>,
}

/// MCP `wait` result: whether the VM reached the state asked for in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WaitResult {
    pub healthy: bool,
}
