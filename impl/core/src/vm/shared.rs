//! A VM's writable `shared/<name>` export under the data root: made empty and private by
//! create and clone, discarded when one of them fails (rm removes it with the VM).

use crate::{Error, Result, Root};

/// Makes a new VM's writable `shared/<name>` export, empty and readable by its owner only
/// (0700). Called under the data-root lock before the VM exists, so anything already there
/// was left by an interrupted rm or create of a VM by that name and is not this VM's.
pub fn make(root: &Root, name: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let shared = root.shared(name);
    discard(root, name);
    std::fs::create_dir_all(&shared).map_err(|e| Error::io(format!("create shared/{name}"), e))?;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("chmod shared/{name}"), e))
}

/// Removes `shared/<name>` (a symlink itself, never its target).
pub fn discard(root: &Root, name: &str) {
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
