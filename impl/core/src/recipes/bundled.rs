//! The bundled recipes (devtools, docker, tailscale, xfce): embedded in the binary and
//! installed into `<root>/recipes/<name>/` so that users can read and edit them.
//!
//! `<root>/recipes/.manifest` records `<sha256>  <dir>/<file>` for every file stoat wrote, so a
//! later install can tell stoat's copy from a user's edit (docs/contract.md behaviour#recipes).
//! Two modes:
//! - [`install_bundled`] (lazy, run by the commands that read recipes): writes missing and
//!   stale files, keeps user edits (left out of `.manifest`), leaves orphans alone.
//! - [`refresh_bundled`] (`recipe refresh`): also overwrites user edits and retires orphans.
//!
//! Statuses (json-v3#per-command-data: RecipeRefreshed): `current` (already equal), `refreshed` (missing, or
//! stoat's own older copy: overwritten without backup), `backed_up` (a user edit, or any file
//! when no `.manifest` exists yet: copied to `<file>.bak` first, then overwritten), `orphan` (a
//! file stoat once installed that the bundle no longer has: moved to `<file>.bak`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use stoat_wire::dto::RecipeRefreshed;

use crate::error::IoContext;
use crate::vm::write_atomically;
use crate::{Error, Result, Root};

/// One embedded file: `<dir>/<file>` and its bytes.
struct BundledFile {
    key: &'static str,
    bytes: &'static [u8],
}

macro_rules! bundled {
    ($($key:literal),* $(,)?) => {
        &[$(BundledFile {
            key: $key,
            bytes: include_bytes!(concat!("../../bundled/recipes/", $key)),
        }),*]
    };
}

const FILES: &[BundledFile] = bundled![
    "devtools/recipe.toml",
    "devtools/install.sh",
    "devtools/install-alpine.sh",
    "devtools/install-debian.sh",
    "devtools/install-fedora.sh",
    "devtools/install-arch.sh",
    "docker/recipe.toml",
    "docker/install.sh",
    "docker/install-alpine.sh",
    "docker/install-debian.sh",
    "docker/install-fedora.sh",
    "docker/install-arch.sh",
    "tailscale/recipe.toml",
    "tailscale/install.sh",
    "tailscale/install-alpine.sh",
    "tailscale/install-debian.sh",
    "tailscale/install-fedora.sh",
    "tailscale/install-arch.sh",
    "xfce/recipe.toml",
    "xfce/install.sh",
    "xfce/install-alpine.sh",
    "xfce/install-debian.sh",
    "xfce/install-arch.sh",
];

/// The checksum file, beside the recipe directories.
pub const MANIFEST_NAME: &str = ".manifest";
/// Where flat v1 recipe files are moved.
pub const V1_ATTIC: &str = ".v1-removed";

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Current,
    Refreshed,
    BackedUp,
    Orphan,
    /// A user edit the lazy install left alone (never reported on the wire).
    KeptEdit,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Current => "current",
            Status::Refreshed => "refreshed",
            Status::BackedUp => "backed_up",
            Status::Orphan => "orphan",
            Status::KeptEdit => "kept_edit",
        }
    }
}

/// Returns the names of the bundled recipes, sorted.
#[cfg(test)]
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = FILES
        .iter()
        .filter_map(|f| f.key.split_once('/').map(|(dir, _)| dir))
        .collect();
    names.dedup();
    names.sort_unstable();
    names.dedup();
    names
}

/// Returns whether `name` is a bundled recipe.
pub fn is_bundled(name: &str) -> bool {
    FILES
        .iter()
        .any(|f| f.key.split_once('/').is_some_and(|(dir, _)| dir == name))
}

/// Installs the bundled recipes, keeping user edits; returns each file's status (user edits
/// left alone are not listed). Cheap when everything is current: nothing is written.
pub fn install_bundled(root: &Root) -> Result<Vec<RecipeRefreshed>> {
    let statuses = sync(root, false)?;
    Ok(to_wire(&statuses))
}

