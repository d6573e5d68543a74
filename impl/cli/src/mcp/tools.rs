//! The MCP tool table: each tool's name, class (annotations and the agent_access it needs),
//! input parameters (the inputSchema, `additionalProperties:false`, and their validation), and
//! the runner that calls the same `stoat_core::app` function the CLI's command calls, so
//! results are the contract's DTOs (docs/contract.md behaviour#mcp). Tools never call the
//! CLI's commands.

use serde_json::{json, Map, Value};
use stoat_core::app::{
    self, host::PruneOptions, host::SnapshotAction, vmops::ForwardChange, Session,
};
use stoat_core::ops::{create::CreateSpec, update::UpdateSpec};
use stoat_core::recipes::apply::ApplyRequest;
use stoat_core::runtime::{cp::CopyRequest, wait::Until};
use stoat_core::{Error, Result};
use stoat_wire::dto::{
    AgentAccess, ApplyResult, CopyDirection, CopyResult, ForwardList, WaitResult,
};

use super::guards::{self, Class};
use stoat_core::project::Project;

/// The type of one parameter.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Str,
    /// An integer within `[min, max]`.
    Int(i64, i64),
    Bool,
    /// A list of strings with at least this many items.
    List(usize),
    Enum(&'static [&'static str]),
}

/// One input parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub description: &'static str,
}

const fn req(name: &'static str, kind: Kind, description: &'static str) -> Param {
    Param {
        name,
        kind,
        required: true,
        description,
    }
}

const fn opt(name: &'static str, kind: Kind, description: &'static str) -> Param {
    Param {
        name,
        kind,
        required: false,
        description,
    }
}

/// Runs a tool once its arguments passed the guards.
pub type Runner = fn(&Session, &Args) -> Result<Value>;

/// One MCP tool.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub class: Class,
    pub params: &'static [Param],
    /// The parameter naming the VM whose agent_access guards this tool, if any.
    pub vm_param: Option<&'static str>,
    /// Fields refused with access_denied before anything else.
    pub forbidden: &'static [&'static str],
    pub run: Runner,
}

const VM: Param = req("vm", Kind::Str, "the VM's name");

/// The changing tools whose repetition with the same arguments changes nothing more (the
/// read-only ones are idempotent by definition).
const IDEMPOTENT: &[&str] = &[
    "stop",
    "update",
    "forward",
    "restore",
    "wait",
    "project_down",
    "project_wait",
];
const BYTE_SIZE: &str = "a size such as 20G";

