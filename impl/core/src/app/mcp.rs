//! `mcp doctor` and `mcp install <client>`: which MCP clients have stoat's entry, and adding
//! or refreshing it (`crate::mcp_config` owns the clients' files). `binary` is the executable
//! the entry must name, the running one for the CLI. Also the MCP server's access check: a
//! VM's effective agent_access against the level a tool needs (docs/contract.md
//! behaviour#mcp; json-v3#per-command-data: agent_access).

use std::path::Path;

use stoat_wire::dto::{AgentAccess, McpDoctorData, McpInstallData};

use super::Session;
use crate::hint::{Op, Said, Setting, Step, Value};
use crate::project::Project;
use crate::vm::{self, Loaded};
use crate::{mcp_config, Error, Result};

/// `mcp doctor`.
pub fn doctor(s: &Session, binary: &Path) -> Result<McpDoctorData> {
    mcp_config::doctor(&s.env, binary)
}

/// `mcp install <client>`.
pub fn install(s: &Session, binary: &Path, client: &str) -> Result<McpInstallData> {
    mcp_config::install(&s.env, binary, client)
}

/// Returns a VM's effective agent_access. A broken vm.toml cannot say, so it counts as
/// `observe`: an agent may see that it is broken and nothing more.
pub fn agent_access(s: &Session, name: &str) -> Result<AgentAccess> {
    match vm::load(s.root()?, name)? {
        Loaded::Ok(stored) => Ok(stored.config.agent_access()),
        Loaded::Broken { .. } => Ok(AgentAccess::Observe),
    }
}

/// Refuses `tool` on `vm` with `access_denied` unless the VM's agent_access reaches `need`.
pub fn require_access(s: &Session, tool: &str, vm: &str, need: AgentAccess) -> Result<()> {
    require(tool, vm, agent_access(s, vm)?, need)
}

/// Refuses a project tool unless every VM the project declares that exists allows `need`: a
/// project tool must not reach a VM its own tool would be refused.
pub fn require_project_access(
    s: &Session,
    tool: &str,
    project: &Project,
    need: AgentAccess,
) -> Result<()> {
    for decl in &project.vms {
        match agent_access(s, &decl.name) {
            Ok(have) => require(tool, &decl.name, have, need)?,
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Refuses with `access_denied` unless `have` reaches `need`.
fn require(tool: &str, vm: &str, have: AgentAccess, need: AgentAccess) -> Result<()> {
    if have >= need {
        return Ok(());
    }
    let raise = Step::on(Op::Update, vm).with(
        Setting::AgentAccess,
        Some(Value::Text(need.as_str().to_owned())),
    );
    Err(Error::spelled(
        Error::AccessDenied,
        Said::text(format!(
            "{tool} needs agent_access {} on {vm}, which allows {}; a person can raise it with ",
            need.as_str(),
            have.as_str()
        ))
        .step(raise),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_allows_itself_and_below() {
        use AgentAccess::*;
        assert!(None < Observe && Observe < Manage && Manage < Exec);
        assert!(require("exec", "w", Manage, Exec).is_err());
        assert!(require("exec", "w", Exec, Exec).is_ok());
        assert!(require("vm_status", "w", None, Observe).is_err());
        let err = require("stop", "w", Observe, Manage).unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::AccessDenied);
    }
}
