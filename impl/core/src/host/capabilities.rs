//! `capabilities [VM]`: the schema-1 capability report (json-v3#capabilities).
//!
//! It reads host probes (PATH lookups, opening /dev/kvm, the CPU's flags) and at most one VM's
//! stored vm.toml.
//! It never starts, connects to, or mutates a VM.

use std::path::Path;

use stoat_wire::dto::{
    AccessPolicy, AgentAccess, CapabilityCode, CapabilityEntry, CapabilityHost, CapabilityReport,
    CapabilityTarget, Evidence,
};

use crate::vm::Mode;
use crate::vm::{self, Loaded};
use crate::{Env, Result, Root};

use super::doctor::Accel;

/// The report's schema number.
pub const SCHEMA: u32 = 1;

/// What `capabilities` needs from its caller.
pub struct Request<'a> {
    pub env: &'a Env,
    pub root: &'a Root,
    /// Where to look for a stoat.toml (walking up); `None` when the cwd is unreadable.
    pub cwd: Option<&'a Path>,
    pub target: Option<&'a str>,
    pub stoat_version: &'a str,
}

/// The stored facts of the target that capabilities depend on; `None` fields are unknown.
struct TargetFacts {
    mode: Option<Mode>,
    agent_access: Option<AgentAccess>,
}

/// Host observations, made once.
struct Probes {
    tools: Vec<(&'static str, bool)>,
    kvm: &'static str,
    accel: Accel,
}

impl Probes {
    fn run(env: &Env) -> Probes {
        let tools = [
            "qemu-system-x86_64",
            "qemu-img",
            "xorriso",
            "ssh",
            "scp",
            "git",
        ]
        .into_iter()
        .map(|tool| (tool, env.which(tool).is_some()))
        .collect();
        Probes {
            tools,
            kvm: probe_kvm(env.kvm_device(), env.cpuinfo()),
            accel: Accel::from_env(env),
        }
    }

    fn has(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|(name, found)| *name == tool && *found)
    }

    fn tool_evidence(&self, tool: &str) -> Evidence {
        evidence(
            "host_probe",
            tool,
            if self.has(tool) { "found" } else { "missing" },
        )
    }
}

/// Opens /dev/kvm read-write and names the outcome; one that opens on a CPU without vmx or
/// svm cannot boot a guest, and `up` refuses it, so it is not reported as usable.
fn probe_kvm(device: &Path, cpuinfo: &Path) -> &'static str {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
    {
        Ok(_) if !crate::qemu::accel::cpu_has_virtualization(cpuinfo) => {
            "no_hardware_virtualization"
        }
        Ok(_) => "read_write",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "not_present",
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => "permission_denied",
        Err(_) => "error",
    }
}

/// Builds the report. `not_found` when a named target does not exist; a broken target is
/// reported with unknown mode and access.
pub fn report(request: &Request) -> Result<CapabilityReport> {
    let (target, facts) = match request.target {
        None => (None, None),
        Some(name) => {
            let (target, facts) = target_facts(request.root, name)?;
            (Some(target), Some(facts))
        }
    };
    let project_state = project_state(request.cwd);
    let probes = Probes::run(request.env);
    Ok(CapabilityReport {
        schema: SCHEMA,
        stoat_version: request.stoat_version.to_owned(),
        host: CapabilityHost {
            os: std::env::consts::OS.to_owned(),
            arch: wire_arch(std::env::consts::ARCH).to_owned(),
            project_state: project_state.to_owned(),
        },
        target,
        access_policy: AccessPolicy {
            mcp_agent_access_enforced: true,
            cli_agent_access_enforced: false,
            cli_commands: vec!["exec".into(), "cp".into()],
        },
        profiles: profiles(&probes),
        capabilities: capabilities(&probes, facts.as_ref(), project_state),
        unavailable: unavailable(),
    })
}

/// Go's architecture names, as the contract's example shows (`amd64`).
pub fn wire_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