/// Every tool, in the order tools/list shows them.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "list_vms",
        title: "List VMs",
        description: "List the VMs an agent may see (agent_access other than none), with their state.",
        class: Class::ReadOnly,
        params: &[],
        vm_param: None,
        forbidden: &[],
        run: list_vms,
    },
    Tool {
        name: "vm_status",
        title: "VM status",
        description: "One VM's configuration, state and stored recipe state (VMStatus).",
        class: Class::ReadOnly,
        params: &[VM],
        vm_param: Some("vm"),
        forbidden: &[],
        run: vm_status,
    },
    Tool {
        name: "list_images",
        title: "List images",
        description: "Catalog and local images, with whether each is downloaded.",
        class: Class::ReadOnly,
        params: &[],
        vm_param: None,
        forbidden: &[],
        run: list_images,
    },
    Tool {
        name: "list_recipes",
        title: "List recipes",
        description: "Recipes offered to a guest OS and backend.",
        class: Class::ReadOnly,
        params: &[
            opt("os", Kind::Str, "guest OS, e.g. debian"),
            opt("backend", Kind::Str, "cloudinit or another backend"),
        ],
        vm_param: None,
        forbidden: &[],
        run: list_recipes,
    },
    Tool {
        name: "check_recipes",
        title: "Check recipes",
        description: "Check that recipes can run on a guest OS and backend.",
        class: Class::ReadOnly,
        params: &[
            req("recipes", Kind::List(1), "recipe names"),
            req("os", Kind::Str, "guest OS, e.g. debian"),
            opt("backend", Kind::Str, "backend; the OS's default when absent"),
        ],
        vm_param: None,
        forbidden: &[],
        run: check_recipes,
    },
    Tool {
        name: "logs",
        title: "VM logs",
        description: "The last lines of a VM's console or apply log.",
        class: Class::ReadOnly,
        params: &[
            VM,
            opt("which", Kind::Enum(&["console", "apply"]), "console (default) or apply"),
            opt("n", Kind::Int(0, 100_000), "lines from the end, 0 for all (default 50)"),
        ],
        vm_param: Some("vm"),
        forbidden: &[],
        run: logs,
    },
    Tool {
        name: "doctor",
        title: "Check the host",
        description: "Check this host: QEMU, accelerator, tools, data root.",
        class: Class::ReadOnly,
        params: &[],
        vm_param: None,
        forbidden: &[],
        run: doctor,
    },
    Tool {
        name: "create",
        title: "Create a VM",
        description: "Create a VM from a catalog image id or a file name in isos/ (never a path). No share and no console password through MCP.",
        class: Class::Mutating,
        params: &[
            req("name", Kind::Str, "the new VM's name"),
            req("image", Kind::Str, "catalog id or a file name in isos/"),
            opt("os", Kind::Str, "guest OS when it cannot be inferred"),
            opt("backend", Kind::Str, "provisioning backend"),
            opt("mode", Kind::Str, "cloud, live or disk"),
            opt("ram_mb", Kind::Int(64, 1_048_576), "RAM in MB (default 4096)"),
            opt("cpus", Kind::Int(1, 1024), "vCPUs (default 4)"),
            opt("disk", Kind::Str, BYTE_SIZE),
            opt("recipes", Kind::List(0), "recipes to apply at start"),
            opt("allow_exec", Kind::Bool, "record that exec is allowed (default true)"),
            opt(
                "agent_access",
                Kind::Enum(&["none", "observe", "manage", "exec"]),
                "what MCP agents may do with the VM; default from allow_exec",
            ),
        ],
        vm_param: None,
        forbidden: guards::FORBIDDEN_CREATE,
        run: create,
    },
    Tool {
        name: "start",
        title: "Start a VM",
        description: "Boot a stopped VM.",
        class: Class::Mutating,
        params: &[VM],
        vm_param: Some("vm"),
        forbidden: &[],
        run: start,
    },
    Tool {
        name: "stop",
        title: "Stop a VM",
        description: "Shut a running VM down.",
        class: Class::Mutating,
        params: &[VM],
        vm_param: Some("vm"),
        forbidden: &[],
        run: stop,
    },
    Tool {
        name: "apply_recipes",
        title: "Apply recipes",
        description: "Run a running VM's recipes (all, or only the named ones).",
        class: Class::Mutating,
        params: &[VM, opt("only", Kind::List(0), "only these recipes")],
        vm_param: Some("vm"),
        forbidden: &[],
        run: apply_recipes,
    },
    Tool {
        name: "update",
        title: "Update a VM",
        description: "Change RAM, vCPUs, ssh port, disk size (grow only) or the recipe list. share, image, base, iso, console_password and access levels cannot be changed through MCP.",
        class: Class::Mutating,
        params: &[
            VM,
            opt("ram_mb", Kind::Int(64, 1_048_576), "RAM in MB"),
            opt("cpus", Kind::Int(1, 1024), "vCPUs"),
            opt("ssh_port", Kind::Int(1, 65_535), "host ssh port"),
            opt("disk", Kind::Str, BYTE_SIZE),
            opt("recipes", Kind::List(0), "the new recipe list ([] clears it)"),
        ],
        vm_param: Some("vm"),
        forbidden: guards::FORBIDDEN_UPDATE,
        run: update,
    },
    Tool {
        name: "clone",
        title: "Clone a VM",
        description: "Copy a stopped VM under a new name (its disk becomes an overlay).",
        class: Class::Mutating,
        params: &[
            req("source", Kind::Str, "the VM to copy"),
            req("name", Kind::Str, "the new VM's name"),
        ],
        vm_param: Some("source"),
        forbidden: &[],
        run: clone,
    },
    Tool {
        name: "snapshot",
        title: "Save a snapshot",
        description: "Save a snapshot of a VM's disk under a tag.",
        class: Class::Mutating,
        params: &[VM, req("tag", Kind::Str, "snapshot tag")],
        vm_param: Some("vm"),
        forbidden: &[],
        run: snapshot,
    },
    Tool {
        name: "restore",
        title: "Restore a snapshot",
        description: "Restore a VM to a saved snapshot (its current disk state is lost).",
        class: Class::Destructive,
        params: &[VM, req("tag", Kind::Str, "snapshot tag")],
        vm_param: Some("vm"),
        forbidden: &[],
        run: restore,
    },
    Tool {
        name: "forward",
        title: "Port forwards",
        description: "Show a VM's port forwards, set them (HOST:GUEST pairs) or clear them.",
        class: Class::Mutating,
        params: &[
            VM,
            opt("pairs", Kind::List(0), "HOST:GUEST pairs, e.g. 8080:80"),
            opt("clear", Kind::Bool, "remove every forward"),
        ],
        vm_param: Some("vm"),
        forbidden: &[],
        run: forward,
    },
    Tool {
        name: "wait",
        title: "Wait for a VM",
        description: "Wait until a VM is reachable over ssh, stopped, or has its recipes applied; healthy says whether it got there in time.",
        class: Class::Mutating,
        params: &[
            VM,
            opt(
                "until",
                Kind::Enum(&["reachable", "stopped", "applied"]),
                "default reachable",
            ),
            opt("timeout_seconds", Kind::Int(1, 3600), "default 120"),
        ],
        vm_param: Some("vm"),
        forbidden: &[],
        run: wait,
    },
    Tool {
        name: "destroy",
        title: "Delete a VM",
        description: "Delete a stopped VM and its disk.",
        class: Class::Destructive,
        params: &[VM],
        vm_param: Some("vm"),
        forbidden: &[],
        run: destroy,
    },
    Tool {
        name: "prune",
        title: "Prune leftovers",
        description: "List (or with apply, delete) leftovers: stale files, and optionally broken VMs and unused images.",
        class: Class::Destructive,
        params: &[
            opt("apply", Kind::Bool, "delete for real (default: dry run)"),
            opt("broken", Kind::Bool, "include broken VMs"),
            opt("images", Kind::Bool, "include images no VM uses"),
        ],
        vm_param: None,
        forbidden: &[],
        run: prune,
    },
    Tool {
        name: "exec",
        title: "Run a command",
        description: "Run a command in a running VM over ssh; returns its exit code, stdout and stderr.",
        class: Class::Execution,
        params: &[VM, req("command", Kind::List(1), "argv, e.g. [\"uname\", \"-a\"]")],
        vm_param: Some("vm"),
        forbidden: &[],
        run: exec,
    },
    Tool {
        name: "copy_to",
        title: "Copy into a VM",
        description: "Copy a host file from <stoat home>/shared/<vm> into a running VM.",
        class: Class::Execution,
        params: &[
            VM,
            req("local", Kind::Str, "host path inside shared/<vm> (relative paths are relative to it)"),
            req("remote", Kind::Str, "guest path"),
        ],
        vm_param: Some("vm"),
        forbidden: &[],
        run: copy_to,
    },
    Tool {
        name: "copy_from",
        title: "Copy out of a VM",
        description: "Copy a file from a running VM to <stoat home>/shared/<vm> on the host.",
        class: Class::Execution,
        params: &[
            VM,
            req("remote", Kind::Str, "guest path"),
            req("local", Kind::Str, "host path inside shared/<vm> (relative paths are relative to it)"),
        ],
        vm_param: Some("vm"),
        forbidden: &[],
        run: copy_from,
    },
    Tool {
        name: "project_status",
        title: "Project status",
        description: "Compare a project's stoat.toml declarations with its VMs.",
        class: Class::ReadOnly,
        params: &[PROJECT_DIR],
        vm_param: None,
        forbidden: &[],
        run: project_status,
    },
    Tool {
        name: "project_up",
        title: "Start a project",
        description: "Create and start every VM a project declares.",
        class: Class::Mutating,
        params: &[PROJECT_DIR],
        vm_param: None,
        forbidden: &[],
        run: project_up,
    },
    Tool {
        name: "project_down",
        title: "Stop a project",
        description: "Stop every VM of a project.",
        class: Class::Mutating,
        params: &[PROJECT_DIR],
        vm_param: None,
        forbidden: &[],
        run: project_down,
    },
    Tool {
        name: "project_apply",
        title: "Apply a project",
        description: "Apply the recipes of every VM of a project.",
        class: Class::Mutating,
        params: &[PROJECT_DIR],
        vm_param: None,
        forbidden: &[],
        run: project_apply,
    },
    Tool {
        name: "project_wait",
        title: "Wait for a project",
        description: "Wait until every VM of a project is reachable.",
        class: Class::Mutating,
        params: &[PROJECT_DIR],
        vm_param: None,
        forbidden: &[],
        run: project_wait,
    },
];

