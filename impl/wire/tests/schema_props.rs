//! Property tests: every DTO, built from arbitrary values, serialises to something
//! its published schema (stoat-schemas) accepts, and its lists are `[]`, never null.
//! Implements json-v3#types ("Every list-valued field is [] when empty, never null")
//! and "Per-command data".

use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::Value;
use stoat_schemas::validate::Validator;
use stoat_wire::dto::*;
use stoat_wire::StreamBytes;

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(Validator::new)
}

/// Serialises `dto`, validates it against `schema` and finds no null anywhere.
fn assert_schema(schema: &str, dto: &impl serde::Serialize) -> Result<(), TestCaseError> {
    let value = serde_json::to_value(dto).expect("serialises");
    let errors = validator().validate(schema, &value);
    prop_assert!(errors.is_empty(), "{schema}: {errors:?}\n{value}");
    let mut nulls = Vec::new();
    find_nulls(&value, "", &mut nulls);
    prop_assert!(nulls.is_empty(), "{schema}: null at {nulls:?}\n{value}");
    Ok(())
}

fn find_nulls(value: &Value, pointer: &str, out: &mut Vec<String>) {
    match value {
        Value::Null => out.push(pointer.to_string()),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                find_nulls(item, &format!("{pointer}/{index}"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                find_nulls(item, &format!("{pointer}/{key}"), out);
            }
        }
        _ => {}
    }
}

/// Facts of a stored VM, arbitrary.
#[derive(Debug, Clone)]
struct Facts {
    name: String,
    os: String,
    mode: String,
    backend: String,
    cpus: u32,
    ram_mb: u32,
    disk: String,
    share: String,
    recipes: Vec<String>,
    ssh_port: u16,
    ssh_user: String,
    installed: bool,
    forwards: Vec<(u16, u16)>,
    allow_exec: bool,
    access: u8,
    project: String,
    key: String,
}

