//! The image store: the copies VMs are built on, kept by content under
//! `<root>/.images/<sha256>/<file>`, so that a later `pull` renaming a new download over
//! `isos/<file>` never changes the bytes under a VM's disk (docs/decisions/images.md).
//!
//! A copy is a hard link of the `isos/` file (no extra space while both names stand), or a
//! byte copy where the two cannot be linked. The inode is made read-only: no name of it is
//! ever written again. `create` pins the image a VM is built on ([`pin`]); `pull` moves VMs
//! made before the store onto a pin before it replaces their file ([`protect_users`]);
//! `images` and `prune` read who uses what ([`references`], [`copies`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::checksum::Algorithm;
use crate::error::IoContext;
use crate::vm::{self, Loaded, StoredVm};
use crate::{Cancel, Env, Error, Result, Root};

/// The store's directory name under the data root (hidden: never a VM name).
pub const DIR: &str = ".images";
/// The prefix of a copy being made (`.pin.<pid>.<random>`), removed once its maker is gone.
const TEMP_PREFIX: &str = ".pin.";

/// The store directory.
pub fn dir(root: &Root) -> PathBuf {
    root.dir().join(DIR)
}

/// Which file on disk a path names, whatever the name: two links of one inode are one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of the file `path` names (symlinks followed); `None` when there is none.
    pub fn of(path: &Path) -> Option<FileId> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// One kept copy.
#[derive(Debug, Clone)]
pub struct Copy {
    /// `<root>/.images/<sha256>`: what `prune` removes.
    pub entry: PathBuf,
    /// The file in it, named as the image was.
    pub file: PathBuf,
    pub id: FileId,
    pub bytes: u64,
}

impl Copy {
    /// The image's file name.
    pub fn name(&self) -> String {
        self.file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Every copy in the store, sorted by entry.
pub fn copies(root: &Root) -> Vec<Copy> {
    let Ok(entries) = std::fs::read_dir(dir(root)) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(files) = std::fs::read_dir(entry.path()) else {
            continue;
        };
        for file in files.filter_map(|f| f.ok()) {
            let Ok(meta) = file.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            found.push(Copy {
                entry: entry.path(),
                file: file.path(),
                id: FileId {
                    dev: meta.dev(),
                    ino: meta.ino(),
                },
                bytes: meta.len(),
            });
        }
    }
    found.sort_by(|a, b| a.entry.cmp(&b.entry));
    found
}

/// Returns whether `path` lies in the data root's `isos/` (directly).
pub fn in_isos(root: &Root, path: &Path) -> bool {
    let real = |p: &Path| p.canonicalize().ok();
    match (path.parent().and_then(real), real(&root.isos())) {
        (Some(parent), Some(isos)) => parent == isos,
        _ => false,
    }
}

/// The file a VM built on `image` (a file in `isos/`) should name: the store's copy of it,
/// made now when there is none. A symlink in `isos/` names a file of the user's own, which no
/// pull replaces: its real path is returned. The caller holds the data-root lock, so `prune`
/// cannot remove the copy before the VM that names it is saved.
pub fn pin(root: &Root, image: &Path, cancel: &Cancel) -> Result<PathBuf> {
    let meta = std::fs::symlink_metadata(image).context(|| format!("stat {}", image.display()))?;
    if meta.file_type().is_symlink() {
        return image
            .canonicalize()
            .context(|| format!("resolve {}", image.display()));
    }
    let store = dir(root);
    std::fs::create_dir_all(&store).context(|| format!("create {}", store.display()))?;
    sweep_temps(&store);
    let id = FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    };
    if let Some(copy) = copies(root).into_iter().find(|c| c.id == id) {
        return Ok(copy.file);
    }
    // Only a name: the link or copy below makes the file (and the guard removes it on failure).
    let guard = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}.", std::process::id()))
        .make_in(&store, |path| Ok(path.to_path_buf()))
        .context(|| format!("name a copy in {}", store.display()))?;
    let temp = guard.path().to_path_buf();
    let made = snapshot(image, &temp, cancel).and_then(|()| {
        // The copy is hashed, not the name: a pull renaming over isos/<file> meanwhile cannot
        // change what is hashed.
        let hex = sha256_of(&temp, cancel)?;
        let entry = store.join(&hex);
        std::fs::create_dir_all(&entry).context(|| format!("create {}", entry.display()))?;
        let file = entry.join(image.file_name().unwrap_or_default());
        if file.is_file() {
            return Ok(file);
        }
        make_read_only(&temp)?;
        std::fs::rename(&temp, &file).context(|| format!("keep {}", file.display()))?;
        Ok(file)
    });
    drop(guard);
    made
}

