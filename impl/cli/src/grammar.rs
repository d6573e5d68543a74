//! The command-line grammar (clap). `exec` is parsed by hand in [`crate::exec_args`] because
//! everything after its VM name belongs to the guest, verbatim.

use clap::{ArgAction, Args, Parser, Subcommand};

/// stoat: QEMU virtual machines on one host.
#[derive(Debug, Parser)]
#[command(
    name = "stoat",
    disable_version_flag = true,
    disable_help_subcommand = true,
    after_help = crate::examples::STOAT
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

// Deferred: each subcommand's arguments are built only when that subcommand is parsed, not
// all of them on every run (most of clap's share of a short command's cost).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// List VMs
    #[command(after_help = crate::examples::LS, alias = "list")]
    Ls(LsArgs),
    /// Show one VM, with recipe state
    #[command(after_help = crate::examples::GET)]
    Get(VmArg),
    /// Create a VM from a catalog image, a file in isos/, or an image file's path
    #[command(after_help = crate::examples::CREATE)]
    Create(CreateArgs),
    /// Change a stopped or running VM's configuration
    #[command(after_help = crate::examples::UPDATE)]
    Update(UpdateArgs),
    /// Start a VM (and apply its recipes)
    #[command(after_help = crate::examples::UP, alias = "start")]
    Up(UpArgs),
    /// Stop a VM
    #[command(after_help = crate::examples::DOWN, aliases = ["stop", "halt"])]
    Down(OptVmArg),
    /// Wait until a VM is reachable, stopped, or has its recipes applied
    #[command(after_help = crate::examples::WAIT)]
    Wait(WaitArgs),
    /// Delete a VM
    #[command(after_help = crate::examples::RM, aliases = ["delete", "destroy"])]
    Rm(RmArgs),
    /// Copy a stopped VM (the copy and its source share nothing writable)
    #[command(after_help = crate::examples::CLONE)]
    Clone(CloneArgs),
    /// Run a command in a VM over ssh: stoat exec <vm> [--] <cmd>...
    #[command(after_help = crate::examples::EXEC)]
    Exec(ExecPlaceholder),
    /// Open an interactive ssh session, or run CMD with a terminal (replaces stoat)
    #[command(after_help = crate::examples::SSH, alias = "shell")]
    Ssh(SshArgs),
    /// Print the ssh argv for a VM
    // The variant names the `ssh-command` subcommand.
    #[allow(clippy::enum_variant_names)]
    #[command(after_help = crate::examples::SSH_COMMAND)]
    SshCommand(VmArg),
    /// Copy files or trees: stoat cp [-r] <src>... <dst>, one side <vm>:<path>
    #[command(after_help = crate::examples::CP, alias = "copy")]
    Cp(CpArgs),
    /// Show, set or clear a VM's port forwards (HOST:GUEST)
    #[command(after_help = crate::examples::FORWARD)]
    Forward(ForwardArgs),
    /// List catalog and local images
    #[command(after_help = crate::examples::IMAGES)]
    Images,
    /// Download a catalog image
    #[command(after_help = crate::examples::PULL)]
    Pull(PullArgs),
    /// List, save, restore or delete snapshots
    #[command(after_help = crate::examples::SNAPSHOT)]
    Snapshot(SnapshotArgs),
    /// Save a PNG of a running VM's screen
    #[command(after_help = crate::examples::SCREENSHOT)]
    Screenshot(ScreenshotArgs),
    /// Delete leftovers (dry run unless --apply)
    #[command(after_help = crate::examples::PRUNE)]
    Prune(PruneArgs),
    /// Run a VM's recipes
    #[command(after_help = crate::examples::APPLY)]
    Apply(ApplyArgs),
    #[command(hide = true)]
    Provision(ApplyArgs),
    /// List recipes offered to an OS
    #[command(after_help = crate::examples::RECIPES)]
    Recipes(RecipesArgs),
    /// Check that recipes can run on an OS
    #[command(after_help = crate::examples::CHECK_RECIPES)]
    CheckRecipes(CheckRecipesArgs),
    /// Manage recipes: list, show, new, add, lock, sync, update, rm, refresh, search
    #[command(after_help = crate::examples::RECIPE, subcommand)]
    Recipe(RecipeCommand),
    /// Inspect guest OS definitions: ls, show
    #[command(after_help = crate::examples::GUEST, subcommand)]
    Guest(GuestCommand),
    /// Show a VM's console or apply log, or stoat's own log
    #[command(after_help = crate::examples::LOGS)]
    Logs(LogsArgs),
    /// Check this host
    #[command(after_help = crate::examples::DOCTOR)]
    Doctor,
    /// Report what this stoat and host can do
    #[command(after_help = crate::examples::CAPABILITIES)]
    Capabilities(OptVmArg),
    /// Print the JSON Schemas this binary speaks
    #[command(after_help = crate::examples::SCHEMA)]
    Schema(SchemaArgs),
    /// Create a stoat.toml project file here
    #[command(after_help = crate::examples::INIT)]
    Init,
    /// Compare a project's declarations with its VMs
    #[command(after_help = crate::examples::STATUS)]
    Status,
    /// The MCP server and its client configuration
    #[command(after_help = crate::examples::MCP)]
    Mcp(McpArgs),
    /// Print a shell completion script: stoat completions bash|zsh|fish
    #[command(after_help = crate::examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print a command's man page, or write every page with --dir
    #[command(after_help = crate::examples::MAN)]
    Man(ManArgs),
    /// Print the version
    #[command(after_help = crate::examples::VERSION)]
    Version,
    /// Print help
    #[command(after_help = crate::examples::HELP)]
    Help,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write stoat.1 and one stoat-<command>.1 per command into this directory
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// The command whose page to print (none: stoat.1), e.g. `recipe add`
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct VmArg {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
}

