//! `prune`: delete leftovers (docs/contract.md behaviour#host-commands). Under the data-root lock, dry runs
//! included, so the list cannot race a concurrent create.
//!
//! Partial downloads no running pull holds (see images::part) always; broken VMs that are not running with
//! `--broken`; with `--images`, images in `isos/` no VM is built on and kept copies in the
//! image store (images::store) no VM names any more. Never keys, `recipes/`, hidden files
//! (`.manifest`, locks) or a running VM.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use stoat_wire::dto::{PruneData, PruneItem};

use crate::images::store::{self, FileId};
use crate::vm::{self, Loaded};
use crate::{lock, Error, Result, Root};

/// What to look for.
#[derive(Debug, Clone, Copy, Default)]
pub struct PruneOptions {
    pub apply: bool,
    pub broken: bool,
    pub images: bool,
}

/// The kinds of leftovers, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    BrokenVm,
    OrphanedImage,
    OrphanedShare,
    PartialDownload,
    StagingLeftover,
    UnusedImageCopy,
}

impl Class {
    fn wire(self) -> &'static str {
        match self {
            Class::BrokenVm => "broken_vm",
            Class::OrphanedImage => "orphaned_image",
            Class::OrphanedShare => "orphaned_share",
            Class::PartialDownload => "partial_download",
            Class::StagingLeftover => "staging_leftover",
            Class::UnusedImageCopy => "unused_image_copy",
        }
    }
}

/// Finds leftovers and, with `apply`, deletes them; the same list is reported either way.
pub fn prune(root: &Root, options: PruneOptions) -> Result<PruneData> {
    if !root.dir().is_dir() {
        // A root that does not exist (nor could be made) holds no leftovers, and has no
        // place for the lock either.
        return Ok(PruneData {
            dry_run: !options.apply,
            items: Vec::new(),
        });
    }
    let _guard = lock::exclusive(&root.lock_file())?;
    let vms = vm::list(root)?;
    let mut found: Vec<(Class, PathBuf)> = partial_downloads(root, SystemTime::now())?
        .into_iter()
        .map(|path| (Class::PartialDownload, path))
        .collect();
    // What killed commands left: a half-built or half-removed VM in `.staging/` whose writer
    // is gone, and a `shared/<name>` with no VM of that name (docs/decisions/vmops.md).
    found.extend(
        vm::staging::leftovers(root)
            .into_iter()
            .map(|p| (Class::StagingLeftover, p)),
    );
    found.extend(
        orphaned_shares(root)
            .into_iter()
            .map(|p| (Class::OrphanedShare, p)),
    );
    if options.broken {
        found.extend(broken_vms(&vms).into_iter().map(|p| (Class::BrokenVm, p)));
    }
    if options.images {
        found.extend(
            orphaned_images(root, &vms)?
                .into_iter()
                .map(|p| (Class::OrphanedImage, p)),
        );
        found.extend(
            unused_copies(root, &vms)
                .into_iter()
                .map(|p| (Class::UnusedImageCopy, p)),
        );
    }
    found.sort();
    if options.apply {
        for (class, path) in &found {
            delete(*class, path)?;
        }
    }
    Ok(PruneData {
        dry_run: !options.apply,
        items: found
            .into_iter()
            .map(|(class, path)| PruneItem {
                class: class.wire().to_owned(),
                path: path.display().to_string(),
            })
            .collect(),
    })
}

fn delete(class: Class, path: &Path) -> Result<()> {
    let removed = match class {
        Class::BrokenVm | Class::UnusedImageCopy => std::fs::remove_dir_all(path),
        Class::OrphanedImage | Class::PartialDownload => std::fs::remove_file(path),
        // A directory, or a symlink (unlinked, never followed).
        Class::OrphanedShare | Class::StagingLeftover => match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
            Err(e) => Err(e),
        },
    };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("delete {}", path.display()), e)),
    }
}

/// Regular, non-hidden files directly in `isos/`.
fn image_files(root: &Root) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(root.isos()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list isos/", e)),
    };
    Ok(entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().map(|t| t.is_file()).unwrap_or(false))
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .collect())
}

fn is_partial(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "part")
}

/// `isos/*.part` that no running pull holds at `now`.
fn partial_downloads(root: &Root, now: SystemTime) -> Result<Vec<PathBuf>> {
    Ok(crate::images::part::stale(&root.isos(), now))
}

/// `shared/<name>` entries (not hidden) for which no `<root>/<name>` exists: what a killed
/// `rm` or `create` left. The caller holds the data-root lock, which create, clone and rm
/// hold while they make or remove a share.
fn orphaned_shares(root: &Root) -> Vec<PathBuf> {
    let Some(shared) = root.shared("x").parent().map(Path::to_path_buf) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&shared) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            !name.starts_with('.') && std::fs::symlink_metadata(root.vm_dir(&name)).is_err()
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Broken VM directories whose QEMU is not running.
fn broken_vms(vms: &[Loaded]) -> Vec<PathBuf> {
    vms.iter()
        .filter_map(|loaded| match loaded {
            Loaded::Broken { dir, .. } if vm::running_pid(dir).is_none() => Some(dir.clone()),
            _ => None,
        })
        .collect()
}

/// The files VMs are built on, by identity (two names of one file are one file).
fn used_files(root: &Root, vms: &[Loaded]) -> BTreeSet<FileId> {
    vms.iter()
        .flat_map(|loaded| store::references(root, loaded))
        .filter_map(|path| FileId::of(&path))
        .collect()
}

/// Images in `isos/` that no VM is built on.
fn orphaned_images(root: &Root, vms: &[Loaded]) -> Result<Vec<PathBuf>> {
    let used = used_files(root, vms);
    Ok(image_files(root)?
        .into_iter()
        .filter(|path| !is_partial(path) && FileId::of(path).is_none_or(|id| !used.contains(&id)))
        .collect())
}

/// Store entries whose copy no VM names.
fn unused_copies(root: &Root, vms: &[Loaded]) -> Vec<PathBuf> {
    let used = used_files(root, vms);
    store::copies(root)
        .into_iter()
        .filter(|copy| !used.contains(&copy.id))
        .map(|copy| copy.entry)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn classes_sort_broken_orphaned_partial() {
        let mut classes = vec![
            Class::PartialDownload,
            Class::BrokenVm,
            Class::OrphanedImage,
        ];
        classes.sort();
        assert_eq!(
            classes,
            [
                Class::BrokenVm,
                Class::OrphanedImage,
                Class::PartialDownload
            ]
        );
    }

    #[test]
    fn fresh_partials_are_kept() {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        root.ensure().unwrap();
        std::fs::write(root.isos().join("a.iso.part"), b"x").unwrap();
        let now = SystemTime::now();
        assert!(partial_downloads(&root, now).unwrap().is_empty());
        let later = now + Duration::from_secs(121);
        assert_eq!(partial_downloads(&root, later).unwrap().len(), 1);
    }
}
