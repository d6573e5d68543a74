//! Owns the model of the contract's observable state for the VM commands (create, rm,
//! update, get, ls, forward set/add/remove/clear/show, clone, snapshot list/save/restore/
//! delete, the last on disk VMs through the fake tier's qemu-img): what each command
//! requires, every answer the contract allows (success with its data, or an error code)
//! and the state each allowed answer leaves. Written from the contract alone: where it is
//! silent (defaults, port collisions, which of two errors wins) every allowed answer is
//! accepted, and a value the contract does not fix is adopted from the first answer that
//! shows it, then held to.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

/// The access levels the contract names, lowest first.
pub const ACCESS: &[&str] = &["none", "observe", "manage", "exec"];

/// One command of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cmd {
    Create {
        name: String,
        cpus: Option<u64>,
        ram: Option<u64>,
        access: Option<&'static str>,
        /// `--mode disk --disk 8G`: a VM with a qcow2 (made by qemu-img), which snapshots.
        disk: bool,
    },
    Clone {
        source: String,
        name: String,
    },
    SnapshotList {
        name: String,
    },
    SnapshotSave {
        name: String,
        tag: &'static str,
    },
    SnapshotRestore {
        name: String,
        tag: &'static str,
    },
    SnapshotDelete {
        name: String,
        tag: &'static str,
    },
    Rm {
        name: String,
        yes: bool,
    },
    Update {
        name: String,
        cpus: Option<u64>,
        ram: Option<u64>,
        access: Option<&'static str>,
    },
    Get {
        name: String,
    },
    Ls,
    ForwardSet {
        name: String,
        forwards: Vec<(u64, u64)>,
    },
    ForwardAdd {
        name: String,
        forward: (u64, u64),
    },
    ForwardRemove {
        name: String,
        host: u64,
    },
    ForwardClear {
        name: String,
    },
    ForwardShow {
        name: String,
    },
    /// `up NAME` (the fake tier's qemu starts it; no guest).
    Up {
        name: String,
    },
    /// `down NAME`.
    Down {
        name: String,
    },
    /// `wait NAME --until UNTIL --timeout 500ms` (`stopped` or `reachable`).
    Wait {
        name: String,
        until: &'static str,
    },
    /// `exec NAME explore-exit-N`: the fake ssh answers it with `out N` on stdout, `err N` on
    /// stderr and exit status N (the sandbox's script, [`fake_script`]).
    Exec {
        name: String,
        code: u8,
    },
    /// `apply NAME` (`--dry-run`): the history's VMs have no recipes.
    Apply {
        name: String,
        dry_run: bool,
    },
    /// `recipes`.
    Recipes,
    /// `recipe show RECIPE` (a name the contract's examples use, or one no catalog has).
    RecipeShow {
        recipe: &'static str,
    },
    /// `images`.
    Images,
    /// `pull ID` of an id no catalog has ([`NO_IMAGE`]): never a real download.
    Pull {
        id: &'static str,
    },
    /// `init` in the sandbox's working directory: a project's stoat.toml.
    Init,
    /// `status`: the project's declarations beside the VMs that exist.
    Status,
    /// `down` with no VM: the project fan-out.
    ProjectDown,
}

/// The image id `pull` asks for: one no catalog has, so a pull never reaches a network.
pub const NO_IMAGE: &str = "explore-no-such-image";

/// The recipes `recipe show` asks for: the contract's examples name `xfce` and `docker`;
/// the last is a name nothing should have. None is assumed to exist: `recipes` says.
pub const RECIPES: &[&str] = &["xfce", "docker", "no-such-recipe"];

/// The timeout every `wait` of a history passes: short, since a wait that cannot be
/// reached in it costs that long.
pub const WAIT_TIMEOUT: &str = "500ms";

/// The guest exit statuses `exec` asks for (never 255, ssh's own failure).
pub const EXEC_CODES: &[u8] = &[0, 1, 3];

/// The fake tools' script of every explore sandbox: `xorriso` names a kernel and an
/// initramfs in the image (so `up` of a live VM boots on the fake qemu), and `ssh` answers
/// `explore-exit-N` with `out N`, `err N` and status N. Nothing else is scripted.
pub fn fake_script() -> Value {
    let ssh: Vec<Value> = EXEC_CODES
        .iter()
        .map(|n| {
            json!({"when": {"arg_contains": format!("explore-exit-{n}")},
                "stdout": {"text": format!("out {n}\n")},
                "stderr": {"text": format!("err {n}\n")}, "exit": n})
        })
        .collect();
    json!({"tools": {
        "xorriso": [
            {"when": {"args_include": ["-find", "initramfs-*"]}, "stdout": {"text": "'/boot/initramfs-virt'\n"}},
            {"when": {"args_include": ["-find", "vmlinuz-*"]}, "stdout": {"text": "'/boot/vmlinuz-virt'\n"}}
        ],
        "ssh": ssh
    }})
}

/// The image every history creates from: a file in the data root's `isos/`, which `create`
/// takes by its file name (a live VM: no disk tool needed).
pub const IMAGE: &str = "alpine-virt-3.20.3-x86_64.iso";

impl Cmd {
    /// The arguments after the SUT's program.
    pub fn argv(&self) -> Vec<String> {
        let mut out: Vec<String> = vec!["--json".into()];
        let mut push = |words: &[&str]| out.extend(words.iter().map(|w| w.to_string()));
        match self {
            Cmd::Create {
                name,
                cpus,
                ram,
                access,
                disk,
            } => {
                push(&["create", name, "--image", IMAGE]);
                if *disk {
                    push(&["--mode", "disk", "--disk", "8G"]);
                }
                flags(&mut push, *cpus, *ram, *access);
            }
            Cmd::Clone { source, name } => push(&["clone", source, name]),
            Cmd::SnapshotList { name } => push(&["snapshot", name]),
            Cmd::SnapshotSave { name, tag } => push(&["snapshot", name, tag]),
            Cmd::SnapshotRestore { name, tag } => push(&["snapshot", name, tag, "--restore"]),
            Cmd::SnapshotDelete { name, tag } => push(&["snapshot", name, tag, "--delete"]),
            Cmd::Rm { name, yes } => {
                push(&["rm", name]);
                if *yes {
                    push(&["-y"]);
                }
            }
            Cmd::Update {
                name,
                cpus,
                ram,
                access,
            } => {
                push(&["update", name]);
                flags(&mut push, *cpus, *ram, *access);
            }
            Cmd::Get { name } => push(&["get", name]),
            Cmd::Ls => push(&["ls"]),
            Cmd::ForwardSet { name, forwards } => {
                push(&["forward", name]);
                for (h, g) in forwards {
                    push(&[&format!("{h}:{g}")]);
                }
            }
            Cmd::ForwardAdd { name, forward } => push(&[
                "forward",
                name,
                "--add",
                &format!("{}:{}", forward.0, forward.1),
            ]),
            Cmd::ForwardRemove { name, host } => {
                push(&["forward", name, "--remove", &host.to_string()])
            }
            Cmd::ForwardClear { name } => push(&["forward", name, "--clear"]),
            Cmd::ForwardShow { name } => push(&["forward", name]),
            Cmd::Up { name } => push(&["up", name]),
            Cmd::Down { name } => push(&["down", name]),
            Cmd::Wait { name, until } => {
                push(&["wait", name, "--until", until, "--timeout", WAIT_TIMEOUT])
            }
            Cmd::Exec { name, code } => push(&["exec", name, &format!("explore-exit-{code}")]),
            Cmd::Apply { name, dry_run } => {
                push(&["apply", name]);
                if *dry_run {
                    push(&["--dry-run"]);
                }
            }
            Cmd::Recipes => push(&["recipes"]),
            Cmd::RecipeShow { recipe } => push(&["recipe", "show", recipe]),
            Cmd::Images => push(&["images"]),
            Cmd::Pull { id } => push(&["pull", id]),
            Cmd::Init => push(&["init"]),
            Cmd::Status => push(&["status"]),
            Cmd::ProjectDown => push(&["down"]),
        }
        out
    }

    /// The `cmd` the answer must carry.
    pub fn cmd(&self) -> &'static str {
        match self {
            Cmd::Create { .. } => "create",
            Cmd::Rm { .. } => "rm",
            Cmd::Update { .. } => "update",
            Cmd::Get { .. } => "get",
            Cmd::Ls => "ls",
            Cmd::Clone { .. } => "clone",
            Cmd::SnapshotList { .. }
            | Cmd::SnapshotSave { .. }
            | Cmd::SnapshotRestore { .. }
            | Cmd::SnapshotDelete { .. } => "snapshot",
            Cmd::ForwardSet { .. }
            | Cmd::ForwardAdd { .. }
            | Cmd::ForwardRemove { .. }
            | Cmd::ForwardClear { .. }
            | Cmd::ForwardShow { .. } => "forward",
            Cmd::Up { .. } => "up",
            Cmd::Down { .. } | Cmd::ProjectDown => "down",
            Cmd::Wait { .. } => "wait",
            Cmd::Exec { .. } => "exec",
            Cmd::Apply { .. } => "apply",
            Cmd::Recipes => "recipes",
            Cmd::RecipeShow { .. } => "recipe",
            Cmd::Images => "images",
            Cmd::Pull { .. } => "pull",
            Cmd::Init => "init",
            Cmd::Status => "status",
        }
    }

    /// The VM the command names, if any.
    pub fn target(&self) -> Option<&str> {
        match self {
            Cmd::Ls
            | Cmd::Recipes
            | Cmd::RecipeShow { .. }
            | Cmd::Images
            | Cmd::Pull { .. }
            | Cmd::Init
            | Cmd::Status
            | Cmd::ProjectDown => None,
            Cmd::Create { name, .. }
            | Cmd::Rm { name, .. }
            | Cmd::Update { name, .. }
            | Cmd::Get { name }
            | Cmd::ForwardSet { name, .. }
            | Cmd::ForwardAdd { name, .. }
            | Cmd::ForwardRemove { name, .. }
            | Cmd::ForwardClear { name }
            | Cmd::ForwardShow { name }
            | Cmd::Clone { name, .. }
            | Cmd::SnapshotList { name }
            | Cmd::SnapshotSave { name, .. }
            | Cmd::SnapshotRestore { name, .. }
            | Cmd::SnapshotDelete { name, .. }
            | Cmd::Up { name }
            | Cmd::Down { name }
            | Cmd::Wait { name, .. }
            | Cmd::Exec { name, .. }
            | Cmd::Apply { name, .. } => Some(name),
        }
    }

    /// Every VM whose state the command's answer depends on: its target and a clone's source.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.target().into_iter().collect();
        if let Cmd::Clone { source, .. } = self {
            out.push(source);
        }
        out
    }

    /// Whether it is a snapshot command (its read-back lists the snapshots).
    pub fn is_snapshot(&self) -> bool {
        self.cmd() == "snapshot"
    }

    /// The command line as a person types it.
    pub fn shell(&self) -> String {
        format!("stoat {}", self.argv().join(" "))
    }
}

fn flags(
    push: &mut impl FnMut(&[&str]),
    cpus: Option<u64>,
    ram: Option<u64>,
    access: Option<&str>,
) {
    if let Some(cpus) = cpus {
        push(&["--cpus", &cpus.to_string()]);
    }
    if let Some(ram) = ram {
        push(&["--ram", &ram.to_string()]);
    }
    if let Some(access) = access {
        push(&["--agent-access", access]);
    }
}