const PROJECT_DIR: Param = opt(
    "dir",
    Kind::Str,
    "absolute directory holding stoat.toml (default: the server's working directory)",
);

/// Finds a tool by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|tool| tool.name == name)
}

impl Tool {
    /// The tools/list entry.
    pub fn describe(&self) -> Value {
        let mut properties = Map::new();
        for param in self.params {
            properties.insert(param.name.into(), param.schema());
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        let (read_only, destructive, open_world) = match self.class {
            Class::ReadOnly => (true, false, false),
            Class::Mutating => (false, false, false),
            Class::Destructive => (false, true, false),
            Class::Execution => (false, true, true),
        };
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
            "annotations": {
                "title": self.title,
                "readOnlyHint": read_only,
                "destructiveHint": destructive,
                "idempotentHint": read_only || IDEMPOTENT.contains(&self.name),
                "openWorldHint": open_world,
            },
        })
    }

    /// Checks arguments against the parameters: no unknown key, every required one, types and
    /// ranges. A failure is `usage`, naming what this tool takes.
    pub fn validate(&self, args: &Map<String, Value>) -> Result<()> {
        let takes = || {
            let names: Vec<&str> = self.params.iter().map(|p| p.name).collect();
            if names.is_empty() {
                "no arguments".to_owned()
            } else {
                names.join(", ")
            }
        };
        for key in args.keys() {
            if !self.params.iter().any(|p| p.name == key) {
                return Err(Error::Usage(format!(
                    "{}: unknown argument {key:?}; it takes {}",
                    self.name,
                    takes()
                )));
            }
        }
        for param in self.params {
            match args.get(param.name) {
                None | Some(Value::Null) if param.required => {
                    return Err(Error::Usage(format!(
                        "{}: missing argument {:?}",
                        self.name, param.name
                    )))
                }
                None | Some(Value::Null) => {}
                Some(value) => param.check(self.name, value)?,
            }
        }
        Ok(())
    }
}

