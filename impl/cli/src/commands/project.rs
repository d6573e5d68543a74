//! Project commands: `init`, `status`, `ls --project`, `recipe lock --project`, and the
//! no-name fan-out of `up`, `down`, `apply`, `wait` and `rm` inside a project
//! (json-v3#per-command-data: InitResult, ProjectStatus, ProjectRun; design#project-fan-out).
//!
//! The fan-out runs each declared VM through the ordinary single-VM command (the same
//! dispatch arm `stoat up <name>` takes), so one-VM behaviour lives in one place. Under
//! `--json` per-VM progress is `vm` events and nothing else reaches stdout; in human mode
//! progress goes to stderr and the summary table to stdout.

use std::io::Write;
use std::path::Path;

use stoat_core::ops::{self, create::CreateSpec, forward::PortPair, update::UpdateSpec};
use stoat_core::project::status::Existing;
use stoat_core::project::{fanout, lock, status, Declaration, Project};
use stoat_core::{vm, Error, Result};
use stoat_wire::dto::{
    InitResult, LsData, ProjectRun, ProjectRunVm, ProjectStatus, RecipePinsData, Vm,
};
use stoat_wire::EventType;

use crate::ctx::Ctx;
use crate::grammar::{ApplyArgs, Command, OptVmArg, RmArgs, UpArgs, WaitArgs};
use crate::human;
use crate::Reply;

/// The project at or above the working directory; `None` outside a project.
pub fn current(ctx: &Ctx) -> Result<Option<Project>> {
    Project::find_and_load(&ctx.work_dir()?)
}

/// The project, or `not_found` saying how to make one.
pub(crate) fn required(ctx: &Ctx) -> Result<Project> {
    current(ctx)?.ok_or_else(|| Error::NotFound {
        name: format!(
            "no {} in {} or any parent directory; run `stoat init` to make one",
            stoat_core::project::PROJECT_FILE,
            ctx.work_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        ),
    })
}

// ---------------------------------------------------------------------------------------
// init

const TEMPLATE: &str = r#"# stoat.toml: the VMs of this project. Inside this directory (or below it),
# `stoat up`, `down`, `apply`, `wait` and `rm` with no VM name act on every VM declared
# here, in this order; `stoat status` compares them with what exists.
# VM names are <project>-<key>: [vm.dev] below makes the VM "NAME-dev".

[project]
name = "NAME"

# [vm.dev]
# image = "debian-12"        # a catalog id (`stoat images`), a file in isos/, or an absolute path
# cpus = 2
# ram = 2048                 # MB
# disk = "16G"               # can only grow
# share = "."                # a host directory, relative to this file; read-only at /mnt/host
# recipes = ["docker"]
# forwards = ["8080:80"]     # HOST:GUEST
#
# [vm.dev.params.docker]     # recipe parameters
# channel = "stable"

# Remote recipes the VMs may name, pinned in stoat.lock by `stoat recipe lock --project`:
# [recipes.tailscale]
# source = "https://github.com/x/stoat-tailscale"
# ref = "v1.2"
"#;

/// The `.gitignore` line init adds: a per-checkout directory stoat reserves (stoat.toml and
/// stoat.lock are meant to be committed).
pub const GITIGNORE_LINE: &str = ".stoat/";

/// `init`: writes a commented stoat.toml in the working directory.
pub fn init(ctx: &Ctx) -> Result<Reply> {
    let _ = ctx;
    let dir = ctx.work_dir()?;
    let path = dir.join(stoat_core::project::PROJECT_FILE);
    if path.exists() {
        return Err(Error::InvalidSpec(format!(
            "{} already exists; edit it rather than starting over",
            path.display()
        )));
    }
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| vm::check_name(&format!("{n}-x")).is_ok())
        .unwrap_or("project")
        .to_owned();
    let text = TEMPLATE.replace("NAME", &name);
    Project::parse(&text, &dir)?;
    write_new(&path, &text)?;
    let gitignore_updated = update_gitignore(&dir)?;
    let data = InitResult {
        path: path.display().to_string(),
        project: name.clone(),
        gitignore_updated,
    };
    let mut human = format!("wrote {} (project {name})\n", data.path);
    if gitignore_updated {
        human.push_str(&format!("added {GITIGNORE_LINE} to .gitignore\n"));
    }
    human.push_str("declare VMs under [vm.<key>], then run `stoat up`\n");
    Ok(Reply::new(&data, human))
}

