//! Projects (a `stoat.toml` and the VMs it declares): `init`, `status`, `ls --project`,
//! `recipe lock --project`, and the fan-out of `up`, `down`, `wait`, `apply` and `rm` over the
//! declared VMs (json-v3#per-command-data: InitResult, ProjectStatus, ProjectRun;
//! design#project-fan-out).
//!
//! The fan-out runs each declared VM through the same single-VM operations `stoat create`,
//! `update`, `forward` and `up <name>` run ([`super::runtime`], [`super::vmops`]), so one-VM
//! behaviour (and its log line) lives in one place. Per-VM
//! progress goes to the session's sink as `vm` events and notes; the answer is ProjectRun.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use stoat_wire::dto::{InitResult, LsData, ProjectRun, ProjectStatus, RecipePinsData};

use super::runtime::Until;
use super::vmops::{CreateSpec, Edit, ForwardChange, PortPair, UpdateSpec};
use super::Session;
use crate::project::status::{self, Existing, Mismatch};
use crate::project::{fanout, lock, Declaration};
use crate::recipes::apply::ApplyRequest;
use crate::recipes::params::ParamSetting;
use crate::{vm, Error, Result};

pub use crate::project::fanout::{any_failed, STARTED};
pub use crate::project::{Project, PROJECT_FILE};

/// The project at or above the session's working directory; `None` outside a project.
pub fn current(s: &Session) -> Result<Option<Project>> {
    Project::find_and_load(&s.work_dir()?)
}