/// One VM as the contract lets a consumer observe it. `None` is a value the contract does
/// not fix (a default); the first answer showing it fixes it for the rest of the history.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Vm {
    pub cpus: Option<u64>,
    pub ram_mb: Option<u64>,
    pub agent_access: Option<String>,
    pub allow_exec: Option<bool>,
    pub forwards: BTreeSet<(u64, u64)>,
    /// Whether it has a disk that snapshots (`None`: not known yet; a VM's `mode` answers it,
    /// disk meaning yes, anything else no).
    pub disk: Option<bool>,
    /// Its snapshots' tags (`None`: not known, as for a clone, whose copied disk may carry
    /// the source's; the first list answers it).
    pub snapshots: Option<BTreeSet<String>>,
    /// Every other field of the VM object, as first answered: nothing in this command set
    /// names them, so they never change.
    pub fixed: Option<Map<String, Value>>,
    /// Whether it runs (the fake qemu holds it).
    pub power: Power,
    /// The forwards it was last started with, while it runs (`None`: stopped). A forward
    /// saved while it runs is not active until the next start, so `active` is false while
    /// the saved list differs from these; equal again (a change undone), either reading.
    pub started: Option<BTreeSet<(u64, u64)>>,
}

/// A VM's power state as the contract lets a consumer see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Power {
    #[default]
    Stopped,
    Running,
    /// `down` answered `state: running` ("while QEMU is still exiting"): either may be
    /// read until one answer shows `stopped`, after which it stays stopped.
    Stopping,
}

impl Power {
    fn word(self) -> &'static str {
        match self {
            Power::Stopped => "stopped",
            Power::Running => "running",
            Power::Stopping => "stopping",
        }
    }
}

/// The observable state: the VMs by name, and the recipe catalog as first answered.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Model {
    pub vms: BTreeMap<String, Vm>,
    /// Every recipe `recipes` listed, by name, as listed (`None`: not listed yet). Nothing a
    /// history runs adds or removes one, so it is held to from then on.
    pub recipes: Option<BTreeMap<String, Value>>,
    /// What `recipe show` answered before `recipes` listed them: the object, or `None` for
    /// a refusal; the list must agree.
    pub shown: BTreeMap<String, Option<Value>>,
    /// Every image `images` listed, by id, as listed (`None`: not listed yet, or a pull
    /// succeeded since). Nothing else a history runs touches the catalog or `isos/`.
    pub images: Option<BTreeMap<String, Value>>,
    /// The ids a `pull` answered ok for: `images` must list each, downloaded.
    pub pulled: BTreeSet<String>,
    /// The project `init` made in the working directory (`None`: none yet).
    pub project: Option<Project>,
}

/// A project as its answers show it: what the contract fixes is held from the first answer
/// that shows it (the template's declarations are the implementation's).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Project {
    /// Its name, as init (or the first status) answered it.
    pub name: Option<String>,
    /// Its declared VMs in declaration order, (key, name), as first answered; nothing a
    /// history runs edits the stoat.toml.
    pub declared: Option<Vec<(String, String)>>,
}

/// What a successful answer's data must show.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `{"vm": VM}` agreeing with the new state (create, get).
    Vm(String),
    /// `{"vm": VM, "changed": [...], "applies_at": now|next_start}`.
    Updated {
        name: String,
        changed: Vec<&'static str>,
    },
    /// `{"name": NAME, "deleted": true}`.
    Removed(String),
    /// `{"vms": [VM...]}`: exactly the model's VMs.
    List,
    /// `{"vm": NAME, "forwards": [...], "active": bool}`; `applies_at` (now|next_start) when
    /// the configuration changed, never on a show, either way on a set that changed nothing.
    Forwards {
        name: String,
        applies: Applies,
        /// `active` must be false (a forward saved on a running VM, before its next start).
        inactive: bool,
    },
    /// `{"vm": VM, "source": SOURCE, "forwards_copied": copied}`, the clone as the new state
    /// holds it.
    Cloned {
        name: String,
        source: String,
        copied: bool,
    },
    /// `{"vm": NAME, "snapshots": [Snapshot...]}`: the tags the model holds (adopted when it
    /// holds none).
    Snapshots(String),
    /// `{"vm": NAME, "exit_code": N, "stdout": "out N\n", "stderr": "err N\n"}`.
    Exec { name: String, code: u8 },
    /// `{"vm": NAME, "until": UNTIL, "reached": bool, "waited_ms": N}`; `reached` as given
    /// (`None`: either).
    Waited {
        name: String,
        until: &'static str,
        reached: Option<bool>,
    },
    /// `{"vm": NAME, "applied": [], "skipped_reason": STRING}` (no recipes: nothing applied).
    Applied(String),
    /// `{"vm": NAME, "dry_run": true, "plan": []}` (no recipes: nothing planned).
    Planned(String),
    /// `{"recipes": [Recipe...]}`: names unique, lists never null, the list held to.
    Recipes,
    /// `{"recipe": RecipeSchema}` named `RECIPE`, the object `recipes` lists for it.
    Recipe(&'static str),
    /// `{"vm": NAME, "tag": TAG, "action": save|restore|delete}`.
    SnapshotAct {
        name: String,
        tag: &'static str,
        action: &'static str,
    },
    /// `{"images": [Image...]}`: ids unique, `file` a bare filename, the list held to.
    Images,
    /// `{"id": ID, "downloaded", "verified", "checksum_available"}`.
    Pulled(&'static str),
    /// InitResult `{"path", "project", "gitignore_updated"}`.
    Init,
    /// ProjectStatus `{"project", "dir", "vms": [ProjectStatusVM...]}`.
    Status,
    /// ProjectRun `{"project", "vms": [ProjectRunVM...]}` of a `down` fan-out.
    ProjectRun,
}

/// Whether a forward answer carries `applies_at`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Applies {
    Must,
    /// A change saved on a running VM: `applies_at` is `next_start`.
    NextStart,
    Never,
    Either,
}

/// One answer the contract allows, and the state it leaves.
#[derive(Clone, Debug)]
pub struct Allowed {
    /// `Ok(data)` or `Err(codes)`: any of these codes.
    pub answer: Result<Data, Vec<&'static str>>,
    pub next: Model,
    /// The contract section the transition rests on (one of the suite's section ids).
    pub spec: &'static str,
    /// The rule, restated in a few words (where the contract is silent, what it leaves open).
    pub rule: &'static str,
    /// The contract's own words the transition rests on, verbatim (one of [`QUOTES`]).
    pub quote: &'static str,
}

/// In an `Allowed`'s codes: any code but `internal` (a refusal the contract names no code
/// for; "the escape hatch" is never the answer to a request it anticipates).
pub const ANY_CODE: &str = "*";

impl Allowed {
    /// A human line: `ok {vm: a, cpus 2}` or `error not_found`.
    pub fn describe(&self) -> String {
        match &self.answer {
            Ok(data) => format!("ok {}", describe_data(data, &self.next)),
            Err(codes) if codes.contains(&ANY_CODE) => "error of any code but internal".into(),
            Err(codes) => format!("error {}", codes.join("|")),
        }
    }

    /// Whether an error answer with `code` is one this allows.
    fn allows_code(&self, code: &str) -> bool {
        match &self.answer {
            Ok(_) => false,
            Err(codes) => {
                codes.contains(&code) || (codes.contains(&ANY_CODE) && code != "internal")
            }
        }
    }
}

fn describe_data(data: &Data, model: &Model) -> String {
    match data {
        Data::Vm(name) | Data::Updated { name, .. } => {
            let vm = model.vms.get(name).cloned().unwrap_or_default();
            let mut text = format!("vm {name}: {}", describe_vm(&vm));
            if let Data::Updated { changed, .. } = data {
                text.push_str(&format!(", changed {changed:?}"));
            }
            text
        }
        Data::Removed(name) => format!("{{name: {name}, deleted: true}}"),
        Data::List => format!("vms {:?}", model.vms.keys().collect::<Vec<_>>()),
        Data::Forwards { name, .. } => {
            let vm = model.vms.get(name).cloned().unwrap_or_default();
            format!("forwards of {name}: {}", describe_forwards(&vm.forwards))
        }
        Data::Cloned {
            name,
            source,
            copied,
        } => {
            let vm = model.vms.get(name).cloned().unwrap_or_default();
            format!(
                "clone {name} of {source}, forwards_copied {copied}: {}",
                describe_vm(&vm)
            )
        }
        Data::Snapshots(name) => {
            let vm = model.vms.get(name).cloned().unwrap_or_default();
            match &vm.snapshots {
                Some(tags) => format!("snapshots of {name}: {tags:?}"),
                None => format!("snapshots of {name}: any"),
            }
        }
        Data::SnapshotAct { name, tag, action } => {
            format!("{{vm: {name}, tag: {tag}, action: {action}}}")
        }
        Data::Images => match &model.images {
            Some(list) => format!("images {:?}", list.keys().collect::<Vec<_>>()),
            None => "images: any".into(),
        },
        Data::Pulled(id) => format!("{{id: {id}, downloaded, verified, checksum_available}}"),
        Data::Init => "{path, project, gitignore_updated}".into(),
        Data::Status | Data::ProjectRun => {
            let declared = model.project.as_ref().and_then(|p| p.declared.as_ref());
            let keys = declared.map_or("any".to_string(), |d| {
                format!("{:?}", d.iter().map(|(k, _)| k).collect::<Vec<_>>())
            });
            format!("{{project, vms: declared {keys}}}")
        }
        Data::Exec { name, code } => format!("{{vm: {name}, exit_code: {code}}}"),
        Data::Applied(name) => format!("{{vm: {name}, applied: [], skipped_reason: any}}"),
        Data::Planned(name) => format!("{{vm: {name}, dry_run: true, plan: []}}"),
        Data::Recipes => match &model.recipes {
            Some(list) => format!("recipes {:?}", list.keys().collect::<Vec<_>>()),
            None => "recipes: any".into(),
        },
        Data::Recipe(recipe) => format!("{{recipe: {recipe}, as recipes lists it}}"),
        Data::Waited {
            name,
            until,
            reached,
        } => {
            let reached = reached.map_or("any".to_string(), |r| r.to_string());
            format!("{{vm: {name}, until: {until}, reached: {reached}}}")
        }
    }
}

fn describe_vm(vm: &Vm) -> String {
    let show = |v: Option<String>| v.unwrap_or_else(|| "any".into());
    format!(
        "{}, cpus {}, ram_mb {}, agent_access {}, forwards {}",
        vm.power.word(),
        show(vm.cpus.map(|c| c.to_string())),
        show(vm.ram_mb.map(|c| c.to_string())),
        show(vm.agent_access.clone()),
        describe_forwards(&vm.forwards)
    )
}

fn describe_forwards(forwards: &BTreeSet<(u64, u64)>) -> String {
    let items: Vec<String> = forwards.iter().map(|(h, g)| format!("{h}:{g}")).collect();
    format!("[{}]", items.join(" "))
}

const DATA: &str = "json-v3#per-command-data";
const CODES: &str = "json-v3#error-codes";
const TYPES: &str = "json-v3#types";
const IMPLIES: &str = "json-v3#json-implies";
const ENVELOPE: &str = "json-v3#exit-codes";
const CONSUMER: &str = "json-v3#consumer-contract";

