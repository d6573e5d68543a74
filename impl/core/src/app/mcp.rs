//! `mcp doctor` and `mcp install <client>`: which MCP clients have stoat's entry, and adding
//! or refreshing it (`crate::mcp_config` owns the clients' files). `binary` is the executable
//! the entry must name, the running one for the CLI.

use std::path::Path;

use stoat_wire::dto::{McpDoctorData, McpInstallData};

use super::Session;
use crate::{mcp_config, Result};

/// `mcp doctor`.
pub fn doctor(s: &Session, binary: &Path) -> Result<McpDoctorData> {
    mcp_config::doctor(&s.env, binary)
}

/// `mcp install <client>`.
pub fn install(s: &Session, binary: &Path, client: &str) -> Result<McpInstallData> {
    mcp_config::install(&s.env, binary, client)
}