/// `recipe refresh`: reinstalls every bundled file, backing up user edits and retiring orphans.
pub fn refresh_bundled(root: &Root) -> Result<Vec<RecipeRefreshed>> {
    Ok(to_wire(&sync(root, true)?))
}

fn to_wire(statuses: &[(String, Status)]) -> Vec<RecipeRefreshed> {
    let mut list: Vec<RecipeRefreshed> = statuses
        .iter()
        .filter(|(_, status)| *status != Status::KeptEdit)
        .map(|(path, status)| RecipeRefreshed {
            path: path.clone(),
            status: status.as_str().to_owned(),
        })
        .collect();
    list.sort_by(|a, b| a.path.cmp(&b.path));
    list
}

/// The one install pass; `force` overwrites user edits (after a backup) and retires orphans.
fn sync(root: &Root, force: bool) -> Result<Vec<(String, Status)>> {
    let dir = root.recipes();
    std::fs::create_dir_all(&dir).context(|| format!("create {}", dir.display()))?;
    if !force && everything_current(&dir) {
        return Ok(FILES
            .iter()
            .map(|f| (f.key.to_owned(), Status::Current))
            .collect());
    }
    let _guard = crate::lock::exclusive(&dir.join(".lock"))?;
    move_v1_files(root, &dir);
    let recorded = read_manifest(&dir);
    let mut statuses = Vec::new();
    let mut new_manifest = BTreeMap::new();
    for file in FILES {
        let status = install_file(&dir, file, recorded.as_ref(), force)?;
        if status != Status::KeptEdit {
            new_manifest.insert(file.key.to_owned(), sha256_hex(file.bytes));
        }
        statuses.push((file.key.to_owned(), status));
    }
    for (key, sum) in recorded.iter().flatten() {
        if FILES.iter().any(|f| f.key == key) {
            continue;
        }
        let path = dir.join(key);
        if !force {
            new_manifest.insert(key.clone(), sum.clone());
        } else if path.is_file() {
            let backup = free_backup_path(&path);
            std::fs::rename(&path, &backup).context(|| format!("retire {}", path.display()))?;
            statuses.push((key.clone(), Status::Orphan));
        }
    }
    write_manifest(&dir, &new_manifest)?;
    Ok(statuses)
}

/// Whether every bundled file is on disk, equal, and recorded (the common, no-write case).
fn everything_current(dir: &Path) -> bool {
    let Some(recorded) = read_manifest(dir) else {
        return false;
    };
    if has_flat_files(dir) {
        return false;
    }
    FILES.iter().all(|file| {
        let sum = sha256_hex(file.bytes);
        recorded.get(file.key) == Some(&sum)
            && std::fs::read(dir.join(file.key)).is_ok_and(|disk| disk == file.bytes)
    })
}

fn install_file(
    dir: &Path,
    file: &BundledFile,
    recorded: Option<&BTreeMap<String, String>>,
    force: bool,
) -> Result<Status> {
    let path = dir.join(file.key);
    let disk = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    let status = match (&disk, recorded) {
        (Some(bytes), _) if bytes == file.bytes => return Ok(Status::Current),
        (None, _) => Status::Refreshed,
        (Some(_), None) => Status::BackedUp,
        (Some(bytes), Some(sums)) if sums.get(file.key) == Some(&sha256_hex(bytes)) => {
            Status::Refreshed
        }
        (Some(_), Some(_)) if force => Status::BackedUp,
        (Some(_), Some(_)) => return Ok(Status::KeptEdit),
    };
    if status == Status::BackedUp {
        let backup = free_backup_path(&path);
        std::fs::copy(&path, &backup).context(|| format!("back up {}", path.display()))?;
    }
    write_file(&path, file)?;
    Ok(status)
}

