//! The CLI adapters of the project operations (`stoat_core::app::project`): `init`, `status`,
//! `ls --project`, `recipe lock --project`, and the no-name fan-out of `up`, `down`, `apply`,
//! `wait` and `rm` inside a project (json-v3#per-command-data: InitResult, ProjectStatus,
//! ProjectRun; design#project-fan-out). Outside a project a no-name command is the single-VM
//! command's own usage error. Per-VM progress arrives through the sink (`ctx`).

use stoat_core::app::project::{self as app_project, GITIGNORE_LINE, PROJECT_FILE};
use stoat_core::app::runtime::ApplyRequest;
use stoat_core::{Error, Result};
use stoat_wire::dto::{ProjectRun, ProjectStatus};

use crate::ctx::Ctx;
use crate::grammar::{ApplyArgs, Command, OptVmArg, RmArgs, UpArgs, WaitArgs};
use crate::human;
use crate::output::Reply;

/// `init`: writes a commented stoat.toml in the working directory.
pub fn init(ctx: &Ctx) -> Result<Reply> {
    let data = app_project::init(ctx)?;
    let mut human = format!("wrote {} (project {})\n", data.path, data.project);
    if data.gitignore_updated {
        human.push_str(&format!("added {GITIGNORE_LINE} to .gitignore\n"));
    }
    human.push_str("declare VMs under [vm.<key>], then run `stoat up`\n");
    Ok(Reply::new(&data, human))
}

/// `status`.
pub fn status(ctx: &Ctx) -> Result<Reply> {
    let project = app_project::required(ctx)?;
    let data = app_project::status(ctx, &project)?;
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
    let project = app_project::required(ctx)?;
    let data = app_project::ls(ctx, &project)?;
    let human = if data.vms.is_empty() {
        format!("no VMs of project {} yet; run `stoat up`", project.name)
    } else {
        super::vms::ls_human(&data.vms, &stoat_core::app::vms::image_names(ctx)?)
    };
    Ok(Reply::new(&data, human))
}

/// `recipe lock --project`: pins every `[recipes.*]` of stoat.toml in stoat.lock.
pub fn recipe_lock(ctx: &Ctx) -> Result<Reply> {
    let project = app_project::required(ctx)?;
    let data = app_project::recipe_lock(ctx, &project)?;
    let human = if data.recipes.is_empty() {
        "no remote recipes declared; wrote an empty stoat.lock\n".to_owned()
    } else {
        data.recipes
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
    Ok(Reply::new(&data, human))
}

/// `up` with no VM name.
pub fn up(ctx: &Ctx, args: UpArgs) -> Result<Reply> {
    let Some(project) = app_project::current(ctx)? else {
        return single(ctx, Command::Up(args));
    };
    let reach_wait = (!args.no_wait).then_some(args.timeout);
    run_reply(app_project::up(ctx, &project, !args.no_apply, reach_wait)?)
}

/// `down` with no VM name.
pub fn down(ctx: &Ctx, args: OptVmArg) -> Result<Reply> {
    let Some(project) = app_project::current(ctx)? else {
        return single(ctx, Command::Down(args));
    };
    run_reply(app_project::down(ctx, &project)?)
}

/// `wait` with no VM name: each VM in turn, each with the whole `--timeout`.
pub fn wait(ctx: &Ctx, args: WaitArgs) -> Result<Reply> {
    let Some(project) = app_project::current(ctx)? else {
        return single(ctx, Command::Wait(args));
    };
    let until = super::runtime::until(&args.until)?;
    run_reply(app_project::wait(ctx, &project, until, args.timeout)?)
}

/// `apply` with no VM name (`--dry-run` needs a VM: a plan is per VM).
pub fn apply(ctx: &Ctx, args: ApplyArgs) -> Result<Reply> {
    let Some(project) = app_project::current(ctx)? else {
        return single(ctx, Command::Apply(args));
    };
    if args.dry_run {
        return Err(Error::Usage(
            "apply --dry-run shows one VM's plan; name the VM: stoat apply <vm> --dry-run".into(),
        ));
    }
    let request = ApplyRequest {
        only: args
            .only
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        params: super::params::settings(&args.params)?,
    };
    run_reply(app_project::apply(ctx, &project, &request)?)
}

/// `rm` with no VM name: deletes the declared VMs that exist (`-y` asked once, up front).
pub fn rm(ctx: &Ctx, args: RmArgs) -> Result<Reply> {
    let Some(project) = app_project::current(ctx)? else {
        return single(ctx, Command::Rm(args));
    };
    if !args.yes {
        return Err(Error::ConfirmationRequired(format!(
            "rm with no VM name deletes every VM of project {} and their disks; pass -y to confirm",
            project.name
        )));
    }
    run_reply(app_project::rm(ctx, &project)?)
}

/// ProjectRun is `ok:true` under --json whatever the VMs did (the per-VM statuses are the
/// answer); exit 1 in human mode when one failed.
fn run_reply(run: ProjectRun) -> Result<Reply> {
    let failed = app_project::any_failed(&run);
    let human = run_human(&run);
    Ok(Reply::new(&run, human).with_human_exit(i32::from(failed)))
}

fn run_human(run: &ProjectRun) -> String {
    if run.vms.is_empty() {
        return format!("project {}: no VMs declared\n", run.project);
    }
    let rows: Vec<Vec<String>> = run
        .vms
        .iter()
        .map(|v| {
            let status = match v.done {
                Some(done) => format!("{} ({done})", v.status),
                None => v.status.clone(),
            };
            vec![
                v.key.clone(),
                v.name.clone(),
                status,
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
            PROJECT_FILE
        ))),
    }
}
