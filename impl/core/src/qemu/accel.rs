//! The accelerator choice: `STOAT_ACCEL=kvm` (the default) or `tcg`, and
//! whether KVM is usable (`/dev/kvm` opens read-write). It owns that one
//! decision; it must not fall back from kvm to tcg on its own (the user opts in).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use super::error::QemuError;

/// The environment variable that selects the accelerator.
pub const ACCEL_ENV: &str = "STOAT_ACCEL";
/// Where KVM lives.
pub const KVM_DEVICE: &str = "/dev/kvm";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation through /dev/kvm.
    Kvm,
    /// QEMU's software emulator: slow, works everywhere.
    Tcg,
}

impl Accel {
    /// The value of QEMU's `-accel` option.
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// `None` or `""` is kvm; otherwise `kvm` or `tcg`, any case, spaces trimmed.
    pub fn parse(value: Option<&str>) -> Result<Accel, QemuError> {
        let trimmed = value.unwrap_or("").trim();
        if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("kvm") {
            Ok(Accel::Kvm)
        } else if trimmed.eq_ignore_ascii_case("tcg") {
            Ok(Accel::Tcg)
        } else {
            Err(QemuError::UnknownAccel {
                value: trimmed.to_string(),
            })
        }
    }
}

/// What doctor reports about KVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvmProbe {
    Usable,
    Unusable { device: PathBuf, reason: String },
}

/// Opens the KVM device read-write, the way QEMU will, and closes it again.
/// Note: on some hosts /dev/kvm opens but cannot run stock kernels (PVM);
/// only a boot can tell, so doctor should say "opens", not "works".
pub fn probe_kvm_at(device: &Path) -> KvmProbe {
    match OpenOptions::new().read(true).write(true).open(device) {
        Ok(_) => KvmProbe::Usable,
        Err(error) => KvmProbe::Unusable {
            device: device.to_path_buf(),
            reason: error.to_string(),
        },
    }
}

/// Fails with `KvmUnusable` when `accel` is kvm and `kvm_device` (normally /dev/kvm) does
/// not open.
pub fn ensure_usable_with(accel: Accel, kvm_device: &Path) -> Result<(), QemuError> {
    match (accel, probe_kvm_at(kvm_device)) {
        (Accel::Tcg, _) | (Accel::Kvm, KvmProbe::Usable) => Ok(()),
        (Accel::Kvm, KvmProbe::Unusable { device, reason }) => {
            Err(QemuError::KvmUnusable { device, reason })
        }
    }
}

/// Why a /dev/kvm that opens still cannot boot a stock guest kernel.
pub const NO_HARDWARE_VIRTUALIZATION: &str = "it opens, but this CPU has no hardware \
    virtualization (no vmx or svm flag): a nested or paravirtual KVM, which cannot boot stock \
    guest kernels";

/// What `up` and `doctor` both ask before kvm: the device opens read-write, and the CPU
/// (`cpuinfo`, normally /proc/cpuinfo) has vmx or svm. QEMU accepts `-accel kvm` on a
/// paravirtual KVM (such as PVM) and the guest then never boots: refusing at once, naming
/// STOAT_ACCEL=tcg, beats a five-minute silent wait.
pub fn ensure_bootable(accel: Accel, kvm_device: &Path, cpuinfo: &Path) -> Result<(), QemuError> {
    ensure_usable_with(accel, kvm_device)?;
    if accel == Accel::Kvm && !cpu_has_virtualization(cpuinfo) {
        return Err(QemuError::KvmUnusable {
            device: kvm_device.to_path_buf(),
            reason: NO_HARDWARE_VIRTUALIZATION.into(),
        });
    }
    Ok(())
}

/// True when the CPU flags in `cpuinfo` include `vmx` (Intel) or `svm` (AMD); an unreadable
/// file counts as having them, so no host is refused on a guess.
pub fn cpu_has_virtualization(cpuinfo: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(cpuinfo) else {
        return true;
    };
    text.lines()
        .filter(|line| line.starts_with("flags"))
        .any(|line| {
            line.split_whitespace()
                .any(|flag| flag == "vmx" || flag == "svm")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_means_kvm() {
        assert_eq!(Accel::parse(None).ok(), Some(Accel::Kvm));
        assert_eq!(Accel::parse(Some("")).ok(), Some(Accel::Kvm));
        assert_eq!(Accel::parse(Some("  ")).ok(), Some(Accel::Kvm));
    }

    #[test]
    fn kvm_and_tcg_in_any_case() {
        assert_eq!(Accel::parse(Some("KVM")).ok(), Some(Accel::Kvm));
        assert_eq!(Accel::parse(Some(" tcg\n")).ok(), Some(Accel::Tcg));
        assert_eq!(Accel::Tcg.as_str(), "tcg");
    }

    #[test]
    fn anything_else_is_a_typed_error() {
        match Accel::parse(Some("hvf")) {
            Err(QemuError::UnknownAccel { value }) => assert_eq!(value, "hvf"),
            other => panic!("expected UnknownAccel, got {other:?}"),
        }
    }

    #[test]
    fn tcg_never_needs_the_device() {
        assert!(ensure_usable_with(Accel::Tcg, Path::new("/nonexistent/kvm")).is_ok());
    }

    #[test]
    fn kvm_without_the_device_says_why() {
        match ensure_usable_with(Accel::Kvm, Path::new("/nonexistent/kvm")) {
            Err(QemuError::KvmUnusable { device, reason }) => {
                assert_eq!(device, Path::new("/nonexistent/kvm"));
                assert!(reason.contains("No such file"), "{reason}");
            }
            other => panic!("expected KvmUnusable, got {other:?}"),
        }
    }

    #[test]
    fn a_read_write_openable_file_counts_as_usable() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        assert_eq!(probe_kvm_at(file.path()), KvmProbe::Usable);
    }
}