/// The contract sentences (and rows of its tables) the model's transitions quote,
/// verbatim modulo whitespace: tests/catalog_lint.rs finds each in the contract text, and
/// the unit tests hold every transition to quoting one of them.
pub const QUOTES: &[&str] = &[
    Q_CREATE,
    Q_RM,
    Q_UPDATE,
    Q_GET,
    Q_LS,
    Q_CLONE,
    Q_SNAPSHOTS,
    Q_SNAPSHOT_ACT,
    Q_FORWARD_SHOW,
    Q_FORWARD_SET,
    Q_INACTIVE,
    Q_UP,
    Q_DOWN,
    Q_WAIT,
    Q_EXEC,
    Q_APPLY,
    Q_DRY_RUN,
    Q_RECIPES,
    Q_IMAGES,
    Q_PULL,
    Q_INIT,
    Q_STATUS,
    Q_PROJECT_RUN,
    Q_NOT_FOUND,
    Q_NAME_TAKEN,
    Q_INVALID_SPEC,
    Q_NOT_RUNNING,
    Q_ALREADY_RUNNING,
    Q_NO_DISK,
    Q_CANNOT_REACH,
    Q_TIMEOUT,
    Q_NO_SUCH_IMAGE,
    Q_CONFIRM,
    Q_INTERNAL,
];
const Q_CREATE: &str = r#"create {"vm":VM}"#;
const Q_RM: &str = r#"rm {"name":"scratch","deleted":true}"#;
const Q_UPDATE: &str =
    "A flag you did not pass does not appear, and the field it names is untouched.";
const Q_GET: &str = r#"get returns {"vm":VMStatus}: VMStatus embeds the VM fields directly; only the outer get result has the vm member."#;
const Q_LS: &str = r#"ls {"vms":[VM,...]}"#;
const Q_CLONE: &str = r#"clone {"vm":VM,"source":"work","forwards_copied":false}"#;
const Q_SNAPSHOTS: &str = r#"snapshot (list) {"vm":"work","snapshots":[Snapshot,...]}"#;
const Q_SNAPSHOT_ACT: &str = r#"snapshot (act) {"vm":"work","tag":"clean","action":"restore"}"#;
const Q_FORWARD_SHOW: &str =
    "A forward that only displays the current configuration reports active without applies_at.";
const Q_FORWARD_SET: &str = "applies_at is now or next_start, and appears on update and on a forward that changed the configuration.";
const Q_INACTIVE: &str = "A forward saved on a running VM is not active until the next start.";
const Q_UP: &str = r#"up (one VM) {"vm":VM} (re-read after start, so state is authoritative)"#;
const Q_DOWN: &str =
    r#"A single-VM down result can also report state: "running" while QEMU is still exiting;"#;
const Q_WAIT: &str = r#"wait {"vm":"work","until":"reachable","reached":true,"waited_ms":4210}"#;
const Q_EXEC: &str = "exec exits 0 whenever the guest command RAN, whatever the guest returned.";
const Q_APPLY: &str = "applied is always a list, never a bool.";
const Q_DRY_RUN: &str =
    "apply --dry-run emits none: it computes the plan host-side and runs nothing.";
const Q_RECIPES: &str = "recipe show and recipes use the same RecipeSchema projection.";
const Q_IMAGES: &str =
    "Image.file is a bare filename under the data root's isos/, never an absolute path.";
const Q_PULL: &str =
    r#"pull {"id":"alpine-virt","downloaded":true,"verified":true,"checksum_available":true}"#;
const Q_INIT: &str = "init InitResult";
const Q_STATUS: &str = "ProjectStatusVM.state is missing for a declared VM that does not exist yet, otherwise a VM.state value.";
const Q_PROJECT_RUN: &str = "ProjectRun.vms always lists every declared VM, in declaration order,";
const Q_NOT_FOUND: &str = "not_found no such VM";
const Q_NAME_TAKEN: &str = "name_taken a VM by that name already exists";
const Q_INVALID_SPEC: &str = "invalid_spec the request itself is malformed";
const Q_NOT_RUNNING: &str = "not_running the operation needs a running VM";
const Q_ALREADY_RUNNING: &str = "already_running the operation needs a stopped VM";
const Q_NO_DISK: &str = "no_disk the VM has no qcow2 (a live VM has none)";
const Q_CANNOT_REACH: &str = "cannot_reach wait was asked for a state this VM can never reach";
const Q_TIMEOUT: &str = "timeout the deadline expired";
const Q_NO_SUCH_IMAGE: &str = "no_such_image the requested image is not in the index";
const Q_CONFIRM: &str = "rm without -y fails with confirmation_required rather than prompting.";
const Q_INTERNAL: &str = "internal anything unanticipated; the escape hatch";

/// The contract's words a refusal with `code` first among its codes rests on: the line of
/// the error-code table (for a refusal of any code, why `internal` is not one of them).
fn code_quote(code: &str) -> &'static str {
    match code {
        "not_found" => Q_NOT_FOUND,
        "name_taken" => Q_NAME_TAKEN,
        "invalid_spec" => Q_INVALID_SPEC,
        "not_running" => Q_NOT_RUNNING,
        "already_running" => Q_ALREADY_RUNNING,
        "no_disk" => Q_NO_DISK,
        "cannot_reach" => Q_CANNOT_REACH,
        "timeout" => Q_TIMEOUT,
        "no_such_image" => Q_NO_SUCH_IMAGE,
        "confirmation_required" => Q_CONFIRM,
        _ => Q_INTERNAL,
    }
}

/// The contract's words a successful answer of `data` rests on: its row of the
/// per-command data, or the sentence that fixes what the model holds it to.
fn data_quote(data: &Data) -> &'static str {
    match data {
        Data::Vm(_) => Q_GET,
        Data::Updated { .. } => Q_UPDATE,
        Data::Removed(_) => Q_RM,
        Data::List => Q_LS,
        Data::Forwards {
            inactive: true,
            applies: Applies::NextStart,
            ..
        } => Q_INACTIVE,
        Data::Forwards {
            applies: Applies::Never,
            ..
        } => Q_FORWARD_SHOW,
        Data::Forwards { .. } => Q_FORWARD_SET,
        Data::Cloned { .. } => Q_CLONE,
        Data::Snapshots(_) => Q_SNAPSHOTS,
        Data::SnapshotAct { .. } => Q_SNAPSHOT_ACT,
        Data::Exec { .. } => Q_EXEC,
        Data::Waited { .. } => Q_WAIT,
        Data::Applied(_) => Q_APPLY,
        Data::Planned(_) => Q_DRY_RUN,
        Data::Recipes | Data::Recipe(_) => Q_RECIPES,
        Data::Images => Q_IMAGES,
        Data::Pulled(_) => Q_PULL,
        Data::Init => Q_INIT,
        Data::Status => Q_STATUS,
        Data::ProjectRun => Q_PROJECT_RUN,
    }
}

