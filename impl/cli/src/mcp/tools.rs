//! The MCP tool table: each tool's name, class (annotations and the agent_access it needs),
//! its argument struct (whose schemars schema is the inputSchema, and which the arguments are
//! checked against and read into), what a success answers (the outputSchema, from the
//! contract's schemas) and the runner that calls the same `stoat_core::app` function the CLI's
//! command calls, so results are the contract's DTOs (docs/contract.md behaviour#mcp). Tools
//! never call the CLI's commands.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use stoat_core::app::project::Project;
use stoat_core::app::runtime::{ApplyRequest, CopyRequest, Streams, Until, REACH_WAIT};
use stoat_core::app::vmops::{Backend, CreateSpec, Edit, ForwardChange, Mode, UpdateSpec};
use stoat_core::app::{self, host::PruneOptions, host::SnapshotAction, Session};
use stoat_core::{Error, Result};
use stoat_wire::dto::{
    AgentAccess, ApplyResult, CopyDirection, CopyResult, ForwardList, WaitResult,
};

use super::guards::{self, Class};
use super::schemas::{self, Answer, Schemas};

/// Runs a tool once its arguments passed the guards and the input schema.
pub type Runner = fn(&Session, Map<String, Value>) -> Result<Value>;

/// One MCP tool.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub class: Class,
    /// The argument struct's JSON Schema.
    pub input: fn() -> schemars::Schema,
    pub answer: Answer,
    /// The parameter naming the VM whose agent_access guards this tool, if any.
    pub vm_param: Option<&'static str>,
    /// Fields refused with access_denied before anything else.
    pub forbidden: &'static [&'static str],
    pub run: Runner,
}

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

/// The schema of an argument struct.
fn input<A: JsonSchema>() -> schemars::Schema {
    schemas::input_schema::<A>()
}

/// Reads the checked arguments into the tool's struct and runs `f`.
fn typed<A: DeserializeOwned, R: Serialize>(
    session: &Session,
    args: Map<String, Value>,
    f: fn(&Session, A) -> Result<R>,
) -> Result<Value> {
    let args: A = serde_json::from_value(Value::Object(args))
        .map_err(|e| Error::Usage(format!("arguments: {e}")))?;
    let answer = f(session, args)?;
    serde_json::to_value(&answer)
        .map_err(|e| Error::Internal(format!("a result did not serialise: {e}")))
}

// ---------------------------------------------------------------- argument structs

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VmArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRecipesArgs {
    /// guest OS, e.g. debian
    #[schemars(length(min = 1))]
    pub os: Option<String>,
    /// cloudinit or another backend
    #[schemars(length(min = 1))]
    // Taken like the CLI's `recipes --backend`: the offer does not depend on it.
    #[allow(dead_code)]
    pub backend: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRecipesArgs {
    /// recipe names
    #[schemars(length(min = 1))]
    pub recipes: Vec<String>,
    /// guest OS, e.g. debian
    #[schemars(length(min = 1))]
    pub os: String,
    /// backend; the OS's default when absent
    #[schemars(length(min = 1))]
    pub backend: Option<String>,
}

/// Which log `logs` reads.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    Console,
    Apply,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// console (default) or apply
    pub which: Option<Which>,
    /// lines from the end, 0 for all (default 50)
    #[schemars(range(min = 0, max = 100_000))]
    pub n: Option<u32>,
}