fn target_facts(root: &Root, name: &str) -> Result<(CapabilityTarget, TargetFacts)> {
    Ok(match vm::load(root, name)? {
        Loaded::Ok(stored) => {
            let mode = stored.config.mode.clone();
            let known_mode = matches!(mode, Mode::Live | Mode::Disk | Mode::Cloud);
            let access = stored.config.agent_access();
            (
                CapabilityTarget {
                    name: stored.name.clone(),
                    mode: if known_mode {
                        mode.as_str().to_owned()
                    } else {
                        "unknown".into()
                    },
                    agent_access: access.as_str().into(),
                },
                TargetFacts {
                    mode: known_mode.then_some(mode),
                    agent_access: Some(access),
                },
            )
        }
        Loaded::Broken { name, .. } => (
            CapabilityTarget {
                name,
                mode: "unknown".into(),
                agent_access: "unknown".into(),
            },
            TargetFacts {
                mode: None,
                agent_access: None,
            },
        ),
    })
}

/// `available` when a stoat.toml is found walking up from `cwd`, `absent` when none is,
/// `unknown` when the walk cannot be made.
fn project_state(cwd: Option<&Path>) -> &'static str {
    let Some(cwd) = cwd else {
        return "unknown";
    };
    for dir in cwd.ancestors() {
        match dir.join("stoat.toml").try_exists() {
            Ok(true) => return "available",
            Ok(false) => {}
            Err(_) => return "unknown",
        }
    }
    "absent"
}

fn evidence(kind: &str, source: &str, result: &str) -> Evidence {
    Evidence {
        kind: kind.into(),
        source: source.into(),
        result: result.into(),
    }
}

fn code(code: &str) -> CapabilityCode {
    CapabilityCode { code: code.into() }
}

/// An entry whose status follows from its host tools: supported, or limited by a missing one.
fn tool_entry(probes: &Probes, name: &str, scope: &str, tools: &[&str]) -> CapabilityEntry {
    let mut evidence_list = vec![evidence("implementation", name, "implemented")];
    evidence_list.extend(tools.iter().map(|tool| probes.tool_evidence(tool)));
    let missing = tools.iter().any(|tool| !probes.has(tool));
    CapabilityEntry {
        name: name.into(),
        status: if missing { "limited" } else { "supported" }.into(),
        scope: scope.into(),
        requirements: tools.iter().map(|tool| format!("host:{tool}")).collect(),
        limits: if missing {
            vec![code("host_requirement_missing")]
        } else {
            Vec::new()
        },
        reason: None,
        evidence: evidence_list,
    }
}

fn profiles(probes: &Probes) -> Vec<CapabilityEntry> {
    let selected = |accel: Accel| {
        evidence(
            "environment",
            "STOAT_ACCEL",
            if probes.accel == accel {
                "selected"
            } else {
                "not_selected"
            },
        )
    };
    let mut kvm = tool_entry(
        probes,
        "runtime.qemu-kvm",
        "runtime",
        &["qemu-system-x86_64", "qemu-img"],
    );
    kvm.requirements.push("host:/dev/kvm".into());
    kvm.evidence
        .push(evidence("host_probe", "/dev/kvm", probes.kvm));
    kvm.evidence.push(selected(Accel::Kvm));
    if probes.kvm != "read_write" && kvm.limits.is_empty() {
        kvm.status = "limited".into();
        kvm.limits.push(code("host_requirement_missing"));
    }
    let mut tcg = tool_entry(
        probes,
        "runtime.qemu-tcg",
        "runtime",
        &["qemu-system-x86_64", "qemu-img"],
    );
    tcg.evidence.push(selected(Accel::Tcg));
    vec![kvm, tcg]
}

/// Marks a VM-scoped entry: with no target it needs one; with an unknown target, unknown.
fn scope_to_target(mut entry: CapabilityEntry, target: Option<&TargetFacts>) -> CapabilityEntry {
    match target {
        None => {}
        Some(TargetFacts { mode: None, .. }) => {
            entry.status = "unknown".into();
            entry.reason = Some(code("target_mode_unknown"));
            entry
                .evidence
                .push(evidence("target", "vm.toml", "unreadable"));
        }
        Some(TargetFacts {
            mode: Some(mode), ..
        }) => {
            entry
                .evidence
                .push(evidence("target", "mode", mode.as_str()));
        }
    }
    entry
}