fn err(model: &Model, codes: &[&'static str], spec: &'static str, rule: &'static str) -> Allowed {
    Allowed {
        answer: Err(codes.to_vec()),
        next: model.clone(),
        spec,
        rule,
        quote: code_quote(codes.first().copied().unwrap_or_default()),
    }
}

fn ok(next: Model, data: Data, spec: &'static str, rule: &'static str) -> Allowed {
    Allowed {
        quote: data_quote(&data),
        answer: Ok(data),
        next,
        spec,
        rule,
    }
}

impl Allowed {
    /// The same transition resting on other words of the contract.
    fn citing(mut self, quote: &'static str) -> Self {
        self.quote = quote;
        self
    }
}

/// A project command where no stoat.toml is: the contract names no code, so any refusal
/// but internal.
fn no_project(model: &Model) -> Allowed {
    err(
        model,
        &[ANY_CODE],
        CODES,
        "no stoat.toml: no project to act on (the contract names no code)",
    )
}

/// `already_running` for an operation on a running VM that the contract does not say needs
/// a stopped one: refusing it, or doing it, are both allowed.
fn refuse_running(model: &Model) -> Allowed {
    err(
        model,
        &["already_running"],
        CODES,
        "already_running: the operation needs a stopped VM (the contract lets it be refused on a running one)",
    )
}

impl Model {
    fn running(&self, name: &str) -> bool {
        self.vms
            .get(name)
            .is_some_and(|vm| vm.power == Power::Running)
    }

    /// Every answer the contract allows `cmd` to give in this state (never empty). A VM the
    /// command names that is stopping gets both: every answer for it running and for it
    /// stopped, the running branch leaving it stopping still.
    pub fn predict(&self, cmd: &Cmd) -> Vec<Allowed> {
        let stopping = cmd.names().into_iter().find(|name| {
            self.vms
                .get(*name)
                .is_some_and(|vm| vm.power == Power::Stopping)
        });
        let Some(name) = stopping else {
            return self.predict_settled(cmd);
        };
        let mut out = Vec::new();
        for power in [Power::Stopped, Power::Running] {
            let mut assumed = self.clone();
            if let Some(vm) = assumed.vms.get_mut(name) {
                vm.power = power;
            }
            for mut allowed in assumed.predict(cmd) {
                if power == Power::Running {
                    if let Some(vm) = allowed.next.vms.get_mut(name) {
                        if vm.power == Power::Running {
                            vm.power = Power::Stopping;
                        }
                    }
                }
                out.push(allowed);
            }
        }
        out
    }

    /// [`Model::predict`] with no named VM stopping.
    fn predict_settled(&self, cmd: &Cmd) -> Vec<Allowed> {
        let missing = |name: &str| !self.vms.contains_key(name);
        let not_found = || err(self, &["not_found"], CODES, "not_found: no such VM");
        match cmd {
            Cmd::Create {
                name,
                cpus,
                ram,
                access,
                disk,
            } => {
                if !missing(name) {
                    return vec![err(
                        self,
                        &["name_taken"],
                        CODES,
                        "name_taken: a VM by that name already exists",
                    )];
                }
                let mut next = self.clone();
                next.vms.insert(
                    name.clone(),
                    Vm {
                        cpus: *cpus,
                        ram_mb: *ram,
                        agent_access: access.map(str::to_string),
                        disk: disk.then_some(true),
                        snapshots: Some(BTreeSet::new()),
                        ..Vm::default()
                    },
                );
                vec![ok(next, Data::Vm(name.clone()), DATA, "create answers {vm: VM}, the VM it made, stopped, with the flags given and no forwards").citing(Q_CREATE)]
            }
            Cmd::Rm { name, yes: false } => {
                // Which of the two refusals wins for a missing VM is not said: either.
                let codes: &[&str] = if missing(name) {
                    &["confirmation_required", "not_found"]
                } else if self.running(name) {
                    // A running VM may be refused as such first.
                    &["confirmation_required", "already_running"]
                } else {
                    &["confirmation_required"]
                };
                vec![err(
                    self,
                    codes,
                    IMPLIES,
                    "rm without -y fails with confirmation_required and deletes nothing",
                )]
            }
            Cmd::Rm { name, yes: true } => {
                if missing(name) {
                    return vec![not_found()];
                }
                let mut next = self.clone();
                next.vms.remove(name);
                let mut out = vec![ok(
                    next,
                    Data::Removed(name.clone()),
                    DATA,
                    "rm answers {name, deleted: true}; the VM is gone",
                )];
                if self.running(name) {
                    out.push(refuse_running(self));
                }
                out
            }
            Cmd::Update {
                name,
                cpus,
                ram,
                access,
            } => {
                let Some(vm) = self.vms.get(name) else {
                    return vec![not_found()];
                };
                let mut new = vm.clone();
                let mut changed = Vec::new();
                if let Some(cpus) = cpus {
                    if vm.cpus != Some(*cpus) {
                        changed.push("cpus");
                    }
                    new.cpus = Some(*cpus);
                }
                if let Some(ram) = ram {
                    if vm.ram_mb != Some(*ram) {
                        changed.push("ram");
                    }
                    new.ram_mb = Some(*ram);
                }
                if let Some(access) = access {
                    if vm.agent_access.as_deref() != Some(*access) {
                        changed.push("agent_access");
                        // allow_exec is a recorded fact the access level may rewrite: the
                        // contract does not say how, so it is adopted again.
                        new.allow_exec = None;
                    }
                    new.agent_access = Some(access.to_string());
                }
                let mut next = self.clone();
                next.vms.insert(name.clone(), new);
                let mut out = vec![ok(next, Data::Updated { name: name.clone(), changed }, DATA, "update changes only the fields given; changed names those that changed; a flag not passed leaves its field untouched; applies_at is now or next_start")];
                if self.running(name) {
                    out.push(refuse_running(self));
                }
                out
            }
            Cmd::Clone { source, name } => self.clone_vm(source, name),
            Cmd::SnapshotList { name } => self.snapshot(name, None, |_, tags| {
                vec![(Some(tags.clone()), "snapshot VM lists its snapshots")]
            }),
            Cmd::SnapshotSave { name, tag } => {
                self.snapshot(name, Some(("save", tag)), |_, tags| {
                    let mut saved = tags.clone();
                    saved.insert(tag.to_string());
                    vec![(
                        Some(saved),
                        "snapshot VM TAG saves a snapshot TAG; a tag names one snapshot",
                    )]
                })
            }
            Cmd::SnapshotRestore { name, tag } => {
                self.snapshot(name, Some(("restore", tag)), |_, tags| {
                    if tags.contains(*tag) {
                        vec![(
                            Some(tags.clone()),
                            "snapshot VM TAG --restore goes back to TAG; the snapshots stay",
                        )]
                    } else {
                        vec![(
                            None,
                            "a tag the VM has no snapshot of is a malformed request",
                        )]
                    }
                })
            }
            Cmd::SnapshotDelete { name, tag } => {
                self.snapshot(name, Some(("delete", tag)), |_, tags| {
                    if tags.contains(*tag) {
                        let mut kept = tags.clone();
                        kept.remove(*tag);
                        vec![(
                            Some(kept),
                            "snapshot VM TAG --delete deletes the snapshot TAG",
                        )]
                    } else {
                        vec![(
                            None,
                            "a tag the VM has no snapshot of is a malformed request",
                        )]
                    }
                })
            }
            Cmd::Apply { name, dry_run } => self.apply(name, *dry_run),
            Cmd::Recipes => vec![ok(
                self.clone(),
                Data::Recipes,
                DATA,
                "recipes answers {recipes: [Recipe...]}; nothing in the history changes the catalog",
            )],
            Cmd::RecipeShow { recipe } => self.recipe_show(recipe),
            Cmd::Images => vec![ok(
                self.clone(),
                Data::Images,
                DATA,
                "images answers {images: [Image...]}; Image.file is a bare filename; nothing but a pull changes the list",
            )],
            Cmd::Pull { id } => self.pull(id),
            Cmd::Init => self.init(),
            Cmd::Status => self.status(),
            Cmd::ProjectDown => self.project_down(),
            Cmd::Up { name } => self.up(name),
            Cmd::Down { name } => self.down(name),
            Cmd::Wait { name, until } => self.wait(name, until),
            Cmd::Exec { name, code } => {
                let Some(vm) = self.vms.get(name) else {
                    return vec![not_found()];
                };
                match vm.power {
                    Power::Running => vec![ok(
                        self.clone(),
                        Data::Exec {
                            name: name.clone(),
                            code: *code,
                        },
                        ENVELOPE,
                        "exec answers ok whenever the guest command ran; the guest's status is data.exit_code, its output stdout and stderr",
                    )],
                    _ => vec![err(
                        self,
                        &["not_running"],
                        CODES,
                        "not_running: the operation needs a running VM",
                    )],
                }
            }
            Cmd::Get { name } => match self.vms.contains_key(name) {
                true => vec![ok(
                    self.clone(),
                    Data::Vm(name.clone()),
                    DATA,
                    "get answers {vm: VMStatus}, the VM fields as stored",
                )],
                false => vec![not_found()],
            },
            Cmd::Ls => vec![ok(
                self.clone(),
                Data::List,
                DATA,
                "ls answers {vms: [VM...]}, every VM, [] when none",
            )],
            Cmd::ForwardShow { name } => match self.vms.contains_key(name) {
                true => vec![ok(
                    self.clone(),
                    Data::Forwards {
                        name: name.clone(),
                        applies: Applies::Never,
                        inactive: self.running(name)
                            && self.vms[name].started.as_ref() != Some(&self.vms[name].forwards),
                    },
                    DATA,
                    "forward (show) answers the stored forwards and active, without applies_at; a forward saved on a running VM is not active until the next start",
                )],
                false => vec![not_found()],
            },
            Cmd::ForwardSet { name, forwards } => {
                let mut out = self.set_forwards(
                    name,
                    forwards.iter().copied().collect(),
                    "forward H:G... replaces the whole list",
                );
                self.allow_port_clash(name, forwards.iter().map(|f| f.0), &mut out);
                out
            }
            Cmd::ForwardClear { name } => {
                self.set_forwards(name, BTreeSet::new(), "forward --clear leaves no forwards")
            }
            Cmd::ForwardAdd { name, forward } => {
                let Some(vm) = self.vms.get(name) else {
                    return vec![not_found()];
                };
                let mut list: BTreeSet<_> = vm
                    .forwards
                    .iter()
                    .copied()
                    .filter(|(h, _)| *h != forward.0)
                    .collect();
                list.insert(*forward);
                let mut out =
                    self.set_forwards(name, list, "forward --add H:G adds one, keeps the others");
                self.allow_port_clash(name, [forward.0], &mut out);
                if vm.forwards.iter().any(|(h, _)| *h == forward.0) {
                    // A host port already forwarded: refusing it is the request being malformed.
                    out.push(err(
                        self,
                        &["invalid_spec"],
                        CODES,
                        "invalid_spec: the host port is already forwarded",
                    ));
                }
                out
            }
            Cmd::ForwardRemove { name, host } => {
                let Some(vm) = self.vms.get(name) else {
                    return vec![not_found()];
                };
                let list: BTreeSet<_> = vm
                    .forwards
                    .iter()
                    .copied()
                    .filter(|(h, _)| h != host)
                    .collect();
                let mut out = self.set_forwards(
                    name,
                    list,
                    "forward --remove H drops the forward from that host port",
                );
                if !vm.forwards.iter().any(|(h, _)| h == host) {
                    out.push(err(
                        self,
                        &["invalid_spec"],
                        CODES,
                        "invalid_spec: nothing to remove",
                    ));
                }
                out
            }
        }
    }

    /// `apply NAME [--dry-run]` of a VM with no recipes: the dry run is computed host-side
    /// (plan []), on a stopped VM too or refused there; the apply applies nothing (applied
    /// [], a skipped_reason of any text), and a stopped VM may be refused (not_running).
    fn apply(&self, name: &str, dry_run: bool) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        let mut out = vec![if dry_run {
            ok(
                self.clone(),
                Data::Planned(name.to_string()),
                DATA,
                "apply --dry-run answers {vm, dry_run: true, plan}: computed host-side, one ApplyPlan per recipe, none here",
            )
        } else {
            ok(
                self.clone(),
                Data::Applied(name.to_string()),
                DATA,
                "apply answers {vm, applied, skipped_reason}; applied is always a list, none here",
            )
        }];
        if vm.power != Power::Running {
            out.push(err(
                self,
                &["not_running"],
                CODES,
                "not_running: the operation needs a running VM",
            ));
        }
        out
    }

    /// `pull ID` of an id no catalog should have: `no_such_image` once `images` showed it
    /// is not listed; before that, a pull that succeeds is allowed too (and `images` must
    /// then list it, downloaded).
    fn pull(&self, id: &'static str) -> Vec<Allowed> {
        let missing = err(
            self,
            &["no_such_image"],
            CODES,
            "no_such_image: the requested image is not in the index",
        );
        if self
            .images
            .as_ref()
            .is_some_and(|list| !list.contains_key(id))
        {
            return vec![missing];
        }
        let mut next = self.clone();
        next.images = None;
        next.pulled.insert(id.to_string());
        vec![
            missing,
            ok(
                next,
                Data::Pulled(id),
                DATA,
                "pull answers {id, downloaded, verified, checksum_available}",
            ),
        ]
    }

    /// `init` in the working directory: an InitResult, after which the directory is a
    /// project. A second init may answer the same project again or refuse (the contract
    /// names no code for it: any but internal).
    fn init(&self) -> Vec<Allowed> {
        let mut next = self.clone();
        next.project.get_or_insert_with(Project::default);
        let made = ok(
            next,
            Data::Init,
            DATA,
            "init answers InitResult {path, project, gitignore_updated}",
        );
        match &self.project {
            None => vec![made],
            Some(_) => vec![
                made,
                err(
                    self,
                    &[ANY_CODE],
                    CODES,
                    "a stoat.toml already there: init may refuse (the contract names no code)",
                ),
            ],
        }
    }

    /// `status`: with a project, its ProjectStatus (declarations held to the first answer,
    /// each row's state the VM's or missing when it does not exist); without one there is
    /// nothing to report, so a refusal of any code but internal.
    fn status(&self) -> Vec<Allowed> {
        match &self.project {
            Some(_) => vec![ok(
                self.clone(),
                Data::Status,
                DATA,
                "status answers ProjectStatus; a row's state is missing for a declared VM that does not exist yet, otherwise a VM.state value",
            )],
            None => vec![no_project(self)],
        }
    }

    /// `down` with no VM: at project scope a ProjectRun listing every declared VM in
    /// declaration order (the running ones stop, or may still read running while QEMU
    /// exits); without a project, a refusal of any code but internal.
    fn project_down(&self) -> Vec<Allowed> {
        match &self.project {
            Some(_) => vec![ok(
                self.clone(),
                Data::ProjectRun,
                DATA,
                "down with no VM at project scope answers ProjectRun; vms lists every declared VM in declaration order",
            )],
            None => vec![no_project(self)],
        }
    }

    /// `recipe show RECIPE`: the object `recipes` lists under that name, or a refusal when
    /// it lists none; before any list, either (held to when the list comes).
    fn recipe_show(&self, recipe: &'static str) -> Vec<Allowed> {
        let known = self
            .recipes
            .as_ref()
            .map(|list| list.contains_key(recipe))
            .or_else(|| self.shown.get(recipe).map(Option::is_some));
        let shown = ok(
            self.clone(),
            Data::Recipe(recipe),
            DATA,
            "recipe show and recipes use the same RecipeSchema projection",
        );
        let mut refused = err(
            self,
            &["not_found", "invalid_spec"],
            CODES,
            "a recipe no root holds: not found (or a malformed request)",
        );
        refused.next.shown.insert(recipe.to_string(), None);
        match known {
            Some(true) => vec![shown],
            Some(false) => vec![refused],
            None => vec![shown, refused],
        }
    }

    /// `up NAME`: a stopped VM starts and the answer, re-read after the start, shows it
    /// running; a running one may be refused (already_running) or answered as it is.
    fn up(&self, name: &str) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        if vm.power == Power::Running {
            return vec![
                refuse_running(self),
                ok(
                    self.clone(),
                    Data::Vm(name.to_string()),
                    DATA,
                    "up of a running VM: the answer's state is authoritative, running",
                )
                .citing(Q_UP),
            ];
        }
        let mut next = self.clone();
        if let Some(vm) = next.vms.get_mut(name) {
            vm.power = Power::Running;
            vm.started = Some(vm.forwards.clone());
            // The host SSH port and installed are the host's and the boot's to settle: the
            // contract fixes neither across a start, so both are adopted again.
            if let Some(fixed) = vm.fixed.as_mut() {
                fixed.remove("ssh_port");
                fixed.remove("installed");
            }
        }
        vec![ok(
            next,
            Data::Vm(name.to_string()),
            DATA,
            "up (one VM) answers {vm: VM}, re-read after start, so state is authoritative: running",
        )
        .citing(Q_UP)]
    }

    /// `down NAME`: a running VM stops; the answer may still say running while QEMU exits
    /// (the VM is then stopping). A stopped one may be refused (not_running) or answered
    /// stopped.
    fn down(&self, name: &str) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        if vm.power == Power::Stopped {
            return vec![
                err(
                    self,
                    &["not_running"],
                    CODES,
                    "not_running: the operation needs a running VM",
                ),
                ok(
                    self.clone(),
                    Data::Vm(name.to_string()),
                    DATA,
                    "down of a stopped VM: answered {vm} stopped",
                )
                .citing(Q_DOWN),
            ];
        }
        let mut next = self.clone();
        if let Some(vm) = next.vms.get_mut(name) {
            vm.power = Power::Stopping;
        }
        vec![ok(
            next,
            Data::Vm(name.to_string()),
            CONSUMER,
            "down (one VM) answers {vm: VM}: stopped, or running while QEMU is still exiting (then wait --until stopped confirms)",
        )
        .citing(Q_DOWN)]
    }

    /// `wait NAME --until stopped|reachable --timeout 500ms`.
    fn wait(&self, name: &str, until: &'static str) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        let waited = |reached: Option<bool>, rule: &'static str| {
            ok(
                self.clone(),
                Data::Waited {
                    name: name.to_string(),
                    until,
                    reached,
                },
                DATA,
                rule,
            )
        };
        let expired = || err(self, &["timeout"], CODES, "timeout: the deadline expired");
        match (until, vm.power) {
            ("stopped", Power::Stopped) => vec![waited(
                Some(true),
                "wait --until stopped of a stopped VM answers reached: true",
            )],
            ("stopped", _) => vec![
                waited(
                    Some(false),
                    "a running VM that nothing stops is not stopped by the deadline",
                ),
                expired(),
            ],
            (_, Power::Running) => vec![
                waited(None, "wait --until reachable of a running VM answers {vm, until, reached, waited_ms}"),
                expired(),
            ],
            _ => vec![
                waited(Some(false), "a stopped VM does not become reachable by itself"),
                expired(),
                err(
                    self,
                    &["cannot_reach", "not_running"],
                    CODES,
                    "cannot_reach: a state this VM can never reach (or not_running: it needs a running VM)",
                ),
            ],
        }
    }

    /// `clone SOURCE NAME`: a new stopped VM. The contract fixes its data (`{vm, source,
    /// forwards_copied}`) and that the clone's forwards are the source's exactly when
    /// `forwards_copied` is true; every other field is adopted from the answer, and its
    /// snapshots are not known until listed.
    fn clone_vm(&self, source: &str, name: &str) -> Vec<Allowed> {
        let source_missing = !self.vms.contains_key(source);
        let taken = self.vms.contains_key(name);
        match (source_missing, taken) {
            (true, true) => {
                // Which of the two refusals wins is not said: either.
                return vec![err(
                    self,
                    &["not_found", "name_taken"],
                    CODES,
                    "no such source VM, and the name is taken",
                )];
            }
            (true, false) => {
                return vec![err(self, &["not_found"], CODES, "not_found: no such VM")]
            }
            (false, true) => {
                // A running source may be refused first: which refusal wins is not said.
                let codes: &[&str] = if self.running(source) {
                    &["name_taken", "already_running"]
                } else {
                    &["name_taken"]
                };
                return vec![err(
                    self,
                    codes,
                    CODES,
                    "name_taken: a VM by that name already exists",
                )];
            }
            (false, false) => {}
        }
        let from = &self.vms[source];
        let refused = self.running(source).then(|| refuse_running(self));
        [false, true]
            .into_iter()
            .map(|copied| {
                let mut next = self.clone();
                next.vms.insert(
                    name.to_string(),
                    Vm {
                        forwards: if copied {
                            from.forwards.clone()
                        } else {
                            BTreeSet::new()
                        },
                        ..Vm::default()
                    },
                );
                ok(
                    next,
                    Data::Cloned {
                        name: name.to_string(),
                        source: source.to_string(),
                        copied,
                    },
                    DATA,
                    "clone answers {vm, source, forwards_copied}; the clone holds the source's forwards exactly when forwards_copied",
                )
            })
            .chain(refused)
            .collect()
    }

    /// A snapshot command on `name`: not_found, no_disk on a VM without a qcow2, else what
    /// `act` allows given the tags (`None` tags in its answer: refused as invalid_spec). A
    /// VM whose disk or tags are not known yet gets every branch.
    fn snapshot(
        &self,
        name: &str,
        act: Option<(&'static str, &'static str)>,
        allow: impl Fn(&Vm, &BTreeSet<String>) -> Vec<(Option<BTreeSet<String>>, &'static str)>,
    ) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        let with = |disk: Option<bool>, snapshots: Option<BTreeSet<String>>| {
            let mut next = self.clone();
            if let Some(vm) = next.vms.get_mut(name) {
                vm.disk = disk;
                vm.snapshots = snapshots;
            }
            next
        };
        let mut out = Vec::new();
        if vm.disk != Some(true) {
            out.push(err(
                &with(Some(false), vm.snapshots.clone()),
                &["no_disk"],
                CODES,
                "no_disk: the VM has no qcow2 (a live VM has none)",
            ));
        }
        if vm.disk == Some(false) {
            return out;
        }
        if act.is_some() && vm.power == Power::Running {
            out.push(refuse_running(self));
        }
        let data = match act {
            None => Data::Snapshots(name.to_string()),
            Some((action, tag)) => Data::SnapshotAct {
                name: name.to_string(),
                tag,
                action,
            },
        };
        match &vm.snapshots {
            Some(tags) => {
                for (after, rule) in allow(vm, tags) {
                    match after {
                        Some(after) => {
                            out.push(ok(with(Some(true), Some(after)), data.clone(), DATA, rule))
                        }
                        None => out.push(err(
                            &with(Some(true), Some(tags.clone())),
                            &["invalid_spec", "not_found"],
                            CODES,
                            rule,
                        )),
                    }
                }
                // Saving over a tag the VM has: replacing it or refusing are both allowed.
                if let Some(("save", tag)) = act {
                    if tags.contains(tag) {
                        out.push(err(
                            &with(Some(true), Some(tags.clone())),
                            &["invalid_spec"],
                            CODES,
                            "a tag already saved may be refused as malformed",
                        ));
                    }
                }
            }
            None => {
                // Tags not known: the list adopts them; an act may do or refuse anything.
                out.push(ok(
                    with(Some(true), None),
                    data,
                    DATA,
                    "the snapshots are not known yet",
                ));
                if act.is_some() {
                    out.push(err(
                        &with(Some(true), None),
                        &["invalid_spec", "not_found"],
                        CODES,
                        "a tag the VM may not have",
                    ));
                }
            }
        }
        out
    }

    /// A host port another VM forwards (only a clone that copied forwards shares a range)
    /// may be refused: whether two VMs may forward one host port is the host's question.
    fn allow_port_clash(
        &self,
        name: &str,
        ports: impl IntoIterator<Item = u64>,
        out: &mut Vec<Allowed>,
    ) {
        if !self.vms.contains_key(name) {
            return;
        }
        let held: BTreeSet<u64> = self
            .vms
            .iter()
            .filter(|(other, _)| other.as_str() != name)
            .flat_map(|(_, vm)| vm.forwards.iter().map(|f| f.0))
            .collect();
        if ports.into_iter().any(|p| held.contains(&p)) {
            out.push(err(
                self,
                &["invalid_spec"],
                CODES,
                "a host port another VM forwards may be refused",
            ));
        }
    }

    fn set_forwards(
        &self,
        name: &str,
        list: BTreeSet<(u64, u64)>,
        rule: &'static str,
    ) -> Vec<Allowed> {
        let Some(vm) = self.vms.get(name) else {
            return vec![err(self, &["not_found"], CODES, "not_found: no such VM")];
        };
        let running = vm.power == Power::Running;
        let changed = vm.forwards != list;
        // Saved on a running VM and not what it was started with: not active until the next
        // start. A change back to what it runs with may be read either way.
        let inactive = running && vm.started.as_ref() != Some(&list);
        let applies = match (changed, inactive) {
            (false, _) => Applies::Either,
            (true, false) => Applies::Must,
            (true, true) => Applies::NextStart,
        };
        let mut next = self.clone();
        if let Some(vm) = next.vms.get_mut(name) {
            vm.forwards = list;
        }
        vec![ok(
            next,
            Data::Forwards {
                name: name.to_string(),
                applies,
                inactive,
            },
            DATA,
            if inactive && changed {
                "a forward saved on a running VM is not active until the next start: applies_at next_start, active false"
            } else {
                rule
            },
        )]
    }
}

