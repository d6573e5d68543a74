//! The MCP-related DTOs the CLI prints: `mcp doctor` and `mcp install`.

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
