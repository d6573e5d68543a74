//! Loading, listing and atomically saving VMs under the data root.
//!
//! A VM is `<root>/<name>/vm.toml`; a directory without vm.toml, or a reserved name, is not a
//! VM. Saving writes a temporary file, fsyncs it and renames it over vm.toml, so a crash never
//! leaves a half-written record.

use std::io::Write;
use std::path::{Path, PathBuf};

use stoat_wire::dto::{AgentAccess, Forward, Vm, VmFacts, VmLiveFacts};

use super::config::VmConfig;
use super::{running_pid, VmDir};
use crate::error::IoContext;
use crate::{Env, Error, Result, Root};

/// A VM whose vm.toml parsed.
#[derive(Debug, Clone)]
pub struct StoredVm {
    /// The directory name: the VM's identity.
    pub name: String,
    pub dir: PathBuf,
    pub config: VmConfig,
}

/// A VM directory as loaded: usable or broken.
// A listing holds one per VM directory: the size gap between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Loaded {
    Ok(StoredVm),
    Broken {
        name: String,
        dir: PathBuf,
        reason: String,
    },
}

impl Loaded {
    pub fn name(&self) -> &str {
        match self {
            Loaded::Ok(vm) => &vm.name,
            Loaded::Broken { name, .. } => name,
        }
    }

    pub fn dir(&self) -> &Path {
        match self {
            Loaded::Ok(vm) => &vm.dir,
            Loaded::Broken { dir, .. } => dir,
        }
    }

    /// Returns the wire DTO, looking at the host for the live facts.
    pub fn to_wire(&self, env: &Env) -> Vm {
        self.to_wire_in(crate::display::graphical_session(env))
    }

    /// [`Loaded::to_wire`] with the session's [`graphical_session`](crate::display::graphical_session)
    /// asked once by the caller: a listing asks it once, not once per VM.
    pub fn to_wire_in(&self, graphical: bool) -> Vm {
        match self {
            Loaded::Ok(vm) => vm.to_wire_in(graphical),
            Loaded::Broken { name, reason, .. } => Vm::broken(name, reason.clone()),
        }
    }
}

impl StoredVm {
    /// The files in this VM's directory.
    pub fn files(&self) -> VmDir {
        VmDir::at(&self.dir)
    }

    /// Returns whether QEMU is running this VM, and its pid.
    pub fn running_pid(&self) -> Option<u32> {
        running_pid(&self.dir)
    }

    /// Returns the wire DTO with live state, display and project facts.
    pub fn to_wire(&self, env: &Env) -> Vm {
        self.to_wire_in(crate::display::graphical_session(env))
    }

    fn to_wire_in(&self, graphical: bool) -> Vm {
        let live = VmLiveFacts {
            running: self.running_pid().is_some(),
            display: crate::display::display_for(&self.config.display, graphical),
            project_missing: !self.config.project.is_empty()
                && !Path::new(&self.config.project).is_dir(),
        };
        Vm::from_facts(self, live)
    }
}

impl VmFacts for StoredVm {
    fn name(&self) -> &str {
        &self.name
    }
    fn os(&self) -> &str {
        &self.config.os
    }
    fn mode(&self) -> &str {
        self.config.mode.as_str()
    }
    fn backend(&self) -> &str {
        self.config.backend.as_str()
    }
    fn cpus(&self) -> u32 {
        self.config.cpus
    }
    fn ram_mb(&self) -> u32 {
        self.config.ram
    }
    fn disk(&self) -> &str {
        &self.config.disk
    }
    fn share(&self) -> &str {
        &self.config.share
    }
    fn recipes(&self) -> Vec<String> {
        self.config.recipes.clone()
    }
    fn ssh_port(&self) -> u16 {
        self.config.sshport
    }
    fn ssh_user(&self) -> &str {
        self.config.ssh_user()
    }
    fn installed(&self) -> bool {
        self.config.installed
    }
    fn forwards(&self) -> Vec<Forward> {
        self.config.wire_forwards()
    }
    fn allow_exec(&self) -> bool {
        self.config.allow_exec()
    }
    fn agent_access(&self) -> AgentAccess {
        self.config.agent_access()
    }
    fn project(&self) -> &str {
        &self.config.project
    }
    fn key(&self) -> &str {
        &self.config.key
    }
}

/// Checks a new VM name: not empty, no `/`, no whitespace, not a dot name, not reserved-looking.
pub fn check_name(name: &str) -> Result<()> {
    let invalid = |why: &str| Err(Error::InvalidSpec(format!("VM name {name:?} {why}")));
    if name.is_empty() {
        return invalid("is empty");
    }
    if name.contains('/') || name.contains('\0') {
        return invalid("must not contain '/'");
    }
    if name.chars().any(char::is_whitespace) {
        return invalid("must not contain whitespace");
    }
    if name.starts_with('.') || name.starts_with('-') {
        return invalid("must not start with '.' or '-'");
    }
    if name.len() > 63 {
        return invalid("is longer than 63 characters (a guest hostname's limit)");
    }
    // QEMU's option syntax splits on ',' and '='; a hostname or ssh target chokes on ':'.
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, ',' | '=' | ':') || c.is_control())
    {
        return Err(Error::InvalidSpec(format!(
            "VM name {name:?} must not contain {c:?}"
        )));
    }
    Ok(())
}

/// The largest vm.toml stoat reads; anything bigger is not one of ours.
pub const MAX_VM_TOML: u64 = 1 << 20;

/// True when `name` can name a directory of the data root's own (no path, no hidden or
/// reserved name): what [`load`] asks before looking.
fn addressable(name: &str) -> bool {
    !(name.is_empty()
        || name.len() > 255
        || name.contains('/')
        || name.contains('\0')
        || Root::is_reserved(name))
}

