//! The commands that change VMs: create, update, rm, clone and forward (docs/contract.md:
//! behaviour#data-root, behaviour#images, behaviour#host-commands, json-v3#per-command-data).
//!
//! Every operation that chooses a port or writes a vm.toml holds the data-root lock from its
//! checks to its save, so concurrent invocations see each other's results.

pub mod clone;
pub mod create;
pub mod forward;
pub mod recipe_check;
pub mod remove;
pub mod update;

use crate::{Error, Result};

/// Makes a new VM's writable `shared/<name>` export, empty and readable by its owner only
/// (0700). Called under the data-root lock before the VM exists, so anything already there
/// was left by an interrupted rm or create of a VM by that name and is not this VM's.
pub fn make_shared_dir(root: &crate::Root, name: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let shared = root.shared(name);
    discard_shared_dir(root, name);
    std::fs::create_dir_all(&shared).map_err(|e| Error::io(format!("create shared/{name}"), e))?;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("chmod shared/{name}"), e))
}

/// Removes `shared/<name>` (a symlink itself, never its target).
pub fn discard_shared_dir(root: &crate::Root, name: &str) {
    let shared = root.shared(name);
    match std::fs::symlink_metadata(&shared) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(&shared);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&shared);
        }
        Err(_) => {}
    }
}