/// Writes one bundled file atomically: scripts 0755, everything else 0644.
fn write_file(path: &Path, file: &BundledFile) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).context(|| format!("create {}", parent.display()))?;
    }
    write_atomically(path, file.bytes)?;
    let mode = if file.key.ends_with(".sh") {
        0o755
    } else {
        0o644
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .context(|| format!("chmod {}", path.display()))
}

/// `<file>.bak`, or `<file>.bak.N` when earlier backups exist (a backup never overwrites one).
fn free_backup_path(path: &Path) -> PathBuf {
    let base = format!("{}.bak", path.display());
    std::iter::once(PathBuf::from(&base))
        .chain((1..).map(|n| PathBuf::from(format!("{base}.{n}"))))
        .find(|candidate| !candidate.exists())
        .unwrap_or_else(|| PathBuf::from(base))
}

/// Reads `.manifest`; `None` when there is none (a root from before the manifest existed).
fn read_manifest(dir: &Path) -> Option<BTreeMap<String, String>> {
    let text = crate::bounded::read_to_string(dir.join(MANIFEST_NAME)).ok()?;
    Some(
        text.lines()
            .filter_map(|line| line.split_once("  "))
            .map(|(sum, key)| (key.trim().to_owned(), sum.trim().to_owned()))
            .collect(),
    )
}

fn write_manifest(dir: &Path, sums: &BTreeMap<String, String>) -> Result<()> {
    let text: String = sums
        .iter()
        .map(|(key, sum)| format!("{sum}  {key}\n"))
        .collect();
    write_atomically(&dir.join(MANIFEST_NAME), text.as_bytes())
}

fn has_flat_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry.file_type().is_ok_and(|t| t.is_file())
                && !entry.file_name().to_string_lossy().starts_with('.')
        })
    })
}