impl VmFacts for Facts {
    fn name(&self) -> &str {
        &self.name
    }
    fn os(&self) -> &str {
        &self.os
    }
    fn mode(&self) -> &str {
        &self.mode
    }
    fn backend(&self) -> &str {
        &self.backend
    }
    fn cpus(&self) -> u32 {
        self.cpus
    }
    fn ram_mb(&self) -> u32 {
        self.ram_mb
    }
    fn disk(&self) -> &str {
        &self.disk
    }
    fn share(&self) -> &str {
        &self.share
    }
    fn recipes(&self) -> Vec<String> {
        self.recipes.clone()
    }
    fn ssh_port(&self) -> u16 {
        self.ssh_port
    }
    fn ssh_user(&self) -> &str {
        &self.ssh_user
    }
    fn installed(&self) -> bool {
        self.installed
    }
    fn forwards(&self) -> Vec<Forward> {
        self.forwards
            .iter()
            .map(|&(host_port, guest_port)| Forward {
                host_port,
                guest_port,
            })
            .collect()
    }
    fn allow_exec(&self) -> bool {
        self.allow_exec
    }
    fn agent_access(&self) -> AgentAccess {
        [
            AgentAccess::None,
            AgentAccess::Observe,
            AgentAccess::Manage,
            AgentAccess::Exec,
        ][usize::from(self.access % 4)]
    }
    fn project(&self) -> &str {
        &self.project
    }
    fn key(&self) -> &str {
        &self.key
    }
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn facts() -> impl Strategy<Value = Facts> {
    let kind = (
        "[a-z][a-z0-9-]{0,10}",
        prop::sample::select(vec!["alpine", "debian", "fedora", "ubuntu"]),
        prop::sample::select(vec!["live", "disk", "cloud"]),
        prop::sample::select(vec!["apkovl", "cloudinit", "preseed"]),
    );
    let size = (
        1u32..64,
        128u32..65536,
        prop::sample::select(vec!["", "8G", "20G"]),
        text(),
    );
    let ssh = (
        prop::collection::vec("[a-z]{1,8}", 0..3),
        1024u16..,
        "[a-z]{1,8}",
        any::<bool>(),
    );
    let rest = (
        prop::collection::vec((1024u16.., 1u16..), 0..3),
        any::<bool>(),
        any::<u8>(),
        // The project directory is absolute or "" (the schema's rule).
        prop_oneof![Just(String::new()), "/[a-z0-9/]{0,12}"],
        text(),
    );
    (kind, size, ssh, rest).prop_map(
        |(
            (name, os, mode, backend),
            (cpus, ram_mb, disk, share),
            (recipes, ssh_port, ssh_user, installed),
            (forwards, allow_exec, access, project, key),
        )| Facts {
            name,
            os: os.into(),
            mode: mode.into(),
            backend: backend.into(),
            cpus,
            ram_mb,
            disk: disk.into(),
            share,
            recipes,
            ssh_port,
            ssh_user,
            installed,
            forwards,
            allow_exec,
            access,
            project,
            key,
        },
    )
}

fn vm() -> impl Strategy<Value = Vm> {
    // Display::Unknown ("") is for broken VMs only (the schema's rule); from_facts does not
    // forbid it by type, so the callers must not pass it.
    let live = (facts(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(facts, running, project_missing, vnc)| {
            let display = if vnc { Display::Vnc } else { Display::Window };
            Vm::from_facts(
                &facts,
                VmLiveFacts {
                    running,
                    display,
                    project_missing,
                },
            )
        },
    );
    let broken = ("[a-z]{1,8}", "\\PC{1,12}").prop_map(|(name, error)| Vm::broken(&name, error));
    prop_oneof![4 => live, 1 => broken]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn vm_and_vm_lists(vms in prop::collection::vec(vm(), 0..4)) {
        for vm in &vms {
            assert_schema("dto/vm.json", vm)?;
        }
        assert_schema("data/ls.json", &LsData { vms: vms.clone() })?;
        if let Some(vm) = vms.first() {
            assert_schema("data/create.json", &VmData { vm: vm.clone() })?;
            let clone = CloneData { vm: vm.clone(), source: "src".into(), forwards_copied: vms.len() > 1 };
            assert_schema("data/clone.json", &clone)?;
            let update = UpdateData { vm: vm.clone(), changed: Vec::new(), applies_at: AppliesAt::Now };
            assert_schema("data/update.json", &update)?;
        }
    }

    #[test]
    fn exec_streams(
        vm in "[a-z]{1,8}",
        exit_code in -1i32..256,
        out in prop::collection::vec(any::<u8>(), 0..32),
        err in prop::collection::vec(any::<u8>(), 0..32),
        stdout_truncated in any::<bool>(),
        stderr_truncated in any::<bool>(),
    ) {
        let data = ExecData {
            vm,
            exit_code,
            stdout: StreamBytes::from_bytes(out),
            stderr: StreamBytes::from_bytes(err),
            stdout_truncated,
            stderr_truncated,
        };
        assert_schema("data/exec.json", &data)?;
    }

    #[test]
    fn host_dtos(
        checks in prop::collection::vec(("[a-z][a-z0-9-]{0,10}", any::<bool>(), text(), prop::collection::vec(text(), 0..2), any::<bool>()), 0..4),
        items in prop::collection::vec((prop::sample::select(vec!["orphaned_image", "broken_vm"]), "/[a-z0-9/.]{0,12}"), 0..3),
        snapshots in prop::collection::vec(("[a-z][a-z0-9]{0,8}", any::<bool>(), text(), text()), 0..3),
        lines in prop::collection::vec(text(), 1..4),
        flag in any::<bool>(),
    ) {
        let checks: Vec<Check> = checks
            .into_iter()
            .map(|(name, ok, detail, fix, optional)| Check { name, ok, detail, fix, optional })
            .collect();
        let healthy = checks.iter().all(|c| c.ok || c.optional);
        assert_schema("data/doctor.json", &DoctorData { healthy, checks })?;
        let items = items.into_iter().map(|(class, path)| PruneItem { class: class.into(), path }).collect();
        assert_schema("data/prune.json", &PruneData { dry_run: flag, items })?;
        let snapshots = snapshots
            .into_iter()
            .map(|(tag, vm_state, size_display, created_display)| Snapshot { tag, vm_state, size_display, created_display })
            .collect();
        assert_schema("data/snapshot.json", &SnapshotListData { vm: "w".into(), snapshots })?;
        let argv = std::iter::once("ssh".to_string()).chain(lines).collect();
        assert_schema("data/ssh-command.json", &SshCommandData { argv })?;
        assert_schema("data/rm.json", &RmData { name: "w".into(), deleted: flag })?;
    }

    #[test]
    fn forward_data(pairs in prop::collection::vec((1024u16.., 1u16..), 0..4), active in any::<bool>(), changed in any::<bool>()) {
        let forwards = pairs.into_iter().map(|(host_port, guest_port)| Forward { host_port, guest_port }).collect();
        let applies_at = changed.then_some(if active { AppliesAt::Now } else { AppliesAt::NextStart });
        assert_schema("data/forward.json", &ForwardData { vm: "w".into(), forwards, active, applies_at })?;
    }
}
