//! The command-line grammar (clap). `exec` is parsed by hand in [`crate::exec_args`] because
//! everything after its VM name belongs to the guest, verbatim.

use clap::{ArgAction, Args, Parser, Subcommand};

/// stoat: QEMU virtual machines on one host.
#[derive(Debug, Parser)]
#[command(
    name = "stoat",
    disable_version_flag = true,
    disable_help_subcommand = true,
    after_help = "Add --json anywhere (before exec's VM name) for machine-readable output: contract v3."
)]
pub struct Cli {
    /// Suppress progress chatter; never prompt
    #[arg(
        short = 'q',
        long = "quiet",
        visible_alias = "no-interactive",
        global = true
    )]
    pub quiet: bool,
    /// Print the version
    #[arg(short = 'V', long = "version", global = true)]
    pub version: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List VMs
    Ls(LsArgs),
    /// Show one VM, with recipe state
    Get(VmArg),
    /// Create a VM from a catalog image, a file in isos/, or an absolute path
    Create(CreateArgs),
    /// Change a stopped or running VM's configuration
    Update(UpdateArgs),
    /// Start a VM (and apply its recipes)
    Up(UpArgs),
    /// Stop a VM
    Down(OptVmArg),
    /// Wait until a VM is reachable, stopped, or has its recipes applied
    Wait(WaitArgs),
    /// Delete a VM
    Rm(RmArgs),
    /// Copy a stopped VM (its disk becomes a qcow2 overlay)
    Clone(CloneArgs),
    /// Run a command in a VM over ssh: stoat exec <vm> [--] <cmd>...
    Exec(ExecPlaceholder),
    /// Open an interactive ssh session (replaces stoat)
    Ssh(VmArg),
    /// Print the ssh argv for a VM
    // The variant names the `ssh-command` subcommand.
    #[allow(clippy::enum_variant_names)]
    SshCommand(VmArg),
    /// Copy files: stoat cp <vm>:<remote> <local> | stoat cp <local> <vm>:<remote>
    Cp(CpArgs),
    /// Show, set or clear a VM's port forwards (HOST:GUEST)
    Forward(ForwardArgs),
    /// List catalog and local images
    Images,
    /// Download a catalog image
    Pull(PullArgs),
    /// List, save, restore or delete snapshots
    Snapshot(SnapshotArgs),
    /// Save a PNG of a running VM's screen
    Screenshot(VmArg),
    /// Delete leftovers (dry run unless --apply)
    Prune(PruneArgs),
    /// Run a VM's recipes
    Apply(ApplyArgs),
    #[command(hide = true)]
    Provision(ApplyArgs),
    /// List recipes offered to an OS
    Recipes(RecipesArgs),
    /// Check that recipes can run on an OS
    CheckRecipes(CheckRecipesArgs),
    /// Manage recipes: list, show, new, add, lock, sync, update, rm, refresh, search
    #[command(subcommand)]
    Recipe(RecipeCommand),
    /// Inspect guest OS definitions: ls, show
    #[command(subcommand)]
    Guest(GuestCommand),
    /// Show a VM's console or apply log, or stoat's own log
    Logs(LogsArgs),
    /// Check this host
    Doctor,
    /// Report what this stoat and host can do
    Capabilities(OptVmArg),
    /// Print the JSON Schemas this binary speaks
    Schema(SchemaArgs),
    /// Create a stoat.toml project file here
    Init,
    /// Compare a project's declarations with its VMs
    Status,
    /// The MCP server and its client configuration
    Mcp(McpArgs),
    /// Print the version
    Version,
    /// Print help
    Help,
}

#[derive(Debug, Args)]
pub struct VmArg {
    pub vm: String,
}

