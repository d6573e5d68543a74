//! The VM and VMStatus DTOs, built only from [`VmFacts`], which cannot name a host path of
//! the VM's directory or the console password: no future field can leak them.
//!
//! Implements json-v3#types (VM, VMStatus) and "What is deliberately absent".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One port forward: host loopback port to guest port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Forward {
    pub host_port: u16,
    pub guest_port: u16,
}

/// A VM's state: only these three exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VmState {
    Stopped,
    Running,
    Broken,
}

/// The MCP permission level of a VM; each level includes the ones below it. The same words
/// name it on the wire, in vm.toml and in a request (`--agent-access`, MCP's `agent_access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentAccess {
    None,
    Observe,
    Manage,
    Exec,
}

impl AgentAccess {
    /// Every level, lowest first.
    pub const ALL: [AgentAccess; 4] = [
        AgentAccess::None,
        AgentAccess::Observe,
        AgentAccess::Manage,
        AgentAccess::Exec,
    ];

    /// Returns the wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentAccess::None => "none",
            AgentAccess::Observe => "observe",
            AgentAccess::Manage => "manage",
            AgentAccess::Exec => "exec",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<AgentAccess> {
        match text {
            "none" => Some(AgentAccess::None),
            "observe" => Some(AgentAccess::Observe),
            "manage" => Some(AgentAccess::Manage),
            "exec" => Some(AgentAccess::Exec),
            _ => None,
        }
    }
}

/// The display surface: a QEMU window or a VNC server; `""` on a broken VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Display {
    #[serde(rename = "window")]
    Window,
    #[serde(rename = "vnc")]
    Vnc,
    #[serde(rename = "")]
    Unknown,
}

/// What the wire may say about a stored VM. Deliberately has no accessor for the VM's
/// directory, disk, sockets, logs, base image, ISO path or console password.
pub trait VmFacts {
    fn name(&self) -> &str;
    fn os(&self) -> &str;
    fn mode(&self) -> &str;
    fn backend(&self) -> &str;
    fn cpus(&self) -> u32;
    fn ram_mb(&self) -> u32;
    fn disk(&self) -> &str;
    /// The user's own shared directory, as configured (the contract shows it).
    fn share(&self) -> &str;
    fn recipes(&self) -> Vec<String>;
    fn ssh_port(&self) -> u16;
    /// The account ssh connects as (never empty: `root` when none is configured).
    fn ssh_user(&self) -> &str;
    fn installed(&self) -> bool;
    fn forwards(&self) -> Vec<Forward>;
    fn allow_exec(&self) -> bool;
    fn agent_access(&self) -> AgentAccess;
    /// The absolute directory of the declaring stoat.toml, `""` outside a project.
    fn project(&self) -> &str;
    /// The declaration key in that stoat.toml, `""` outside a project.
    fn key(&self) -> &str;
}

/// What only a live look at the host can say about a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmLiveFacts {
    pub running: bool,
    pub display: Display,
    pub project_missing: bool,
}

/// The VM DTO. Build it with [`Vm::from_facts`] or [`Vm::broken`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Vm {
    pub name: String,
    pub os: String,
    pub mode: String,
    pub backend: String,
    pub state: VmState,
    pub cpus: u32,
    pub ram_mb: u32,
    pub disk: String,
    pub share: String,
    pub recipes: Vec<String>,
    pub ssh_port: u16,
    pub ssh_user: String,
    pub installed: bool,
    pub forwards: Vec<Forward>,
    pub allow_exec: bool,
    pub agent_access: AgentAccess,
    pub display: Display,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub project: String,
    pub key: String,
    pub project_missing: bool,
}

impl Vm {
    /// Returns the DTO of a VM whose vm.toml parsed.
    pub fn from_facts(facts: &impl VmFacts, live: VmLiveFacts) -> Vm {
        Vm {
            name: facts.name().to_owned(),
            os: facts.os().to_owned(),
            mode: facts.mode().to_owned(),
            backend: facts.backend().to_owned(),
            state: if live.running {
                VmState::Running
            } else {
                VmState::Stopped
            },
            cpus: facts.cpus(),
            ram_mb: facts.ram_mb(),
            disk: facts.disk().to_owned(),
            share: facts.share().to_owned(),
            recipes: facts.recipes(),
            ssh_port: facts.ssh_port(),
            ssh_user: facts.ssh_user().to_owned(),
            installed: facts.installed(),
            forwards: facts.forwards(),
            allow_exec: facts.allow_exec(),
            agent_access: facts.agent_access(),
            display: live.display,
            error: None,
            project: facts.project().to_owned(),
            key: facts.key().to_owned(),
            project_missing: live.project_missing,
        }
    }