#[derive(Debug, Args)]
pub struct SshArgs {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
    /// A command for the guest instead of a login shell (after `--`; its words reach the
    /// guest as they are, with a terminal when stdin is one)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ScreenshotArgs {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
    /// Write the PNG here (a file, or a directory to put it in) instead of the VM's
    /// screenshots/ directory
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<String>,
}

#[derive(Debug, Args)]
pub struct OptVmArg {
    /// The VM's name (none: every VM of the current project, where that applies)
    #[arg(add = crate::candidates::vm_names())]
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
    /// The new VM's name (letters, digits, '-', '_')
    pub name: String,
    /// Catalog id (`stoat images`), a file in isos/, or a path to an image file (absolute, or
    /// relative with a '/', e.g. ./disk.qcow2; stored absolute)
    #[arg(long, add = crate::candidates::image_ids())]
    pub image: String,
    /// Guest OS (default: from the image; `stoat guest ls` lists them)
    #[arg(long)]
    pub os: Option<String>,
    /// How the guest is set up: cloudinit, apkovl, ssh (default: the OS's)
    #[arg(long)]
    pub backend: Option<String>,
    /// live (boot the ISO, keep nothing), disk (install onto a disk) or cloud (a cloud image)
    #[arg(long)]
    pub mode: Option<String>,
    /// RAM in MB, or with a unit: 2048, 2048M, 2G (default 4096)
    #[arg(long, value_parser = parse_ram_mb)]
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
    /// Password of the guest user `stoat` for a login at the VM's screen (cloud images only;
    /// default: stoat; never over ssh); `random` makes one and shows it once
    #[arg(long, value_name = "PASSWORD")]
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
    /// Let the guest reach services on the host's 127.0.0.1 through its gateway 10.0.2.2 (off:
    /// it cannot)
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub host_loopback: bool,
    /// Host port forwarded to the guest's ssh, kept as given (default: a free one in
    /// 2200-2299, moved at `up` when something else holds it by then)
    #[arg(long)]
    pub ssh_port: Option<u16>,
    /// Forward a host port to a guest port, HOST:GUEST (repeatable; `stoat forward` changes
    /// them later)
    #[arg(long = "forward", value_name = "HOST:GUEST")]
    pub forwards: Vec<String>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
    /// RAM in MB, or with a unit: 2048, 2048M, 2G (a running VM takes it at its next start)
    #[arg(long, value_parser = parse_ram_mb)]
    pub ram: Option<u32>,
    /// vCPUs (a running VM takes them at its next start)
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Host port forwarded to the guest's ssh
    #[arg(long)]
    pub ssh_port: Option<u16>,
    /// Disk size, e.g. 20G (a disk only grows)
    #[arg(long)]
    pub disk: Option<String>,
    /// New share ("" clears it)
    #[arg(long)]
    pub share: Option<String>,
    /// Replace the recipe list ("" clears it)
    #[arg(long, num_args = 1)]
    pub recipes: Option<String>,
    /// MCP access level: none, observe, manage, exec
    #[arg(long)]
    pub agent_access: Option<String>,
    /// Record whether exec is allowed (true or false)
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub allow_exec: Option<bool>,
    /// Display preference: auto, window, vnc
    #[arg(long)]
    pub display: Option<String>,
    /// Whether the guest reaches the host's 127.0.0.1 through 10.0.2.2 (true or false; a
    /// running VM takes it at its next start)
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub host_loopback: Option<bool>,
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
    /// The VM to start (none: every VM of the current project)
    #[arg(add = crate::candidates::vm_names())]
    pub vm: Option<String>,
    /// Do not apply recipes after boot
    #[arg(long, alias = "no-provision")]
    pub no_apply: bool,
    /// Return as soon as QEMU has started, without waiting for ssh
    #[arg(long)]
    pub no_wait: bool,
    /// How long to wait for ssh to answer, e.g. 90s, 5m
    #[arg(long, default_value = "5m", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The VM's name (none: every VM of the current project)
    #[arg(add = crate::candidates::vm_names())]
    pub vm: Option<String>,
    /// What to wait for: ssh answers, QEMU has exited, or the recipes have been applied
    #[arg(long, default_value = "reachable", value_parser = ["reachable", "stopped", "applied"])]
    pub until: String,
    /// How long to wait, e.g. 30s, 2m
    #[arg(long, default_value = "2m", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// The VM's name (none: every VM of the current project)
    #[arg(add = crate::candidates::vm_names())]
    pub vm: Option<String>,
    /// Do not ask
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct CloneArgs {
    /// The stopped VM to copy
    #[arg(add = crate::candidates::vm_names())]
    pub source: String,
    /// The new VM's name
    pub name: String,
}

/// `exec` is parsed by hand; this only gives it a help line.
#[derive(Debug, Args)]
pub struct ExecPlaceholder {
    /// <VM> [--] <CMD>...: the VM, then the command for the guest
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, add = crate::candidates::exec_words())]
    pub rest: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CpArgs {
    /// SRC... DST: local paths, or <vm>:<path> in the guest; every source on one side (all
    /// local, or all of one VM), DST on the other. `-` as the only source copies stdin into
    /// the guest file, as DST writes the guest file to stdout (not under --json; `./-` is a
    /// file named -)
    #[arg(value_name = "PATH", add = crate::candidates::cp_paths())]
    pub paths: Vec<String>,
    /// Copy directories and everything in them
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// Flag form: the VM
    #[arg(long, add = crate::candidates::vm_names())]
    pub vm: Option<String>,
    /// Flag form: copy to the guest or from it
    #[arg(long, value_parser = ["to", "from"])]
    pub direction: Option<String>,
    /// Flag form: the host path (`-`: stdin or stdout, as above)
    #[arg(long)]
    pub local: Option<String>,
    /// Flag form: the guest path
    #[arg(long)]
    pub remote: Option<String>,
    /// How long to wait for a booting VM's ssh to answer, e.g. 30s [default: 2m]
    #[arg(long, value_parser = parse_positive_duration)]
    pub timeout: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct ForwardArgs {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
    /// HOST:GUEST pairs that replace the whole list
    pub pairs: Vec<String>,
    /// Remove every forward
    #[arg(long)]
    pub clear: bool,
    /// Add one forward HOST:GUEST, keeping the others (repeatable)
    #[arg(long, value_name = "HOST:GUEST")]
    pub add: Vec<String>,
    /// Remove the forward from host port HOST (or exactly HOST:GUEST), keeping the others
    /// (repeatable)
    #[arg(long, value_name = "HOST[:GUEST]")]
    pub remove: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    /// A catalog image id (`stoat images` lists them)
    pub id: String,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The VM's name
    #[arg(add = crate::candidates::vm_names())]
    pub vm: String,
    /// The snapshot's tag (none: list the snapshots)
    pub tag: Option<String>,
    /// Go back to the snapshot TAG
    #[arg(long, conflicts_with = "delete")]
    pub restore: bool,
    /// Delete the snapshot TAG
    #[arg(long)]
    pub delete: bool,
    /// Replace the snapshot TAG if there is one (a save refuses a tag in use otherwise)
    #[arg(long, conflicts_with_all = ["restore", "delete"])]
    pub force: bool,
    /// Words past the tag (`snapshot work save s1`, as Vagrant spells a save), taken so the
    /// usage error can name stoat's form instead of clap's "unexpected argument".
    #[arg(hide = true)]
    pub extra: Vec<String>,
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
    /// The VM's name (none: every VM of the current project)
    #[arg(add = crate::candidates::vm_names())]
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
    /// Only recipes offered to this guest OS
    #[arg(long)]
    pub os: Option<String>,
    /// Only recipes offered to this backend
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckRecipesArgs {
    /// Recipe names (comma-separated or several)
    #[arg(required = true, value_delimiter = ',')]
    pub names: Vec<String>,
    /// The guest OS they would run on
    #[arg(long)]
    pub os: String,
    /// The backend they would run through (default: the OS's)
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum RecipeCommand {
    /// Every recipe in search order, with its scope
    #[command(after_help = crate::examples::RECIPE_LIST)]
    List,
    /// One recipe's manifest
    #[command(after_help = crate::examples::RECIPE_SHOW)]
    Show(NameArg),
    /// Start a new local recipe
    #[command(after_help = crate::examples::RECIPE_NEW)]
    New(RecipeNewArgs),
    /// Add a remote recipe from a git URL
    #[command(after_help = crate::examples::RECIPE_ADD)]
    Add(RecipeAddArgs),
    /// Pin remote recipes
    #[command(after_help = crate::examples::RECIPE_LOCK)]
    Lock(ProjectFlag),
    /// Fetch remote recipes at their pins
    #[command(after_help = crate::examples::RECIPE_SYNC)]
    Sync(ProjectFlag),
    /// Move remote recipes to their refs' newest commits
    #[command(after_help = crate::examples::RECIPE_UPDATE)]
    Update(OptNameProject),
    /// Remove a remote recipe
    #[command(after_help = crate::examples::RECIPE_RM)]
    Rm(NameProject),
    /// Reinstall the bundled recipes
    #[command(after_help = crate::examples::RECIPE_REFRESH)]
    Refresh,
    /// Search the recipe index
    #[command(after_help = crate::examples::RECIPE_SEARCH)]
    Search(SearchArgs),
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// Its name
    pub name: String,
}

#[derive(Debug, Args)]
pub struct RecipeNewArgs {
    /// The new recipe's name
    pub name: String,
    /// The guest OS it targets
    #[arg(long)]
    pub os: Option<String>,
    /// The backend it targets
    #[arg(long)]
    pub backend: Option<String>,
}

#[derive(Debug, Args)]
pub struct RecipeAddArgs {
    /// A git URL or a local repository path
    pub url: String,
    /// The branch, tag or commit to pin (default: the default branch)
    #[arg(long = "ref")]
    pub git_ref: Option<String>,
    /// Add it to the current project (stoat.toml) rather than globally
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct ProjectFlag {
    /// The current project's recipes rather than the global ones
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct OptNameProject {
    /// Only this recipe (none: all)
    pub name: Option<String>,
    /// The current project's recipes rather than the global ones
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct NameProject {
    /// The recipe's name
    pub name: String,
    /// The current project's recipe rather than the global one
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words to look for in names and descriptions (none: everything)
    pub query: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum GuestCommand {
    /// Every guest OS definition
    #[command(after_help = crate::examples::GUEST_LS)]
    Ls,
    /// One guest OS definition
    #[command(after_help = crate::examples::GUEST_SHOW)]
    Show(NameArg),
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The VM's name (none: stoat's own log)
    #[arg(add = crate::candidates::vm_names())]
    pub vm: Option<String>,
    /// Lines from the end (0: all)
    #[arg(short = 'n', default_value_t = 50, allow_negative_numbers = true)]
    pub lines: i64,
    /// console or apply
    #[arg(long, default_value = "console")]
    pub which: String,
    /// Keep printing lines as they are written, until the VM stops or Ctrl-C
    #[arg(short = 'f', long)]
    pub follow: bool,
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
    #[command(after_help = crate::examples::MCP_DOCTOR)]
    Doctor,
    /// Add stoat to an MCP client's configuration
    #[command(after_help = crate::examples::MCP_INSTALL)]
    Install(McpInstallArgs),
}

#[derive(Debug, Args)]
pub struct McpInstallArgs {
    /// The client whose configuration to edit: claude-desktop, claude-code, cursor, vscode,
    /// windsurf, gemini-cli
    pub client: String,
}

/// Parses a Go-style duration (`30s`, `2m`, `1h30m`, `500ms`) that must be positive.
pub(crate) fn parse_positive_duration(text: &str) -> Result<std::time::Duration, String> {
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
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
            Command::Version => "version",
            Command::Help => "help",
        }
    }
}

/// Maps a raw command token to the `cmd` a usage error reports: a hidden alias (the verbs
/// Lima and Vagrant users bring) answers as the command it stands for.
pub fn wire_name_of_token(token: &str) -> String {
    match token {
        "provision" => "apply",
        "start" => "up",
        "stop" | "halt" => "down",
        "delete" | "destroy" => "rm",
        "shell" => "ssh",
        "list" => "ls",
        "copy" => "cp",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every visible flag and argument of every command says what it is for.
    #[test]
    fn every_argument_has_help_text() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !arg.is_hide_set() && !builtin && arg.get_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                if sub.is_hide_set() {
                    continue;
                }
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {} (about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "stoat", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}

/// `--ram`: megabytes as a plain number (`2048`), or with a unit people type: `M`/`MB`/`MiB`,
/// `G`/`GB`/`GiB` (binary: 2G is 2048 MB, as QEMU reads `-m 2G`).
pub fn parse_ram_mb(text: &str) -> Result<u32, String> {
    let refuse =
        || format!("{text:?} is not a RAM size; give megabytes or a unit, e.g. 2048, 2048M or 2G");
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let number: u64 = number.parse().map_err(|_| refuse())?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "m" | "mb" | "mib" => 1,
        "g" | "gb" | "gib" => 1024,
        _ => return Err(refuse()),
    };
    number
        .checked_mul(factor)
        .and_then(|mb| u32::try_from(mb).ok())
        .ok_or_else(|| format!("{text:?} is more RAM than any host has"))
}

#[cfg(test)]
mod ram_tests {
    use super::parse_ram_mb;

    #[test]
    fn ram_takes_megabytes_and_the_units_people_type() {
        for (text, mb) in [
            ("2048", 2048),
            ("2048M", 2048),
            ("2G", 2048),
            ("1gib", 1024),
            (" 512MB ", 512),
        ] {
            assert_eq!(parse_ram_mb(text), Ok(mb), "{text}");
        }
        for text in ["", "2T", "two", "2.5G", "-1", "G"] {
            let refused = parse_ram_mb(text).unwrap_err();
            assert!(
                refused.contains("e.g. 2048, 2048M or 2G") || refused.contains("more RAM"),
                "{refused}"
            );
        }
    }
}
