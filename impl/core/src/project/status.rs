//! `status`: each declaration compared with the VM it made (json-v3#types:
//! ProjectStatus, ProjectStatusVM, Drift).
//!
//! Only fields a declaration states are compared. The immutable ones (image, os, backend,
//! mode) and a disk the declaration would shrink come first: such a mismatch is the VM's
//! `error`, with no drift, because nothing short of a new VM converges it. The rest are drift,
//! in a fixed order (cpus, ram, disk, share, recipes, forwards); `needs_restart` says the VM is
//! running and the change only takes effect at its next start.

use stoat_wire::dto::{Drift, Health, ProjectStatus, ProjectStatusVm};

use super::file::{Declaration, Project};
use crate::images::reference as image_ref;
use crate::vm::{self, ForwardConfig, Loaded, StoredVm, VmConfig};
use crate::vm::{Backend, Mode};
use crate::{Env, Error, Result, Root};

/// The whole project's status.
pub fn status(root: &Root, env: &Env, project: &Project) -> Result<ProjectStatus> {
    let vms = project
        .vms
        .iter()
        .map(|decl| declared_vm_status(root, env, project, decl))
        .collect::<Result<Vec<_>>>()?;
    Ok(ProjectStatus {
        project: project.name.clone(),
        dir: project.dir_text(),
        vms,
    })
}

/// What a declaration's VM is, when it exists.
pub enum Existing {
    Missing,
    Broken(String),
    /// A VM by that name that another project (or a plain `create`) owns.
    Foreign(StoredVm),
    Ours(StoredVm),
}

/// Looks the declaration's VM up.
pub fn existing(root: &Root, project: &Project, decl: &Declaration) -> Result<Existing> {
    match vm::load(root, &decl.name) {
        Err(Error::NotFound { .. }) => Ok(Existing::Missing),
        Err(other) => Err(other),
        Ok(Loaded::Broken { reason, .. }) => Ok(Existing::Broken(reason)),
        Ok(Loaded::Ok(stored)) if owned_by(&stored.config, project, decl) => {
            Ok(Existing::Ours(stored))
        }
        Ok(Loaded::Ok(stored)) => Ok(Existing::Foreign(stored)),
    }
}

fn owned_by(config: &VmConfig, project: &Project, decl: &Declaration) -> bool {
    config.project == project.dir_text() && config.key == decl.key
}

/// Why a VM of that name is not this declaration's.
pub fn foreign_reason(stored: &StoredVm, project: &Project) -> String {
    let owner = if stored.config.project.is_empty() {
        "was not created from a project".to_owned()
    } else {
        format!("belongs to the project in {}", stored.config.project)
    };
    format!(
        "a VM named {} already exists and {owner}, not {}; rename it or the declaration",
        stored.name,
        project.dir_text()
    )
}

fn declared_vm_status(
    root: &Root,
    env: &Env,
    project: &Project,
    decl: &Declaration,
) -> Result<ProjectStatusVm> {
    let mut row = ProjectStatusVm {
        key: decl.key.clone(),
        name: decl.name.clone(),
        state: None,
        health: "unknown".into(),
        drift: Vec::new(),
        error: None,
    };
    match existing(root, project, decl)? {
        Existing::Missing => {}
        Existing::Broken(reason) => {
            row.state = Some("broken".into());
            row.error = Some(format!("{} is broken: {reason}", decl.name));
        }
        Existing::Foreign(stored) => {
            row.state = Some(state_of(&stored).into());
            row.error = Some(foreign_reason(&stored, project));
        }
        Existing::Ours(stored) => {
            let running = stored.running_pid().is_some();
            row.state = Some(state_of(&stored).into());
            row.health = health_of(&stored.config).into();
            let image_matches = image_matches(root, env, decl, &stored.config);
            match compare(decl, &stored.config, running, image_matches) {
                Ok(drift) => row.drift = drift,
                Err(mismatch) => row.error = Some(mismatch.message().to_owned()),
            }
        }
    }
    Ok(row)
}

fn state_of(stored: &StoredVm) -> &'static str {
    if stored.running_pid().is_some() {
        "running"
    } else {
        "stopped"
    }
}