impl Param {
    fn schema(&self) -> Value {
        let mut schema = match self.kind {
            Kind::Str => json!({"type": "string", "minLength": 1}),
            Kind::Int(min, max) => json!({"type": "integer", "minimum": min, "maximum": max}),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::List(min) => {
                json!({"type": "array", "items": {"type": "string"}, "minItems": min})
            }
            Kind::Enum(values) => json!({"type": "string", "enum": values}),
        };
        schema["description"] = Value::from(self.description);
        schema
    }

    fn check(&self, tool: &str, value: &Value) -> Result<()> {
        let fail = |what: String| {
            Err(Error::Usage(format!(
                "{tool}: argument {:?} {what}",
                self.name
            )))
        };
        match (self.kind, value) {
            (Kind::Str, Value::String(s)) if !s.is_empty() => Ok(()),
            (Kind::Str, _) => fail("must be a non-empty string".into()),
            (Kind::Int(min, max), Value::Number(n)) => match n.as_i64() {
                Some(i) if (min..=max).contains(&i) => Ok(()),
                _ => fail(format!("must be an integer from {min} to {max}")),
            },
            (Kind::Int(min, max), _) => fail(format!("must be an integer from {min} to {max}")),
            (Kind::Bool, Value::Bool(_)) => Ok(()),
            (Kind::Bool, _) => fail("must be true or false".into()),
            (Kind::List(min), Value::Array(items))
                if items.len() >= min && items.iter().all(Value::is_string) =>
            {
                Ok(())
            }
            (Kind::List(min), _) => fail(format!(
                "must be a list of strings with at least {min} item(s)"
            )),
            (Kind::Enum(values), Value::String(s)) if values.contains(&s.as_str()) => Ok(()),
            (Kind::Enum(values), _) => fail(format!("must be one of {}", values.join(", "))),
        }
    }
}

