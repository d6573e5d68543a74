//! What `create --image` names: an absolute BYO path, a catalog id, or a bare filename in
//! `isos/`, resolved to the file a VM boots from and its OS, backend and ssh user.
//!
//! Implements docs/contract.md behaviour#images. The catalog (built in, or
//! `STOAT_CATALOG`), local matching and `infer` are the images module's.

use std::path::{Path, PathBuf};

use super::infer::infer;
use crate::images;
use crate::vm::Backend;
use crate::{Env, Error, Result, Root};

/// An image resolved for a new VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedImage {
    /// The image file's absolute path.
    pub path: PathBuf,
    /// How vm.toml records it: `isos/<file>` for a file in isos/, else the absolute path.
    pub iso: String,
    pub os: String,
    pub backend: Backend,
    /// The catalog's ssh user; `None` for a BYO image.
    pub ssh_user: Option<String>,
    /// The catalog id; `None` for a BYO image (absolute path or bare file in isos/).
    pub catalog_id: Option<String>,
}

impl ResolvedImage {
    /// Returns whether the user brought this image (no catalog entry).
    pub fn is_byo(&self) -> bool {
        self.catalog_id.is_none()
    }
}

/// Resolves `--image`: an absolute path, then a catalog id, then a bare filename in isos/.
pub fn resolve(root: &Root, env: &Env, image: &str) -> Result<ResolvedImage> {
    let image = image.trim();
    if image.is_empty() {
        return Err(no_such_local_image(image));
    }
    let as_path = env.expand_tilde(image)?;
    if as_path.is_absolute() {
        return resolve_absolute(&as_path);
    }
    if let Some(resolved) = resolve_catalog_id(root, env, image)? {
        return Ok(resolved);
    }
    resolve_isos_file(root, image)
}

/// The error for an image that is neither in the catalog nor on disk. Upstream's code is
/// `not_found`; v3's `no_such_image` is kept for `pull`, whose subject is the catalog alone.
fn no_such_local_image(image: &str) -> Error {
    Error::ImageNotFound {
        id: image.to_owned(),
    }
}

fn resolve_absolute(path: &Path) -> Result<ResolvedImage> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound {
            name: format!("image {}", path.display()),
        },
        _ => Error::io(format!("stat image {}", path.display()), e),
    })?;
    if !meta.is_file() {
        return Err(Error::InvalidSpec(format!(
            "image {} is not a regular file",
            path.display()
        )));
    }
    let iso = path
        .to_str()
        .ok_or_else(|| Error::InvalidSpec(format!("image path {} is not UTF-8", path.display())))?
        .to_owned();
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (os, backend) = infer(file_name);
    Ok(ResolvedImage {
        path: path.to_path_buf(),
        iso,
        os,
        backend,
        ssh_user: None,
        catalog_id: None,
    })
}

fn resolve_isos_file(root: &Root, file: &str) -> Result<ResolvedImage> {
    let is_bare = !file.contains('/') && file != "." && file != "..";
    let path = root.isos().join(file);
    let partial =
        file.ends_with(images::local::PART_SUFFIX) || file.ends_with(images::local::PARTIAL_SUFFIX);
    if !is_bare || partial || !path.is_file() {
        return Err(no_such_local_image(file));
    }
    let (os, backend) = infer(file);
    Ok(ResolvedImage {
        path,
        iso: format!("isos/{file}"),
        os,
        backend,
        ssh_user: None,
        catalog_id: None,
    })
}

/// Resolves a catalog id to its downloaded file: `Ok(None)` when `id` is not a catalog id,
/// `image_not_downloaded` when it is but no matching file is in isos/.
pub fn resolve_catalog_id(root: &Root, env: &Env, id: &str) -> Result<Option<ResolvedImage>> {
    let catalog = images::catalog::load(env)?;
    let Some(entry) = catalog.get(id) else {
        return Ok(None);
    };
    let file = images::local::find_downloaded(root, &catalog, id)?
        .ok_or_else(|| Error::ImageNotDownloaded { id: id.to_owned() })?;
    Ok(Some(ResolvedImage {
        path: root.isos().join(&file),
        iso: format!("isos/{file}"),
        os: entry.os.clone(),
        backend: entry.backend.clone(),
        ssh_user: Some(entry.ssh_user.clone()),
        catalog_id: Some(entry.id.clone()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_ids_resolve_only_when_downloaded() {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        root.ensure().unwrap();
        let env = Env::default();
        assert!(resolve_catalog_id(&root, &env, "nope").unwrap().is_none());
        let err = resolve_catalog_id(&root, &env, "alpine-virt").unwrap_err();
        assert!(matches!(err, Error::ImageNotDownloaded { .. }));
        std::fs::write(root.isos().join("alpine-virt-3.24.1-x86_64.iso"), b"x").unwrap();
        std::fs::write(root.isos().join("alpine-standard-3.24.1-x86_64.iso"), b"x").unwrap();
        let virt = resolve_catalog_id(&root, &env, "alpine-virt")
            .unwrap()
            .unwrap();
        assert_eq!(virt.iso, "isos/alpine-virt-3.24.1-x86_64.iso");
        assert_eq!(virt.ssh_user.as_deref(), Some("root"));
        let by_file = resolve(&root, &env, "alpine-virt-3.24.1-x86_64.iso").unwrap();
        assert!(by_file.is_byo());
        assert!(matches!(
            resolve(&root, &env, "../etc"),
            Err(Error::ImageNotFound { .. })
        ));
        assert!(matches!(
            resolve(&root, &env, ""),
            Err(Error::ImageNotFound { .. })
        ));
    }
}
