//! `doctor`: is this host ready to run VMs? Checks in order the host tools, `/dev/kvm` (which
//! `STOAT_ACCEL=tcg` makes optional; failed too when it opens on a CPU without hardware
//! virtualization, where no stock guest boots), git (optional: remote recipes only) and user xattrs on
//! `<root>/shared` (docs/contract.md behaviour#host-commands; design#accelerator).
//!
//! `fix` is an argv for this host's distro (from /etc/os-release), never a shell string.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use stoat_wire::dto::{Check, DoctorData};

use crate::{Env, Result, Root};

/// The accelerator QEMU is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    /// The accelerator `up` uses, read by the same parser (`STOAT_ACCEL=tcg` selects
    /// software emulation; unset or `kvm` means kvm). A value `up` refuses reads as kvm here
    /// and fails the [`accel_check`].
    pub fn from_env(env: &Env) -> Accel {
        match crate::qemu::Accel::parse(env.get(crate::qemu::accel::ACCEL_ENV)) {
            Ok(crate::qemu::Accel::Tcg) => Accel::Tcg,
            _ => Accel::Kvm,
        }
    }
}

/// Package families `fix` knows how to install on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distro {
    Arch,
    Debian,
    Fedora,
    Alpine,
    Unknown,
}

impl Distro {
    /// Reads `ID` and `ID_LIKE` from os-release text.
    pub fn from_os_release(text: &str) -> Distro {
        let mut ids = Vec::new();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if key.trim() == "ID" || key.trim() == "ID_LIKE" {
                let value = value.trim().trim_matches(['"', '\'']);
                ids.extend(value.split_whitespace().map(str::to_ascii_lowercase));
            }
        }
        let has = |names: &[&str]| ids.iter().any(|id| names.contains(&id.as_str()));
        if has(&["arch", "manjaro", "endeavouros"]) {
            Distro::Arch
        } else if has(&["debian", "ubuntu"]) {
            Distro::Debian
        } else if has(&["fedora", "rhel", "centos"]) {
            Distro::Fedora
        } else if has(&["alpine"]) {
            Distro::Alpine
        } else {
            Distro::Unknown
        }
    }

    /// Reads /etc/os-release (a missing file is an unknown distro).
    pub fn detect() -> Distro {
        std::fs::read_to_string("/etc/os-release")
            .map(|text| Distro::from_os_release(&text))
            .unwrap_or(Distro::Unknown)
    }
}

/// The package providing `tool`: (arch, debian, fedora, alpine).
fn packages(tool: &str) -> (&'static str, &'static str, &'static str, &'static str) {
    match tool {
        "qemu-system-x86_64" => (
            "qemu-full",
            "qemu-system-x86",
            "qemu-kvm",
            "qemu-system-x86_64",
        ),
        "qemu-img" => ("qemu-full", "qemu-utils", "qemu-img", "qemu-img"),
        "ssh" | "scp" | "ssh-keygen" => (
            "openssh",
            "openssh-client",
            "openssh-clients",
            "openssh-client",
        ),
        "xorriso" => ("libisoburn", "xorriso", "xorriso", "xorriso"),
        "passt" => ("passt", "passt", "passt", "passt"),
        _ => ("git", "git", "git", "git"),
    }
}

/// The argv that installs `tool` on `distro`; `[]` when the distro is unknown.
pub fn install_fix(tool: &str, distro: Distro) -> Vec<String> {
    let (arch, debian, fedora, alpine) = packages(tool);
    let argv: &[&str] = match distro {
        Distro::Arch => &["sudo", "pacman", "-S", "--needed", arch],
        Distro::Debian => &["sudo", "apt-get", "install", "-y", debian],
        Distro::Fedora => &["sudo", "dnf", "install", "-y", fedora],
        Distro::Alpine => &["sudo", "apk", "add", alpine],
        Distro::Unknown => &[],
    };
    argv.iter().map(|s| (*s).to_owned()).collect()
}

/// The tools stoat runs, in check order, and whether each is optional.
const TOOLS: &[(&str, bool, &str)] = &[
    ("qemu-system-x86_64", false, "runs VMs"),
    ("qemu-img", false, "makes and snapshots disks"),
    ("ssh", false, "exec, ssh and recipes"),
    ("scp", false, "cp"),
    ("ssh-keygen", false, "makes stoat's ssh key"),
    ("xorriso", false, "builds seed ISOs"),
    ("passt", false, "the VMs' network"),
];