/// Validated arguments, read by name (missing or mistyped reads as absent).
pub struct Args(pub Map<String, Value>);

impl Args {
    pub fn str(&self, key: &str) -> String {
        self.opt_str(key).unwrap_or_default()
    }
    pub fn opt_str(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(Value::as_str).map(str::to_owned)
    }
    pub fn opt_u32(&self, key: &str) -> Option<u32> {
        self.0
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    }
    pub fn bool_or(&self, key: &str, default: bool) -> bool {
        self.0.get(key).and_then(Value::as_bool).unwrap_or(default)
    }
    pub fn opt_list(&self, key: &str) -> Option<Vec<String>> {
        let items = self.0.get(key)?.as_array()?;
        Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    }
    pub fn list(&self, key: &str) -> Vec<String> {
        self.opt_list(key).unwrap_or_default()
    }
}

fn to_value<T: serde::Serialize>(dto: &T) -> Value {
    serde_json::to_value(dto).unwrap_or_else(|e| panic!("wire DTOs always serialise: {e}"))
}

fn list_vms(ctx: &Session, _args: &Args) -> Result<Value> {
    let mut data = app::vms::ls(ctx)?;
    data.vms.retain(|vm| vm.agent_access != AgentAccess::None);
    Ok(to_value(&data))
}

fn vm_status(ctx: &Session, args: &Args) -> Result<Value> {
    Ok(to_value(&app::vms::get(ctx, &args.str("vm"))?))
}

fn list_images(ctx: &Session, _args: &Args) -> Result<Value> {
    Ok(to_value(&app::images::images(ctx)?))
}

fn list_recipes(ctx: &Session, args: &Args) -> Result<Value> {
    Ok(to_value(&app::recipes::recipes(
        ctx,
        args.opt_str("os").as_deref(),
    )?))
}

fn check_recipes(ctx: &Session, args: &Args) -> Result<Value> {
    let data = app::recipes::check_recipes(
        ctx,
        &args.list("recipes"),
        &args.str("os"),
        args.opt_str("backend").as_deref(),
    )?;
    Ok(to_value(&data))
}

fn logs(ctx: &Session, args: &Args) -> Result<Value> {
    let which = args.opt_str("which").unwrap_or_else(|| "console".into());
    let lines = args.opt_u32("n").map(i64::from).unwrap_or(50);
    let data = app::host::logs(ctx, Some(&args.str("vm")), &which, lines)?;
    Ok(to_value(&data))
}

fn doctor(ctx: &Session, _args: &Args) -> Result<Value> {
    Ok(to_value(&app::host::doctor(ctx)?))
}