/// Judges one result line against the allowed answers; on agreement returns the new state
/// (with what the answer fixed adopted), else what disagrees.
pub fn judge(
    allowed: &[Allowed],
    result: &Value,
) -> Result<(Model, &'static str, &'static str), String> {
    let succeeded = result.get("ok").and_then(Value::as_bool);
    match succeeded {
        Some(true) => {
            let data = result.get("data").cloned().unwrap_or(Value::Null);
            let mut first_problem = None;
            for choice in allowed {
                let Ok(expect) = &choice.answer else {
                    continue;
                };
                let mut next = choice.next.clone();
                match check_data(expect, &data, &mut next) {
                    Ok(()) => return Ok((next, choice.spec, choice.quote)),
                    Err(problem) => {
                        first_problem.get_or_insert(problem);
                    }
                }
            }
            Err(first_problem.unwrap_or_else(|| {
                let codes: Vec<String> = allowed.iter().map(Allowed::describe).collect();
                format!(
                    "answered ok where the contract allows only {}",
                    codes.join(" or ")
                )
            }))
        }
        Some(false) => {
            let code = result
                .pointer("/error/code")
                .and_then(Value::as_str)
                .unwrap_or("");
            allowed
                .iter()
                .find(|a| a.allows_code(code))
                .map(|a| (a.next.clone(), a.spec, a.quote))
                .ok_or_else(|| {
                    let allowed: Vec<String> = allowed.iter().map(Allowed::describe).collect();
                    format!(
                        "answered error {code:?}; the contract allows {}",
                        allowed.join(" or ")
                    )
                })
        }
        None => Err("no ok field on the result".into()),
    }
}

