//! What is on disk under `isos/`: which file stands for a catalog image (upstream
//! `MatchLocal`, docs/contract.md behaviour#images), the bring-your-own files, and the `images` rows built from both.
//!
//! Files ending `.part` (a download in progress) or `.partial` (an interrupted download kept
//! for resume, docs/decisions/images.md) are never images.

use std::collections::BTreeSet;
use std::path::Path;

use stoat_wire::dto::Image;

use super::catalog::{Catalog, CatalogEntry};
use super::infer::infer;
use crate::error::IoContext;
use crate::{Result, Root};

/// The suffix of a download in progress.
pub const PART_SUFFIX: &str = ".part";
/// The suffix of an interrupted download kept so the next `pull` can resume it.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// One candidate image file under `isos/`.
#[derive(Debug, Clone)]
pub struct LocalFile {
    pub name: String,
    pub bytes: u64,
}

/// Returns the regular files of `isos/` that can be images, sorted by name.
pub fn image_files(isos: &Path) -> Result<Vec<LocalFile>> {
    let reader = match std::fs::read_dir(isos) {
        Ok(reader) => reader,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::Error::io(format!("read {}", isos.display()), e)),
    };
    let mut files = Vec::new();
    for item in reader {
        let item = item.context(|| format!("read {}", isos.display()))?;
        let Ok(name) = item.file_name().into_string() else {
            continue;
        };
        if name.ends_with(PART_SUFFIX) || name.ends_with(PARTIAL_SUFFIX) {
            continue;
        }
        // Follows symlinks: a link to an image is an image.
        match std::fs::metadata(item.path()) {
            Ok(meta) if meta.is_file() => files.push(LocalFile {
                name,
                bytes: meta.len(),
            }),
            _ => {}
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Returns the file that stands for `entry`, if any (upstream `MatchLocal`). An entry that
/// names its file is that file alone: a stray `debian-12-….qcow2` must not stand in for
/// `debian-13` because both read as Debian cloud images. Only an entry without a file name
/// (a flavor, whose file name changes with each release) is matched by what a name implies.
pub fn match_local<'a>(entry: &CatalogEntry, files: &'a [LocalFile]) -> Option<&'a LocalFile> {
    if entry.flavor.is_none() && !entry.file.is_empty() {
        return files.iter().find(|f| f.name == entry.file);
    }
    files.iter().find(|file| {
        let (os, backend) = infer(&file.name);
        os == entry.os
            && backend == entry.backend
            && entry
                .flavor
                .as_deref()
                .is_none_or(|flavor| file.name.contains(flavor))
    })
}

/// Returns the bare file name of catalog image `id` when it is downloaded; `None` when it is
/// not, or when `id` is not in the catalog.
pub fn find_downloaded(root: &Root, catalog: &Catalog, id: &str) -> Result<Option<String>> {
    let Some(entry) = catalog.get(id) else {
        return Ok(None);
    };
    let files = image_files(&root.isos())?;
    Ok(match_local(entry, &files).map(|f| f.name.clone()))
}

/// Returns the `images` rows: catalog entries in catalog order, then bring-your-own files by
/// name.
pub fn list(root: &Root, catalog: &Catalog) -> Result<Vec<Image>> {
    let files = image_files(&root.isos())?;
    let mut claimed = BTreeSet::new();
    let mut rows = Vec::new();
    for entry in catalog.entries() {
        let local = match_local(entry, &files);
        if let Some(file) = local {
            claimed.insert(file.name.clone());
        }
        rows.push(catalog_row(entry, local));
    }
    rows.extend(
        files
            .iter()
            .filter(|f| !claimed.contains(&f.name))
            .map(byo_row),
    );
    Ok(rows)
}

fn catalog_row(entry: &CatalogEntry, local: Option<&LocalFile>) -> Image {
    Image {
        id: entry.id.clone(),
        os: entry.os.clone(),
        variant: entry.variant.clone(),
        backend: entry.backend.as_str().to_owned(),
        file: local.map(|f| f.name.clone()).unwrap_or_default(),
        downloaded: local.is_some(),
        bytes: local.map(|f| f.bytes).unwrap_or(entry.bytes),
        bytes_exact: local.is_some(),
        byo: false,
    }
}

fn byo_row(file: &LocalFile) -> Image {
    let (os, backend) = infer(&file.name);
    Image {
        id: String::new(),
        os,
        variant: String::new(),
        backend: backend.as_str().to_owned(),
        file: file.name.clone(),
        downloaded: true,
        bytes: file.bytes,
        bytes_exact: true,
        byo: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::catalog::builtin;

    fn files(names: &[&str]) -> Vec<LocalFile> {
        names
            .iter()
            .map(|n| LocalFile {
                name: n.to_string(),
                bytes: 1,
            })
            .collect()
    }

    #[test]
    fn an_entry_naming_its_file_is_that_file_alone() {
        let catalog = builtin();
        let ubuntu = catalog.get("ubuntu-24.04").unwrap();
        let local = files(&["foo-ubuntu.qcow2", "ubuntu-24.04-server-cloudimg-amd64.img"]);
        assert_eq!(
            match_local(ubuntu, &local).unwrap().name,
            "ubuntu-24.04-server-cloudimg-amd64.img"
        );
        // Another file that reads as an Ubuntu cloud image does not stand in for it.
        let local = files(&["foo-ubuntu.qcow2"]);
        assert!(match_local(ubuntu, &local).is_none());
    }

    #[test]
    fn flavour_must_be_in_the_name() {
        let catalog = builtin();
        let virt = catalog.get("alpine-virt").unwrap();
        let standard = catalog.get("alpine-standard").unwrap();
        let local = files(&["alpine-virt-3.24.1-x86_64.iso"]);
        assert!(match_local(virt, &local).is_some());
        assert!(match_local(standard, &local).is_none());
    }
}