/// Creates `path` with `text`, refusing to replace a file that appeared meanwhile.
fn write_new(path: &Path, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                Error::InvalidSpec(format!("{} already exists", path.display()))
            }
            _ => Error::io(format!("create {}", path.display()), e),
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// Adds [`GITIGNORE_LINE`] to `.gitignore` when the directory is in a git work tree (or
/// already has a .gitignore) and the line is not there yet. Returns whether it wrote.
fn update_gitignore(dir: &Path) -> Result<bool> {
    let path = dir.join(".gitignore");
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    let in_git = dir.ancestors().any(|d| d.join(".git").exists());
    if existing.is_none() && !in_git {
        return Ok(false);
    }
    let text = existing.unwrap_or_default();
    let already = text
        .lines()
        .any(|l| matches!(l.trim(), ".stoat" | ".stoat/" | "/.stoat" | "/.stoat/"));
    if already {
        return Ok(false);
    }
    let mut updated = text;
    if !updated.is_empty() && !updated.ends_with('\n') {
        updated.push('\n');
    }
    updated.push_str(GITIGNORE_LINE);
    updated.push('\n');
    vm::write_atomically(&path, updated.as_bytes())?;
    Ok(true)
}

// ---------------------------------------------------------------------------------------
// status, ls --project, recipe lock --project

/// `status`.
pub fn status(ctx: &Ctx) -> Result<Reply> {
    let project = required(ctx)?;
    let data = status::status(ctx.root()?, &ctx.env, &project)?;
    let human = status_human(&data);
    Ok(Reply::new(&data, human))
}