fn check_data(expect: &Data, data: &Value, model: &mut Model) -> Result<(), String> {
    match expect {
        Data::Vm(name) => agree(model, name, data.get("vm"), "/data/vm"),
        Data::Updated { name, changed } => {
            agree(model, name, data.get("vm"), "/data/vm")?;
            let got: BTreeSet<&str> = data
                .get("changed")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .ok_or("/data/changed is not a list")?;
            let want: BTreeSet<&str> = changed.iter().copied().collect();
            if got != want {
                return Err(format!(
                    "/data/changed is {got:?}, the fields that changed are {want:?}"
                ));
            }
            applies_at(data, Applies::Must)
        }
        Data::Removed(name) => {
            if data.get("name").and_then(Value::as_str) != Some(name)
                || data.get("deleted") != Some(&json!(true))
            {
                return Err(format!(
                    "data is {data}, expected {{name: {name}, deleted: true}}"
                ));
            }
            Ok(())
        }
        Data::List => {
            let vms = data
                .get("vms")
                .and_then(Value::as_array)
                .ok_or("/data/vms is not a list")?;
            let names: BTreeSet<&str> = vms
                .iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .collect();
            let want: BTreeSet<&str> = model.vms.keys().map(String::as_str).collect();
            if names != want || vms.len() != want.len() {
                return Err(format!("/data/vms lists {names:?}, the VMs are {want:?}"));
            }
            for (index, vm) in vms.iter().enumerate() {
                let name = vm
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                agree(model, &name, Some(vm), &format!("/data/vms/{index}"))?;
            }
            Ok(())
        }
        Data::Forwards {
            name,
            applies,
            inactive,
        } => {
            if data.get("vm").and_then(Value::as_str) != Some(name) {
                return Err(format!("/data/vm is not {name:?}"));
            }
            match data.get("active").and_then(Value::as_bool) {
                None => return Err("/data/active is not a bool".into()),
                Some(true) if *inactive => {
                    return Err(
                        "/data/active is true, but a forward saved on a running VM is not active until the next start"
                            .into(),
                    )
                }
                Some(_) => {}
            }
            let want = model
                .vms
                .get(name)
                .map(|v| v.forwards.clone())
                .unwrap_or_default();
            let got =
                forwards(data.get("forwards")).ok_or("/data/forwards is not a forward list")?;
            if got != want {
                return Err(format!(
                    "/data/forwards is {}, the model holds {}",
                    describe_forwards(&got),
                    describe_forwards(&want)
                ));
            }
            applies_at(data, *applies)
        }
        Data::Cloned {
            name,
            source,
            copied,
        } => {
            if data.get("source").and_then(Value::as_str) != Some(source) {
                return Err(format!("/data/source is not {source:?}"));
            }
            match data.get("forwards_copied").and_then(Value::as_bool) {
                Some(got) if got == *copied => {}
                Some(_) => return Err(format!("/data/forwards_copied is not {copied}")),
                None => return Err("/data/forwards_copied is not a bool".into()),
            }
            agree(model, name, data.get("vm"), "/data/vm")
        }
        Data::Snapshots(name) => {
            if data.get("vm").and_then(Value::as_str) != Some(name) {
                return Err(format!("/data/vm is not {name:?}"));
            }
            let rows = data
                .get("snapshots")
                .and_then(Value::as_array)
                .ok_or("/data/snapshots is not a list")?;
            let mut got = BTreeSet::new();
            for (index, row) in rows.iter().enumerate() {
                let tag = row
                    .get("tag")
                    .and_then(Value::as_str)
                    .ok_or(format!("/data/snapshots/{index}/tag is not a string"))?;
                if !row.get("vm_state").is_some_and(Value::is_boolean) {
                    return Err(format!("/data/snapshots/{index}/vm_state is not a bool"));
                }
                got.insert(tag.to_string());
            }
            let Some(vm) = model.vms.get_mut(name) else {
                return Err(format!("/data shows VM {name:?}, which does not exist"));
            };
            match &vm.snapshots {
                Some(want) if *want != got => Err(format!(
                    "/data/snapshots has the tags {got:?}, the model holds {want:?}"
                )),
                Some(_) => Ok(()),
                None => {
                    vm.snapshots = Some(got);
                    Ok(())
                }
            }
        }
        Data::Applied(name) => {
            if data.get("vm").and_then(Value::as_str) != Some(name) {
                return Err(format!("/data/vm is not {name:?}"));
            }
            if data.get("applied") != Some(&json!([])) {
                return Err(format!(
                    "/data/applied is {}, but the VM has no recipes (and applied is always a list)",
                    data.get("applied")
                        .map(Value::to_string)
                        .unwrap_or_else(|| "missing".into())
                ));
            }
            if !data.get("skipped_reason").is_some_and(Value::is_string) {
                return Err("/data/skipped_reason is not a string".into());
            }
            Ok(())
        }
        Data::Planned(name) => {
            if data.get("vm").and_then(Value::as_str) != Some(name) {
                return Err(format!("/data/vm is not {name:?}"));
            }
            if data.get("dry_run") != Some(&json!(true)) {
                return Err("/data/dry_run is not true".into());
            }
            if data.get("plan") != Some(&json!([])) {
                return Err(format!(
                    "/data/plan is {}, but the VM has no recipes to plan",
                    data.get("plan")
                        .map(Value::to_string)
                        .unwrap_or_else(|| "missing".into())
                ));
            }
            Ok(())
        }
        Data::Recipes => {
            let rows = data
                .get("recipes")
                .and_then(Value::as_array)
                .ok_or("/data/recipes is not a list")?;
            let mut got = BTreeMap::new();
            for (index, row) in rows.iter().enumerate() {
                let at = format!("/data/recipes/{index}");
                let name = recipe_schema(row, &at)?;
                if got.insert(name.clone(), row.clone()).is_some() {
                    return Err(format!("{at}/name {name:?} is listed twice"));
                }
            }
            if let Some(held) = &model.recipes {
                if *held != got {
                    return Err(format!(
                        "/data/recipes lists {:?}, where it listed {:?} and nothing changed the catalog",
                        got.keys().collect::<Vec<_>>(),
                        held.keys().collect::<Vec<_>>()
                    ));
                }
            }
            for (name, shown) in &model.shown {
                if got.get(name) != shown.as_ref() {
                    return Err(format!(
                        "/data/recipes {} {name:?}, where recipe show {} it",
                        if got.contains_key(name) {
                            "lists"
                        } else {
                            "does not list"
                        },
                        if shown.is_some() {
                            "answered a different object for"
                        } else {
                            "refused"
                        }
                    ));
                }
            }
            model.recipes = Some(got);
            Ok(())
        }
        Data::Recipe(recipe) => {
            let row = data.get("recipe").ok_or("/data/recipe is missing")?;
            let name = recipe_schema(row, "/data/recipe")?;
            if name != *recipe {
                return Err(format!("/data/recipe/name is {name:?}, not {recipe:?}"));
            }
            let held = match &model.recipes {
                Some(list) => list.get(*recipe).cloned(),
                None => model.shown.get(*recipe).cloned().flatten(),
            };
            match held {
                Some(held) if held != *row => Err(format!(
                    "/data/recipe is {}, but recipes (or the show before) gave {held}: one RecipeSchema projection",
                    crate::oracle::excerpt(&row.to_string())
                )),
                _ => {
                    model.shown.insert(recipe.to_string(), Some(row.clone()));
                    Ok(())
                }
            }
        }
        Data::Exec { name, code } => {
            let want = json!({"vm": name, "exit_code": code,
                "stdout": format!("out {code}\n"), "stderr": format!("err {code}\n")});
            for key in ["vm", "exit_code", "stdout", "stderr"] {
                if data.get(key) != want.get(key) {
                    return Err(format!(
                        "/data/{key} is {}, the guest's is {}",
                        data.get(key)
                            .map(Value::to_string)
                            .unwrap_or_else(|| "missing".into()),
                        want[key]
                    ));
                }
            }
            Ok(())
        }
        Data::Waited {
            name,
            until,
            reached,
        } => {
            if data.get("vm").and_then(Value::as_str) != Some(name) {
                return Err(format!("/data/vm is not {name:?}"));
            }
            if data.get("until").and_then(Value::as_str) != Some(until) {
                return Err(format!("/data/until is not {until:?}"));
            }
            if !data.get("waited_ms").is_some_and(Value::is_u64) {
                return Err("/data/waited_ms is not a count of milliseconds".into());
            }
            match (data.get("reached").and_then(Value::as_bool), reached) {
                (None, _) => Err("/data/reached is not a bool".into()),
                (Some(got), Some(want)) if got != *want => {
                    Err(format!("/data/reached is {got}, expected {want}"))
                }
                _ => Ok(()),
            }
        }
        Data::SnapshotAct { name, tag, action } => {
            let want = json!({"vm": name, "tag": tag, "action": action});
            for key in ["vm", "tag", "action"] {
                if data.get(key) != want.get(key) {
                    return Err(format!(
                        "/data/{key} is {}, expected {}",
                        data.get(key)
                            .map(Value::to_string)
                            .unwrap_or_else(|| "missing".into()),
                        want[key]
                    ));
                }
            }
            Ok(())
        }
        Data::Images => check_images(data, model),
        Data::Pulled(id) => {
            if data.get("id").and_then(Value::as_str) != Some(id) {
                return Err(format!("/data/id is not {id:?}"));
            }
            for key in ["downloaded", "verified", "checksum_available"] {
                if !data.get(key).is_some_and(Value::is_boolean) {
                    return Err(format!("/data/{key} is not a bool"));
                }
            }
            Ok(())
        }
        Data::Init => {
            for key in ["path", "project"] {
                if !data.get(key).is_some_and(Value::is_string) {
                    return Err(format!("/data/{key} is not a string"));
                }
            }
            if !data.get("gitignore_updated").is_some_and(Value::is_boolean) {
                return Err("/data/gitignore_updated is not a bool".into());
            }
            hold_project(model, data)
        }
        Data::Status => {
            hold_project(model, data)?;
            if !data.get("dir").is_some_and(Value::is_string) {
                return Err("/data/dir is not a string".into());
            }
            let rows = declared_rows(model, data)?;
            for (index, row) in rows.iter().enumerate() {
                let at = format!("/data/vms/{index}");
                let name = row.get("name").and_then(Value::as_str).unwrap_or("");
                let state = row.get("state").and_then(Value::as_str);
                match (model.vms.get_mut(name), state) {
                    (None, None) => {}
                    (None, Some(state)) => {
                        return Err(format!(
                            "{at}/state is {state:?}, but no VM {name:?} exists (the state is missing for a declared VM that does not exist yet)"
                        ))
                    }
                    (Some(_), None) => {
                        return Err(format!(
                            "{at} has no state, but the VM {name:?} exists"
                        ))
                    }
                    (Some(vm), Some(state)) => match (vm.power, state) {
                        (Power::Stopped, "stopped")
                        | (Power::Running, "running")
                        | (Power::Stopping, "running") => {}
                        (Power::Stopping, "stopped") => vm.power = Power::Stopped,
                        (power, state) => {
                            return Err(format!(
                                "{at}/state is {state:?}, the model holds it {}",
                                power.word()
                            ))
                        }
                    },
                }
                if !row.get("drift").is_some_and(Value::is_array) {
                    return Err(format!("{at}/drift is not a list"));
                }
            }
            Ok(())
        }
        Data::ProjectRun => {
            hold_project(model, data)?;
            let rows = declared_rows(model, data)?;
            for (index, row) in rows.iter().enumerate() {
                let at = format!("/data/vms/{index}");
                let status = row.get("status").and_then(Value::as_str);
                if !matches!(status, Some("ok" | "error" | "skipped")) {
                    return Err(format!(
                        "{at}/status is {}, not ok, error or skipped",
                        shown(status)
                    ));
                }
                if row.get("error").is_some() != (status == Some("error")) {
                    return Err(format!("{at}/error is there exactly when status is error"));
                }
                // A declared VM that runs is being stopped: it may read either until a
                // later answer settles it.
                let name = row.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(vm) = model.vms.get_mut(name) {
                    if vm.power == Power::Running {
                        vm.power = Power::Stopping;
                    }
                }
            }
            Ok(())
        }
    }
}