fn create(ctx: &Session, args: &Args) -> Result<Value> {
    guards::check_vm_name(&args.str("name"))?;
    guards::check_image_id(&args.str("image"))?;
    let spec = CreateSpec {
        name: args.str("name"),
        image: args.str("image"),
        os: args.opt_str("os"),
        backend: args.opt_str("backend"),
        mode: args.opt_str("mode"),
        ram_mb: args.opt_u32("ram_mb"),
        cpus: args.opt_u32("cpus"),
        disk: args.opt_str("disk"),
        recipes: args.list("recipes"),
        allow_exec: args.bool_or("allow_exec", true),
        agent_access: args.opt_str("agent_access"),
        ..CreateSpec::default()
    };
    Ok(to_value(&app::vmops::create(ctx, &spec)?))
}

fn start(ctx: &Session, args: &Args) -> Result<Value> {
    Ok(to_value(
        // The start tool answers once QEMU runs; the wait tool waits.
        &app::runtime::up(ctx, &args.str("vm"), true, None)?.data,
    ))
}

fn stop(ctx: &Session, args: &Args) -> Result<Value> {
    Ok(to_value(&app::runtime::down(ctx, &args.str("vm"))?))
}

/// Applies the VM's recipes, then answers its stored recipe state.
fn apply_recipes(ctx: &Session, args: &Args) -> Result<Value> {
    let name = args.str("vm");
    let request = ApplyRequest {
        only: args
            .list("only")
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        params: Vec::new(),
    };
    app::runtime::apply(ctx, &name, &request)?;
    let status = app::vms::get(ctx, &name)?.vm;
    Ok(to_value(&ApplyResult {
        vm: status.vm.name,
        recipes_detail: status.recipes_detail,
    }))
}

fn update(ctx: &Session, args: &Args) -> Result<Value> {
    let spec = UpdateSpec {
        ram_mb: args.opt_u32("ram_mb"),
        cpus: args.opt_u32("cpus"),
        ssh_port: args.opt_u32("ssh_port").and_then(|p| u16::try_from(p).ok()),
        disk: args.opt_str("disk"),
        recipes: args.opt_list("recipes").map(|names| names.join(",")),
        ..UpdateSpec::default()
    };
    Ok(to_value(&app::vmops::update(ctx, &args.str("vm"), &spec)?))
}

fn clone(ctx: &Session, args: &Args) -> Result<Value> {
    guards::check_vm_name(&args.str("name"))?;
    let data = app::vmops::clone(ctx, &args.str("source"), &args.str("name"))?;
    Ok(to_value(&data))
}

fn snapshot(ctx: &Session, args: &Args) -> Result<Value> {
    let data =
        app::host::snapshot_act(ctx, &args.str("vm"), &args.str("tag"), SnapshotAction::Save)?;
    Ok(to_value(&data))
}

fn restore(ctx: &Session, args: &Args) -> Result<Value> {
    let data = app::host::snapshot_act(
        ctx,
        &args.str("vm"),
        &args.str("tag"),
        SnapshotAction::Restore,
    )?;
    Ok(to_value(&data))
}

fn forward(ctx: &Session, args: &Args) -> Result<Value> {
    let change = ForwardChange::parse(&args.list("pairs"), args.bool_or("clear", false))?;
    let data = app::vmops::forward(ctx, &args.str("vm"), &change)?;
    // ForwardList: the forwards after the call, nothing else.
    Ok(to_value(&ForwardList {
        forwards: data.forwards,
    }))
}

/// `wait`: a timeout is an answer (`healthy:false`), not an error.
fn wait(ctx: &Session, args: &Args) -> Result<Value> {
    let seconds = args.opt_u32("timeout_seconds").unwrap_or(120);
    let until = Until::parse(&args.opt_str("until").unwrap_or_else(|| "reachable".into()))?;
    let timeout = std::time::Duration::from_secs(u64::from(seconds));
    let healthy = match app::runtime::wait(ctx, &args.str("vm"), until, timeout) {
        Ok(data) => data.reached,
        Err(Error::Timeout(_)) => false,
        Err(other) => return Err(other),
    };
    Ok(to_value(&WaitResult { healthy }))
}

