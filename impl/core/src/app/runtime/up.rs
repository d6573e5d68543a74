//! `up`: start a VM's QEMU (docs/contract.md behaviour#qemu and "argv"). Order of checks: the VM
//! (`not_found`, `broken`), `already_running`, the accelerator (`invalid_spec`,
//! `kvm_unusable`), the QEMU binary (`qemu_missing`), the shares (`share_invalid`,
//! `no_xattr`), the host ports (`qemu_start_failed` naming the port), the backend (disk and
//! seed, or kernel and overlay), then the launch (`qemu_start_failed`; naming the port when the
//! network could not listen on one).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use stoat_wire::dto::Vm;

use crate::boot::{apkovl, cloudinit};
use crate::qemu::{self, Accel, LaunchSpec, PASST_BINARY, QEMU_BINARY};
use crate::vm::{self, StoredVm, VmDir};
use crate::vm::{Backend, Mode};
use crate::{display, lock, log, ports, Env, Error, Result, Root};

/// A disk VM whose disk grew past this has finished its install (upstream's rule).
const INSTALLED_DISK_BYTES: u64 = 10 * 1024 * 1024;

/// What `up` started.
#[derive(Debug)]
pub struct Started {
    /// The VM re-read afterwards (its state is authoritative).
    pub vm: Vm,
    /// Its ssh port, when up had to move it: from the port it had before up to the one it
    /// started on, however many moves that took.
    pub moved: Option<ports::Moved>,
    /// Its host ports, kept from other stoats until the caller has waited for the guest (a
    /// network process may bind them only once the guest is up).
    pub claims: ports::Claims,
}

/// The most starts one `up` makes: a first, and one after each move of the ssh port (a port
/// it moved to can be taken again in the same way, by another root's stoat moving at the
/// same moment).
const MAX_STARTS: usize = 3;

/// Starts `name`. A port stoat picked that something else took is moved first, and again
/// when it was taken in the moment between the check and the network's bind (then never back
/// onto a port it left, even when the other program has let it go again); a pinned port gets
/// one more start on that port. A start that moved nothing is the last. `checked`: see
/// [`start`].
pub(crate) fn up(
    root: &Root,
    env: &Env,
    name: &str,
    checked: Option<&HostReady>,
) -> Result<Started> {
    let mut moved = ports::settle_ssh_port(root, name)?;
    let mut left: Vec<u16> = moved.iter().map(|moved| moved.from).collect();
    let (mut starts, mut last) = (0, false);
    loop {
        starts += 1;
        let error = match start(root, env, name, checked) {
            Ok((vm, claims)) => return Ok(Started { vm, moved, claims }),
            Err(error) => error,
        };
        let retry = match retry_for(root, name, &error) {
            Some(retry) if !last && starts < MAX_STARTS => retry,
            _ => return Err(error),
        };
        let again = match retry {
            Retry::SamePort => None,
            Retry::IfTaken => ports::settle_ssh_port(root, name)?,
            Retry::MoveOff(lost) => ports::move_lost_ssh_port(root, name, lost, &left)?,
        };
        match again {
            Some(again) => {
                left.push(again.from);
                moved = joined(moved, Some(again));
            }
            None => last = true,
        }
    }
}

/// How `up` tries again after a start that failed.
enum Retry {
    /// The same port (the user pinned it).
    SamePort,
    /// Move the ssh port if it is taken now ([`ports::settle_ssh_port`]).
    IfTaken,
    /// The network could not listen on this ssh port: move off it whether it looks taken now
    /// or not.
    MoveOff(u16),
}

/// Whether a start that failed with `error` is worth one more: a network that could not listen
/// on the VM's ssh port, or a `qemu_start_failed` while its ssh port, which stoat picked, is
/// taken.
fn retry_for(root: &Root, name: &str, error: &Error) -> Option<Retry> {
    if error.code() != stoat_wire::ErrorCode::QemuStartFailed {
        return None;
    }
    let stored = vm::load_ok(root, name).ok()?;
    match error {
        Error::Qemu(qemu::QemuError::HostPortTaken { port, .. })
            if *port == stored.config.sshport =>
        {
            Some(if stored.config.sshport_pinned {
                Retry::SamePort
            } else {
                Retry::MoveOff(*port)
            })
        }
        _ => ports::ssh_port_lost(&stored).then_some(Retry::IfTaken),
    }
}

