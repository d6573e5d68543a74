//! `update`: change only the fields that were given, under the data-root lock; grow a disk
//! with `qemu-img resize` before the new size is saved (a kill in between is reconciled by
//! the next load, see vm::resize_note).
//!
//! Implements docs/contract.md behaviour#host-commands, without docs/contract.md behaviour#not-copied:
//! `changed` lists only fields whose value actually changed, and `--recipes` is validated.
//! json-v3#per-command-data: `update` → `{vm, changed, applies_at}`.

use stoat_wire::dto::{AgentAccess, AppliesAt};

use super::forward;
use super::recipe_check::check_recipes_applicable;
use crate::vm::spec::DisplayPref;
use crate::vm::Mode;
use crate::vm::{self, StoredVm, VmConfig};
use crate::{lock, Env, Error, Result, Root};

/// The flags given; `None` means "leave it alone".
#[derive(Debug, Clone, Default)]
pub struct UpdateSpec {
    pub ram_mb: Option<u32>,
    pub cpus: Option<u32>,
    pub ssh_port: Option<u16>,
    pub disk: Option<String>,
    /// `""` clears the share.
    pub share: Option<String>,
    /// The recipe names that replace the old list; an empty list clears it.
    pub recipes: Option<Vec<String>>,
    pub agent_access: Option<AgentAccess>,
    pub allow_exec: Option<bool>,
    pub display: Option<DisplayPref>,
    /// The opt-in: the guest reaches the host's loopback through its gateway.
    pub host_loopback: Option<bool>,
    /// Fields that can never change, with the value asked for.
    pub immutable: Vec<(Immutable, String)>,
}

/// A field fixed when a VM is created: asking `update` for another value is `immutable_field`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Immutable {
    Os,
    Backend,
    Mode,
    Image,
}

impl Immutable {
    /// The field's name in vm.toml and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Immutable::Os => "os",
            Immutable::Backend => "backend",
            Immutable::Mode => "mode",
            Immutable::Image => "image",
        }
    }
}

impl UpdateSpec {
    /// Returns whether no flag was given at all.
    pub fn is_empty(&self) -> bool {
        self.ram_mb.is_none()
            && self.cpus.is_none()
            && self.ssh_port.is_none()
            && self.disk.is_none()
            && self.share.is_none()
            && self.recipes.is_none()
            && self.agent_access.is_none()
            && self.allow_exec.is_none()
            && self.display.is_none()
            && self.host_loopback.is_none()
            && self.immutable.is_empty()
    }
}

/// What update did.
#[derive(Debug)]
pub struct Updated {
    pub vm: StoredVm,
    /// Wire names of the fields whose value changed, sorted.
    pub changed: Vec<String>,
    pub applies_at: AppliesAt,
}

/// Applies `spec` to VM `name`.
pub fn update(root: &Root, env: &Env, name: &str, spec: &UpdateSpec) -> Result<Updated> {
    if spec.is_empty() {
        return Err(Error::Usage("update: nothing to change".into()));
    }
    // The VM's own lock too: whether the change applies now or at the next start is decided
    // with no `up` or `down` halfway.
    let (_root_lock, _vm_lock) = lock::root_and_vm(root, name)?;
    crate::fault::pause("update-locked");
    let mut stored = vm::load_ok(root, name)?;
    refuse_immutable(&stored.config, &spec.immutable)?;
    let running = stored.running_pid().is_some();
    let old = stored.config.clone();
    let new = planned_config(root, env, &stored, spec, running)?;
    let changed = changed_fields(&old, &new);
    // Once the disk is being grown, the answer is decided by whether it grew: a cancel then
    // waits for this command's own answer instead of the signal thread guessing one.
    let _finishing = (new.disk != old.disk).then(crate::child::finishing);
    if new.disk != old.disk {
        grow_disk(env, &stored, &new.disk)?;
    }
    if new != old {
        // Saved even when no wire value moved (e.g. pinning the level already in effect).
        stored.config = new;
        vm::save(&stored)?;
    }
    Ok(Updated {
        vm: stored,
        changed,
        applies_at: if running {
            AppliesAt::NextStart
        } else {
            AppliesAt::Now
        },
    })
}

/// Refuses a change to a field fixed at create; asking for the current value is not a change.
fn refuse_immutable(config: &VmConfig, asked: &[(Immutable, String)]) -> Result<()> {
    for (field, value) in asked {
        // The image has no one spelling to compare (a catalog id, a file, a path): any is a change.
        let current = match field {
            Immutable::Os => Some(config.os.as_str()),
            Immutable::Backend => Some(config.backend.as_str()),
            Immutable::Mode => Some(config.mode.as_str()),
            Immutable::Image => None,
        };
        if current.map(|c| c != value.trim()).unwrap_or(true) {
            return Err(Error::ImmutableField(format!(
                "{} is fixed when a VM is created; make a new VM instead",
                field.name()
            )));
        }
    }
    Ok(())
}