/// Adds MCP's agent_access requirement to a guest-access entry.
fn needs_access(
    mut entry: CapabilityEntry,
    level: AgentAccess,
    target: Option<&TargetFacts>,
) -> CapabilityEntry {
    entry
        .requirements
        .push(format!("mcp:agent_access>={}", level.as_str()));
    if let Some(TargetFacts {
        agent_access: Some(have),
        ..
    }) = target
    {
        entry
            .evidence
            .push(evidence("target", "agent_access", have.as_str()));
        if *have < level && entry.status == "supported" {
            entry.status = "limited".into();
            entry.limits.push(code("agent_access_required"));
        }
    }
    entry
}

fn capabilities(
    probes: &Probes,
    target: Option<&TargetFacts>,
    project: &str,
) -> Vec<CapabilityEntry> {
    let vm_entry =
        |name: &str, tools: &[&str]| scope_to_target(tool_entry(probes, name, "vm", tools), target);
    let lifecycle = vm_entry(
        "vm.lifecycle",
        &["qemu-system-x86_64", "qemu-img", "xorriso"],
    );
    let exec = needs_access(vm_entry("vm.exec", &["ssh"]), AgentAccess::Exec, target);
    let cp = needs_access(vm_entry("vm.cp", &["scp"]), AgentAccess::Exec, target);
    let mut snapshot = vm_entry("vm.snapshot", &["qemu-img"]);
    if matches!(
        target,
        Some(TargetFacts {
            mode: Some(Mode::Live),
            ..
        })
    ) {
        snapshot.status = "limited".into();
        snapshot.limits.push(code("disk_required"));
    }
    let screenshot = vm_entry("vm.screenshot", &["qemu-system-x86_64"]);
    let mut project_entry = tool_entry(probes, "project.fanout", "project", &[]);
    project_entry
        .evidence
        .push(evidence("host_probe", "stoat.toml", project));
    match project {
        "available" => {}
        "absent" => {
            project_entry.status = "limited".into();
            project_entry.limits.push(code("project_file_required"));
        }
        _ => {
            project_entry.status = "unknown".into();
            project_entry.reason = Some(code("project_state_unknown"));
        }
    }
    vec![
        lifecycle,
        exec,
        cp,
        snapshot,
        screenshot,
        tool_entry(probes, "images.pull", "host", &[]),
        needs_access(
            vm_entry("recipes.apply", &["ssh"]),
            AgentAccess::Manage,
            target,
        ),
        tool_entry(probes, "recipes.remote", "host", &["git"]),
        project_entry,
        tool_entry(probes, "mcp.server", "host", &[]),
    ]
}

fn not_implemented(name: &str) -> CapabilityEntry {
    CapabilityEntry {
        name: name.into(),
        status: "unsupported".into(),
        scope: "runtime".into(),
        requirements: Vec::new(),
        limits: Vec::new(),
        reason: Some(code("not_implemented")),
        evidence: vec![evidence("implementation", name, "not_implemented")],
    }
}

fn unavailable() -> Vec<CapabilityEntry> {
    vec![
        not_implemented("runtime.fork"),
        not_implemented("runtime.continuation"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_uses_go_names() {
        assert_eq!(wire_arch("x86_64"), "amd64");
        assert_eq!(wire_arch("aarch64"), "arm64");
        assert_eq!(wire_arch("riscv64"), "riscv64");
    }

    #[test]
    fn project_state_walks_up() {
        let temp = tempfile::tempdir().unwrap();
        let deep = temp.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_state(None), "unknown");
        std::fs::write(temp.path().join("a/stoat.toml"), "").unwrap();
        assert_eq!(project_state(Some(&deep)), "available");
    }

    #[test]
    fn unavailable_matches_the_contract_example() {
        let json = serde_json::to_value(unavailable()).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"name": "runtime.fork", "status": "unsupported", "scope": "runtime", "requirements": [], "limits": [], "reason": {"code": "not_implemented"}, "evidence": [{"kind": "implementation", "source": "runtime.fork", "result": "not_implemented"}]},
                {"name": "runtime.continuation", "status": "unsupported", "scope": "runtime", "requirements": [], "limits": [], "reason": {"code": "not_implemented"}, "evidence": [{"kind": "implementation", "source": "runtime.continuation", "result": "not_implemented"}]}
            ])
        );
    }
}