    /// Returns the DTO of a VM whose vm.toml does not parse: its name, `state:"broken"`,
    /// the parse error, and zero values elsewhere. `allow_exec` and `agent_access` follow the
    /// absent-key rule (true and `manage`), not Go's zero values.
    pub fn broken(name: &str, error: impl Into<String>) -> Vm {
        Vm {
            name: name.to_owned(),
            os: String::new(),
            mode: String::new(),
            backend: String::new(),
            state: VmState::Broken,
            cpus: 0,
            ram_mb: 0,
            disk: String::new(),
            share: String::new(),
            recipes: Vec::new(),
            ssh_port: 0,
            ssh_user: String::new(),
            installed: false,
            forwards: Vec::new(),
            allow_exec: true,
            agent_access: AgentAccess::Manage,
            display: Display::Unknown,
            error: Some(error.into()),
            project: String::new(),
            key: String::new(),
            project_missing: false,
        }
    }
}

/// A VM's stored aggregate recipe health (not a live check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    Ok,
    Failed,
    Unknown,
}

/// Stored per-recipe state, as `get` shows it. Secret params are `<set>`/`<unset>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecipeDetail {
    pub name: String,
    pub applied: bool,
    pub version: String,
    pub at: String,
    pub health: Health,
    pub params: BTreeMap<String, Value>,
    pub outputs: BTreeMap<String, Value>,
}

/// The VMStatus DTO: the VM fields plus `health` and `recipes_detail`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmStatus {
    #[serde(flatten)]
    pub vm: Vm,
    pub health: Health,
    pub recipes_detail: Vec<RecipeDetail>,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture;
    impl VmFacts for Fixture {
        fn name(&self) -> &str {
            "work"
        }
        fn os(&self) -> &str {
            "alpine"
        }
        fn mode(&self) -> &str {
            "cloud"
        }
        fn backend(&self) -> &str {
            "cloudinit"
        }
        fn cpus(&self) -> u32 {
            4
        }
        fn ram_mb(&self) -> u32 {
            4096
        }
        fn disk(&self) -> &str {
            "8G"
        }
        fn share(&self) -> &str {
            ""
        }
        fn recipes(&self) -> Vec<String> {
            Vec::new()
        }
        fn ssh_port(&self) -> u16 {
            2200
        }
        fn ssh_user(&self) -> &str {
            "stoat"
        }
        fn installed(&self) -> bool {
            false
        }
        fn forwards(&self) -> Vec<Forward> {
            Vec::new()
        }
        fn allow_exec(&self) -> bool {
            true
        }
        fn agent_access(&self) -> AgentAccess {
            AgentAccess::Exec
        }
        fn project(&self) -> &str {
            ""
        }
        fn key(&self) -> &str {
            ""
        }
    }

    #[test]
    fn empty_lists_are_arrays_and_error_is_absent() {
        let live = VmLiveFacts {
            running: false,
            display: Display::Vnc,
            project_missing: false,
        };
        let json = serde_json::to_value(Vm::from_facts(&Fixture, live)).unwrap();
        assert_eq!(json["recipes"], serde_json::json!([]));
        assert_eq!(json["forwards"], serde_json::json!([]));
        assert_eq!(json["state"], "stopped");
        assert_eq!(json["display"], "vnc");
        assert!(json.get("error").is_none());
    }

    #[test]
    fn broken_vm_carries_error_and_empty_display() {
        let json = serde_json::to_value(Vm::broken("x", "bad toml")).unwrap();
        assert_eq!(json["state"], "broken");
        assert_eq!(json["display"], "");
        assert_eq!(json["error"], "bad toml");
        assert_eq!(json["recipes"], serde_json::json!([]));
    }
}