/// The project, or `not_found` saying how to make one.
pub fn required(s: &Session) -> Result<Project> {
    current(s)?.ok_or_else(|| Error::NotFound {
        name: format!(
            "no {PROJECT_FILE} in {} or any parent directory; run `stoat init` to make one",
            s.work_dir()
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
# image = "debian-13"        # a catalog id (`stoat images`), a file in isos/, or an absolute path
# cpus = 2
# ram = 2048                 # MB
# disk = "16G"               # can only grow
# share = "."                # a host directory, relative to this file; read-only at /mnt/host
# recipes = ["docker"]
# forwards = ["8080:80"]     # HOST:GUEST
#
# [vm.dev.params.docker]     # recipe parameters: params.<recipe>.<name>
# user = "stoat"             # the account added to the docker group

# Remote recipes the VMs may name, pinned in stoat.lock by `stoat recipe lock --project`:
# [recipes.tailscale]
# source = "https://github.com/x/stoat-tailscale"
# ref = "v1.2"
"#;

/// The `.gitignore` line init adds: a per-checkout directory stoat reserves (stoat.toml and
/// stoat.lock are meant to be committed).
pub const GITIGNORE_LINE: &str = ".stoat/";

/// `init`: writes a commented stoat.toml in the working directory (and `.stoat/` in
/// `.gitignore` inside a git work tree).
pub fn init(s: &Session) -> Result<InitResult> {
    let dir = s.work_dir()?;
    let path = dir.join(PROJECT_FILE);
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
    Ok(InitResult {
        path: path.display().to_string(),
        project: name,
        gitignore_updated,
    })
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
    let existing = match crate::bounded::read_to_string(&path) {
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

/// `status`: each declaration compared with the VM it made.
pub fn status(s: &Session, project: &Project) -> Result<ProjectStatus> {
    status::status(s.root()?, &s.env, project)
}

/// `ls --project`: the VMs this project's declarations made.
pub fn ls(s: &Session, project: &Project) -> Result<LsData> {
    let dir = project.dir_text();
    let graphical = crate::display::graphical_session(&s.env);
    let vms = vm::list(s.root()?)?
        .iter()
        .filter(|loaded| matches!(loaded, vm::Loaded::Ok(stored) if stored.config.project == dir))
        .map(|loaded| loaded.to_wire_in(graphical))
        .collect();
    Ok(LsData { vms })
}

/// `recipe lock --project`: pins every `[recipes.*]` of stoat.toml in stoat.lock.
pub fn recipe_lock(s: &Session, project: &Project) -> Result<RecipePinsData> {
    Ok(RecipePinsData {
        recipes: lock::lock_project(&s.env, project)?,
    })
}

// ---------------------------------------------------------------------------------------
// fan-out

/// `up` over the project: each declared VM made to match its declaration, then booted
/// (waited for like a single `up` when `reach_wait` is set, and its recipes applied when
/// `apply_after_boot`) unless it already runs.
pub fn up(
    s: &Session,
    project: &Project,
    apply_after_boot: bool,
    reach_wait: Option<std::time::Duration>,
) -> Result<ProjectRun> {
    lock::check(project, &lock::LockFile::read(&project.dir)?)?;
    fan_out(s, project, |decl| {
        let existed = ours(s, project, decl)?.is_some();
        let stored = converge(s, project, decl)?;
        if stored.running_pid().is_some() {
            return Ok("already running");
        }
        super::runtime::up(s, &decl.name, apply_after_boot, reach_wait)?;
        Ok(if existed {
            "started"
        } else {
            "created and started"
        })
    })
}

/// `down` over the project: each running declared VM stopped.
pub fn down(s: &Session, project: &Project) -> Result<ProjectRun> {
    fan_out(s, project, |decl| match ours(s, project, decl)? {
        Some(stored) if stored.running_pid().is_some() => {
            super::runtime::down(s, &decl.name)?;
            Ok("stopped")
        }
        Some(_) => Ok("already stopped"),
        None => Ok("not created"),
    })
}

/// `wait` over the project: each VM in turn, each with the whole `timeout`.
pub fn wait(s: &Session, project: &Project, until: Until, timeout: Duration) -> Result<ProjectRun> {
    fan_out(s, project, |decl| {
        ours(s, project, decl)?.ok_or_else(|| not_created(decl))?;
        super::runtime::wait(s, &decl.name, until, timeout)?;
        Ok("ready")
    })
}

/// `apply` over the project (a dry run is per VM, so there is none here).
pub fn apply(s: &Session, project: &Project, request: &ApplyRequest) -> Result<ProjectRun> {
    lock::check(project, &lock::LockFile::read(&project.dir)?)?;
    fan_out(s, project, |decl| {
        ours(s, project, decl)?.ok_or_else(|| not_created(decl))?;
        super::runtime::apply(s, &decl.name, request)?;
        Ok("applied")
    })
}

/// `rm` over the project, confirmed by the caller: deletes the declared VMs that exist.
pub fn rm(s: &Session, project: &Project) -> Result<ProjectRun> {
    fan_out(s, project, |decl| match ours(s, project, decl)? {
        Some(_) => {
            super::vmops::rm(s, &decl.name)?;
            Ok("deleted")
        }
        None => Ok("not created"),
    })
}

/// Runs `act` over the declarations, reporting each VM as a `vm` event; the answer lists
/// every declared VM whatever happened (the per-VM statuses are the answer).
fn fan_out(
    s: &Session,
    project: &Project,
    mut act: impl FnMut(&Declaration) -> Result<&'static str>,
) -> Result<ProjectRun> {
    let run = fanout::run(
        project,
        s.spelling(),
        |event| s.events().vm(event),
        |decl| {
            s.cancel.check()?;
            act(decl)
        },
    );
    s.cancel.check()?;
    Ok(run)
}

/// The declaration's VM when it exists and is this project's; `None` when not created yet.
fn ours(s: &Session, project: &Project, decl: &Declaration) -> Result<Option<vm::StoredVm>> {
    match status::existing(s.root()?, project, decl)? {
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
fn converge(s: &Session, project: &Project, decl: &Declaration) -> Result<vm::StoredVm> {
    let root = s.root()?;
    let Some(stored) = ours(s, project, decl)? else {
        return create_declared(s, project, decl);
    };
    let running = stored.running_pid().is_some();
    let image_matches = status::image_matches(root, &s.env, decl, &stored.config);
    let drift =
        status::compare(decl, &stored.config, running, image_matches).map_err(|mismatch| {
            match mismatch {
                Mismatch::Disk(_) => Error::DiskShrink {
                    name: decl.name.clone(),
                    current: stored.config.disk.clone(),
                    requested: decl.disk.clone().unwrap_or_default(),
                },
                Mismatch::NoDisk(_) => Error::NoDisk {
                    name: decl.name.clone(),
                },
                Mismatch::Immutable(why) => Error::ImmutableField(why),
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
            .cloned(),
        ..UpdateSpec::default()
    };
    if !spec.is_empty() {
        super::vmops::update(s, &decl.name, &spec)?;
    }
    if let Some(forwards) = decl
        .forwards
        .as_ref()
        .filter(|_| fields.contains(&"forwards"))
    {
        super::vmops::forward(s, &decl.name, &replace_forwards(forwards))?;
    }
    s.events()
        .note(&format!("    updated {}: {}", decl.name, fields.join(", ")));
    vm::load_ok(root, &decl.name)
}

/// Creates the declared VM (recording the project and key); a failure to set its forwards
/// removes it again, so a failed `up` leaves no half-made VM.
fn create_declared(s: &Session, project: &Project, decl: &Declaration) -> Result<vm::StoredVm> {
    let root = s.root()?;
    let recipes = decl.recipes.clone().unwrap_or_default();
    let params = decl
        .params
        .iter()
        .flat_map(|(recipe, table)| {
            table.iter().map(move |(name, value)| ParamSetting {
                recipe: Some(recipe.clone()),
                name: name.clone(),
                value: value.clone(),
            })
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
    super::vmops::create(s, &spec)?;
    if let Some(forwards) = decl.forwards.as_ref().filter(|f| !f.is_empty()) {
        if let Err(err) = super::vmops::forward(s, &decl.name, &replace_forwards(forwards)) {
            let _ = super::vmops::remove::remove(root, &decl.name);
            return Err(err);
        }
    }
    s.events().note(&format!("    created {}", decl.name));
    vm::load_ok(root, &decl.name)
}

/// The change that makes a VM's forwards the declared ones.
fn replace_forwards(forwards: &[vm::ForwardConfig]) -> ForwardChange {
    ForwardChange::Edit(Edit::Replace(
        forwards
            .iter()
            .map(|f| PortPair {
                host: i64::from(f.hostport),
                guest: i64::from(f.guestport),
            })
            .collect(),
    ))
}