/// The schema of an agent_access level: one of [`AgentAccess::ALL`]'s words.
fn access_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let words: Vec<&str> = AgentAccess::ALL.iter().map(|a| a.as_str()).collect();
    schemars::json_schema!({"type": "string", "enum": words})
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// the new VM's name
    #[schemars(length(min = 1))]
    pub name: String,
    /// catalog id or a file name in isos/
    #[schemars(length(min = 1))]
    pub image: String,
    /// guest OS when it cannot be inferred
    #[schemars(length(min = 1))]
    pub os: Option<String>,
    /// provisioning backend
    #[schemars(length(min = 1))]
    pub backend: Option<String>,
    /// cloud, live or disk
    #[schemars(length(min = 1))]
    pub mode: Option<String>,
    /// RAM in MB (default 4096)
    #[schemars(range(min = 64, max = 1_048_576))]
    pub ram_mb: Option<u32>,
    /// vCPUs (default 4)
    #[schemars(range(min = 1, max = 1024))]
    pub cpus: Option<u32>,
    /// a size such as 20G
    #[schemars(length(min = 1))]
    pub disk: Option<String>,
    /// recipes to apply at start
    pub recipes: Option<Vec<String>>,
    /// record that exec is allowed (default true)
    pub allow_exec: Option<bool>,
    /// what MCP agents may do with the VM; default from allow_exec
    // `default` and `skip_serializing_if` here only tell schemars the argument is optional
    // (its schema then carries no `"default": null`); serde reads an absent one as None.
    #[schemars(
        schema_with = "access_schema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_access: Option<AgentAccess>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRecipesArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// only these recipes
    pub only: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// RAM in MB
    #[schemars(range(min = 64, max = 1_048_576))]
    pub ram_mb: Option<u32>,
    /// vCPUs
    #[schemars(range(min = 1, max = 1024))]
    pub cpus: Option<u32>,
    /// host ssh port
    #[schemars(range(min = 1, max = 65_535))]
    pub ssh_port: Option<u16>,
    /// a size such as 20G
    #[schemars(length(min = 1))]
    pub disk: Option<String>,
    /// the new recipe list ([] clears it)
    pub recipes: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloneArgs {
    /// the VM to copy
    #[schemars(length(min = 1))]
    pub source: String,
    /// the new VM's name
    #[schemars(length(min = 1))]
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// snapshot tag
    #[schemars(length(min = 1))]
    pub tag: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForwardArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// HOST:GUEST pairs, e.g. 8080:80
    pub pairs: Option<Vec<String>>,
    /// remove every forward
    pub clear: Option<bool>,
}