fn destroy(ctx: &Session, args: &Args) -> Result<Value> {
    Ok(to_value(&app::vmops::rm(ctx, &args.str("vm"))?))
}

fn prune(ctx: &Session, args: &Args) -> Result<Value> {
    let options = PruneOptions {
        apply: args.bool_or("apply", false),
        broken: args.bool_or("broken", false),
        images: args.bool_or("images", false),
    };
    Ok(to_value(&app::host::prune(ctx, options)?))
}

fn exec(ctx: &Session, args: &Args) -> Result<Value> {
    let command: Vec<std::ffi::OsString> = args
        .list("command")
        .into_iter()
        .map(std::ffi::OsString::from)
        .collect();
    let data = app::runtime::exec(
        ctx,
        &args.str("vm"),
        &command,
        stoat_core::runtime::exec::Streams::Capture,
        stoat_core::runtime::exec::REACH_WAIT,
    )?;
    Ok(to_value(&data))
}

fn copy_to(ctx: &Session, args: &Args) -> Result<Value> {
    copy(ctx, args, true)
}

fn copy_from(ctx: &Session, args: &Args) -> Result<Value> {
    copy(ctx, args, false)
}

/// Both copy tools: confine the host path, copy, and check that the copy used exactly the
/// authorised path.
fn copy(ctx: &Session, args: &Args, to_remote: bool) -> Result<Value> {
    let name = args.str("vm");
    let local = guards::confine_host_path(&ctx.env, ctx.root()?, &name, &args.str("local"))?;
    let local_text = local
        .to_str()
        .ok_or_else(|| Error::InvalidSpec("the host path is not UTF-8".into()))?
        .to_owned();
    if to_remote && !local.is_file() {
        return Err(Error::InvalidSpec(format!(
            "copy_to: {} is not a file in shared/{name}",
            args.str("local")
        )));
    }
    let request = CopyRequest {
        vm: name.clone(),
        direction: if to_remote {
            CopyDirection::ToGuest
        } else {
            CopyDirection::FromGuest
        },
        local: local_text.clone(),
        remote: args.str("remote"),
    };
    let cwd = std::env::current_dir().map_err(|e| Error::io("read the current directory", e))?;
    let data = app::runtime::cp(ctx, &cwd, &request, stoat_core::runtime::exec::REACH_WAIT)?;
    if data.local != local_text {
        return Err(Error::Internal(format!(
            "cp copied {} instead of the authorised {local_text}",
            data.local
        )));
    }
    Ok(to_value(&CopyResult {
        vm: data.vm,
        local: local_text,
        remote: args.str("remote"),
        to_remote,
    }))
}