/// Two moves in a row as one: from the first's port to the last's.
fn joined(first: Option<ports::Moved>, then: Option<ports::Moved>) -> Option<ports::Moved> {
    let from = first.or(then)?.from;
    let to = then.or(first)?.to;
    (from != to).then_some(ports::Moved { from, to })
}

/// What this host needs to boot any VM, found before anything is made.
#[derive(Clone)]
pub(crate) struct HostReady {
    pub accel: Accel,
    pub binary: std::path::PathBuf,
    pub passt: std::path::PathBuf,
}

/// Asks what `doctor` asks before a boot: an accelerator that can boot a guest
/// (`kvm_unusable`, naming STOAT_ACCEL=tcg), QEMU (`qemu_missing`) and passt on PATH. `up`
/// asks it before it says it is starting, so a host that cannot boot gets its one line alone.
pub(crate) fn host_ready(env: &Env) -> Result<HostReady> {
    let accel = Accel::parse(env.get(qemu::accel::ACCEL_ENV))?;
    qemu::accel::ensure_bootable(accel, env.kvm_device(), env.cpuinfo())?;
    let binary = env.require_tool_as(QEMU_BINARY, "qemu-system-x86", Error::QemuMissing)?;
    // passt is the VM's network.
    let passt = env.require_tool(PASST_BINARY, "passt")?;
    Ok(HostReady {
        accel,
        binary,
        passt,
    })
}

/// Starts `name` and returns the VM re-read afterwards. `checked`: the host's readiness as
/// `up` already found it (asked here only when it was not).
fn start(
    root: &Root,
    env: &Env,
    name: &str,
    checked: Option<&HostReady>,
) -> Result<(Vm, ports::Claims)> {
    let dir = vm::load_ok(root, name)?.dir;
    let _guard = lock::exclusive_in_vm(&dir)?;
    crate::fault::pause("up-locked");
    // Read again under the lock: an update, forward change or rm that went first counts.
    let stored = vm::load_ok(root, name)?;
    if stored.running_pid().is_some() {
        return Err(Error::AlreadyRunning { name: stored.name });
    }
    let HostReady {
        accel,
        binary,
        passt,
    } = match checked {
        Some(ready) => ready.clone(),
        None => host_ready(env)?,
    };
    let host_share = check_share(&stored)?;
    let work_share = prepare_work_share(root, &stored.name)?;
    let claims = ports::ensure_free(&stored)?;
    crate::fault::pause("up-claimed");
    let stored = mark_installed_if_grown(stored)?;
    let mut spec = LaunchSpec::new(stored.files().qemu(), &work_share, accel);
    spec.host_share_dir = host_share;
    spec.ram_mb = stored.config.ram.max(1);
    spec.cpus = stored.config.cpus.max(1);
    spec.ssh_port = stored.config.sshport;
    spec.forwards = stored
        .config
        .forwards
        .iter()
        .map(|f| (f.hostport, f.guestport))
        .collect();
    spec.host_loopback = stored.config.host_loopback;
    // This very binary caps the running boot's console (qemu/console.rs) and guards its
    // network (qemu/netguard.rs).
    spec.helper_program = std::env::current_exe().ok();
    spec.display =
        match display::display_for(&stored.config.display, display::graphical_session(env)) {
            stoat_wire::dto::Display::Window => qemu::Display::Window,
            _ => qemu::Display::Vnc,
        };
    attach_media(root, env, &stored, &mut spec)?;
    remove_stale_sockets(&stored.files());
    let pid = qemu::start(binary.as_os_str(), passt.as_os_str(), &spec)?;
    log::append(
        root,
        "info",
        &format!("up {} pid={pid} accel={}", stored.name, accel.as_str()),
    );
    Ok((vm::load_ok(root, name)?.to_wire(env), claims))
}

/// The optional read-only share must already be a directory; it is never created.
fn check_share(stored: &StoredVm) -> Result<Option<PathBuf>> {
    let share = stored.config.share.trim();
    if share.is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(share);
    if !path.is_absolute() || !path.is_dir() {
        return Err(Error::ShareInvalid(format!(
            "{}: share {share:?} is not an existing directory (absolute path)",
            stored.name
        )));
    }
    Ok(Some(path))
}