#[derive(Debug, Args)]
pub struct OptVmArg {
    pub vm: Option<String>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only the current project's VMs
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    pub name: String,
    /// Catalog id, bare filename in isos/, or absolute path
    #[arg(long)]
    pub image: String,
    #[arg(long)]
    pub os: Option<String>,
    #[arg(long)]
    pub backend: Option<String>,
    #[arg(long)]
    pub mode: Option<String>,
    /// RAM in MB (default 4096)
    #[arg(long)]
    pub ram: Option<u32>,
    /// vCPUs (default 4)
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Disk size, e.g. 8G
    #[arg(long)]
    pub disk: Option<String>,
    /// Host directory shown read-only at /mnt/host
    #[arg(long)]
    pub share: Option<String>,
    /// Console password (cloudinit only); `random` makes one
    #[arg(long)]
    pub console_password: Option<String>,
    /// Recipes to apply (comma-separated or repeated)
    #[arg(long, value_delimiter = ',')]
    pub recipes: Vec<String>,
    /// Recipe parameters, recipe.param=value or param=value
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Record that exec is allowed (--allow-exec=false to refuse)
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub allow_exec: bool,
    /// MCP access level: none, observe, manage, exec
    #[arg(long)]
    pub agent_access: Option<String>,
    /// Display preference: auto, window, vnc
    #[arg(long)]
    pub display: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    pub vm: String,
    #[arg(long)]
    pub ram: Option<u32>,
    #[arg(long)]
    pub cpus: Option<u32>,
    #[arg(long)]
    pub ssh_port: Option<u16>,
    #[arg(long)]
    pub disk: Option<String>,
    /// New share ("" clears it)
    #[arg(long)]
    pub share: Option<String>,
    /// Replace the recipe list ("" clears it)
    #[arg(long, num_args = 1)]
    pub recipes: Option<String>,
    #[arg(long)]
    pub agent_access: Option<String>,
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub allow_exec: Option<bool>,
    #[arg(long)]
    pub display: Option<String>,
    /// Fields that cannot change are refused: name, os, backend, mode, image
    #[arg(long, hide = true)]
    pub os: Option<String>,
    #[arg(long, hide = true)]
    pub backend: Option<String>,
    #[arg(long, hide = true)]
    pub mode: Option<String>,
    #[arg(long, hide = true)]
    pub image: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    pub vm: Option<String>,
    /// Do not apply recipes after boot
    #[arg(long, alias = "no-provision")]
    pub no_apply: bool,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    pub vm: Option<String>,
    #[arg(long, default_value = "reachable", value_parser = ["reachable", "stopped", "applied"])]
    pub until: String,
    /// How long to wait, e.g. 30s, 2m
    #[arg(long, default_value = "2m", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    pub vm: Option<String>,
    /// Do not ask
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct CloneArgs {
    pub source: String,
    pub name: String,
}

/// `exec` is parsed by hand; this only gives it a help line.
#[derive(Debug, Args)]
pub struct ExecPlaceholder {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CpArgs {
    pub src: Option<String>,
    pub dst: Option<String>,
    #[arg(long)]
    pub vm: Option<String>,
    #[arg(long, value_parser = ["to", "from"])]
    pub direction: Option<String>,
    #[arg(long)]
    pub local: Option<String>,
    #[arg(long)]
    pub remote: Option<String>,
}

#[derive(Debug, Args)]
pub struct ForwardArgs {
    pub vm: String,
    /// HOST:GUEST pairs
    pub pairs: Vec<String>,
    /// Remove every forward
    #[arg(long)]
    pub clear: bool,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    pub vm: String,
    pub tag: Option<String>,
    #[arg(long, conflicts_with = "delete")]
    pub restore: bool,
    #[arg(long)]
    pub delete: bool,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Delete for real
    #[arg(long)]
    pub apply: bool,
    /// Include broken VMs
    #[arg(long)]
    pub broken: bool,
    /// Include images no VM uses
    #[arg(long)]
    pub images: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    pub vm: Option<String>,
    /// Only these recipes
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Print the plan; run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Recipe parameters, recipe.param=value or param=value
    #[arg(long = "param")]
    pub params: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RecipesArgs {
    #[arg(long)]
    pub os: Option<String>,
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckRecipesArgs {
    #[arg(required = true, value_delimiter = ',')]
    pub names: Vec<String>,
    #[arg(long)]
    pub os: String,
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum RecipeCommand {
    /// Every recipe in search order, with its scope
    List,
    /// One recipe's manifest
    Show(NameArg),
    /// Start a new local recipe
    New(RecipeNewArgs),
    /// Add a remote recipe from a git URL
    Add(RecipeAddArgs),
    /// Pin remote recipes
    Lock(ProjectFlag),
    /// Fetch remote recipes at their pins
    Sync(ProjectFlag),
    /// Move remote recipes to their refs' newest commits
    Update(OptNameProject),
    /// Remove a remote recipe
    Rm(NameProject),
    /// Reinstall the bundled recipes
    Refresh,
    /// Search the recipe index
    Search(SearchArgs),
}

#[derive(Debug, Args)]
pub struct NameArg {
    pub name: String,
}

#[derive(Debug, Args)]
pub struct RecipeNewArgs {
    pub name: String,
    #[arg(long)]
    pub os: Option<String>,
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Args)]
pub struct RecipeAddArgs {
    pub url: String,
    #[arg(long = "ref")]
    pub git_ref: Option<String>,
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct ProjectFlag {
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct OptNameProject {
    pub name: Option<String>,
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct NameProject {
    pub name: String,
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub query: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum GuestCommand {
    /// Every guest OS definition
    Ls,
    /// One guest OS definition
    Show(NameArg),
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    pub vm: Option<String>,
    /// Lines from the end (0: all)
    #[arg(short = 'n', default_value_t = 50, allow_negative_numbers = true)]
    pub lines: i64,
    /// console or apply
    #[arg(long, default_value = "console")]
    pub which: String,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// A schema path such as data/ls.json, or a command name
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpCommand>,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Check this binary's MCP set-up and the clients' configurations
    Doctor,
    /// Add stoat to an MCP client's configuration
    Install(McpInstallArgs),
}

#[derive(Debug, Args)]
pub struct McpInstallArgs {
    pub client: String,
}

/// Parses a Go-style duration (`30s`, `2m`, `1h30m`, `500ms`) that must be positive.
fn parse_positive_duration(text: &str) -> Result<std::time::Duration, String> {
    let duration =
        humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e} (use e.g. 30s, 2m)"))?;
    if duration.is_zero() {
        return Err("--timeout must be positive".into());
    }
    Ok(duration)
}

impl Command {
    /// Returns the `cmd` a result reports for this command.
    pub fn wire_name(&self) -> &'static str {
        match self {
            Command::Ls(_) => "ls",
            Command::Get(_) => "get",
            Command::Create(_) => "create",
            Command::Update(_) => "update",
            Command::Up(_) => "up",
            Command::Down(_) => "down",
            Command::Wait(_) => "wait",
            Command::Rm(_) => "rm",
            Command::Clone(_) => "clone",
            Command::Exec(_) => "exec",
            Command::Ssh(_) => "ssh",
            Command::SshCommand(_) => "ssh-command",
            Command::Cp(_) => "cp",
            Command::Forward(_) => "forward",
            Command::Images => "images",
            Command::Pull(_) => "pull",
            Command::Snapshot(_) => "snapshot",
            Command::Screenshot(_) => "screenshot",
            Command::Prune(_) => "prune",
            Command::Apply(_) | Command::Provision(_) => "apply",
            Command::Recipes(_) => "recipes",
            Command::CheckRecipes(_) => "check-recipes",
            Command::Recipe(_) => "recipe",
            Command::Guest(_) => "guest",
            Command::Logs(_) => "logs",
            Command::Doctor => "doctor",
            Command::Capabilities(_) => "capabilities",
            Command::Schema(_) => "schema",
            Command::Init => "init",
            Command::Status => "status",
            Command::Mcp(_) => "mcp",
            Command::Version => "version",
            Command::Help => "help",
        }
    }
}

/// Maps a raw command token to the `cmd` a usage error reports.
pub fn wire_name_of_token(token: &str) -> String {
    match token {
        "provision" => "apply".to_owned(),
        other => other.to_owned(),
    }
}
