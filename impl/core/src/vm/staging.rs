//! Making and deleting whole VM directories so that a kill at any moment leaves the VM either
//! absent or complete: a new VM is built under `<root>/.staging/` and appears under its name
//! by one rename; a removed VM leaves its name by one rename into `.staging/` and is deleted
//! from there.
//!
//! Every entry in `.staging/` and every temporary file next to a vm.toml carries the pid of
//! the process that made it, so any later command can tell a leftover of a killed process
//! (its pid is gone) from work in flight, and remove it.

use rustix::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result, Root};

/// The directory, under the data root, where VM directories are built and deleted.
pub const STAGING: &str = ".staging";

/// A VM directory being built; removed on drop unless committed.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    name: String,
    committed: bool,
}

impl Staging {
    /// Makes an empty, owner-only directory for VM `name` under `.staging/`.
    pub fn begin(root: &Root, name: &str) -> Result<Staging> {
        let parent = staging_dir(root)?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}.{}.", std::process::id()))
            .tempdir_in(&parent)
            .map_err(|e| Error::io("make a staging directory", e))?
            .keep();
        set_mode(&dir, 0o700)?;
        Ok(Staging {
            dir,
            name: name.to_owned(),
            committed: false,
        })
    }

    /// Where the VM's files go until [`Staging::commit`].
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Renames the complete directory to `<root>/<name>`; `name_taken` if anything is there.
    pub fn commit(mut self, root: &Root) -> Result<PathBuf> {
        let target = root.vm_dir(&self.name);
        crate::fault::point("commit");
        rename_noreplace(&self.dir, &target).map_err(|e| match e.raw_os_error() {
            Some(libc::EEXIST) | Some(libc::ENOTEMPTY) => Error::NameTaken {
                name: self.name.clone(),
            },
            _ => Error::io(format!("move {} into place", self.name), e),
        })?;
        self.committed = true;
        sync_dir(root.dir());
        Ok(target)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Takes VM directory `dir` out of the data root by one rename, then deletes it. Once the
/// rename is done the VM is gone; a kill during the delete leaves only a leftover that
/// [`sweep`] removes.
pub fn remove_vm_dir(root: &Root, name: &str, dir: &Path) -> Result<()> {
    let parent = staging_dir(root)?;
    let aside = parent.join(format!("{name}.{}.rm", std::process::id()));
    let _ = std::fs::remove_dir_all(&aside);
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("inspect {name}"), e)),
        Ok(_) => {}
    }
    std::fs::rename(dir, &aside).map_err(|e| Error::io(format!("delete {name}"), e))?;
    sync_dir(root.dir());
    crate::fault::point("removed");
    remove_any(&aside);
    Ok(())
}

/// Removes what killed processes left: staging entries and `.vm.toml` temporary files in
/// every VM directory, when the pid that made them is gone. Safe to call at any time.
pub fn sweep(root: &Root) {
    for path in leftovers(root) {
        remove_any(&path);
    }
}

/// Removes dead writers' temporary files (of vm.toml, a resize note or the display notice)
/// in `vm_dir`.
pub fn sweep_vm_dir(vm_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(vm_dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let temp = name
            .strip_prefix(".vm.toml.")
            // write_atomically names a temporary `.<file>.<pid>.<random>`: the resize note's
            // own name starts with a dot, so its temporary starts with two.
            .or_else(|| name.strip_prefix("..disk-resize."))
            .or_else(|| name.strip_prefix(".display-notice."));
        if let Some(rest) = temp {
            if is_leftover(rest) || !rest.contains('.') {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Lists the leftovers [`sweep`] would remove (for `prune`).
pub fn leftovers(root: &Root) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.dir().join(STAGING))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| is_leftover(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// `[<name>.]<pid>.<suffix>` whose pid no longer runs.
fn is_leftover(name: &str) -> bool {
    let mut parts = name.rsplitn(3, '.');
    let _suffix = parts.next();
    match parts.next().and_then(|pid| pid.parse::<i32>().ok()) {
        Some(pid) => !pid_alive(pid),
        None => false,
    }
}

pub(crate) fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    // Signal 0 only checks that the process exists.
    matches!(
        rustix::process::test_kill_process(pid),
        Ok(()) | Err(rustix::io::Errno::PERM)
    )
}

fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// `<root>/.staging`, made owner-only when missing.
fn staging_dir(root: &Root) -> Result<PathBuf> {
    root.ensure_dir()?;
    let dir = root.dir().join(STAGING);
    match std::fs::create_dir(&dir) {
        Ok(()) => set_mode(&dir, 0o700)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io("make the staging directory", e)),
    }
    Ok(dir)
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io(format!("chmod {}", path.display()), e))
}

fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// rename(2) that fails with EEXIST instead of replacing an (empty) directory.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    // rustix makes the NUL-terminated copies of the paths itself.
    let err = match fs::renameat_with(fs::CWD, from, fs::CWD, to, fs::RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(err) => std::io::Error::from(err),
    };
    if err.raw_os_error() != Some(libc::EINVAL) && err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(err);
    }
    // A filesystem without RENAME_NOREPLACE: the caller holds the data-root lock and has
    // checked the name is free, so a plain rename is as good.
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
    }
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_told_apart_by_their_pid() {
        let me = std::process::id();
        assert!(!is_leftover(&format!("web.{me}.abc")));
        assert!(!is_leftover(&format!("a.b.{me}.rm")));
        assert!(is_leftover("web.999999999.abc"));
        assert!(!is_leftover("plain"));
        assert!(is_leftover("999999999.x"));
    }

    #[test]
    fn a_dead_writers_resize_note_temp_is_swept() {
        let dir = tempfile::tempdir().unwrap();
        // The name write_atomically gives the resize note's temporary file.
        let me = std::process::id();
        let mut temp = tempfile::Builder::new()
            .prefix(&format!("..disk-resize.{me}."))
            .tempfile_in(dir.path())
            .unwrap();
        std::io::Write::write_all(&mut temp, b"9G").unwrap();
        let named = temp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let dead = dir.path().join(named.replace(&me.to_string(), "999999999"));
        std::fs::write(&dead, "9G").unwrap();
        sweep_vm_dir(dir.path());
        assert!(!dead.exists(), "a dead writer's temporary is removed");
        assert!(temp.path().exists(), "a live writer's is kept");
    }

    #[test]
    fn a_dead_writers_display_notice_temp_is_swept_and_a_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".display-notice.999999999.abc");
        let live = dir
            .path()
            .join(format!(".display-notice.{}.abc", std::process::id()));
        let notice = dir.path().join("display-notice");
        for path in [&dead, &live, &notice] {
            std::fs::write(path, "x").unwrap();
        }
        sweep_vm_dir(dir.path());
        assert!(!dead.exists());
        assert!(live.exists() && notice.exists());
    }
}