/// The state `wait` waits for.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum UntilArg {
    Reachable,
    Stopped,
    Applied,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// default reachable
    pub until: Option<UntilArg>,
    /// default 120
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneArgs {
    /// delete for real (default: dry run)
    pub apply: Option<bool>,
    /// include broken VMs
    pub broken: Option<bool>,
    /// include images no VM uses
    pub images: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// argv, e.g. ["uname", "-a"]
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CopyArgs {
    /// the VM's name
    #[schemars(length(min = 1))]
    pub vm: String,
    /// host path inside shared/<vm> (relative paths are relative to it)
    #[schemars(length(min = 1))]
    pub local: String,
    /// guest path
    #[schemars(length(min = 1))]
    pub remote: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectArgs {
    /// absolute directory holding stoat.toml (default: the server's working directory)
    #[schemars(length(min = 1))]
    // Read by the server, which moves the session there before the tool runs.
    #[allow(dead_code)]
    pub dir: Option<String>,
}

// ---------------------------------------------------------------- the table

/// Every tool, in the order tools/list shows them.
pub static TOOLS: &[Tool] = &[
    Tool {
        name: "list_vms",
        title: "List VMs",
        description: "List the VMs an agent may see (agent_access other than none), with their state.",
        class: Class::ReadOnly,
        input: input::<NoArgs>,
        answer: Answer::Data("data/ls.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, list_vms),
    },
    Tool {
        name: "vm_status",
        title: "VM status",
        description: "One VM's configuration, state and stored recipe state (VMStatus).",
        class: Class::ReadOnly,
        input: input::<VmArgs>,
        answer: Answer::Data("data/get.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, vm_status),
    },
    Tool {
        name: "list_images",
        title: "List images",
        description: "Catalog and local images, with whether each is downloaded.",
        class: Class::ReadOnly,
        input: input::<NoArgs>,
        answer: Answer::Data("data/images.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, list_images),
    },
    Tool {
        name: "list_recipes",
        title: "List recipes",
        description: "Recipes offered to a guest OS and backend.",
        class: Class::ReadOnly,
        input: input::<ListRecipesArgs>,
        answer: Answer::Data("data/recipes.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, list_recipes),
    },
    Tool {
        name: "check_recipes",
        title: "Check recipes",
        description: "Check that recipes can run on a guest OS and backend.",
        class: Class::ReadOnly,
        input: input::<CheckRecipesArgs>,
        answer: Answer::Data("data/check-recipes.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, check_recipes),
    },
    Tool {
        name: "logs",
        title: "VM logs",
        description: "The last lines of a VM's console or apply log.",
        class: Class::ReadOnly,
        input: input::<LogsArgs>,
        answer: Answer::Data("data/logs/vm.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, logs),
    },
    Tool {
        name: "doctor",
        title: "Check the host",
        description: "Check this host: QEMU, accelerator, tools, data root.",
        class: Class::ReadOnly,
        input: input::<NoArgs>,
        answer: Answer::Data("data/doctor.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, doctor),
    },
    Tool {
        name: "create",
        title: "Create a VM",
        description: "Create a VM from a catalog image id or a file name in isos/ (never a path). No share and no console password through MCP.",
        class: Class::Mutating,
        input: input::<CreateArgs>,
        answer: Answer::Data("data/create.json"),
        vm_param: None,
        forbidden: guards::FORBIDDEN_CREATE,
        run: |s, a| typed(s, a, create),
    },
    Tool {
        name: "start",
        title: "Start a VM",
        description: "Boot a stopped VM.",
        class: Class::Mutating,
        input: input::<VmArgs>,
        answer: Answer::Data("data/up.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, start),
    },
    Tool {
        name: "stop",
        title: "Stop a VM",
        description: "Shut a running VM down.",
        class: Class::Mutating,
        input: input::<VmArgs>,
        answer: Answer::Data("data/down.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, stop),
    },
    Tool {
        name: "apply_recipes",
        title: "Apply recipes",
        description: "Run a running VM's recipes (all, or only the named ones).",
        class: Class::Mutating,
        input: input::<ApplyRecipesArgs>,
        answer: Answer::Mcp(schemas::apply_result),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, apply_recipes),
    },
    Tool {
        name: "update",
        title: "Update a VM",
        description: "Change RAM, vCPUs, ssh port, disk size (grow only) or the recipe list. share, image, base, iso, console_password and access levels cannot be changed through MCP.",
        class: Class::Mutating,
        input: input::<UpdateArgs>,
        answer: Answer::Data("data/update.json"),
        vm_param: Some("vm"),
        forbidden: guards::FORBIDDEN_UPDATE,
        run: |s, a| typed(s, a, update),
    },
    Tool {
        name: "clone",
        title: "Clone a VM",
        description: "Copy a stopped VM under a new name (its disk is an independent copy; the two share nothing writable).",
        class: Class::Mutating,
        input: input::<CloneArgs>,
        answer: Answer::Data("data/clone.json"),
        vm_param: Some("source"),
        forbidden: &[],
        run: |s, a| typed(s, a, clone),
    },
    Tool {
        name: "snapshot",
        title: "Save a snapshot",
        description: "Save a snapshot of a VM's disk under a tag.",
        class: Class::Mutating,
        input: input::<SnapshotArgs>,
        answer: Answer::Data("data/snapshot/act.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, snapshot),
    },
    Tool {
        name: "restore",
        title: "Restore a snapshot",
        description: "Restore a VM to a saved snapshot (its current disk state is lost).",
        class: Class::Destructive,
        input: input::<SnapshotArgs>,
        answer: Answer::Data("data/snapshot/act.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, restore),
    },
    Tool {
        name: "forward",
        title: "Port forwards",
        description: "Show a VM's port forwards, set them (HOST:GUEST pairs) or clear them.",
        class: Class::Mutating,
        input: input::<ForwardArgs>,
        answer: Answer::Mcp(schemas::forward_list),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, forward),
    },
    Tool {
        name: "wait",
        title: "Wait for a VM",
        description: "Wait until a VM is reachable over ssh, stopped, or has its recipes applied; healthy says whether it got there in time.",
        class: Class::Mutating,
        input: input::<WaitArgs>,
        answer: Answer::Mcp(schemas::wait_result),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, wait),
    },
    Tool {
        name: "destroy",
        title: "Delete a VM",
        description: "Delete a stopped VM and its disk.",
        class: Class::Destructive,
        input: input::<VmArgs>,
        answer: Answer::Data("data/rm.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, destroy),
    },
    Tool {
        name: "prune",
        title: "Prune leftovers",
        description: "List (or with apply, delete) leftovers: stale files, and optionally broken VMs and unused images.",
        class: Class::Destructive,
        input: input::<PruneArgs>,
        answer: Answer::Data("data/prune.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, prune),
    },
    Tool {
        name: "exec",
        title: "Run a command",
        description: "Run a command in a running VM over ssh; returns its exit code, stdout and stderr.",
        class: Class::Execution,
        input: input::<ExecArgs>,
        answer: Answer::Data("data/exec.json"),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, exec),
    },
    Tool {
        name: "copy_to",
        title: "Copy into a VM",
        description: "Copy a host file from <stoat home>/shared/<vm> into a running VM.",
        class: Class::Execution,
        input: input::<CopyArgs>,
        answer: Answer::Mcp(schemas::copy_result),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, copy_to),
    },
    Tool {
        name: "copy_from",
        title: "Copy out of a VM",
        description: "Copy a file from a running VM to <stoat home>/shared/<vm> on the host.",
        class: Class::Execution,
        input: input::<CopyArgs>,
        answer: Answer::Mcp(schemas::copy_result),
        vm_param: Some("vm"),
        forbidden: &[],
        run: |s, a| typed(s, a, copy_from),
    },
    Tool {
        name: "project_status",
        title: "Project status",
        description: "Compare a project's stoat.toml declarations with its VMs.",
        class: Class::ReadOnly,
        input: input::<ProjectArgs>,
        answer: Answer::Data("data/status.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, project_status),
    },
    Tool {
        name: "project_up",
        title: "Start a project",
        description: "Create and start every VM a project declares.",
        class: Class::Mutating,
        input: input::<ProjectArgs>,
        answer: Answer::Data("dto/project-run.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, project_up),
    },
    Tool {
        name: "project_down",
        title: "Stop a project",
        description: "Stop every VM of a project.",
        class: Class::Mutating,
        input: input::<ProjectArgs>,
        answer: Answer::Data("dto/project-run.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, project_down),
    },
    Tool {
        name: "project_apply",
        title: "Apply a project",
        description: "Apply the recipes of every VM of a project.",
        class: Class::Mutating,
        input: input::<ProjectArgs>,
        answer: Answer::Data("dto/project-run.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, project_apply),
    },
    Tool {
        name: "project_wait",
        title: "Wait for a project",
        description: "Wait until every VM of a project is reachable.",
        class: Class::Mutating,
        input: input::<ProjectArgs>,
        answer: Answer::Data("dto/project-run.json"),
        vm_param: None,
        forbidden: &[],
        run: |s, a| typed(s, a, project_wait),
    },
];

/// Finds a tool by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|tool| tool.name == name)
}

impl Tool {
    /// The tools/list entry.
    pub fn describe(&self) -> Value {
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
            "inputSchema": self.schemas().input,
            "outputSchema": self.schemas().output,
            "annotations": {
                "title": self.title,
                "readOnlyHint": read_only,
                "destructiveHint": destructive,
                "idempotentHint": read_only || IDEMPOTENT.contains(&self.name),
                "openWorldHint": open_world,
            },
        })
    }

    /// Checks arguments against the input schema (null reads as absent). A failure is `usage`,
    /// naming what this tool takes.
    pub fn validate(&self, args: &mut Map<String, Value>) -> Result<()> {
        schemas::check_args(self.name, self.schemas(), args)
    }

    /// This tool's schemas, built once per process for every tool of [`TOOLS`].
    fn schemas(&self) -> &'static Schemas {
        static ALL: OnceLock<Vec<Schemas>> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            TOOLS
                .iter()
                .map(|tool| schemas::build(tool.name, tool.input, tool.answer))
                .collect()
        });
        let index = TOOLS
            .iter()
            .position(|t| t.name == self.name)
            .unwrap_or_else(|| panic!("{} is not in the tool table", self.name));
        &all[index]
    }
}

// ---------------------------------------------------------------- runners

fn list_vms(ctx: &Session, _: NoArgs) -> Result<stoat_wire::dto::LsData> {
    let mut data = app::vms::ls(ctx)?;
    data.vms.retain(|vm| vm.agent_access != AgentAccess::None);
    Ok(data)
}

fn vm_status(ctx: &Session, args: VmArgs) -> Result<impl Serialize> {
    app::vms::get(ctx, &args.vm)
}

fn list_images(ctx: &Session, _: NoArgs) -> Result<impl Serialize> {
    app::images::images(ctx)
}

fn list_recipes(ctx: &Session, args: ListRecipesArgs) -> Result<impl Serialize> {
    app::recipes::recipes(ctx, args.os.as_deref())
}

fn check_recipes(ctx: &Session, args: CheckRecipesArgs) -> Result<impl Serialize> {
    app::recipes::check_recipes(ctx, &args.recipes, &args.os, args.backend.as_deref())
}

fn logs(ctx: &Session, args: LogsArgs) -> Result<impl Serialize> {
    let which = match args.which.unwrap_or(Which::Console) {
        Which::Console => app::host::Which::Console,
        Which::Apply => app::host::Which::Apply,
    };
    let lines = args.n.map(i64::from).unwrap_or(50);
    let source = app::host::LogSource::Vm {
        name: &args.vm,
        which,
    };
    app::host::logs(ctx, source, lines)
}

fn doctor(ctx: &Session, _: NoArgs) -> Result<impl Serialize> {
    app::host::doctor(ctx)
}

fn create(ctx: &Session, args: CreateArgs) -> Result<impl Serialize> {
    guards::check_vm_name(&args.name)?;
    guards::check_image_id(&args.image)?;
    let spec = CreateSpec {
        name: args.name,
        image: args.image,
        os: args.os,
        backend: args.backend.as_deref().and_then(Backend::given),
        mode: args.mode.as_deref().and_then(Mode::given),
        ram_mb: args.ram_mb,
        cpus: args.cpus,
        disk: args.disk,
        recipes: args.recipes.unwrap_or_default(),
        allow_exec: args.allow_exec.unwrap_or(true),
        agent_access: args.agent_access,
        ..CreateSpec::default()
    };
    app::vmops::create(ctx, &spec)
}

fn start(ctx: &Session, args: VmArgs) -> Result<impl Serialize> {
    // The start tool answers once QEMU runs; the wait tool waits.
    Ok(app::runtime::up(ctx, &args.vm, true, None)?.data)
}

fn stop(ctx: &Session, args: VmArgs) -> Result<impl Serialize> {
    app::runtime::down(ctx, &args.vm)
}

/// Applies the VM's recipes, then answers its stored recipe state.
fn apply_recipes(ctx: &Session, args: ApplyRecipesArgs) -> Result<ApplyResult> {
    let request = ApplyRequest {
        only: args
            .only
            .unwrap_or_default()
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        params: Vec::new(),
    };
    app::runtime::apply(ctx, &args.vm, &request)?;
    let status = app::vms::get(ctx, &args.vm)?.vm;
    Ok(ApplyResult {
        vm: status.vm.name,
        recipes_detail: status.recipes_detail,
    })
}

fn update(ctx: &Session, args: UpdateArgs) -> Result<impl Serialize> {
    let spec = UpdateSpec {
        ram_mb: args.ram_mb,
        cpus: args.cpus,
        ssh_port: args.ssh_port,
        disk: args.disk,
        recipes: args.recipes,
        ..UpdateSpec::default()
    };
    if spec.is_empty() {
        return Err(Error::Usage(
            "update: nothing to change; pass at least one of ram_mb, cpus, ssh_port, disk, recipes"
                .into(),
        ));
    }
    app::vmops::update(ctx, &args.vm, &spec)
}

fn clone(ctx: &Session, args: CloneArgs) -> Result<impl Serialize> {
    guards::check_vm_name(&args.name)?;
    app::vmops::clone(ctx, &args.source, &args.name)
}

fn snapshot(ctx: &Session, args: SnapshotArgs) -> Result<impl Serialize> {
    app::host::snapshot_act(ctx, &args.vm, &args.tag, SnapshotAction::Save)
}

fn restore(ctx: &Session, args: SnapshotArgs) -> Result<impl Serialize> {
    app::host::snapshot_act(ctx, &args.vm, &args.tag, SnapshotAction::Restore)
}

fn forward(ctx: &Session, args: ForwardArgs) -> Result<ForwardList> {
    let pairs = args.pairs.unwrap_or_default();
    let change = match (args.clear.unwrap_or(false), pairs.is_empty()) {
        (true, false) => {
            return Err(Error::Usage(
                "forward: clear takes no pairs; pass one or the other".into(),
            ))
        }
        (true, true) => ForwardChange::Edit(Edit::Replace(Vec::new())),
        (false, true) => ForwardChange::Show,
        (false, false) => ForwardChange::Edit(Edit::Replace(
            pairs
                .iter()
                .map(|pair| app::vmops::parse_pair(pair))
                .collect::<Result<_>>()?,
        )),
    };
    let data = app::vmops::forward(ctx, &args.vm, &change)?;
    // ForwardList: the forwards after the call, nothing else.
    Ok(ForwardList {
        forwards: data.forwards,
    })
}

/// `wait`: a timeout is an answer (`healthy:false`), not an error.
fn wait(ctx: &Session, args: WaitArgs) -> Result<WaitResult> {
    let until = match args.until.unwrap_or(UntilArg::Reachable) {
        UntilArg::Reachable => Until::Reachable,
        UntilArg::Stopped => Until::Stopped,
        UntilArg::Applied => Until::Applied,
    };
    let timeout = std::time::Duration::from_secs(u64::from(args.timeout_seconds.unwrap_or(120)));
    let healthy = match app::runtime::wait(ctx, &args.vm, until, timeout) {
        Ok(data) => data.reached,
        // The login's timeout names the console log, so it comes spelled; a failed apply
        // read back keeps its own code and stays an error.
        Err(err @ (Error::Timeout(_) | Error::Spelled(_)))
            if err.code() == stoat_wire::ErrorCode::Timeout =>
        {
            false
        }
        Err(other) => return Err(other),
    };
    Ok(WaitResult { healthy })
}

fn destroy(ctx: &Session, args: VmArgs) -> Result<impl Serialize> {
    app::vmops::rm(ctx, &args.vm)
}

fn prune(ctx: &Session, args: PruneArgs) -> Result<impl Serialize> {
    let options = PruneOptions {
        apply: args.apply.unwrap_or(false),
        broken: args.broken.unwrap_or(false),
        images: args.images.unwrap_or(false),
    };
    app::host::prune(ctx, options)
}

fn exec(ctx: &Session, args: ExecArgs) -> Result<impl Serialize> {
    let command: Vec<std::ffi::OsString> = args
        .command
        .into_iter()
        .map(std::ffi::OsString::from)
        .collect();
    app::runtime::exec(ctx, &args.vm, &command, Streams::Capture, REACH_WAIT)
}

fn copy_to(ctx: &Session, args: CopyArgs) -> Result<CopyResult> {
    copy(ctx, args, true)
}

fn copy_from(ctx: &Session, args: CopyArgs) -> Result<CopyResult> {
    copy(ctx, args, false)
}

/// Both copy tools: confine the host path, copy, and check that the copy used exactly the
/// authorised path.
fn copy(ctx: &Session, args: CopyArgs, to_remote: bool) -> Result<CopyResult> {
    let name = args.vm;
    let local = guards::confine_host_path(&ctx.env, ctx.root()?, &name, &args.local)?;
    let local_text = local
        .to_str()
        .ok_or_else(|| Error::InvalidSpec("the host path is not UTF-8".into()))?
        .to_owned();
    if to_remote && !local.is_file() {
        return Err(Error::InvalidSpec(format!(
            "copy_to: {} is not a file in shared/{name}",
            args.local
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
        remote: args.remote.clone(),
    };
    let cwd = std::env::current_dir().map_err(|e| Error::io("read the current directory", e))?;
    let data = app::runtime::cp(ctx, &cwd, &request, REACH_WAIT)?;
    if data.local != local_text {
        return Err(Error::Internal(format!(
            "cp copied {} instead of the authorised {local_text}",
            data.local
        )));
    }
    Ok(CopyResult {
        vm: data.vm,
        local: local_text,
        remote: args.remote,
        to_remote,
    })
}

/// Loads the project a project tool acts on and checks the caller's access to every VM it
/// declares that exists: a project tool must not reach a VM its own tool would be refused.
/// (The server has already moved the session to the tool's `dir`.)
fn project_with_access(ctx: &Session, tool: &str, class: Class) -> Result<Project> {
    let project = app::project::required(ctx)?;
    app::mcp::require_project_access(ctx, tool, &project, class.needs())?;
    Ok(project)
}

fn project_status(ctx: &Session, _: ProjectArgs) -> Result<impl Serialize> {
    let project = project_with_access(ctx, "project_status", Class::ReadOnly)?;
    app::project::status(ctx, &project)
}
fn project_up(ctx: &Session, _: ProjectArgs) -> Result<impl Serialize> {
    let project = project_with_access(ctx, "project_up", Class::Mutating)?;
    // Like start: answers once each QEMU runs; project_wait waits.
    app::project::up(ctx, &project, true, None)
}
fn project_down(ctx: &Session, _: ProjectArgs) -> Result<impl Serialize> {
    let project = project_with_access(ctx, "project_down", Class::Mutating)?;
    app::project::down(ctx, &project)
}
fn project_apply(ctx: &Session, _: ProjectArgs) -> Result<impl Serialize> {
    let project = project_with_access(ctx, "project_apply", Class::Mutating)?;
    let request = ApplyRequest {
        only: Vec::new(),
        params: Vec::new(),
    };
    app::project::apply(ctx, &project, &request)
}
fn project_wait(ctx: &Session, _: ProjectArgs) -> Result<impl Serialize> {
    let project = project_with_access(ctx, "project_wait", Class::Mutating)?;
    app::project::wait(
        ctx,
        &project,
        Until::Reachable,
        std::time::Duration::from_secs(120),
    )
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
                let required = d["inputSchema"]["required"].as_array().unwrap();
                assert!(required.contains(&json!(vm)), "{}", tool.name);
            }
            assert_eq!(d["outputSchema"]["type"], "object", "{}", tool.name);
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
        assert!(tool.validate(&mut args(r#"{"vm":"w"}"#)).is_ok());
        assert!(tool
            .validate(&mut args(r#"{"vm":"w","n":10,"which":"apply"}"#))
            .is_ok());
        let mut with_null = args(r#"{"vm":"w","n":null}"#);
        assert!(tool.validate(&mut with_null).is_ok());
        assert!(!with_null.contains_key("n"), "null reads as absent");
        for bad in [
            r#"{}"#,
            r#"{"vm":3}"#,
            r#"{"vm":""}"#,
            r#"{"vm":"w","n":-1}"#,
            r#"{"vm":"w","n":"10"}"#,
            r#"{"vm":"w","which":"boot"}"#,
            r#"{"vm":"w","extra":1}"#,
        ] {
            let err = tool.validate(&mut args(bad)).unwrap_err();
            assert_eq!(err.code(), stoat_wire::ErrorCode::Usage, "{bad}");
        }
        let message = tool
            .validate(&mut args(r#"{"vm":"w","n":-1}"#))
            .unwrap_err()
            .to_string();
        assert!(message.contains("\"n\""), "{message}");
        let message = tool
            .validate(&mut args(r#"{"vm":"w","extra":1}"#))
            .unwrap_err()
            .to_string();
        assert!(message.contains("it takes vm, which, n"), "{message}");
        let exec = find("exec").unwrap();
        assert!(exec
            .validate(&mut args(r#"{"vm":"w","command":[]}"#))
            .is_err());
        assert!(exec
            .validate(&mut args(r#"{"vm":"w","command":["ls",1]}"#))
            .is_err());
    }

    /// The struct and the schema agree: what the schema accepts, the struct reads.
    #[test]
    fn every_schema_accepts_what_its_struct_reads() {
        let samples = [
            ("list_vms", json!({})),
            ("logs", json!({"vm":"w","which":"console","n":0})),
            (
                "create",
                json!({"name":"w","image":"i","ram_mb":64,"cpus":1,"recipes":[],
                "allow_exec":false,"agent_access":"exec","os":"debian","backend":"cloudinit",
                "mode":"cloud","disk":"8G"}),
            ),
            ("update", json!({"vm":"w","ssh_port":65535,"recipes":["a"]})),
            (
                "wait",
                json!({"vm":"w","until":"applied","timeout_seconds":3600}),
            ),
            ("prune", json!({"apply":true,"broken":true,"images":true})),
            ("copy_to", json!({"vm":"w","local":"f","remote":"/tmp/f"})),
            ("project_up", json!({"dir":"/x"})),
        ];
        for (name, sample) in samples {
            let tool = find(name).unwrap();
            let mut args = sample.as_object().unwrap().clone();
            tool.validate(&mut args)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        for tool in TOOLS {
            let input = &tool.describe()["inputSchema"];
            assert!(input.get("title").is_none(), "{}", tool.name);
            let text = input.to_string();
            assert!(!text.contains("null"), "{}: {text}", tool.name);
            assert!(!text.contains("$ref"), "{}: {text}", tool.name);
        }
    }
}
