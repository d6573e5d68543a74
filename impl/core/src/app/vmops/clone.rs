//! `clone`: a new stopped VM from a stopped one, with its own full copy of the source's disk
//! (a reflink where the filesystem offers one); configuration copied, forwards and
//! applied-recipe state not. The clone and its source share nothing writable: either can be
//! booted, changed or removed without touching the other.
//!
//! Implements docs/contract.md behaviour#host-commands without docs/contract.md behaviour#not-copied (allow_exec and display are
//! copied, and agent_access too). json-v3#per-command-data: `clone` → `{vm, source, forwards_copied}`.

use crate::vm::Mode;
use crate::vm::{self, StoredVm, VmConfig};
use crate::{lock, ports, Cancel, Env, Error, Result, Root};

/// Clones `source` as `new_name`; returns the new VM.
pub fn clone(
    root: &Root,
    _env: &Env,
    source: &str,
    new_name: &str,
    cancel: &Cancel,
) -> Result<StoredVm> {
    let new_name = new_name.trim();
    // The source's own lock is held while the disk is copied, so it cannot start and write
    // to it meanwhile.
    let (_root_lock, _source_lock) = lock::root_and_vm(root, source)?;
    let src = vm::load_ok(root, source)?;
    if src.running_pid().is_some() {
        return Err(Error::AlreadyRunning {
            name: src.name.clone(),
        });
    }
    vm::check_name(new_name)?;
    if Root::is_reserved(new_name) || std::fs::symlink_metadata(root.vm_dir(new_name)).is_ok() {
        return Err(Error::NameTaken {
            name: new_name.to_owned(),
        });
    }
    let src_disk = src.files().disk();
    let has_disk = match src.config.mode.as_str() {
        "disk" => true,
        // A cloud VM gets its disk at first start; until then there is nothing to copy.
        "cloud" => src_disk.exists(),
        _ => false,
    };
    if src.config.mode == Mode::Disk && !src_disk.exists() {
        return Err(Error::Internal(format!(
            "{}'s disk.qcow2 is missing, so there is nothing to clone",
            src.name
        )));
    }
    let mut config = copied_config(&src.config, new_name);
    config.sshport = ports::free_ssh_port(root, &[])?;
    vm::shared::make(root, new_name)?;
    let made = vm::save_new(root, new_name, config, |dir| {
        if has_disk {
            vm::copy::copy_disk(&src_disk, &vm::VmDir::at(dir).disk(), cancel)?;
        }
        Ok(())
    });
    if made.is_err() {
        vm::shared::discard(root, new_name);
    }
    made
}

/// The configuration a clone inherits. Not copied: the ssh port (chosen fresh), forwards
/// (they would clash with the source's), applied-recipe state, and project membership.
fn copied_config(src: &VmConfig, new_name: &str) -> VmConfig {
    VmConfig {
        name: new_name.to_owned(),
        mode: src.mode.clone(),
        os: src.os.clone(),
        iso: src.iso.clone(),
        ram: src.ram,
        cpus: src.cpus,
        disk: src.disk.clone(),
        installed: src.installed,
        share: src.share.clone(),
        recipes: src.recipes.clone(),
        recipe_params: src.recipe_params.clone(),
        display: src.display.clone(),
        backend: src.backend.clone(),
        base: src.base.clone(),
        sshuser: src.sshuser.clone(),
        console_password: src.console_password.clone(),
        allow_exec: src.allow_exec,
        agent_access: src.agent_access,
        ..VmConfig::default()
    }
}