/// A second name for the inode (or, across filesystems, a byte copy).
fn snapshot(image: &Path, temp: &Path, cancel: &Cancel) -> Result<()> {
    match std::fs::hard_link(image, temp) {
        Ok(()) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EXDEV) | Some(libc::EPERM)) => {
            crate::vm::copy::copy_disk(image, temp, cancel).map(|_| ())
        }
        Err(e) => Err(Error::io(format!("link {}", image.display()), e)),
    }
}

fn make_read_only(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o400))
        .context(|| format!("chmod {}", path.display()))
}

fn sha256_of(path: &Path, cancel: &Cancel) -> Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).context(|| format!("open {}", path.display()))?;
    let mut hasher = Algorithm::Sha256.hasher();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        cancel.check()?;
        let n = file
            .read(&mut buf)
            .context(|| format!("read {}", path.display()))?;
        if n == 0 {
            return Ok(hasher.finish());
        }
        hasher.update(&buf[..n]);
    }
}

/// Removes copies half made by a command that is gone.
fn sweep_temps(store: &Path) {
    let Ok(entries) = std::fs::read_dir(store) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(TEMP_PREFIX)
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<i32>().ok());
        if pid.is_some_and(|pid| !crate::vm::staging::pid_alive(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The image files one VM names (its `iso` and its `base`), as paths; a broken VM's are read
/// from its `iso = ` / `base = ` lines.
pub fn references(root: &Root, loaded: &Loaded) -> Vec<PathBuf> {
    let names = match loaded {
        Loaded::Ok(vm) => vec![vm.config.iso.clone(), vm.config.base.clone()],
        Loaded::Broken { dir, .. } => {
            let text = crate::bounded::read_to_string(crate::vm::VmDir::at(dir).record())
                .unwrap_or_default();
            references_in_text(&text)
        }
    };
    names
        .into_iter()
        .filter(|name| !name.is_empty())
        .map(|name| resolve_reference(root, &name))
        .collect()
}

/// An absolute reference stays; `isos/<file>` or `.images/...` is under the root; a bare
/// file name (an older record) lives in `isos/`.
pub fn resolve_reference(root: &Root, name: &str) -> PathBuf {
    let path = Path::new(name);
    if path.is_absolute() {
        path.to_path_buf()
    } else if name.contains('/') {
        root.dir().join(path)
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

/// The names of the VMs whose image is the file `id`, sorted.
pub fn users_of(root: &Root, vms: &[Loaded], id: FileId) -> Vec<String> {
    vms.iter()
        .filter(|loaded| {
            references(root, loaded)
                .iter()
                .any(|path| FileId::of(path) == Some(id))
        })
        .map(|loaded| loaded.name().to_owned())
        .collect()
}

/// Where `pull` notes which file it verified by checksum: `.images/.verified/<file>`.
fn verified_note(root: &Root, file_name: &std::ffi::OsStr) -> PathBuf {
    dir(root).join(".verified").join(file_name)
}

/// The note's text for the file at `path`: its identity and size.
fn identity_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    Some(format!("{} {} {}\n", meta.dev(), meta.ino(), meta.len()))
}

/// Notes that `path` (a file in `isos/`) was just verified against a published digest.
pub fn mark_verified(root: &Root, path: &Path) -> Result<()> {
    let (Some(name), Some(text)) = (path.file_name(), identity_text(path)) else {
        return Ok(());
    };
    let note = verified_note(root, name);
    if let Some(parent) = note.parent() {
        std::fs::create_dir_all(parent).context(|| format!("create {}", parent.display()))?;
    }
    vm::write_atomically(&note, text.as_bytes())
}

/// Whether `path` is the very file `pull` verified (same inode and size): a file put there by
/// hand, or replaced since, is not.
pub fn is_verified(root: &Root, path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    let note = crate::bounded::read_text(&verified_note(root, name), 256).ok();
    note.is_some() && note == identity_text(path)
}

/// Removes the store entry holding `copy` when no VM names it (a copy `create` made for a VM
/// it then refused). The caller holds the data-root lock.
pub fn drop_if_unused(root: &Root, copy: &Path) {
    let (Some(id), Some(entry)) = (FileId::of(copy), copy.parent()) else {
        return;
    };
    if !copy.starts_with(dir(root)) {
        return;
    }
    let Ok(vms) = vm::list(root) else { return };
    if users_of(root, &vms, id).is_empty() {
        let _ = std::fs::remove_dir_all(entry);
    }
}

/// Who uses what, for `images`: each `isos/` file's VMs, and the kept copies that are no
/// longer the file in `isos/` (a pull replaced it) with theirs.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// `isos/` file name → the VMs built on it.
    pub by_file: std::collections::BTreeMap<String, Vec<String>>,
    /// Copies no `isos/` name shares: (file name, bytes, VMs); an empty list can be freed.
    pub kept: Vec<(String, u64, Vec<String>)>,
    /// Bytes `prune --images --apply` would free (unused `isos/` files and kept copies).
    pub freeable: u64,
}

/// Reads who uses which image file.
pub fn usage(root: &Root) -> Result<Usage> {
    let vms = vm::list(root)?;
    let mut out = Usage::default();
    let mut current = std::collections::BTreeSet::new();
    for file in super::local::image_files(&root.isos())? {
        let path = root.isos().join(&file.name);
        let users = FileId::of(&path)
            .map(|id| {
                current.insert(id);
                users_of(root, &vms, id)
            })
            .unwrap_or_default();
        if users.is_empty() {
            out.freeable += file.bytes;
        }
        out.by_file.insert(file.name, users);
    }
    for copy in copies(root) {
        let users = users_of(root, &vms, copy.id);
        if current.contains(&copy.id) {
            continue;
        }
        if users.is_empty() {
            out.freeable += copy.bytes;
        }
        out.kept.push((copy.name(), copy.bytes, users));
    }
    Ok(out)
}

/// How vm.toml records a copy: relative to the root for `iso`, absolute for `base`.
fn recorded_iso(root: &Root, copy: &Path) -> String {
    copy.strip_prefix(root.dir())
        .unwrap_or(copy)
        .display()
        .to_string()
}

/// Before `pull` replaces `target` (`isos/<file>`): a VM made before the store names that
/// path itself, so it is moved onto a pinned copy first (its vm.toml, and its disk's backing
/// file by `qemu-img rebase -u`, which rewrites only the header: both names are one file).
/// A running such VM holds its disk, so the pull is refused (`already_running`) before
/// anything changes. The caller holds the data-root lock.
pub fn protect_users(root: &Root, env: &Env, target: &Path, cancel: &Cancel) -> Result<()> {
    if !target.is_file() {
        return Ok(());
    }
    let users: Vec<StoredVm> = vm::list(root)?
        .into_iter()
        .filter_map(|loaded| match loaded {
            Loaded::Ok(stored) => Some(stored),
            Loaded::Broken { .. } => None,
        })
        .filter(|stored| names_directly(root, stored, target))
        .collect();
    if users.is_empty() {
        return Ok(());
    }
    if let Some(running) = users.iter().find(|u| u.running_pid().is_some()) {
        return Err(Error::ImageHeldByRunningVm {
            vm: running.name.clone(),
            file: target
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        });
    }
    let copy = pin(root, target, cancel)?;
    for mut stored in users {
        if resolve_reference(root, &stored.config.base) == target {
            let disk = stored.files().disk();
            if disk.is_file() {
                super::qemu_img::run(
                    env,
                    &[
                        "rebase".as_ref(),
                        "-u".as_ref(),
                        "-F".as_ref(),
                        "qcow2".as_ref(),
                        "-b".as_ref(),
                        copy.as_os_str(),
                        disk.as_os_str(),
                    ],
                )?;
            }
            stored.config.base = copy.display().to_string();
        }
        if !stored.config.iso.is_empty() && resolve_reference(root, &stored.config.iso) == target {
            stored.config.iso = recorded_iso(root, &copy);
        }
        vm::save(&stored)?;
    }
    Ok(())
}

fn names_directly(root: &Root, stored: &StoredVm, target: &Path) -> bool {
    [&stored.config.base, &stored.config.iso]
        .iter()
        .any(|name| !name.is_empty() && resolve_reference(root, name) == target)
}

/// How `create` records an image it pinned: `(iso, base)` for the VM's mode.
pub fn recorded(root: &Root, copy: &Path, cloud: bool) -> (String, String) {
    if cloud {
        (String::new(), copy.display().to_string())
    } else {
        (recorded_iso(root, copy), String::new())
    }
}

/// Whether a recorded image (`iso` or `base`) is the image `declared` names now, by file
/// name for a kept copy (a newer pull of the same image is the same image to a project).
pub fn same_image(root: &Root, recorded: &str, declared: &Path) -> bool {
    let recorded = resolve_reference(root, recorded);
    if recorded.starts_with(dir(root)) {
        recorded.file_name() == declared.file_name()
    } else {
        recorded == declared || declared.canonicalize().is_ok_and(|real| real == recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_pin_survives_a_rename_over_its_name() {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        root.ensure().unwrap();
        let image = root.isos().join("a.qcow2");
        std::fs::write(&image, b"first").unwrap();
        let cancel = Cancel::default();
        let copy = pin(&root, &image, &cancel).unwrap();
        assert!(copy.starts_with(dir(&root)));
        assert_eq!(
            pin(&root, &image, &cancel).unwrap(),
            copy,
            "one copy a file"
        );
        let new = root.isos().join("new");
        std::fs::write(&new, b"second").unwrap();
        std::fs::rename(&new, &image).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"first");
        assert_eq!(
            resolve_reference(&root, &recorded(&root, &copy, false).0),
            copy
        );
        assert!(same_image(&root, &copy.display().to_string(), &image));
    }
}