/// Moves flat v1 recipe files (`xfce.alpine.sh`) into `.v1-removed/`, never overwriting.
fn move_v1_files(root: &Root, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_flat_file = entry.file_type().is_ok_and(|t| t.is_file()) && !name.starts_with('.');
        if !is_flat_file {
            continue;
        }
        let attic = dir.join(V1_ATTIC);
        let _ = std::fs::create_dir_all(&attic);
        let target = std::iter::once(attic.join(&name))
            .chain((1..100).map(|n| attic.join(format!("{name}.{n}"))))
            .find(|candidate| !candidate.exists());
        if let Some(target) = target {
            if std::fs::rename(entry.path(), &target).is_ok() {
                crate::log::append(
                    root,
                    "warn",
                    &format!("moved v1 recipe file {name} to recipes/{V1_ATTIC}/"),
                );
            }
        }
    }
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> (tempfile::TempDir, Root) {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        (temp, root)
    }

    fn status_of(list: &[RecipeRefreshed], path: &str) -> String {
        list.iter()
            .find(|r| r.path == path)
            .map(|r| r.status.clone())
            .unwrap_or_else(|| "absent".into())
    }

    #[test]
    fn first_install_writes_every_file_with_modes_and_a_manifest() {
        use std::os::unix::fs::PermissionsExt;
        let (_t, root) = fresh();
        let list = install_bundled(&root).unwrap();
        assert_eq!(list.len(), FILES.len());
        assert!(list.iter().all(|r| r.status == "refreshed"));
        let script = root.recipes().join("docker/install.sh");
        assert_eq!(
            script.metadata().unwrap().permissions().mode() & 0o777,
            0o755
        );
        let toml = root.recipes().join("docker/recipe.toml");
        assert_eq!(toml.metadata().unwrap().permissions().mode() & 0o777, 0o644);
        let manifest = crate::bounded::read_to_string(root.recipes().join(MANIFEST_NAME)).unwrap();
        assert_eq!(manifest.lines().count(), FILES.len());
        assert!(install_bundled(&root)
            .unwrap()
            .iter()
            .all(|r| r.status == "current"));
    }

    #[test]
    fn lazy_install_keeps_user_edits_and_refresh_backs_them_up() {
        let (_t, root) = fresh();
        install_bundled(&root).unwrap();
        let script = root.recipes().join("docker/install-alpine.sh");
        std::fs::write(&script, "# mine\n").unwrap();
        let list = install_bundled(&root).unwrap();
        assert_eq!(status_of(&list, "docker/install-alpine.sh"), "absent");
        assert_eq!(crate::bounded::read_to_string(&script).unwrap(), "# mine\n");
        let list = refresh_bundled(&root).unwrap();
        assert_eq!(status_of(&list, "docker/install-alpine.sh"), "backed_up");
        let backup = root.recipes().join("docker/install-alpine.sh.bak");
        assert_eq!(crate::bounded::read_to_string(backup).unwrap(), "# mine\n");
        assert_ne!(crate::bounded::read_to_string(&script).unwrap(), "# mine\n");
        assert_eq!(
            status_of(&refresh_bundled(&root).unwrap(), "docker/install-alpine.sh"),
            "current"
        );
    }

    #[test]
    fn stoat_own_stale_copy_is_refreshed_without_backup() {
        let (_t, root) = fresh();
        install_bundled(&root).unwrap();
        let script = root.recipes().join("xfce/install.sh");
        std::fs::write(&script, "# an older stoat wrote this\n").unwrap();
        let mut sums = read_manifest(&root.recipes()).unwrap();
        sums.insert(
            "xfce/install.sh".into(),
            sha256_hex(b"# an older stoat wrote this\n"),
        );
        write_manifest(&root.recipes(), &sums).unwrap();
        let list = install_bundled(&root).unwrap();
        assert_eq!(status_of(&list, "xfce/install.sh"), "refreshed");
        assert!(!root.recipes().join("xfce/install.sh.bak").exists());
    }

    #[test]
    fn no_manifest_means_backup_before_overwrite() {
        let (_t, root) = fresh();
        let script = root.recipes().join("tailscale/install.sh");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, "# pre-manifest\n").unwrap();
        let list = install_bundled(&root).unwrap();
        assert_eq!(status_of(&list, "tailscale/install.sh"), "backed_up");
        assert!(root.recipes().join("tailscale/install.sh.bak").exists());
    }

    #[test]
    fn orphans_are_retired_by_refresh_only_and_v1_files_move_to_the_attic() {
        let (_t, root) = fresh();
        install_bundled(&root).unwrap();
        let gone = root.recipes().join("docker/old.sh");
        std::fs::write(&gone, "old").unwrap();
        let mut sums = read_manifest(&root.recipes()).unwrap();
        sums.insert("docker/old.sh".into(), sha256_hex(b"old"));
        write_manifest(&root.recipes(), &sums).unwrap();
        std::fs::write(root.recipes().join("xfce.alpine.sh"), "v1").unwrap();
        install_bundled(&root).unwrap();
        assert!(gone.exists(), "lazy install leaves orphans");
        let list = refresh_bundled(&root).unwrap();
        assert_eq!(status_of(&list, "docker/old.sh"), "orphan");
        assert!(!gone.exists() && root.recipes().join("docker/old.sh.bak").exists());
        assert!(root
            .recipes()
            .join(V1_ATTIC)
            .join("xfce.alpine.sh")
            .exists());
        let manifest = crate::bounded::read_to_string(root.recipes().join(MANIFEST_NAME)).unwrap();
        assert!(!manifest.contains("old.sh"));
    }

    #[test]
    fn every_bundled_manifest_parses_and_its_scripts_exist() {
        let (_t, root) = fresh();
        install_bundled(&root).unwrap();
        assert_eq!(names(), ["devtools", "docker", "tailscale", "xfce"]);
        for name in names() {
            let manifest =
                super::super::manifest::Manifest::load(&root.recipes().join(name)).unwrap();
            assert_eq!(manifest.name, name);
            assert_eq!(manifest.schema, 3);
        }
    }
}
