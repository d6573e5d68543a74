//! `prune`: delete leftovers (docs/contract.md behaviour#host-commands). Under the data-root lock, dry runs
//! included, so the list cannot race a concurrent create.
//!
//! Partial downloads no running pull holds (see images::part) always; broken VMs that are not running with
//! `--broken`; images no VM references with `--images`. Never keys, `recipes/`, hidden files
//! (`.manifest`, locks) or a running VM.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use stoat_wire::dto::{PruneData, PruneItem};

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
    PartialDownload,
}

impl Class {
    fn wire(self) -> &'static str {
        match self {
            Class::BrokenVm => "broken_vm",
            Class::OrphanedImage => "orphaned_image",
            Class::PartialDownload => "partial_download",
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
    if options.broken {
        found.extend(broken_vms(&vms).into_iter().map(|p| (Class::BrokenVm, p)));
    }
    if options.images {
        found.extend(
            orphaned_images(root, &vms)?
                .into_iter()
                .map(|p| (Class::OrphanedImage, p)),
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
        Class::BrokenVm => std::fs::remove_dir_all(path),
        Class::OrphanedImage | Class::PartialDownload => std::fs::remove_file(path),
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

/// Broken VM directories whose QEMU is not running.
fn broken_vms(vms: &[Loaded]) -> Vec<PathBuf> {
    vms.iter()
        .filter_map(|loaded| match loaded {
            Loaded::Broken { dir, .. } if vm::running_pid(dir).is_none() => Some(dir.clone()),
            _ => None,
        })
        .collect()
}

/// Images in `isos/` that no VM names as its `iso` or `base`.
fn orphaned_images(root: &Root, vms: &[Loaded]) -> Result<Vec<PathBuf>> {
    let referenced: BTreeSet<PathBuf> = vms
        .iter()
        .flat_map(|loaded| references(root, loaded))
        .collect();
    Ok(image_files(root)?
        .into_iter()
        .filter(|path| !is_partial(path) && !referenced.contains(path))
        .collect())
}

/// The image paths one VM uses; a broken VM's are read from its `iso = ` / `base = ` lines.
fn references(root: &Root, loaded: &Loaded) -> Vec<PathBuf> {
    let names = match loaded {
        Loaded::Ok(vm) => vec![vm.config.iso.clone(), vm.config.base.clone()],
        Loaded::Broken { dir, .. } => {
            let text = crate::bounded::read_to_string(dir.join("vm.toml")).unwrap_or_default();
            references_in_text(&text)
        }
    };
    names
        .into_iter()
        .filter(|name| !name.is_empty())
        .map(|name| resolve_image(root, &name))
        .collect()
}

/// An absolute reference stays; a bare file name lives in `isos/`.
fn resolve_image(root: &Root, name: &str) -> PathBuf {
    let path = Path::new(name);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.isos().join(path)
    }
}

/// Pulls `iso = "..."` and `base = "..."` values out of text that may not parse as TOML.
fn references_in_text(text: &str) -> Vec<String> {
    let pattern = regex::Regex::new(r#"(?m)^\s*(?:iso|base)\s*=\s*"([^"]*)""#)
        .unwrap_or_else(|e| panic!("static regex: {e}"));
    pattern
        .captures_iter(text)
        .map(|caps| caps[1].to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn references_survive_a_broken_file() {
        let text =
            "name = \"x\"\niso = \"alpine.iso\"\n base = \"/r/isos/deb.qcow2\"\nmode = \"disk\n";
        assert_eq!(
            references_in_text(text),
            ["alpine.iso", "/r/isos/deb.qcow2"]
        );
    }

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
