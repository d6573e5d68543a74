//! `rm`: delete a VM (broken ones too) and its `shared/<name>` export, never while it runs,
//! never a directory outside the data root.
//!
//! Implements docs/contract.md behaviour#data-root and behaviour#host-commands. Confirmation (`-y`, the prompt,
//! `confirmation_required`) is the caller's: core never reads a terminal.

use std::path::Path;

use crate::vm::{self, Loaded};
use crate::{lock, Error, Result, Root};

/// Checks that VM `name` exists and is stopped: what rm checks before asking anything.
pub fn check_removable(root: &Root, name: &str) -> Result<Loaded> {
    let loaded = vm::load(root, name)?;
    refuse_running(&loaded)?;
    Ok(loaded)
}

fn refuse_running(loaded: &Loaded) -> Result<()> {
    if crate::vm::running_pid(loaded.dir()).is_some() {
        return Err(Error::AlreadyRunning {
            name: loaded.name().to_owned(),
        });
    }
    Ok(())
}

/// Deletes VM `name` under the data-root lock, re-checking that it still exists and is stopped.
/// The VM leaves its name by one rename (see [`vm::staging`]), so a kill leaves it either
/// listed as before or gone; its `shared/<name>` export goes after that.
pub fn remove(root: &Root, name: &str) -> Result<()> {
    // The VM's own lock too: an `up` still starting it finishes first (and rm then refuses
    // the running VM), never a QEMU left running from a deleted directory.
    let (_root_lock, _vm_lock) = lock::root_and_vm(root, name)?;
    vm::staging::sweep(root);
    let loaded = check_removable(root, name)?;
    if loaded.dir().parent() != Some(root.dir()) {
        return Err(Error::Internal(format!(
            "refusing to delete {}: not directly under the data root",
            loaded.dir().display()
        )));
    }
    // From here the VM goes: a cancel waits for the delete to end (see child::Finishing).
    let _finishing = crate::child::finishing();
    // A VM directory that is a symlink is removed itself; its target is not ours.
    if std::fs::symlink_metadata(loaded.dir()).is_ok_and(|m| !m.is_dir()) {
        remove_dir_under(root.dir(), loaded.dir())?;
    } else {
        vm::staging::remove_vm_dir(root, name, loaded.dir())?;
    }
    remove_dir_under(&root.dir().join("shared"), &root.shared(name))
}

/// Removes `dir` and everything in it, refusing any `dir` whose parent is not `parent`.
fn remove_dir_under(parent: &Path, dir: &Path) -> Result<()> {
    if dir.parent() != Some(parent) || dir.file_name().is_none() {
        return Err(Error::Internal(format!(
            "refusing to delete {}: not directly under {}",
            dir.display(),
            parent.display()
        )));
    }
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("inspect {}", dir.display()), e)),
        // A symlink is removed itself; its target is not ours.
        Ok(meta) if !meta.is_dir() => {
            std::fs::remove_file(dir).map_err(|e| Error::io(format!("delete {}", dir.display()), e))
        }
        Ok(_) => std::fs::remove_dir_all(dir)
            .map_err(|e| Error::io(format!("delete {}", dir.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_outside_the_parent() {
        let temp = tempfile::tempdir().unwrap();
        let inner = temp.path().join("a").join("b");
        std::fs::create_dir_all(&inner).unwrap();
        assert!(remove_dir_under(temp.path(), &inner).is_err());
        assert!(inner.exists());
        assert!(remove_dir_under(temp.path(), &temp.path().join("a")).is_ok());
        assert!(!inner.exists());
        assert!(remove_dir_under(temp.path(), &temp.path().join("gone")).is_ok());
    }
}