/// Holds `data.project` to the project's name as first answered.
fn hold_project(model: &mut Model, data: &Value) -> Result<(), String> {
    let got = data
        .get("project")
        .and_then(Value::as_str)
        .ok_or("/data/project is not a string")?;
    let project = model.project.get_or_insert_with(Project::default);
    match &project.name {
        Some(name) if name != got => Err(format!(
            "/data/project is {got:?}, where the project was answered as {name:?}"
        )),
        _ => {
            project.name = Some(got.to_string());
            Ok(())
        }
    }
}

/// `data.vms` of a status or fan-out: every row a (key, name) pair, the declarations held
/// to the first answer that listed them (nothing edits the stoat.toml).
fn declared_rows(model: &mut Model, data: &Value) -> Result<Vec<Value>, String> {
    let rows = data
        .get("vms")
        .and_then(Value::as_array)
        .ok_or("/data/vms is not a list")?;
    let mut got = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let key = row.get("key").and_then(Value::as_str);
        let name = row.get("name").and_then(Value::as_str);
        match (key, name) {
            (Some(key), Some(name)) => got.push((key.to_string(), name.to_string())),
            _ => return Err(format!("/data/vms/{index} has no key and name")),
        }
    }
    let project = model.project.get_or_insert_with(Project::default);
    match &project.declared {
        Some(held) if *held != got => Err(format!(
            "/data/vms declares {:?}, where the project declared {:?} (in declaration order) and nothing edited its stoat.toml",
            got.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            held.iter().map(|(k, _)| k).collect::<Vec<_>>()
        )),
        _ => {
            project.declared = Some(got);
            Ok(rows.clone())
        }
    }
}

/// `{"images": [Image...]}`: ids unique, each `file` a bare filename, `downloaded` and
/// `byo` bools; the list as first answered (only a pull changes it), each pulled id listed
/// and downloaded.
fn check_images(data: &Value, model: &mut Model) -> Result<(), String> {
    let rows = data
        .get("images")
        .and_then(Value::as_array)
        .ok_or("/data/images is not a list")?;
    let mut got = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let at = format!("/data/images/{index}");
        let id = row
            .get("id")
            .and_then(Value::as_str)
            .ok_or(format!("{at}/id is not a string"))?;
        let file = row
            .get("file")
            .and_then(Value::as_str)
            .ok_or(format!("{at}/file is not a string"))?;
        if file.contains('/') {
            return Err(format!(
                "{at}/file is {file:?}: a bare filename under isos/, never a path"
            ));
        }
        for key in ["downloaded", "byo"] {
            if !row.get(key).is_some_and(Value::is_boolean) {
                return Err(format!("{at}/{key} is not a bool"));
            }
        }
        // A bring-your-own image may have an empty id: key it by its file then.
        let key = if id.is_empty() { file } else { id };
        if got.insert(key.to_string(), row.clone()).is_some() {
            return Err(format!("{at} lists {key:?} twice"));
        }
    }
    for id in &model.pulled {
        if got.get(id).and_then(|r| r.get("downloaded")) != Some(&json!(true)) {
            return Err(format!(
                "/data/images does not list {id:?} downloaded, which pull answered ok for"
            ));
        }
    }
    if let Some(held) = &model.images {
        if *held != got {
            let changed: Vec<&String> = held
                .keys()
                .chain(got.keys())
                .filter(|k| held.get(*k) != got.get(*k))
                .collect();
            return Err(format!(
                "/data/images changed at {changed:?} where nothing but a pull changes the images"
            ));
        }
    }
    model.images = Some(got);
    Ok(())
}

/// Checks one RecipeSchema's shape as the contract fixes it (a name; list fields lists,
/// never null; params and outputs sorted by name; health null or an object); its name.
fn recipe_schema(row: &Value, at: &str) -> Result<String, String> {
    let name = row
        .get("name")
        .and_then(Value::as_str)
        .ok_or(format!("{at}/name is not a string"))?;
    for key in ["depends", "params", "outputs"] {
        if !row.get(key).is_some_and(Value::is_array) {
            return Err(format!(
                "{at}/{key} is not a list (every list field is [], never null)"
            ));
        }
    }
    for key in ["params", "outputs"] {
        let names: Vec<&str> = row[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if names.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!("{at}/{key} is not sorted by name: {names:?}"));
        }
    }
    match row.get("health") {
        Some(Value::Null) | Some(Value::Object(_)) => Ok(name.to_string()),
        _ => Err(format!("{at}/health is neither null nor an object")),
    }
}

fn applies_at(data: &Value, applies: Applies) -> Result<(), String> {
    let value = data.get("applies_at");
    let valid = value
        .and_then(Value::as_str)
        .is_some_and(|v| v == "now" || v == "next_start");
    match (applies, value) {
        (Applies::Never, Some(_)) => Err("applies_at on a forward that only shows".into()),
        (Applies::Must | Applies::NextStart, None) => {
            Err("no applies_at on a change of the configuration".into())
        }
        (Applies::NextStart, Some(v)) if v != "next_start" => Err(format!(
            "applies_at is {v}, but a forward saved on a running VM is not active until the next start"
        )),
        (_, Some(_)) if !valid => Err("applies_at is neither now nor next_start".into()),
        _ => Ok(()),
    }
}

fn forwards(value: Option<&Value>) -> Option<BTreeSet<(u64, u64)>> {
    value?
        .as_array()?
        .iter()
        .map(|f| {
            Some((
                f.get("host_port")?.as_u64()?,
                f.get("guest_port")?.as_u64()?,
            ))
        })
        .collect()
}

/// Holds one VM object to the model's VM `name`, adopting what the model leaves open.
fn agree(model: &mut Model, name: &str, vm: Option<&Value>, at: &str) -> Result<(), String> {
    let vm = vm
        .and_then(Value::as_object)
        .ok_or(format!("{at} is not an object"))?;
    let Some(want) = model.vms.get_mut(name) else {
        return Err(format!("{at} shows VM {name:?}, which does not exist"));
    };
    let field = |key: &str| vm.get(key);
    if field("name").and_then(Value::as_str) != Some(name) {
        return Err(format!("{at}/name is not {name:?}"));
    }
    // TYPES: state is stopped, running or broken.
    let _ = TYPES;
    let state = field("state").and_then(Value::as_str);
    match (want.power, state) {
        (Power::Stopped, Some("stopped")) | (Power::Running, Some("running")) => {}
        (Power::Stopping, Some("running")) => {}
        (Power::Stopping, Some("stopped")) => want.power = Power::Stopped,
        (power, _) => {
            return Err(format!(
                "{at}/state is {}, the model holds it {}",
                shown(state),
                power.word()
            ))
        }
    }
    hold_u64(&mut want.cpus, field("cpus"), &format!("{at}/cpus"))?;
    hold_u64(&mut want.ram_mb, field("ram_mb"), &format!("{at}/ram_mb"))?;
    let access = field("agent_access").and_then(Value::as_str);
    if !access.is_some_and(|a| ACCESS.contains(&a)) {
        return Err(format!(
            "{at}/agent_access is {}, not a level the contract names",
            shown(access)
        ));
    }
    match &want.agent_access {
        Some(level) if Some(level.as_str()) != access => {
            return Err(format!(
                "{at}/agent_access is {}, the model holds {level:?}",
                shown(access)
            ));
        }
        _ => want.agent_access = access.map(str::to_string),
    }
    let allow = field("allow_exec").and_then(Value::as_bool);
    match (want.allow_exec, allow) {
        (_, None) => return Err(format!("{at}/allow_exec is not a bool")),
        (Some(held), Some(got)) if held != got => {
            return Err(format!("{at}/allow_exec is {got}, the model holds {held}"));
        }
        _ => want.allow_exec = allow,
    }
    let got = forwards(field("forwards")).ok_or(format!("{at}/forwards is not a forward list"))?;
    if got != want.forwards {
        return Err(format!(
            "{at}/forwards is {}, the model holds {}",
            describe_forwards(&got),
            describe_forwards(&want.forwards)
        ));
    }
    let mut rest: Map<String, Value> = vm.clone();
    for key in [
        "name",
        "state",
        "cpus",
        "ram_mb",
        "agent_access",
        "allow_exec",
        "forwards",
        "health",
        "recipes_detail",
    ] {
        rest.remove(key);
    }
    match &want.fixed {
        Some(fixed) => {
            for (key, was) in fixed {
                if rest.get(key) != Some(was) {
                    return Err(format!(
                        "{at}/{key} is {}, where it was {was} and nothing changed it",
                        rest.get(key)
                            .map(Value::to_string)
                            .unwrap_or_else(|| "missing".into())
                    ));
                }
            }
        }
        None => want.fixed = Some(rest),
    }
    if want.disk.is_none() {
        let mode = vm.get("mode").and_then(Value::as_str);
        want.disk = mode.map(|m| m == "disk");
    }
    Ok(())
}

/// A string field as a problem names it: quoted, or `missing` when the answer lacks it (no
/// Rust debug text reaches a report).
fn shown(value: Option<&str>) -> String {
    match value {
        Some(text) => format!("{text:?}"),
        None => "missing".into(),
    }
}

fn hold_u64(held: &mut Option<u64>, got: Option<&Value>, at: &str) -> Result<(), String> {
    let got = got
        .and_then(Value::as_u64)
        .ok_or(format!("{at} is not a number"))?;
    match held {
        Some(want) if *want != got => Err(format!("{at} is {got}, the model holds {want}")),
        _ => {
            *held = Some(got);
            Ok(())
        }
    }
}

/// The result line the model expects, as a golden transcript writes it (matchers where the
/// contract leaves a value open); `None` when it allows more than one kind of answer.
pub fn expected_line(cmd: &Cmd, allowed: &[Allowed]) -> Option<(i32, Value)> {
    let [only] = allowed else {
        return None;
    };
    let mut line = json!({"v": 3, "type": "result", "cmd": cmd.cmd()});
    match &only.answer {
        Err(codes) => {
            // Several codes allowed: the transcript pins the failure, not which code.
            let code = match codes.as_slice() {
                [code] if *code != ANY_CODE => json!(code),
                _ => json!({"$any": "string"}),
            };
            line["ok"] = json!(false);
            line["error"] = json!({"code": code, "message": {"$any": "string"}});
            Some((1, line))
        }
        Ok(data) => {
            line["ok"] = json!(true);
            line["data"] = expected_data(data, &only.next);
            Some((0, line))
        }
    }
}