fn health_of(config: &VmConfig) -> &'static str {
    let details: Vec<_> = config
        .recipes
        .iter()
        .map(|name| crate::recipe_state::detail(config, name))
        .collect();
    match crate::recipe_state::aggregate_health(&details) {
        Health::Ok => "ok",
        Health::Failed => "failed",
        Health::Unknown => "unknown",
    }
}

/// Whether the declared image is the one the VM was made from; `None` when the declared image
/// no longer resolves (it cannot be compared, so it is not called a mismatch).
pub fn image_matches(
    root: &Root,
    env: &Env,
    decl: &Declaration,
    config: &VmConfig,
) -> Option<bool> {
    let resolved = image_ref::resolve(root, env, &decl.image).ok()?;
    let recorded = if config.mode == Mode::Cloud {
        &config.base
    } else {
        &config.iso
    };
    Some(crate::images::store::same_image(
        root,
        recorded,
        &resolved.path,
    ))
}

/// Why a VM cannot be made to match its declaration; the message names the field first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// An immutable field (image, os, backend, mode) differs.
    Immutable(String),
    /// The declared disk is smaller than the VM's.
    Disk(String),
    /// A disk is declared for a live VM, which has none.
    NoDisk(String),
}

impl Mismatch {
    /// The one-line explanation.
    pub fn message(&self) -> &str {
        match self {
            Mismatch::Immutable(message) | Mismatch::Disk(message) | Mismatch::NoDisk(message) => {
                message
            }
        }
    }
}

/// The drift of one VM, or the immutable mismatch that stops the comparison.
pub fn compare(
    decl: &Declaration,
    config: &VmConfig,
    running: bool,
    image_matches: Option<bool>,
) -> std::result::Result<Vec<Drift>, Mismatch> {
    if image_matches == Some(false) {
        return Err(Mismatch::Immutable(format!(
            "image: the declaration names {} but {} was made from another image; an image cannot change, so remove the VM (stoat rm {} -y) to remake it",
            decl.image, decl.name, decl.name
        )));
    }
    for (field, declared, actual) in [
        ("os", decl.os.as_deref(), config.os.as_str()),
        (
            "backend",
            decl.backend.as_ref().map(Backend::as_str),
            config.backend.as_str(),
        ),
        (
            "mode",
            decl.mode.as_ref().map(Mode::as_str),
            config.mode.as_str(),
        ),
    ] {
        if let Some(declared) = declared.filter(|d| *d != actual) {
            return Err(Mismatch::Immutable(format!(
                "{field}: declared {declared} but {} is {actual}; it cannot change after create",
                decl.name
            )));
        }
    }
    check_disk(decl, config)?;
    let mut drift = Vec::new();
    let mut note = |field: &str, from: String, to: String, at_start: bool| {
        if from != to {
            drift.push(Drift {
                field: field.to_owned(),
                from,
                to,
                needs_restart: at_start && running,
            });
        }
    };
    if let Some(cpus) = decl.cpus {
        note("cpus", config.cpus.to_string(), cpus.to_string(), true);
    }
    if let Some(ram) = decl.ram_mb {
        note("ram", config.ram.to_string(), ram.to_string(), true);
    }
    if let Some(disk) = &decl.disk {
        if !same_size(&config.disk, disk) {
            note("disk", config.disk.clone(), disk.clone(), true);
        }
    }
    if let Some(share) = &decl.share {
        note("share", config.share.clone(), share.clone(), true);
    }
    if let Some(recipes) = &decl.recipes {
        note(
            "recipes",
            config.recipes.join(","),
            recipes.join(","),
            false,
        );
    }
    if let Some(forwards) = &decl.forwards {
        note(
            "forwards",
            forwards_text(&config.forwards),
            forwards_text(forwards),
            true,
        );
    }
    Ok(drift)
}

