//! The operations that change a VM's record: create, update, rm, clone, forward
//! (json-v3#per-command-data; docs/contract.md behaviour#host-commands). The work is in
//! [`crate::ops`]; this layer logs it and answers the wire DTO.

use stoat_wire::dto::{CloneData, ForwardData, RmData, UpdateData, VmData};

use super::Session;
use crate::ops::{self, create::CreateSpec, forward::PortPair, update::UpdateSpec};
use crate::{Error, Result};

/// `create`.
pub fn create(s: &Session, spec: &CreateSpec) -> Result<VmData> {
    let root = s.root()?;
    let stored = ops::create::create(root, &s.env, spec)?;
    crate::log::append(root, "info", &format!("created vm={}", stored.name));
    Ok(VmData {
        vm: stored.to_wire(&s.env),
    })
}

/// `update <vm>`: refuses an empty change as a usage error.
pub fn update(s: &Session, name: &str, spec: &UpdateSpec) -> Result<UpdateData> {
    if spec.is_empty() {
        return Err(Error::Usage(format!(
            "update: nothing to change; pass at least one of {}",
            ops::update::UPDATE_FLAGS
        )));
    }
    let updated = ops::update::update(s.root()?, &s.env, name, spec)?;
    Ok(UpdateData {
        vm: updated.vm.to_wire(&s.env),
        changed: updated.changed,
        applies_at: updated.applies_at,
    })
}

/// Fails when `rm <vm>` could not delete it (not found, running), before anyone is asked.
pub fn check_removable(s: &Session, name: &str) -> Result<()> {
    ops::remove::check_removable(s.root()?, name).map(drop)
}

/// `rm <vm>`, confirmed by the caller.
pub fn rm(s: &Session, name: &str) -> Result<RmData> {
    let root = s.root()?;
    ops::remove::check_removable(root, name)?;
    ops::remove::remove(root, name)?;
    crate::log::append(root, "info", &format!("deleted vm={name}"));
    Ok(RmData {
        name: name.to_owned(),
        deleted: true,
    })
}

/// `clone <source> <name>`.
pub fn clone(s: &Session, source: &str, name: &str) -> Result<CloneData> {
    let root = s.root()?;
    let stored = ops::clone::clone(root, &s.env, source, name, &s.cancel)?;
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

/// What `forward` does.
pub enum ForwardChange {
    Show,
    Set(Vec<PortPair>),
    Clear,
}

impl ForwardChange {
    /// The change `forward <vm> [PAIR...] [--clear]` asks for.
    pub fn parse(pairs: &[String], clear: bool) -> Result<ForwardChange> {
        if clear && !pairs.is_empty() {
            return Err(Error::Usage(
                "forward: --clear takes no HOST:GUEST pairs".into(),
            ));
        }
        let pairs: Vec<PortPair> = pairs
            .iter()
            .map(|pair| ops::forward::parse_pair(pair))
            .collect::<Result<_>>()?;
        Ok(match (clear, pairs.is_empty()) {
            (true, _) => ForwardChange::Clear,
            (false, true) => ForwardChange::Show,
            (false, false) => ForwardChange::Set(pairs),
        })
    }
}

/// `forward <vm>`: show, set or clear its port forwards.
pub fn forward(s: &Session, name: &str, change: &ForwardChange) -> Result<ForwardData> {
    let root = s.root()?;
    match change {
        ForwardChange::Show => ops::forward::show(root, name),
        ForwardChange::Set(pairs) => ops::forward::set(root, name, pairs),
        ForwardChange::Clear => ops::forward::set(root, name, &[]),
    }
}
