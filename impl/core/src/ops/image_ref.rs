//! What `create --image` names: an absolute BYO path, a catalog id, or a bare filename in
//! `isos/`, resolved to the file a VM boots from and its OS, backend and ssh user.
//!
//! Implements upstream facts §3 "Create image resolution" and `iso.Infer`. The catalog lookup
//! is a seam ([`resolve_catalog_id`]) until the images module owns the catalog.

use std::path::{Path, PathBuf};

use crate::{Env, Error, Result, Root};

/// The backends stoat knows how to boot.
pub const BACKENDS: &[&str] = &["apkovl", "cloudinit", "ssh"];

/// An image resolved for a new VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedImage {
    /// The image file's absolute path.
    pub path: PathBuf,
    /// How vm.toml records it: `isos/<file>` for a file in isos/, else the absolute path.
    pub iso: String,
    pub os: String,
    pub backend: String,
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

/// Guesses `(os, backend)` from an image's file name, like upstream's `iso.Infer`.
pub fn infer(file_name: &str) -> (String, String) {
    let lower = file_name.to_ascii_lowercase();
    // Upstream's hint order; note that `arch` also matches "search".
    let os = ["alpine", "ubuntu", "debian", "fedora", "arch"]
        .into_iter()
        .find(|hint| lower.contains(hint))
        .unwrap_or("");
    let backend = if os == "alpine" && lower.ends_with(".iso") {
        "apkovl"
    } else if lower.contains("cloudimg")
        || lower.contains("genericcloud")
        || lower.ends_with(".qcow2")
        || lower.ends_with(".img")
    {
        "cloudinit"
    } else {
        "ssh"
    };
    (os.to_owned(), backend.to_owned())
}

/// Resolves `--image`: an absolute path, then a catalog id, then a bare filename in isos/.
pub fn resolve(root: &Root, env: &Env, image: &str) -> Result<ResolvedImage> {
    let image = image.trim();
    if image.is_empty() {
        return Err(no_such_local_image(image));
    }
    let as_path = env.expand_tilde(image);
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
    Error::NotFound {
        name: format!("no catalog entry or local image called {image:?}"),
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
    if !is_bare || file.ends_with(".part") || !path.is_file() {
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

/// One catalog entry, as much as create needs of it.
struct CatalogEntry {
    id: &'static str,
    os: &'static str,
    backend: &'static str,
    ssh_user: &'static str,
    /// The published file name, for a direct-URL entry.
    file: Option<&'static str>,
    /// The Alpine release-index flavour, which the file name contains.
    flavor: Option<&'static str>,
}

// TODO(images): use images::catalog (which also honours STOAT_CATALOG) instead of this table.
const CATALOG: &[CatalogEntry] = &[
    CatalogEntry {
        id: "ubuntu-24.04",
        os: "ubuntu",
        backend: "cloudinit",
        ssh_user: "stoat",
        file: Some("ubuntu-24.04-server-cloudimg-amd64.img"),
        flavor: None,
    },
    CatalogEntry {
        id: "debian-13",
        os: "debian",
        backend: "cloudinit",
        ssh_user: "stoat",
        file: Some("debian-13-genericcloud-amd64.qcow2"),
        flavor: None,
    },
    CatalogEntry {
        id: "fedora-cloud",
        os: "fedora",
        backend: "cloudinit",
        ssh_user: "stoat",
        file: Some("Fedora-Cloud-Base-Generic-44-1.7.x86_64.qcow2"),
        flavor: None,
    },
    CatalogEntry {
        id: "arch-cloud",
        os: "arch",
        backend: "cloudinit",
        ssh_user: "stoat",
        file: Some("Arch-Linux-x86_64-cloudimg.qcow2"),
        flavor: None,
    },
    CatalogEntry {
        id: "alpine-standard",
        os: "alpine",
        backend: "apkovl",
        ssh_user: "root",
        file: None,
        flavor: Some("alpine-standard"),
    },
    CatalogEntry {
        id: "alpine-virt",
        os: "alpine",
        backend: "apkovl",
        ssh_user: "root",
        file: None,
        flavor: Some("alpine-virt"),
    },
    CatalogEntry {
        id: "alpine-cloud",
        os: "alpine",
        backend: "cloudinit",
        ssh_user: "stoat",
        file: Some("generic_alpine-3.24.1-x86_64-bios-cloudinit-r0.qcow2"),
        flavor: None,
    },
];

/// Resolves a catalog id to its downloaded file: `Ok(None)` when `id` is not a catalog id,
/// `image_not_downloaded` when it is but no matching file is in isos/.
pub fn resolve_catalog_id(root: &Root, _env: &Env, id: &str) -> Result<Option<ResolvedImage>> {
    let Some(entry) = CATALOG.iter().find(|entry| entry.id == id) else {
        return Ok(None);
    };
    let file =
        local_match(root, entry).ok_or_else(|| Error::ImageNotDownloaded { id: id.to_owned() })?;
    Ok(Some(ResolvedImage {
        path: root.isos().join(&file),
        iso: format!("isos/{file}"),
        os: entry.os.to_owned(),
        backend: entry.backend.to_owned(),
        ssh_user: Some(entry.ssh_user.to_owned()),
        catalog_id: Some(entry.id.to_owned()),
    }))
}

/// Finds the file in isos/ that counts as `entry` downloaded (upstream `MatchLocal`): the
/// exact published name, else the first file whose inferred (os, backend) match, and for a
/// flavoured entry whose name contains the flavour.
fn local_match(root: &Root, entry: &CatalogEntry) -> Option<String> {
    let files = isos_files(root);
    if let Some(exact) = entry.file.filter(|f| files.iter().any(|have| have == f)) {
        return Some(exact.to_owned());
    }
    files.into_iter().find(|file| {
        let (os, backend) = infer(file);
        os == entry.os
            && backend == entry.backend
            && entry.flavor.is_none_or(|flavor| file.contains(flavor))
    })
}

/// Returns the regular files in isos/ that are not partial downloads, sorted by name.
fn isos_files(root: &Root) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.isos()) else {
        return Vec::new();
    };
    let mut files: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.ends_with(".part"))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(os: &str, backend: &str) -> (String, String) {
        (os.to_owned(), backend.to_owned())
    }

    #[test]
    fn infer_follows_upstream() {
        assert_eq!(
            infer("alpine-virt-3.24.1-x86_64.iso"),
            pair("alpine", "apkovl")
        );
        assert_eq!(
            infer("ubuntu-24.04-server-cloudimg-amd64.img"),
            pair("ubuntu", "cloudinit")
        );
        assert_eq!(
            infer("debian-13-genericcloud-amd64.qcow2"),
            pair("debian", "cloudinit")
        );
        assert_eq!(infer("mystery.qcow2"), pair("", "cloudinit"));
        assert_eq!(infer("Fedora-Server.iso"), pair("fedora", "ssh"));
        assert_eq!(infer("research.iso"), pair("arch", "ssh"));
        assert_eq!(infer("ALPINE-EXT.ISO"), pair("alpine", "apkovl"));
    }

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
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            resolve(&root, &env, ""),
            Err(Error::NotFound { .. })
        ));
    }
}
