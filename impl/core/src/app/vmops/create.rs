//! `create`: a new VM from an image, with defaults, validation, a free ssh port chosen under
//! the data-root lock, an atomic vm.toml, its `shared/<name>` directory and, in disk mode, an
//! empty qcow2 disk.
//!
//! Implements behaviour#cli (create flags and defaults), behaviour#data-root (name rules,
//! ports, locks) and behaviour#images (image resolution) of docs/contract.md; json-v3#per-command-data: `create` → `{vm: VM}`.

use std::io::Read;

use stoat_wire::dto::AgentAccess;

use super::recipe_check::check_recipes_applicable;
use crate::hint::{Said, Setting, Value};
use crate::images::reference::{self as image_ref, ResolvedImage};
use crate::vm::spec::DisplayPref;
use crate::vm::{self, StoredVm, VmConfig};
use crate::vm::{Backend, Mode};
use crate::{lock, ports, Env, Error, Result, Root};

/// The default RAM in MB, vCPUs and disk size of a new VM.
pub const DEFAULT_RAM_MB: u32 = 4096;
pub const DEFAULT_CPUS: u32 = 4;
pub const DEFAULT_DISK: &str = "8G";
/// The console password a cloudinit VM gets when none is asked for.
pub const DEFAULT_CONSOLE_PASSWORD: &str = "stoat";

/// What the caller asked for; `None` means "the default".
#[derive(Debug, Clone, Default)]
pub struct CreateSpec {
    pub name: String,
    pub image: String,
    pub os: Option<String>,
    pub backend: Option<Backend>,
    pub mode: Option<Mode>,
    /// 0 means the default, as upstream.
    pub ram_mb: Option<u32>,
    /// 0 means the default, as upstream.
    pub cpus: Option<u32>,
    pub disk: Option<String>,
    pub share: Option<String>,
    pub console_password: Option<String>,
    pub recipes: Vec<String>,
    /// Recipe parameters; one that names no recipe is for the only one named.
    pub params: Vec<crate::recipes::params::ParamSetting>,
    pub allow_exec: bool,
    pub agent_access: Option<AgentAccess>,
    pub display: Option<DisplayPref>,
    /// The opt-in: the guest reaches the host's loopback through its gateway.
    pub host_loopback: bool,
    /// A host port for ssh the user chose (kept at `up`); `None`: a free one, picked here.
    pub ssh_port: Option<u16>,
    /// Port forwards (`HOST:GUEST`), checked as `forward` checks them.
    pub forwards: Vec<crate::vm::spec::PortPair>,
    /// The absolute directory of the declaring stoat.toml, `""` outside a project.
    pub project: String,
    /// The declaration key in that stoat.toml, `""` outside a project.
    pub key: String,
}

/// Creates the VM; returns it as saved.
pub fn create(root: &Root, env: &Env, spec: &CreateSpec) -> Result<StoredVm> {
    let name = spec.name.trim();
    vm::check_name(name)?;
    refuse_taken(root, name)?;
    let image = image_ref::resolve(root, env, &spec.image)?;
    let config = plan(root, env, spec, name, &image)?;
    let _root_lock = lock::exclusive(&root.lock_file())?;
    refuse_taken(root, name)?;
    let mut config = config;
    settle_image(root, env, &image, &mut config)?;
    fit_disk_to_image(env, &image, spec.disk.is_some(), &mut config)?;
    match spec.ssh_port {
        // Checked against the other VMs under the data-root lock, as a picked port is.
        Some(port) => {
            super::forward::check_other_vms(root, name, &[port], "ssh port: ")?;
            config.sshport = port;
            config.sshport_pinned = true;
        }
        None => {
            let hosts: Vec<u16> = spec
                .forwards
                .iter()
                .filter_map(|pair| u16::try_from(pair.host).ok())
                .collect();
            config.sshport = ports::free_ssh_port(root, &hosts)?;
        }
    }
    config.forwards = super::forward::validate_for(root, name, config.sshport, &spec.forwards)?;
    vm::shared::make(root, name)?;
    let disk_size = (config.mode == Mode::Disk).then(|| config.disk.clone());
    let made = vm::save_new(root, name, config, |dir| match &disk_size {
        Some(size) => make_empty_disk(env, &vm::VmDir::at(dir).disk(), size),
        None => Ok(()),
    });
    if made.is_err() {
        vm::shared::discard(root, name);
    }
    made
}