/// Makes `<root>/shared/<name>` (mode 0700) and proves it takes `user.*` xattrs, which 9p's
/// mapped-xattr security model needs.
fn prepare_work_share(root: &Root, name: &str) -> Result<PathBuf> {
    let dir = root.shared(name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    probe_xattr(&dir, &format!("the data root's share directory for {name}"))?;
    Ok(dir)
}

/// setxattr `user.stoat.probe`, then remove it. The message names the directory by `what`,
/// not by its host path, which stays off the wire.
pub fn probe_xattr(dir: &Path, what: &str) -> Result<()> {
    let no_xattr = |reason: String| Error::NoXattr(format!("{what} ({reason})"));
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| no_xattr("path holds a NUL byte".into()))?;
    let key = c"user.stoat.probe";
    let value = b"1";
    rustix::fs::setxattr(&path, key, value, rustix::fs::XattrFlags::empty())
        .map_err(|e| no_xattr(std::io::Error::from(e).to_string()))?;
    let _ = rustix::fs::removexattr(&path, key);
    Ok(())
}

/// A disk VM not yet marked installed whose disk outgrew a blank qcow2 has been installed.
fn mark_installed_if_grown(mut stored: StoredVm) -> Result<StoredVm> {
    if stored.config.mode != Mode::Disk || stored.config.installed {
        return Ok(stored);
    }
    let size = std::fs::metadata(stored.files().disk())
        .map(|m| m.len())
        .unwrap_or(0);
    if size > INSTALLED_DISK_BYTES {
        stored.config.installed = true;
        vm::save(&stored)?;
    }
    Ok(stored)
}

/// Disk, cdrom, seed, kernel and overlay per mode and backend.
fn attach_media(root: &Root, env: &Env, stored: &StoredVm, spec: &mut LaunchSpec) -> Result<()> {
    let config = &stored.config;
    let from_cdrom = match &config.mode {
        Mode::Cloud => {
            let (disk, seed) = cloudinit::prepare(root, env, stored)?;
            spec.disk = Some(disk);
            spec.seed_iso = Some(seed);
            false
        }
        Mode::Disk => {
            spec.disk = Some(stored.files().disk());
            !config.installed
        }
        Mode::Live => true,
        other => {
            return Err(Error::InvalidSpec(format!(
                "{}: mode {:?} is not live, disk or cloud",
                stored.name,
                other.as_str()
            )))
        }
    };
    if !from_cdrom {
        return Ok(());
    }
    let iso = iso_path(root, &config.iso);
    if backend(root, stored) == Backend::Apkovl {
        let prepared = apkovl::prepare(root, env, stored, &iso)?;
        spec.kernel = Some(prepared.boot.kernel);
        spec.initrd = Some(prepared.boot.initrd);
        spec.append = Some(apkovl::KERNEL_APPEND.into());
        spec.fat_overlay_dir = Some(prepared.overlay_dir);
        // The installer powers off when done; without a reboot QEMU then exits.
        spec.no_reboot = config.mode == Mode::Disk;
    }
    spec.cdrom = Some(iso);
    spec.boot_from_cdrom = true;
    Ok(())
}

/// The VM's backend, or its OS's default when vm.toml names none (upstream's fallback).
fn backend(root: &Root, stored: &StoredVm) -> Backend {
    if stored.config.backend != Backend::Unset {
        return stored.config.backend.clone();
    }
    crate::guests::registry(root)
        .ok()
        .and_then(|registry| {
            registry
                .get(&stored.config.os)
                .map(|guest| Backend::parse(&guest.default_backend))
        })
        .unwrap_or_default()
}

/// `iso` is relative to the root unless absolute.
fn iso_path(root: &Root, iso: &str) -> PathBuf {
    let path = Path::new(iso);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.dir().join(path)
    }
}

/// A socket left by a QEMU that died would make the new one fail to bind.
fn remove_stale_sockets(files: &VmDir) {
    for socket in [
        files.monitor(),
        files.qmp(),
        files.vnc(),
        files.console_socket(),
    ] {
        let _ = std::fs::remove_file(socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_moves_are_reported_from_the_first_port_to_the_last() {
        let moved = |from, to| Some(ports::Moved { from, to });
        assert_eq!(joined(None, None), None);
        assert_eq!(joined(moved(2200, 2201), None), moved(2200, 2201));
        assert_eq!(joined(None, moved(2201, 2202)), moved(2201, 2202));
        assert_eq!(
            joined(moved(2200, 2201), moved(2201, 2202)),
            moved(2200, 2202)
        );
        assert_eq!(joined(moved(2200, 2201), moved(2201, 2200)), None);
    }
}