/// Runs every check.
pub fn run(env: &Env, root: &Root) -> Result<DoctorData> {
    let distro = Distro::detect();
    let mut checks: Vec<Check> = TOOLS
        .iter()
        .map(|(tool, optional, purpose)| tool_check(env, distro, tool, *optional, purpose))
        .collect();
    checks.extend(accel_check(env));
    checks.push(kvm_check(env, env.kvm_device()));
    checks.push(tool_check(
        env,
        distro,
        "git",
        true,
        "needed only for remote recipes",
    ));
    checks.push(xattr_check(&root.dir().join("shared")));
    let healthy = checks.iter().all(|check| check.ok || check.optional);
    Ok(DoctorData { healthy, checks })
}

fn tool_check(env: &Env, distro: Distro, tool: &str, optional: bool, purpose: &str) -> Check {
    let (ok, detail, fix) = match env.which(tool) {
        Some(path) => (
            true,
            path.parent()
                .map(|dir| dir.display().to_string())
                .unwrap_or_default(),
            Vec::new(),
        ),
        None => {
            let (arch, debian, fedora, _) = packages(tool);
            let detail = match distro {
                Distro::Unknown => format!(
                    "not found on PATH ({purpose}); install {arch} (Arch), {debian} (Debian) or {fedora} (Fedora)"
                ),
                _ => format!("not found on PATH ({purpose})"),
            };
            (false, detail, install_fix(tool, distro))
        }
    };
    Check {
        name: tool.to_owned(),
        ok,
        detail,
        fix,
        optional,
    }
}

/// A failing `STOAT_ACCEL` check when its value is one `up` refuses, so doctor never calls
/// healthy a host where `up` cannot start a VM; nothing when the value is fine.
pub fn accel_check(env: &Env) -> Option<Check> {
    let error = crate::qemu::Accel::parse(env.get(crate::qemu::accel::ACCEL_ENV)).err()?;
    Some(Check {
        name: crate::qemu::accel::ACCEL_ENV.into(),
        ok: false,
        detail: format!("{error}; `up` refuses to start a VM until it is unset, kvm or tcg"),
        fix: Vec::new(),
        optional: false,
    })
}

/// `/dev/kvm`, opened read-write. Optional under `STOAT_ACCEL=tcg`, and the detail says so.
pub fn kvm_check(env: &Env, device: &Path) -> Check {
    let accel = Accel::from_env(env);
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device);
    let (ok, finding, fix) = match opened {
        Ok(_) => (true, "read/write".to_owned(), Vec::new()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
            false,
            "not present: no KVM support, or the kvm module is not loaded".to_owned(),
            vec!["sudo".into(), "modprobe".into(), kvm_module().into()],
        ),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let user = env
                .get("USER")
                .or_else(|| env.get("LOGNAME"))
                .unwrap_or("$USER");
            (
                false,
                "permission denied: add yourself to the kvm group, then log in again".to_owned(),
                vec![
                    "sudo".into(),
                    "usermod".into(),
                    "-aG".into(),
                    "kvm".into(),
                    user.to_owned(),
                ],
            )
        }
        Err(e) => (false, e.to_string(), Vec::new()),
    };
    // A /dev/kvm that opens on a CPU without vmx/svm is a nested or paravirtual KVM (such as
    // PVM): QEMU accepts `-accel kvm`, but a stock guest kernel never boots on it.
    let no_hardware = ok && !cpu_has_virtualization(env);
    let (ok, finding) = if no_hardware {
        (
            false,
            crate::qemu::accel::NO_HARDWARE_VIRTUALIZATION
                .trim_start_matches("it ")
                .to_owned(),
        )
    } else {
        (ok, finding)
    };
    // No package fixes a CPU: the fix is software emulation, as the detail says.
    let fix = if no_hardware {
        vec!["export".into(), "STOAT_ACCEL=tcg".into()]
    } else {
        fix
    };
    let detail = match (accel, ok) {
        (Accel::Kvm, true) => format!("{finding}; accelerator kvm"),
        (Accel::Kvm, false) => {
            format!("{finding}; or run with STOAT_ACCEL=tcg (software emulation, much slower)")
        }
        (Accel::Tcg, _) => {
            format!("optional: STOAT_ACCEL=tcg selects software emulation ({finding})")
        }
    };
    Check {
        name: "/dev/kvm".into(),
        ok,
        detail,
        fix: if accel == Accel::Tcg && !ok {
            Vec::new()
        } else {
            fix
        },
        optional: accel == Accel::Tcg,
    }
}