/// A disk can only grow, and a live VM has none.
fn check_disk(decl: &Declaration, config: &VmConfig) -> std::result::Result<(), Mismatch> {
    let Some(declared) = &decl.disk else {
        return Ok(());
    };
    if config.mode == Mode::Live {
        return Err(Mismatch::NoDisk(format!(
            "disk: {} is a live VM and has no disk",
            decl.name
        )));
    }
    let (Ok(wanted), Ok(current)) = (
        crate::size::parse_size(declared),
        crate::size::parse_size(&config.disk),
    ) else {
        return Ok(());
    };
    if wanted < current {
        return Err(Mismatch::Disk(format!(
            "disk: declared {declared} but {}'s disk is {}; a disk can only grow",
            decl.name, config.disk
        )));
    }
    Ok(())
}

fn same_size(a: &str, b: &str) -> bool {
    match (crate::size::parse_size(a), crate::size::parse_size(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// `8080:80,9000:90`, as the CLI takes them.
pub fn forwards_text(forwards: &[ForwardConfig]) -> String {
    forwards
        .iter()
        .map(|f| format!("{}:{}", f.hostport, f.guestport))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> VmConfig {
        VmConfig {
            mode: "cloud".into(),
            os: "debian".into(),
            backend: "cloudinit".into(),
            cpus: 2,
            ram: 2048,
            disk: "8G".into(),
            recipes: vec!["docker".into()],
            ..VmConfig::default()
        }
    }

    fn decl() -> Declaration {
        Declaration {
            key: "dev".into(),
            name: "p-dev".into(),
            image: "debian-12".into(),
            ..Declaration::default()
        }
    }

    #[test]
    fn undeclared_fields_never_drift() {
        assert_eq!(compare(&decl(), &config(), true, Some(true)), Ok(vec![]));
    }

    #[test]
    fn drift_per_field_in_fixed_order_with_needs_restart_only_when_running() {
        let d = Declaration {
            cpus: Some(4),
            ram_mb: Some(2048),
            disk: Some("16G".into()),
            share: Some("/src".into()),
            recipes: Some(vec!["docker".into(), "xfce".into()]),
            forwards: Some(vec![ForwardConfig {
                hostport: 8080,
                guestport: 80,
            }]),
            ..decl()
        };
        let drift = compare(&d, &config(), true, Some(true)).unwrap();
        let fields: Vec<&str> = drift.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["cpus", "disk", "share", "recipes", "forwards"]);
        assert_eq!(
            drift[0],
            Drift {
                field: "cpus".into(),
                from: "2".into(),
                to: "4".into(),
                needs_restart: true
            }
        );
        assert_eq!(drift[3].to, "docker,xfce");
        assert!(!drift[3].needs_restart, "recipes apply to a running VM");
        assert_eq!(drift[4].from, "");
        assert_eq!(drift[4].to, "8080:80");
        let stopped = compare(&d, &config(), false, Some(true)).unwrap();
        assert!(stopped.iter().all(|d| !d.needs_restart));
    }

    #[test]
    fn the_same_size_spelled_differently_is_no_drift() {
        let d = Declaration {
            disk: Some("8192M".into()),
            ..decl()
        };
        assert_eq!(compare(&d, &config(), false, Some(true)), Ok(vec![]));
    }

    #[test]
    fn immutable_mismatches_are_errors_that_stop_the_comparison() {
        let d = Declaration {
            cpus: Some(8),
            ..decl()
        };
        let err = compare(&d, &config(), false, Some(false)).unwrap_err();
        assert!(
            matches!(&err, Mismatch::Immutable(m) if m.starts_with("image:")),
            "{err:?}"
        );
        let d = Declaration {
            cpus: Some(8),
            disk: Some("4G".into()),
            ..decl()
        };
        let err = compare(&d, &config(), false, Some(true)).unwrap_err();
        assert!(
            matches!(&err, Mismatch::Disk(m) if m.contains("only grow")),
            "{err:?}"
        );
        let d = Declaration {
            os: Some("alpine".into()),
            ..decl()
        };
        assert!(compare(&d, &config(), false, None)
            .unwrap_err()
            .message()
            .starts_with("os:"));
        let d = Declaration {
            cpus: Some(8),
            ..decl()
        };
        assert_eq!(
            compare(&d, &config(), false, None).unwrap().len(),
            1,
            "unknown image is no mismatch"
        );
    }
}