fn status_human(data: &ProjectStatus) -> String {
    let mut out = format!("project {} ({})\n", data.project, data.dir);
    if data.vms.is_empty() {
        out.push_str("no VMs declared; add a [vm.<key>] table to stoat.toml\n");
        return out;
    }
    let rows: Vec<Vec<String>> = data
        .vms
        .iter()
        .map(|v| {
            let detail = match (&v.error, v.drift.is_empty()) {
                (Some(error), _) => format!("error: {error}"),
                (None, _) if v.state.is_none() => "-".into(),
                (None, true) => "in sync".into(),
                (None, false) => v
                    .drift
                    .iter()
                    .map(|d| {
                        let restart = if d.needs_restart { " (restart)" } else { "" };
                        format!("{} {} -> {}{restart}", d.field, d.from, d.to)
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            vec![
                v.key.clone(),
                v.name.clone(),
                v.state.clone().unwrap_or_else(|| "not created".into()),
                v.health.clone(),
                detail,
            ]
        })
        .collect();
    out.push_str(&human::table(
        &["KEY", "NAME", "STATE", "HEALTH", "DRIFT"],
        &rows,
    ));
    out
}

/// `ls --project`: the VMs this project's declarations made.
pub fn ls(ctx: &Ctx) -> Result<Reply> {
    let project = required(ctx)?;
    let dir = project.dir_text();
    let vms: Vec<Vm> = vm::list(ctx.root()?)?
        .iter()
        .filter(|loaded| matches!(loaded, vm::Loaded::Ok(stored) if stored.config.project == dir))
        .map(|loaded| loaded.to_wire(&ctx.env))
        .collect();
    let human = if vms.is_empty() {
        format!("no VMs of project {} yet; run `stoat up`", project.name)
    } else {
        super::vms::ls_human(&vms)
    };
    Ok(Reply::new(&LsData { vms }, human))
}

/// `recipe lock --project`: pins every `[recipes.*]` of stoat.toml in stoat.lock.
pub fn recipe_lock(ctx: &Ctx) -> Result<Reply> {
    let project = required(ctx)?;
    let recipes = lock::lock_project(&ctx.env, &project)?;
    let human = if recipes.is_empty() {
        "no remote recipes declared; wrote an empty stoat.lock\n".to_owned()
    } else {
        recipes
            .iter()
            .map(|r| {
                format!(
                    "{} {} @ {}\n",
                    r.name,
                    r.source,
                    &r.commit[..r.commit.len().min(7)]
                )
            })
            .collect()
    };
    Ok(Reply::new(&RecipePinsData { recipes }, human))
}

// ---------------------------------------------------------------------------------------
// fan-out

/// `up` with no VM name: outside a project, the single-VM command's usage error.
pub fn up(ctx: &Ctx, args: UpArgs) -> Result<Reply> {
    let Some(project) = current(ctx)? else {
        return single(ctx, Command::Up(args));
    };
    lock::check(&project, &lock::LockFile::read(&project.dir)?)?;
    fan_out(ctx, &project, |decl| {
        let stored = converge(ctx, &project, decl)?;
        if stored.running_pid().is_some() {
            return Ok(());
        }
        run_single(
            ctx,
            Command::Up(UpArgs {
                vm: Some(decl.name.clone()),
                no_apply: args.no_apply,
            }),
        )
    })
}

/// `down` with no VM name.
pub fn down(ctx: &Ctx, args: OptVmArg) -> Result<Reply> {
    let Some(project) = current(ctx)? else {
        return single(ctx, Command::Down(args));
    };
    fan_out(ctx, &project, |decl| match ours(ctx, &project, decl)? {
        Some(stored) if stored.running_pid().is_some() => run_single(
            ctx,
            Command::Down(OptVmArg {
                vm: Some(decl.name.clone()),
            }),
        ),
        _ => Ok(()),
    })
}

/// `wait` with no VM name: each VM in turn, each with the whole `--timeout`.
pub fn wait(ctx: &Ctx, args: WaitArgs) -> Result<Reply> {
    let Some(project) = current(ctx)? else {
        return single(ctx, Command::Wait(args));
    };
    fan_out(ctx, &project, |decl| {
        ours(ctx, &project, decl)?.ok_or_else(|| not_created(decl))?;
        run_single(
            ctx,
            Command::Wait(WaitArgs {
                vm: Some(decl.name.clone()),
                until: args.until.clone(),
                timeout: args.timeout,
            }),
        )
    })
}

/// `apply` with no VM name (`--dry-run` needs a VM: a plan is per VM).
pub fn apply(ctx: &Ctx, args: ApplyArgs) -> Result<Reply> {
    let Some(project) = current(ctx)? else {
        return single(ctx, Command::Apply(args));
    };
    if args.dry_run {
        return Err(Error::Usage(
            "apply --dry-run shows one VM's plan; name the VM: stoat apply <vm> --dry-run".into(),
        ));
    }
    lock::check(&project, &lock::LockFile::read(&project.dir)?)?;
    fan_out(ctx, &project, |decl| {
        ours(ctx, &project, decl)?.ok_or_else(|| not_created(decl))?;
        run_single(
            ctx,
            Command::Apply(ApplyArgs {
                vm: Some(decl.name.clone()),
                only: args.only.clone(),
                dry_run: false,
                params: args.params.clone(),
            }),
        )
    })
}

/// `rm` with no VM name: deletes the declared VMs that exist (`-y` asked once, up front).
pub fn rm(ctx: &Ctx, args: RmArgs) -> Result<Reply> {
    let Some(project) = current(ctx)? else {
        return single(ctx, Command::Rm(args));
    };
    if !args.yes {
        return Err(Error::ConfirmationRequired(format!(
            "rm with no VM name deletes every VM of project {} and their disks; pass -y to confirm",
            project.name
        )));
    }
    fan_out(ctx, &project, |decl| match ours(ctx, &project, decl)? {
        Some(_) => run_single(
            ctx,
            Command::Rm(RmArgs {
                vm: Some(decl.name.clone()),
                yes: true,
            }),
        ),
        None => Ok(()),
    })
}

/// Runs `act` over the declarations and answers ProjectRun: `ok:true` under --json whatever
/// the VMs did (the per-VM statuses are the answer); exit 1 in human mode when one failed.
fn fan_out(
    ctx: &Ctx,
    project: &Project,
    mut act: impl FnMut(&Declaration) -> Result<()>,
) -> Result<Reply> {
    let run = fanout::run(
        project,
        |event| report_progress(ctx, event),
        |decl| {
            ctx.cancel.check()?;
            act(decl)
        },
    );
    ctx.cancel.check()?;
    let failed = fanout::any_failed(&run);
    let human = run_human(&run);
    Ok(Reply::new(&run, human).with_human_exit(i32::from(failed)))
}

fn report_progress(ctx: &Ctx, event: &ProjectRunVm) {
    ctx.json_event(EventType::Vm, event);
    let text = match (event.status.as_str(), &event.error) {
        (fanout::STARTED, _) => format!("==> {} ({})", event.key, event.name),
        (_, Some(error)) => format!("    {}: {error}", event.name),
        ("skipped", _) => format!("    {}: skipped", event.name),
        _ => return,
    };
    ctx.note(&text);
}

fn run_human(run: &ProjectRun) -> String {
    if run.vms.is_empty() {
        return format!("project {}: no VMs declared\n", run.project);
    }
    let rows: Vec<Vec<String>> = run
        .vms
        .iter()
        .map(|v| {
            vec![
                v.key.clone(),
                v.name.clone(),
                v.status.clone(),
                v.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    human::table(&["KEY", "NAME", "STATUS", "ERROR"], &rows)
}

/// A command given no VM name outside a project: the single-VM command's own answer (its
/// usage error), called directly so dispatch does not route it back here.
fn single(ctx: &Ctx, command: Command) -> Result<Reply> {
    match command {
        Command::Up(args) => super::runtime::up(ctx, &args),
        Command::Down(args) => super::runtime::down(ctx, args.vm.as_deref()),
        Command::Wait(args) => super::runtime::wait(ctx, &args),
        Command::Rm(args) => super::vmops::rm(ctx, args),
        other => Err(Error::Usage(format!(
            "{} needs a VM name (or run it inside a project: a directory with {} at or above it)",
            other.wire_name(),
            stoat_core::project::PROJECT_FILE
        ))),
    }
}

/// Runs one VM's command through the ordinary dispatch; its prose goes to stderr.
fn run_single(ctx: &Ctx, command: Command) -> Result<()> {
    let reply = super::dispatch(ctx, command)?;
    let human = reply.human.trim_end();
    if !human.is_empty() {
        ctx.note(&format!("    {}", human.replace('\n', "\n    ")));
    }
    Ok(())
}

/// The declaration's VM when it exists and is this project's; `None` when not created yet.
fn ours(ctx: &Ctx, project: &Project, decl: &Declaration) -> Result<Option<vm::StoredVm>> {
    match status::existing(ctx.root()?, project, decl)? {
        Existing::Missing => Ok(None),
        Existing::Ours(stored) => Ok(Some(stored)),
        Existing::Foreign(stored) => Err(Error::NameTaken {
            name: status::foreign_reason(&stored, project),
        }),
        Existing::Broken(reason) => Err(Error::Broken {
            name: decl.name.clone(),
            reason,
        }),
    }
}

fn not_created(decl: &Declaration) -> Error {
    Error::NotFound {
        name: format!(
            "{} (vm.{} is not created yet; run `stoat up`)",
            decl.name, decl.key
        ),
    }
}

/// Makes the VM match its declaration before `up`: creates it when missing; when stopped,
/// applies the drift (update and forward); an immutable mismatch is `immutable_field` (or
/// `disk_shrink`). A running VM is left as it is: its drift waits for a restart.
fn converge(ctx: &Ctx, project: &Project, decl: &Declaration) -> Result<vm::StoredVm> {
    let root = ctx.root()?;
    let Some(stored) = ours(ctx, project, decl)? else {
        return create(ctx, project, decl);
    };
    let running = stored.running_pid().is_some();
    let image_matches = status::image_matches(root, &ctx.env, decl, &stored.config);
    let drift = status::compare(decl, &stored.config, running, image_matches).map_err(|why| {
        if why.starts_with("disk:") {
            Error::DiskShrink {
                name: decl.name.clone(),
                current: stored.config.disk.clone(),
                requested: decl.disk.clone().unwrap_or_default(),
            }
        } else {
            Error::ImmutableField(why)
        }
    })?;
    if running || drift.is_empty() {
        return Ok(stored);
    }
    let fields: Vec<&str> = drift.iter().map(|d| d.field.as_str()).collect();
    let spec = UpdateSpec {
        cpus: decl.cpus.filter(|_| fields.contains(&"cpus")),
        ram_mb: decl.ram_mb.filter(|_| fields.contains(&"ram")),
        disk: decl.disk.clone().filter(|_| fields.contains(&"disk")),
        share: decl.share.clone().filter(|_| fields.contains(&"share")),
        recipes: decl
            .recipes
            .as_ref()
            .filter(|_| fields.contains(&"recipes"))
            .map(|r| r.join(",")),
        ..UpdateSpec::default()
    };
    if !spec.is_empty() {
        ops::update::update(root, &ctx.env, &decl.name, &spec)?;
    }
    if let Some(forwards) = decl
        .forwards
        .as_ref()
        .filter(|_| fields.contains(&"forwards"))
    {
        ops::forward::set(root, &decl.name, &port_pairs(forwards))?;
    }
    ctx.note(&format!("    updated {}: {}", decl.name, fields.join(", ")));
    vm::load_ok(root, &decl.name)
}

/// Creates the declared VM (recording the project and key); a failure to set its forwards
/// removes it again, so a failed `up` leaves no half-made VM.
fn create(ctx: &Ctx, project: &Project, decl: &Declaration) -> Result<vm::StoredVm> {
    let root = ctx.root()?;
    let recipes = decl.recipes.clone().unwrap_or_default();
    let params = decl
        .params
        .iter()
        .flat_map(|(recipe, table)| {
            table
                .iter()
                .map(move |(key, value)| format!("{recipe}.{key}={value}"))
        })
        .collect();
    let spec = CreateSpec {
        name: decl.name.clone(),
        image: decl.image.clone(),
        os: decl.os.clone(),
        backend: decl.backend.clone(),
        mode: decl.mode.clone(),
        ram_mb: decl.ram_mb,
        cpus: decl.cpus,
        disk: decl.disk.clone(),
        share: decl.share.clone().filter(|s| !s.is_empty()),
        recipes,
        params,
        allow_exec: true,
        project: project.dir_text(),
        key: decl.key.clone(),
        ..CreateSpec::default()
    };
    let stored = ops::create::create(root, &ctx.env, &spec)?;
    stoat_core::log::append(
        root,
        "info",
        &format!("created vm={} project={}", stored.name, project.name),
    );
    if let Some(forwards) = decl.forwards.as_ref().filter(|f| !f.is_empty()) {
        if let Err(err) = ops::forward::set(root, &decl.name, &port_pairs(forwards)) {
            let _ = ops::remove::remove(root, &decl.name);
            return Err(err);
        }
    }
    ctx.note(&format!("    created {}", decl.name));
    vm::load_ok(root, &decl.name)
}

fn port_pairs(forwards: &[vm::ForwardConfig]) -> Vec<PortPair> {
    forwards
        .iter()
        .map(|f| PortPair {
            host: i64::from(f.hostport),
            guest: i64::from(f.guestport),
        })
        .collect()
}