fn cpu_has_virtualization(env: &Env) -> bool {
    crate::qemu::accel::cpu_has_virtualization(env.cpuinfo())
}

/// The first line of `qemu-system-x86_64 --version` (`QEMU emulator version 10.0.2 ...`),
/// `None` when it is not on PATH or says nothing.
pub fn qemu_version(env: &Env) -> Option<String> {
    let binary = env.which(crate::qemu::QEMU_BINARY)?;
    let output = crate::child::output(
        std::process::Command::new(binary)
            .arg("--version")
            .stdin(std::process::Stdio::null()),
        crate::child::Group::Own,
    )
    .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    (!first.is_empty()).then(|| first.to_owned())
}

/// The kvm module for this CPU's vendor.
fn kvm_module() -> &'static str {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if cpuinfo.contains("AuthenticAMD") {
        "kvm_amd"
    } else {
        "kvm_intel"
    }
}

/// User xattrs on `<root>/shared`: the 9p share stores guest file ownership in them.
pub fn xattr_check(shared: &Path) -> Check {
    let (ok, detail) = match probe_user_xattr(shared) {
        Ok(()) => (true, format!("user.* xattrs work on {}", shared.display())),
        Err(e) => (
            false,
            format!(
                "{} cannot store user.* extended attributes ({e}); put the data root (STOAT_HOME) on ext4, xfs or btrfs",
                shared.display()
            ),
        ),
    };
    Check {
        name: "xattr".into(),
        ok,
        detail,
        fix: Vec::new(),
        optional: false,
    }
}

/// Sets and removes `user.stoat.probe` on `dir` (created when missing).
pub fn probe_user_xattr(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path contains NUL"))?;
    let name = c"user.stoat.probe";
    let value = b"1";
    rustix::fs::setxattr(&path, name, value, rustix::fs::XattrFlags::empty())?;
    let _ = rustix::fs::removexattr(&path, name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distro_from_id_and_id_like() {
        assert_eq!(Distro::from_os_release("ID=debian\n"), Distro::Debian);
        assert_eq!(
            Distro::from_os_release("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n"),
            Distro::Debian
        );
        assert_eq!(
            Distro::from_os_release("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\""),
            Distro::Fedora
        );
        assert_eq!(Distro::from_os_release("ID=arch"), Distro::Arch);
        assert_eq!(Distro::from_os_release("ID=alpine"), Distro::Alpine);
        assert_eq!(Distro::from_os_release("ID=gentoo"), Distro::Unknown);
    }

    #[test]
    fn fixes_are_argv_per_distro() {
        assert_eq!(
            install_fix("qemu-img", Distro::Debian),
            ["sudo", "apt-get", "install", "-y", "qemu-utils"]
        );
        assert_eq!(
            install_fix("ssh", Distro::Fedora),
            ["sudo", "dnf", "install", "-y", "openssh-clients"]
        );
        assert_eq!(
            install_fix("qemu-system-x86_64", Distro::Arch),
            ["sudo", "pacman", "-S", "--needed", "qemu-full"]
        );
        assert!(install_fix("xorriso", Distro::Unknown).is_empty());
    }

    #[test]
    fn missing_kvm_is_optional_under_tcg() {
        let tcg = Env::from_pairs([("STOAT_ACCEL", "tcg")]);
        let check = kvm_check(&tcg, Path::new("/nonexistent/kvm"));
        assert!(!check.ok && check.optional);
        assert!(check.detail.contains("STOAT_ACCEL=tcg"));
        let kvm = Env::from_pairs([]);
        let check = kvm_check(&kvm, Path::new("/nonexistent/kvm"));
        assert!(!check.ok && !check.optional);
        assert_eq!(check.fix[..2], ["sudo", "modprobe"]);
        assert!(check.detail.contains("STOAT_ACCEL=tcg"));
    }
}