fn expected_data(data: &Data, model: &Model) -> Value {
    let vm_of = |name: &str| {
        let vm = model.vms.get(name).cloned().unwrap_or_default();
        let mut out = json!({"name": name, "forwards": forward_matcher(&vm.forwards)});
        if vm.power != Power::Stopping {
            out["state"] = json!(vm.power.word());
        }
        if let Some(cpus) = vm.cpus {
            out["cpus"] = json!(cpus);
        }
        if let Some(ram) = vm.ram_mb {
            out["ram_mb"] = json!(ram);
        }
        if let Some(access) = &vm.agent_access {
            out["agent_access"] = json!(access);
        }
        out
    };
    match data {
        Data::Vm(name) => json!({"vm": vm_of(name)}),
        Data::Updated { name, .. } => json!({"vm": vm_of(name), "changed": {"$any": "array"}}),
        Data::Removed(name) => json!({"name": name, "deleted": true}),
        Data::List if model.vms.is_empty() => json!({"vms": []}),
        Data::List => {
            json!({"vms": {"$includes": model.vms.keys().map(|n| vm_of(n)).collect::<Vec<_>>()}})
        }
        Data::Forwards { name, inactive, .. } => {
            let vm = model.vms.get(name).cloned().unwrap_or_default();
            let active = if *inactive {
                json!(false)
            } else {
                json!({"$any": "bool"})
            };
            json!({"vm": name, "forwards": forward_matcher(&vm.forwards), "active": active})
        }
        Data::Applied(name) => {
            json!({"vm": name, "applied": [], "skipped_reason": {"$any": "string"}})
        }
        Data::Planned(name) => json!({"vm": name, "dry_run": true, "plan": []}),
        Data::Recipes => json!({"recipes": {"$any": "array"}}),
        Data::Recipe(recipe) => json!({"recipe": {"name": recipe}}),
        Data::Exec { name, code } => json!({"vm": name, "exit_code": code,
            "stdout": format!("out {code}\n"), "stderr": format!("err {code}\n")}),
        Data::Waited {
            name,
            until,
            reached,
        } => {
            let reached = reached.map_or(json!({"$any": "bool"}), |r| json!(r));
            json!({"vm": name, "until": until, "reached": reached, "waited_ms": {"$any": "int"}})
        }
        Data::Cloned {
            name,
            source,
            copied,
        } => json!({"vm": vm_of(name), "source": source, "forwards_copied": copied}),
        Data::Snapshots(name) => {
            let tags = model.vms.get(name).and_then(|vm| vm.snapshots.clone());
            let snapshots = match tags {
                Some(tags) if tags.is_empty() => json!([]),
                Some(tags) => {
                    json!({"$includes": tags.iter().map(|t| json!({"tag": t})).collect::<Vec<_>>()})
                }
                None => json!({"$any": "array"}),
            };
            json!({"vm": name, "snapshots": snapshots})
        }
        Data::SnapshotAct { name, tag, action } => {
            json!({"vm": name, "tag": tag, "action": action})
        }
        Data::Images => json!({"images": {"$any": "array"}}),
        Data::Pulled(id) => json!({"id": id}),
        Data::Init => json!({"path": {"$any": "string"}, "project": {"$any": "string"}}),
        Data::Status => {
            json!({"project": {"$any": "string"}, "dir": {"$any": "string"}, "vms": {"$any": "array"}})
        }
        Data::ProjectRun => json!({"project": {"$any": "string"}, "vms": {"$any": "array"}}),
    }
}

/// An empty list is exact; a longer one is an `$includes` (the contract fixes no order).
fn forward_matcher(forwards: &BTreeSet<(u64, u64)>) -> Value {
    let items: Vec<Value> = forwards
        .iter()
        .map(|(h, g)| json!({"host_port": h, "guest_port": g}))
        .collect();
    if items.is_empty() {
        json!([])
    } else {
        json!({"$includes": items})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(name: &str) -> Cmd {
        Cmd::Create {
            name: name.into(),
            cpus: Some(2),
            ram: None,
            access: None,
            disk: false,
        }
    }

    fn vm_answer(name: &str, cpus: u64, forwards: Value) -> Value {
        json!({"ok": true, "data": {"vm": {"name": name, "state": "stopped", "cpus": cpus,
            "ram_mb": 1024, "agent_access": "manage", "allow_exec": true,
            "forwards": forwards, "ssh_port": 2200}}})
    }

    #[test]
    fn a_created_vm_is_held_to_its_flags_and_its_first_answer() {
        let empty = Model::default();
        let (state, ..) = judge(&empty.predict(&create("a")), &vm_answer("a", 2, json!([])))
            .expect("create agrees");
        // The flag given is held: another cpus count fails.
        assert!(judge(&empty.predict(&create("a")), &vm_answer("a", 3, json!([]))).is_err());
        let get = Cmd::Get { name: "a".into() };
        assert!(judge(&state.predict(&get), &vm_answer("a", 2, json!([]))).is_ok());
        // ram_mb was adopted from the answer; a later different value fails.
        let mut other = vm_answer("a", 2, json!([]));
        other["data"]["vm"]["ram_mb"] = json!(2048);
        assert!(judge(&state.predict(&get), &other).is_err());
        // A field nothing changed must stay.
        let mut moved = vm_answer("a", 2, json!([]));
        moved["data"]["vm"]["ssh_port"] = json!(2201);
        assert!(judge(&state.predict(&get), &moved).is_err());
        let taken = json!({"ok": false, "error": {"code": "name_taken", "message": "x"}});
        assert!(judge(&state.predict(&create("a")), &taken).is_ok());
        assert!(judge(&state.predict(&create("a")), &vm_answer("a", 2, json!([]))).is_err());
    }

    #[test]
    fn snapshots_follow_save_and_delete_and_a_clone_agrees_with_forwards_copied() {
        let disk = Cmd::Create {
            name: "a".into(),
            cpus: Some(2),
            ram: None,
            access: None,
            disk: true,
        };
        let mut answer = vm_answer("a", 2, json!([{"host_port": 8100, "guest_port": 80}]));
        answer["data"]["vm"]["mode"] = json!("disk");
        let empty = Model::default();
        // The created VM has no forwards: the answer above is refused, then one without.
        assert!(judge(&empty.predict(&disk), &answer).is_err());
        answer["data"]["vm"]["forwards"] = json!([]);
        let (state, ..) = judge(&empty.predict(&disk), &answer).expect("create");
        let act =
            |action: &str| json!({"ok": true, "data": {"vm": "a", "tag": "t1", "action": action}});
        let delete = Cmd::SnapshotDelete {
            name: "a".into(),
            tag: "t1",
        };
        // Nothing to delete yet: ok is refused.
        assert!(judge(&state.predict(&delete), &act("delete")).is_err());
        let save = Cmd::SnapshotSave {
            name: "a".into(),
            tag: "t1",
        };
        let (saved, ..) = judge(&state.predict(&save), &act("save")).expect("save");
        let (deleted, ..) = judge(&saved.predict(&delete), &act("delete")).expect("delete");
        let list = Cmd::SnapshotList { name: "a".into() };
        let listed = |tags: &[&str]| {
            let rows: Vec<Value> = tags
                .iter()
                .map(|t| json!({"tag": t, "vm_state": false}))
                .collect();
            json!({"ok": true, "data": {"vm": "a", "snapshots": rows}})
        };
        assert!(judge(&saved.predict(&list), &listed(&["t1"])).is_ok());
        assert!(judge(&deleted.predict(&list), &listed(&["t1"])).is_err());
        assert!(judge(&deleted.predict(&list), &listed(&[])).is_ok());
        let clone = Cmd::Clone {
            source: "a".into(),
            name: "b".into(),
        };
        let mut cloned = vm_answer("b", 2, json!([]));
        cloned["data"]["source"] = json!("a");
        cloned["data"]["forwards_copied"] = json!(false);
        let (after, ..) = judge(&state.predict(&clone), &cloned).expect("clone");
        let forwarded = vm_answer("b", 2, json!([{"host_port": 8100, "guest_port": 80}]));
        assert!(judge(&after.predict(&Cmd::Get { name: "b".into() }), &forwarded).is_err());
        // forwards_copied true with forwards the source does not have: refused.
        cloned["data"]["forwards_copied"] = json!(true);
        cloned["data"]["vm"]["forwards"] = json!([{"host_port": 8100, "guest_port": 80}]);
        assert!(judge(&state.predict(&clone), &cloned).is_err());
    }

    #[test]
    fn up_down_exec_and_a_forward_saved_while_running_follow_the_contract() {
        let (state, ..) = judge(
            &Model::default().predict(&create("a")),
            &vm_answer("a", 2, json!([])),
        )
        .expect("create");
        let up = Cmd::Up { name: "a".into() };
        let mut running = vm_answer("a", 2, json!([]));
        running["data"]["vm"]["state"] = json!("running");
        // up's answer is authoritative: running, never stopped.
        assert!(judge(&state.predict(&up), &vm_answer("a", 2, json!([]))).is_err());
        let (up_state, ..) = judge(&state.predict(&up), &running).expect("up");
        // A running VM's up may be refused or answered running; exec runs.
        let refused = |code: &str| json!({"ok": false, "error": {"code": code, "message": "x"}});
        assert!(judge(&up_state.predict(&up), &refused("already_running")).is_ok());
        let exec = Cmd::Exec {
            name: "a".into(),
            code: 3,
        };
        let ran = |code: u8| {
            json!({"ok": true, "data": {"vm": "a", "exit_code": code,
            "stdout": format!("out {code}\n"), "stderr": format!("err {code}\n")}})
        };
        assert!(judge(&up_state.predict(&exec), &ran(3)).is_ok());
        assert!(judge(&up_state.predict(&exec), &ran(0)).is_err());
        assert!(judge(&state.predict(&exec), &refused("not_running")).is_ok());
        // A forward saved while running: next_start and inactive; undone: either.
        let add = Cmd::ForwardAdd {
            name: "a".into(),
            forward: (8100, 80),
        };
        let fwd = |active: bool, applies: &str| {
            json!({"ok": true, "data": {"vm": "a",
            "forwards": [{"host_port": 8100, "guest_port": 80}], "active": active, "applies_at": applies}})
        };
        assert!(judge(&up_state.predict(&add), &fwd(true, "now")).is_err());
        let (added, ..) = judge(&up_state.predict(&add), &fwd(false, "next_start")).expect("add");
        let clear = Cmd::ForwardClear { name: "a".into() };
        let cleared = json!({"ok": true, "data": {"vm": "a", "forwards": [], "active": true, "applies_at": "now"}});
        assert!(judge(&added.predict(&clear), &cleared).is_ok());
        // down answering stopped settles it: a later get reading running fails.
        let down = Cmd::Down { name: "a".into() };
        let mut stopped = vm_answer("a", 2, json!([]));
        let (down_state, ..) = judge(&up_state.predict(&down), &stopped).expect("down");
        let get = Cmd::Get { name: "a".into() };
        assert!(judge(&down_state.predict(&get), &running).is_err());
        // down answering running leaves it stopping: either read, then stopped holds.
        stopped["data"]["vm"]["state"] = json!("running");
        let (stopping, ..) = judge(&up_state.predict(&down), &stopped).expect("down, exiting");
        let (read, ..) = judge(&stopping.predict(&get), &running).expect("still exiting");
        let (settled, ..) =
            judge(&read.predict(&get), &vm_answer("a", 2, json!([]))).expect("stopped");
        assert!(judge(&settled.predict(&get), &running).is_err());
    }

    #[test]
    fn rm_then_get_must_be_not_found_and_forwards_compare_as_sets() {
        let empty = Model::default();
        let (state, ..) =
            judge(&empty.predict(&create("a")), &vm_answer("a", 2, json!([]))).expect("create");
        let rm = Cmd::Rm {
            name: "a".into(),
            yes: true,
        };
        let removed = json!({"ok": true, "data": {"name": "a", "deleted": true}});
        let (gone, ..) = judge(&state.predict(&rm), &removed).expect("rm");
        let get = Cmd::Get { name: "a".into() };
        assert!(judge(&gone.predict(&get), &vm_answer("a", 2, json!([]))).is_err());
        let set = Cmd::ForwardSet {
            name: "a".into(),
            forwards: vec![(8100, 80), (8101, 81)],
        };
        let answer = json!({"ok": true, "data": {"vm": "a", "active": false, "applies_at": "now",
            "forwards": [{"host_port": 8101, "guest_port": 81}, {"host_port": 8100, "guest_port": 80}]}});
        assert!(judge(&state.predict(&set), &answer).is_ok());
        let mut no_applies = answer.clone();
        no_applies["data"]
            .as_object_mut()
            .map(|d| d.remove("applies_at"));
        assert!(judge(&state.predict(&set), &no_applies).is_err());
    }
}
