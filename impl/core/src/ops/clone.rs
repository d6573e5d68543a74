//! `clone`: a new stopped VM from a stopped one, its disk a qcow2 overlay backed by the
//! source's disk; configuration copied, forwards and applied-recipe state not.
//!
//! Implements docs/contract.md behaviour#host-commands without docs/contract.md behaviour#not-copied (allow_exec and display are
//! copied, and agent_access too). json-v3#per-command-data: `clone` → `{vm, source, forwards_copied}`.

use crate::vm::{self, StoredVm, VmConfig};
use crate::{lock, ports, Env, Error, Result, Root};

/// Clones `source` as `new_name`; returns the new VM.
pub fn clone(root: &Root, env: &Env, source: &str, new_name: &str) -> Result<StoredVm> {
    let new_name = new_name.trim();
    let _root_lock = lock::exclusive(&root.lock_file())?;
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
    let src_disk = super::disk_path(&src.dir);
    let needs_overlay = match src.config.mode.as_str() {
        "disk" => true,
        // A cloud VM gets its disk at first start; until then there is nothing to share.
        "cloud" => src_disk.exists(),
        _ => false,
    };
    if src.config.mode == "disk" && !src_disk.exists() {
        return Err(Error::Internal(format!(
            "{}'s disk.qcow2 is missing, so there is nothing to clone",
            src.name
        )));
    }
    let mut config = copied_config(&src.config, new_name);
    config.sshport = ports::free_ssh_port(root)?;
    let stored = vm::save_new(root, new_name, config)?;
    if let Err(e) = finish(root, env, &stored, needs_overlay.then_some(&src_disk)) {
        super::discard_new_vm(root, &stored.name);
        return Err(e);
    }
    Ok(stored)
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
        agent_access: src.agent_access.clone(),
        ..VmConfig::default()
    }
}

/// Makes `shared/<name>` and, when the source has a disk, the overlay backed by it. A cloud
/// clone's NoCloud seed (instance-id `stoat-<name>`) is built at its first `up`.
fn finish(
    root: &Root,
    env: &Env,
    stored: &StoredVm,
    backing: Option<&std::path::PathBuf>,
) -> Result<()> {
    super::make_shared_dir(root, &stored.name)?;
    let Some(backing) = backing else {
        return Ok(());
    };
    let disk = super::disk_path(&stored.dir);
    super::qemu_img(
        env,
        &[
            "create".as_ref(),
            "-q".as_ref(),
            "-f".as_ref(),
            "qcow2".as_ref(),
            "-b".as_ref(),
            backing.as_os_str(),
            "-F".as_ref(),
            "qcow2".as_ref(),
            disk.as_os_str(),
        ],
    )
}