/// Loads the project a project tool acts on and checks the caller's access to every VM it
/// declares that exists: a project tool must not reach a VM its own tool would be refused.
fn project_with_access(ctx: &Session, tool: &str, class: Class) -> Result<Project> {
    let project = app::project::required(ctx)?;
    let root = ctx.root()?;
    for decl in &project.vms {
        match guards::access_of(root, &decl.name) {
            Ok(have) => guards::require(tool, &decl.name, have, class.needs())?,
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(project)
}

fn project_status(ctx: &Session, _args: &Args) -> Result<Value> {
    let project = project_with_access(ctx, "project_status", Class::ReadOnly)?;
    Ok(to_value(&app::project::status(ctx, &project)?))
}
fn project_up(ctx: &Session, _args: &Args) -> Result<Value> {
    let project = project_with_access(ctx, "project_up", Class::Mutating)?;
    // Like start: answers once each QEMU runs; project_wait waits.
    Ok(to_value(&app::project::up(ctx, &project, true, None)?))
}
fn project_down(ctx: &Session, _args: &Args) -> Result<Value> {
    let project = project_with_access(ctx, "project_down", Class::Mutating)?;
    Ok(to_value(&app::project::down(ctx, &project)?))
}
fn project_apply(ctx: &Session, _args: &Args) -> Result<Value> {
    let project = project_with_access(ctx, "project_apply", Class::Mutating)?;
    let request = ApplyRequest {
        only: Vec::new(),
        params: Vec::new(),
    };
    Ok(to_value(&app::project::apply(ctx, &project, &request)?))
}
fn project_wait(ctx: &Session, _args: &Args) -> Result<Value> {
    let project = project_with_access(ctx, "project_wait", Class::Mutating)?;
    let timeout = std::time::Duration::from_secs(120);
    Ok(to_value(&app::project::wait(
        ctx,
        &project,
        "reachable",
        timeout,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_issue_tool_is_registered_once() {
        let wanted = [
            "list_vms",
            "vm_status",
            "list_images",
            "list_recipes",
            "check_recipes",
            "logs",
            "doctor",
            "create",
            "start",
            "stop",
            "apply_recipes",
            "update",
            "clone",
            "snapshot",
            "restore",
            "forward",
            "wait",
            "destroy",
            "prune",
            "exec",
            "copy_to",
            "copy_from",
            "project_status",
            "project_up",
            "project_down",
            "project_apply",
            "project_wait",
        ];
        assert_eq!(TOOLS.len(), wanted.len());
        for name in wanted {
            assert!(find(name).is_some(), "{name}");
        }
        for never in ["recipe_new", "ssh_command", "pull"] {
            assert!(find(never).is_none());
        }
    }

    #[test]
    fn schemas_are_closed_and_annotated() {
        for tool in TOOLS {
            let d = tool.describe();
            assert_eq!(
                d["inputSchema"]["additionalProperties"], false,
                "{}",
                tool.name
            );
            assert_eq!(d["inputSchema"]["type"], "object");
            for hint in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ] {
                assert!(d["annotations"][hint].is_boolean(), "{} {hint}", tool.name);
            }
            if let Some(vm) = tool.vm_param {
                assert!(tool.params.iter().any(|p| p.name == vm && p.required));
            }
        }
        assert_eq!(
            find("exec").unwrap().describe()["annotations"]["openWorldHint"],
            true
        );
        assert_eq!(
            find("destroy").unwrap().describe()["annotations"]["destructiveHint"],
            true
        );
        assert_eq!(
            find("list_vms").unwrap().describe()["annotations"]["readOnlyHint"],
            true
        );
        let restore = find("restore").unwrap().describe();
        assert_eq!(restore["annotations"]["destructiveHint"], true);
        assert_eq!(restore["annotations"]["idempotentHint"], true);
        assert_eq!(
            find("exec").unwrap().describe()["annotations"]["idempotentHint"],
            false
        );
    }

    #[test]
    fn validation_names_the_problem() {
        let tool = find("logs").unwrap();
        let args = |text: &str| serde_json::from_str::<Map<String, Value>>(text).unwrap();
        assert!(tool.validate(&args(r#"{"vm":"w"}"#)).is_ok());
        assert!(tool
            .validate(&args(r#"{"vm":"w","n":10,"which":"apply"}"#))
            .is_ok());
        for bad in [
            r#"{}"#,
            r#"{"vm":3}"#,
            r#"{"vm":""}"#,
            r#"{"vm":"w","n":-1}"#,
            r#"{"vm":"w","n":"10"}"#,
            r#"{"vm":"w","which":"boot"}"#,
            r#"{"vm":"w","extra":1}"#,
        ] {
            let err = tool.validate(&args(bad)).unwrap_err();
            assert_eq!(err.code(), stoat_wire::ErrorCode::Usage, "{bad}");
        }
        let exec = find("exec").unwrap();
        assert!(exec.validate(&args(r#"{"vm":"w","command":[]}"#)).is_err());
        assert!(exec
            .validate(&args(r#"{"vm":"w","command":["ls",1]}"#))
            .is_err());
    }
}