/// VM `name`'s directory when there is one, a real directory directly under the data root
/// (not a symlink, whose target is not ours to write a lock into).
pub fn own_dir(root: &Root, name: &str) -> Option<std::path::PathBuf> {
    let dir = root.vm_dir(name);
    (addressable(name) && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())).then_some(dir)
}

/// Loads one VM; `not_found` when there is no such VM. A vm.toml that cannot be read (not
/// ours to read, a directory, too big) or does not parse loads as broken, with the reason.
pub fn load(root: &Root, name: &str) -> Result<Loaded> {
    let not_found = || Error::NotFound {
        name: name.to_owned(),
    };
    if !addressable(name) {
        return Err(not_found());
    }
    let files = VmDir::new(root, name);
    let dir = files.path().to_path_buf();
    let broken = |reason: String| {
        Ok(Loaded::Broken {
            name: name.to_owned(),
            dir: dir.clone(),
            reason,
        })
    };
    let text = match crate::bounded::read(&files.record(), MAX_VM_TOML) {
        Ok(bytes) => bytes,
        Err(crate::bounded::ReadError::Io(e))
            if e.kind() == std::io::ErrorKind::NotFound
                || e.kind() == std::io::ErrorKind::NotADirectory =>
        {
            return Err(not_found())
        }
        Err(e) => return broken(format!("vm.toml {}", e.describe())),
    };
    let parsed = String::from_utf8(text)
        .map_err(|_| "vm.toml is not UTF-8".to_owned())
        .and_then(|text| VmConfig::parse(&text));
    Ok(match parsed {
        Ok(mut config) => {
            if let Some(disk) = super::resize_note::reconcile(&dir, &config.disk) {
                config.disk = disk;
            }
            Loaded::Ok(StoredVm {
                name: name.to_owned(),
                dir,
                config,
            })
        }
        Err(reason) => Loaded::Broken {
            name: name.to_owned(),
            dir,
            reason,
        },
    })
}

/// Removes `<root>/<name>` when it is what an older, interrupted create left: a directory
/// holding no vm.toml and nothing but leftover temporary files. Anything else stays.
fn remove_interrupted(root: &Root, name: &str) {
    let dir = root.vm_dir(name);
    super::staging::sweep_vm_dir(&dir);
    let _ = std::fs::remove_dir(&dir);
}

/// Loads one VM that must not be broken.
pub fn load_ok(root: &Root, name: &str) -> Result<StoredVm> {
    match load(root, name)? {
        Loaded::Ok(vm) => Ok(vm),
        Loaded::Broken { name, reason, .. } => Err(Error::Broken { name, reason }),
    }
}

/// Lists every VM, broken ones included, sorted by name. One entry that cannot be read is
/// a broken VM in the list, never a failure of the whole list.
pub fn list(root: &Root) -> Result<Vec<Loaded>> {
    let entries = match std::fs::read_dir(root.dir()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list the data root", e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !Root::is_reserved(name))
        .collect();
    names.sort();
    let mut vms = Vec::with_capacity(names.len());
    for name in names {
        match load(root, &name) {
            Ok(loaded) => vms.push(loaded),
            Err(Error::NotFound { .. }) => {}
            Err(e) => vms.push(Loaded::Broken {
                dir: root.vm_dir(&name),
                name,
                reason: e.to_string(),
            }),
        }
    }
    Ok(vms)
}

/// Saves vm.toml atomically (write, fsync, rename, fsync the directory), first removing
/// what killed writers left next to it. The record now holds the disk's real size, so a
/// note of an interrupted resize has served its purpose.
pub fn save(vm: &StoredVm) -> Result<()> {
    super::staging::sweep_vm_dir(&vm.dir);
    write_atomically(&vm.files().record(), vm.config.to_toml().as_bytes())?;
    super::resize_note::clear(&vm.dir);
    Ok(())
}

/// Makes a new VM: `fill` puts its files (disk, ...) into a staging directory that already
/// holds its vm.toml, and the whole directory then appears under `name` by one rename. On
/// any failure, or a kill, no `<root>/<name>` is left. The caller holds the data-root lock.
pub fn save_new(
    root: &Root,
    name: &str,
    config: VmConfig,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<StoredVm> {
    super::staging::sweep(root);
    remove_interrupted(root, name);
    if std::fs::symlink_metadata(root.vm_dir(name)).is_ok() || Root::is_reserved(name) {
        return Err(Error::NameTaken {
            name: name.to_owned(),
        });
    }
    let staging = super::staging::Staging::begin(root, name)?;
    write_atomically(
        &VmDir::at(staging.dir()).record(),
        config.to_toml().as_bytes(),
    )?;
    crate::fault::point("staged");
    fill(staging.dir())?;
    crate::fault::point("filled");
    let dir = staging.commit(root)?;
    Ok(StoredVm {
        name: name.to_owned(),
        dir,
        config,
    })
}

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a mix.
/// The file is owner-only (0600): vm.toml may hold a console password. The temporary file
/// is named `.<file>.<pid>.<random>` so a later command can remove it if this one is killed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{file_name}.{}.", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .context(|| format!("write {}", path.display()))?;
    temp.write_all(bytes)
        .context(|| format!("write {}", path.display()))?;
    temp.as_file()
        .sync_all()
        .context(|| format!("sync {}", path.display()))?;
    crate::fault::point("temp-written");
    temp.persist(path)
        .map_err(|e| Error::io(format!("replace {}", path.display()), e.error))?;
    if let Ok(dir_handle) = std::fs::File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}