/// Returns the configuration with every given flag applied and validated.
fn planned_config(
    root: &Root,
    env: &Env,
    stored: &StoredVm,
    spec: &UpdateSpec,
    running: bool,
) -> Result<VmConfig> {
    let mut new = stored.config.clone();
    if let Some(ram) = spec.ram_mb {
        crate::vm::spec::check_ram(ram)?;
        new.ram = ram;
    }
    if let Some(cpus) = spec.cpus {
        crate::vm::spec::check_cpus(cpus)?;
        new.cpus = cpus;
    }
    if let Some(share) = &spec.share {
        new.share = crate::vm::spec::resolve_share(env, share)?;
    }
    if let Some(list) = &spec.recipes {
        let recipes = crate::vm::spec::split_recipes(list);
        check_recipes_applicable(root, &new.os, new.backend.as_str(), &recipes)?;
        new.recipe_params
            .retain(|recipe, _| recipes.contains(recipe));
        new.recipes = recipes;
    }
    if let Some(level) = spec.agent_access {
        new.agent_access = Some(level);
    }
    if let Some(allow) = spec.allow_exec {
        new.allow_exec = Some(allow);
    }
    if let Some(pref) = spec.display {
        new.display = pref.stored().to_owned();
    }
    if let Some(allow) = spec.host_loopback {
        new.host_loopback = allow;
    }
    if let Some(port) = spec.ssh_port.filter(|p| *p != stored.config.sshport) {
        check_ssh_port(root, stored, port)?;
        new.sshport = port;
    }
    // A port the user named stays put at `up`, even the one already in use.
    new.sshport_pinned |= spec.ssh_port.is_some();
    if let Some(disk) = &spec.disk {
        new.disk = planned_disk(stored, disk, running)?;
    }
    Ok(new)
}

/// A new ssh port must pass the forward rules and not be one of this VM's own forwards.
fn check_ssh_port(root: &Root, stored: &StoredVm, port: u16) -> Result<()> {
    crate::vm::spec::check_ssh_port(port)?;
    if stored.config.forwards.iter().any(|f| f.hostport == port) {
        return Err(Error::InvalidSpec(format!(
            "ssh port: host port {port} is one of {}'s own forwards",
            stored.name
        )));
    }
    forward::check_other_vms(root, &stored.name, &[port], "ssh port: ")
}

/// Validates a disk change in upstream's order; returns the size to store.
fn planned_disk(stored: &StoredVm, requested: &str, running: bool) -> Result<String> {
    let requested = requested.trim();
    if requested == stored.config.disk {
        return Ok(requested.to_owned());
    }
    let name = &stored.name;
    if stored.config.mode == Mode::Live {
        return Err(Error::InvalidSpec(format!(
            "{name} is a live VM and has no disk"
        )));
    }
    let wanted = crate::vm::spec::check_disk_size(requested)?;
    if running {
        return Err(Error::AlreadyRunning { name: name.clone() });
    }
    let current = crate::size::parse_size(&stored.config.disk).map_err(|_| {
        Error::InvalidSpec(format!(
            "{name}'s recorded disk size {:?} does not parse",
            stored.config.disk
        ))
    })?;
    if wanted < current {
        return Err(Error::DiskShrink {
            name: name.clone(),
            current: stored.config.disk.clone(),
            requested: requested.to_owned(),
        });
    }
    if !stored.files().disk().exists() && stored.config.mode == Mode::Cloud {
        return Err(Error::InvalidSpec(format!(
            "{name} has no disk yet; start it once (stoat up {name}) so its disk exists, then resize"
        )));
    }
    Ok(requested.to_owned())
}

/// Grows the qcow2 to `size` (update has already refused shrinking).
fn grow_disk(env: &Env, stored: &StoredVm, size: &str) -> Result<()> {
    let disk = stored.files().disk();
    if !disk.exists() {
        // A disk VM whose qcow2 is gone: the new size applies when one is made.
        return Ok(());
    }
    // A kill from here until vm.toml is saved leaves the note, and the next load of the
    // VM believes the qcow2 (see vm::resize_note).
    vm::resize_note::begin(&stored.dir, size)?;
    crate::fault::point("resize-noted");
    let resized = crate::images::qemu_img::run(
        env,
        &[
            "resize".as_ref(),
            "-q".as_ref(),
            disk.as_os_str(),
            size.as_ref(),
        ],
    );
    // A qemu-img stopped by a cancel may have resized the disk before it died: the qcow2's
    // header says whether the resize took, and a resize that took is done, not canceled.
    let resized = match resized {
        Err(Error::Canceled) if resize_took(&disk, size) => Ok(()),
        other => other,
    };
    if resized.is_err() {
        vm::resize_note::clear(&stored.dir);
    }
    crate::fault::point("resized");
    resized
}

/// Whether the qcow2 at `disk` has the virtual size `size` (or more) now.
fn resize_took(disk: &std::path::Path, size: &str) -> bool {
    match (
        vm::resize_note::qcow2_virtual_size(disk),
        crate::size::parse_size(size),
    ) {
        (Some(now), Ok(wanted)) => now >= wanted,
        _ => false,
    }
}

/// Returns, sorted, the wire names of the fields whose wire value differs.
pub fn changed_fields(old: &VmConfig, new: &VmConfig) -> Vec<String> {
    let mut changed: Vec<&str> = Vec::new();
    let mut note = |differs: bool, field: &'static str| {
        if differs {
            changed.push(field);
        }
    };
    note(old.agent_access() != new.agent_access(), "agent_access");
    note(old.allow_exec() != new.allow_exec(), "allow_exec");
    note(old.cpus != new.cpus, "cpus");
    note(old.disk != new.disk, "disk");
    note(old.display != new.display, "display");
    note(old.host_loopback != new.host_loopback, "host_loopback");
    note(old.ram != new.ram, "ram");
    note(old.recipes != new.recipes, "recipes");
    note(old.share != new.share, "share");
    note(old.sshport != new.sshport, "ssh_port");
    changed.sort_unstable();
    changed.into_iter().map(str::to_owned).collect()
}
