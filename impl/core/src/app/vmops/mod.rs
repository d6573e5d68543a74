//! The operations that change a VM's record: create, update, rm, clone, forward
//! (json-v3#per-command-data; docs/contract.md behaviour#data-root, behaviour#images,
//! behaviour#host-commands). Each has its file beside this one (`recipe_check` is what create
//! and update ask of the recipes); the functions here log the change and answer the wire DTO.
//!
//! Every operation that chooses a port or writes a vm.toml holds the data-root lock from its
//! checks to its save, so concurrent invocations see each other's results.

mod clone;
mod create;
mod forward;
mod recipe_check;
pub(super) mod remove;
mod update;

use stoat_wire::dto::{CloneData, ForwardData, RmData, UpdateData, VmData};

use super::Session;
use crate::{Error, Result};

pub use crate::vm::spec::{
    parse_agent_access, parse_display, parse_pair, parse_pair_named, DisplayPref, PortPair,
};
pub use crate::vm::{Backend, Mode};
pub use create::CreateSpec;
pub use forward::{parse_removal, Edit, Removal};
pub use update::{Immutable, UpdateSpec};

/// `create`.
pub fn create(s: &Session, spec: &CreateSpec) -> Result<VmData> {
    let root = s.root()?;
    let stored = create::create(root, &s.env, spec)?;
    let project = match spec.project.as_str() {
        "" => String::new(),
        dir => format!(" project={dir}"),
    };
    crate::log::append(
        root,
        "info",
        &format!("created vm={}{project}", stored.name),
    );
    Ok(VmData {
        vm: stored.to_wire(&s.env),
    })
}

/// The console password `create` saved for `name` (generated when it was asked for
/// `random`): shown once to the person who asked, never on the wire or in a log.
pub fn console_password(s: &Session, name: &str) -> Result<String> {
    Ok(crate::vm::load_ok(s.root()?, name)?.config.console_password)
}

/// `update <vm>`: refuses an empty change as a usage error (a front end says first which of
/// its own arguments would change something).
pub fn update(s: &Session, name: &str, spec: &UpdateSpec) -> Result<UpdateData> {
    if spec.is_empty() {
        return Err(Error::Usage("update: nothing to change".into()));
    }
    let updated = update::update(s.root()?, &s.env, name, spec)?;
    Ok(UpdateData {
        vm: updated.vm.to_wire(&s.env),
        changed: updated.changed,
        applies_at: updated.applies_at,
    })
}

/// Fails when `rm <vm>` could not delete it (not found, running), before anyone is asked.
pub fn check_removable(s: &Session, name: &str) -> Result<()> {
    remove::check_removable(s.root()?, name).map(drop)
}

/// `rm <vm>`, confirmed by the caller.
pub fn rm(s: &Session, name: &str) -> Result<RmData> {
    let root = s.root()?;
    remove::check_removable(root, name)?;
    remove::remove(root, name)?;
    crate::log::append(root, "info", &format!("deleted vm={name}"));
    Ok(RmData {
        name: name.to_owned(),
        deleted: true,
    })
}

/// `clone <source> <name>`.
pub fn clone(s: &Session, source: &str, name: &str) -> Result<CloneData> {
    let root = s.root()?;
    let stored = clone::clone(root, &s.env, source, name, &s.cancel)?;
    crate::log::append(
        root,
        "info",
        &format!("cloned vm={} source={source}", stored.name),
    );
    Ok(CloneData {
        vm: stored.to_wire(&s.env),
        source: source.to_owned(),
        forwards_copied: false,
    })
}

/// What `forward` does: show the list, or change it (a new list replaces it, an empty one
/// clears it; added pairs and removed host ports edit it). Each front end builds it from its
/// own arguments, with [`parse_pair`] and [`parse_removal`] for their texts.
pub enum ForwardChange {
    Show,
    Edit(Edit),
}

/// `forward <vm>`: show or change its port forwards.
pub fn forward(s: &Session, name: &str, change: &ForwardChange) -> Result<ForwardData> {
    let root = s.root()?;
    match change {
        ForwardChange::Show => forward::show(root, name),
        ForwardChange::Edit(edit) => forward::set(root, name, edit),
    }
}

/// The forwards `name`'s running QEMU has, `None` when it is not running (or broken).
pub fn live_forwards(s: &Session, name: &str) -> Result<Option<Vec<(u16, u16)>>> {
    Ok(match crate::vm::load(s.root()?, name)? {
        crate::vm::Loaded::Ok(stored) => forward::live_forwards(&stored),
        crate::vm::Loaded::Broken { .. } => None,
    })
}