/// `name_taken` when `<root>/<name>` exists as anything, or the name is reserved.
fn refuse_taken(root: &Root, name: &str) -> Result<()> {
    let exists = std::fs::symlink_metadata(root.vm_dir(name)).is_ok();
    if exists || Root::is_reserved(name) {
        return Err(Error::NameTaken {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Builds the vm.toml of the new VM (every field but the ssh port) and validates it.
fn plan(
    root: &Root,
    env: &Env,
    spec: &CreateSpec,
    name: &str,
    image: &ResolvedImage,
) -> Result<VmConfig> {
    if let Some(port) = spec.ssh_port {
        crate::vm::spec::check_ssh_port(port)?;
    }
    // Before any work: the forwards' own checks and the other VMs' claims as they are now
    // (port 0 stands for the ssh port not picked yet); again under the data-root lock.
    super::forward::validate_for(root, name, 0, &spec.forwards)?;
    let (os, backend) = os_and_backend(spec, image)?;
    let mode = mode_for(&backend, spec.mode.as_ref())?;
    // An explicit 0 is a mistake to name, not a way to ask for the default.
    let ram = spec.ram_mb.unwrap_or(DEFAULT_RAM_MB);
    crate::vm::spec::check_ram(ram)?;
    let cpus = spec.cpus.unwrap_or(DEFAULT_CPUS);
    crate::vm::spec::check_cpus(cpus)?;
    let disk = disk_for(&mode, spec.disk.as_deref())?;
    let share = match &spec.share {
        Some(text) => crate::vm::spec::resolve_share(env, text)?,
        None => String::new(),
    };
    let recipes = crate::vm::spec::split_recipes(&spec.recipes);
    check_recipes_applicable(root, &os, backend.as_str(), &recipes)?;
    let recipe_params = crate::recipes::params::for_create(root, &recipes, &spec.params)?;
    let cloudinit = backend == Backend::Cloudinit;
    let console_password = console_password_for(cloudinit, spec.console_password.as_deref())?;
    let sshuser = if cloudinit {
        "stoat".to_owned()
    } else {
        image.ssh_user.clone().unwrap_or_default()
    };
    let display = spec
        .display
        .unwrap_or(DisplayPref::Auto)
        .stored()
        .to_owned();
    let (iso, base) = if mode == Mode::Cloud {
        (String::new(), image.path.display().to_string())
    } else {
        (image.iso.clone(), String::new())
    };
    Ok(VmConfig {
        name: name.to_owned(),
        mode,
        os,
        iso,
        ram,
        cpus,
        disk,
        installed: false,
        share,
        sshport: 0,
        recipes,
        display,
        forwards: Vec::new(),
        backend,
        base,
        sshuser,
        console_password,
        allow_exec: Some(spec.allow_exec),
        agent_access: spec.agent_access,
        host_loopback: spec.host_loopback,
        recipe_params,
        project: spec.project.clone(),
        key: spec.key.clone(),
        ..VmConfig::default()
    })
}

/// The image the VM will really boot. What it names is inspected, unless it is a catalog
/// download verified by checksum; then a self-contained file in `isos/` is pinned in the image
/// store (so no later pull changes it) and the VM names the copy. Called under the data-root
/// lock.
fn settle_image(
    root: &Root,
    env: &Env,
    image: &ResolvedImage,
    config: &mut VmConfig,
) -> Result<()> {
    use crate::images::inspect::{self, Use};
    use crate::images::store::{self, FileId};
    let cloud = config.mode == Mode::Cloud;
    let usage = if cloud { Use::Disk } else { Use::Cdrom };
    if !store::in_isos(root, &image.path) {
        // A path the user typed: it may name any host file, so it must show what it is.
        if usage == Use::Cdrom {
            inspect::require_iso9660(&image.path)?;
        }
        return inspect::check(env, &image.path, usage).map(|_| ());
    }
    // A CD is attached as raw, so a catalog ISO can name no other file; a disk can.
    let verified =
        !image.is_byo() && (usage == Use::Cdrom || store::is_verified(root, &image.path));
    let inspected = FileId::of(&image.path);
    let self_contained = verified || inspect::check(env, &image.path, usage)?.self_contained;
    if !self_contained {
        // A chain built in isos/ resolves its layers from there; it stays where it is.
        return Ok(());
    }
    let copy = store::pin(root, &image.path, &crate::Cancel::default())?;
    if !verified && FileId::of(&copy) != inspected {
        // Replaced between the look and the pin (or copied across filesystems): look again.
        if let Err(refused) = inspect::check(env, &copy, usage) {
            store::drop_if_unused(root, &copy);
            return Err(refused);
        }
    }
    (config.iso, config.base) = store::recorded(root, &copy, cloud);
    Ok(())
}

/// A cloud VM's disk is its image grown to `disk`: a size below the image's own would need
/// a shrink, which loses data, so it is refused at create naming both sizes. Without
/// `--disk`, an image larger than the default keeps its own size.
fn fit_disk_to_image(
    env: &Env,
    image: &ResolvedImage,
    asked: bool,
    config: &mut VmConfig,
) -> Result<()> {
    if config.mode != Mode::Cloud {
        return Ok(());
    }
    let Some(image_bytes) = crate::images::inspect::virtual_size(env, &image.path) else {
        return Ok(());
    };
    let disk_bytes = crate::size::parse_size(&config.disk)?;
    if disk_bytes >= image_bytes {
        return Ok(());
    }
    let needed = image_bytes.div_ceil(1 << 20);
    if asked {
        return Err(Error::spelled(
            Error::InvalidSpec,
            Said::text(format!(
                "disk {} is smaller than the image it starts from ({needed} MiB); give ",
                config.disk
            ))
            .set(Setting::Disk, Value::Text(format!("{needed}M")))
            .then(" or more"),
        ));
    }
    config.disk = format!("{needed}M");
    Ok(())
}

/// The VM's OS and backend: inferred or overridden for a BYO image; the catalog's otherwise,
/// where an override that contradicts the catalog is refused rather than ignored.
fn os_and_backend(spec: &CreateSpec, image: &ResolvedImage) -> Result<(String, Backend)> {
    let os_flag = spec.os.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let backend_flag = spec.backend.as_ref().filter(|b| **b != Backend::Unset);
    if let Some(backend) = backend_flag {
        if !Backend::KNOWN.contains(backend) {
            let known: Vec<&str> = Backend::KNOWN.iter().map(Backend::as_str).collect();
            return Err(Error::InvalidSpec(format!(
                "backend {:?} is not one of {}",
                backend.as_str(),
                known.join(", ")
            )));
        }
    }
    if let Some(id) = &image.catalog_id {
        for (flag, given, catalog) in [
            ("os", os_flag, image.os.as_str()),
            (
                "backend",
                backend_flag.map(Backend::as_str),
                image.backend.as_str(),
            ),
        ] {
            if given.is_some_and(|g| g != catalog) {
                return Err(Error::InvalidSpec(format!(
                    "--{flag} applies to your own images only; catalog image {id} is {flag} {catalog}"
                )));
            }
        }
        return Ok((image.os.clone(), image.backend.clone()));
    }
    Ok((
        os_flag.unwrap_or(&image.os).to_owned(),
        backend_flag.unwrap_or(&image.backend).clone(),
    ))
}

/// The mode matrix: cloudinit → cloud; ssh → disk; apkovl → live (default) or disk.
fn mode_for(backend: &Backend, requested: Option<&Mode>) -> Result<Mode> {
    let allowed = match backend {
        Backend::Cloudinit => vec![Mode::Cloud],
        Backend::Ssh => vec![Mode::Disk],
        _ => vec![Mode::Live, Mode::Disk],
    };
    match requested.filter(|m| **m != Mode::Unset) {
        None => Ok(allowed[0].clone()),
        Some(mode) if allowed.contains(mode) => Ok(mode.clone()),
        Some(mode) => {
            let allowed: Vec<&str> = allowed.iter().map(Mode::as_str).collect();
            Err(Error::InvalidSpec(format!(
                "mode {:?} does not work with backend {backend}; use {}",
                mode.as_str(),
                allowed.join(" or ")
            )))
        }
    }
}

/// `""` for live (which has no disk), else the given size (validated) or 8G.
fn disk_for(mode: &Mode, requested: Option<&str>) -> Result<String> {
    let requested = requested.map(str::trim).filter(|d| !d.is_empty());
    match (mode, requested) {
        (Mode::Live, None) => Ok(String::new()),
        (Mode::Live, Some(_)) => Err(Error::spelled(
            Error::InvalidSpec,
            Said::text("a live VM has no disk; drop ")
                .setting(Setting::Disk)
                .then(" or use ")
                .set(Setting::Mode, Value::Text("disk".into())),
        )),
        (_, None) => Ok(DEFAULT_DISK.to_owned()),
        (_, Some(size)) => {
            crate::vm::spec::check_disk_size(size)?;
            Ok(size.to_owned())
        }
    }
}

/// The console password: cloudinit only; `random` makes 32 lowercase hex characters.
fn console_password_for(cloudinit: bool, requested: Option<&str>) -> Result<String> {
    match (cloudinit, requested) {
        (false, None) => Ok(String::new()),
        (false, Some(_)) => Err(Error::spelled(
            Error::InvalidSpec,
            Said::default()
                .setting(Setting::ConsolePassword)
                .then(" needs a cloudinit image; other backends have no console password"),
        )),
        (true, None) => Ok(DEFAULT_CONSOLE_PASSWORD.to_owned()),
        (true, Some("random")) => random_hex(16),
        (true, Some(password)) if password.is_empty() || password.contains(['\n', '\r']) => Err(
            Error::InvalidSpec("a console password must be one non-empty line".into()),
        ),
        (true, Some(password)) => Ok(password.to_owned()),
    }
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| Error::io("read /dev/urandom", e))?;
    Ok(hex::encode(buf))
}

/// Makes the empty qcow2 disk of a disk-mode VM, owner-only.
fn make_empty_disk(env: &Env, disk: &std::path::Path, size: &str) -> Result<()> {
    crate::images::qemu_img::run(
        env,
        &[
            "create".as_ref(),
            "-q".as_ref(),
            "-f".as_ref(),
            "qcow2".as_ref(),
            disk.as_os_str(),
            size.as_ref(),
        ],
    )?;
    crate::root::make_private(disk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_matrix() {
        use Backend::{Apkovl, Cloudinit, Ssh};
        assert_eq!(mode_for(&Cloudinit, None).unwrap(), Mode::Cloud);
        assert!(mode_for(&Cloudinit, Some(&Mode::Disk)).is_err());
        assert_eq!(mode_for(&Ssh, None).unwrap(), Mode::Disk);
        assert!(mode_for(&Ssh, Some(&Mode::Live)).is_err());
        assert_eq!(mode_for(&Apkovl, None).unwrap(), Mode::Live);
        assert_eq!(mode_for(&Apkovl, Some(&Mode::Disk)).unwrap(), Mode::Disk);
        assert!(mode_for(&Apkovl, Some(&Mode::Cloud)).is_err());
        let odd = Mode::parse("odd");
        assert_eq!(
            mode_for(&Apkovl, Some(&odd)).unwrap_err().message(),
            "invalid spec: mode \"odd\" does not work with backend apkovl; use live or disk"
        );
    }

    #[test]
    fn disks_and_passwords() {
        assert_eq!(disk_for(&Mode::Live, None).unwrap(), "");
        assert!(disk_for(&Mode::Live, Some("8G")).is_err());
        assert_eq!(disk_for(&Mode::Disk, None).unwrap(), "8G");
        assert!(disk_for(&Mode::Cloud, Some("8GB")).is_err());
        assert_eq!(console_password_for(true, None).unwrap(), "stoat");
        let random = console_password_for(true, Some("random")).unwrap();
        assert_eq!(random.len(), 32);
        assert!(random
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(console_password_for(false, Some("x")).is_err());
        assert_eq!(console_password_for(false, None).unwrap(), "");
    }

    #[test]
    fn params_name_a_recipe() {
        use crate::recipes::params::{tables_of, ParamSetting};
        let recipes = vec!["docker".to_owned()];
        let set = |recipe: Option<&str>, name: &str, value: &str| ParamSetting {
            recipe: recipe.map(str::to_owned),
            name: name.into(),
            value: value.into(),
        };
        let tables = tables_of(
            &[
                set(None, "channel", "test"),
                set(Some("docker"), "user", "me"),
            ],
            &recipes,
        )
        .unwrap();
        assert_eq!(tables["docker"]["channel"], "test");
        assert_eq!(tables["docker"]["user"], "me");
        assert!(tables_of(&[set(Some("xfce"), "a", "b")], &recipes).is_err());
    }
}
