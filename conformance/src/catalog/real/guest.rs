//! Owns how a guest directory (`--guest DIR`) describes its guest to the real tier: the
//! image the builder wrote, and, in an optional `guest.toml`, what booting it takes (RAM,
//! vCPUs, how long `up` to reachable may last). Without the file the values are the fast
//! test guest's (conformance/guest/build.sh); a slower, bigger guest declares its own, so the
//! suite never guesses from the host or the image's size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The guest image a guest directory holds (conformance/guest/build.sh writes it).
pub const GUEST_IMAGE: &str = "stoat-testguest-cloud.qcow2";
/// The optional description next to it.
pub const GUEST_FILE: &str = "guest.toml";

/// What the fast test guest needs: a busybox guest reachable in well under a minute.
const DEFAULT_RAM_MIB: u32 = 256;
const DEFAULT_CPUS: u32 = 1;
const DEFAULT_BOOT_TIMEOUT_SECS: u64 = 180;
/// Longer than a day is a typo, not a slow guest.
const MAX_BOOT_TIMEOUT_SECS: u64 = 24 * 3600;

/// A guest the real tier can boot.
#[derive(Debug, PartialEq, Eq)]
pub struct Guest {
    pub image: PathBuf,
    pub ram_mib: u32,
    pub cpus: u32,
    /// The limit of `up`, and of `wait --until reachable` after it.
    pub boot_timeout: Duration,
}

/// Why a guest directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// Not a guest directory (the check skips, naming it).
    #[error("no {GUEST_IMAGE} in {0}")]
    NoImage(PathBuf),
    /// A `guest.toml` that says something unusable (the check errors: bad input).
    #[error("{message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuestFile {
    #[serde(default = "default_ram")]
    ram_mib: u32,
    #[serde(default = "default_cpus")]
    cpus: u32,
    #[serde(default = "default_boot_timeout")]
    boot_timeout_secs: u64,
}

fn default_ram() -> u32 {
    DEFAULT_RAM_MIB
}

fn default_cpus() -> u32 {
    DEFAULT_CPUS
}

fn default_boot_timeout() -> u64 {
    DEFAULT_BOOT_TIMEOUT_SECS
}

/// Reads `dir`: the image must be there; `guest.toml`, when present, must parse and make sense.
pub fn open(dir: &Path) -> Result<Guest, GuestError> {
    let image = dir.join(GUEST_IMAGE);
    if !image.is_file() {
        return Err(GuestError::NoImage(dir.to_path_buf()));
    }
    let path = dir.join(GUEST_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(GuestError::Invalid {
                path,
                message: e.to_string(),
            })
        }
    };
    let file = parse(&text).map_err(|message| GuestError::Invalid { path, message })?;
    Ok(Guest {
        image,
        ram_mib: file.ram_mib,
        cpus: file.cpus,
        boot_timeout: Duration::from_secs(file.boot_timeout_secs),
    })
}

fn parse(text: &str) -> Result<GuestFile, String> {
    let file: GuestFile = toml::from_str(text).map_err(|e| e.message().to_string())?;
    if file.ram_mib == 0 {
        return Err("ram_mib must be at least 1".into());
    }
    if file.cpus == 0 {
        return Err("cpus must be at least 1".into());
    }
    if !(1..=MAX_BOOT_TIMEOUT_SECS).contains(&file.boot_timeout_secs) {
        return Err(format!(
            "boot_timeout_secs must be between 1 and {MAX_BOOT_TIMEOUT_SECS}"
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(toml: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(GUEST_IMAGE), b"qcow2").expect("image");
        if let Some(text) = toml {
            std::fs::write(dir.path().join(GUEST_FILE), text).expect("guest.toml");
        }
        dir
    }

    fn invalid(toml: &str) -> String {
        match open(dir_with(Some(toml)).path()) {
            Err(GuestError::Invalid { path, message }) => {
                assert!(path.ends_with(GUEST_FILE), "{}", path.display());
                message
            }
            other => panic!("{toml:?} was accepted: {other:?}"),
        }
    }

    #[test]
    fn without_a_guest_file_the_fast_guests_values_apply() {
        let dir = dir_with(None);
        let guest = open(dir.path()).expect("guest");
        assert_eq!(guest.image, dir.path().join(GUEST_IMAGE));
        assert_eq!(
            (guest.ram_mib, guest.cpus, guest.boot_timeout),
            (256, 1, Duration::from_secs(180))
        );
    }

    #[test]
    fn a_guest_file_declares_ram_cpus_and_boot_timeout() {
        let dir = dir_with(Some("ram_mib = 1024\ncpus = 2\nboot_timeout_secs = 600\n"));
        let guest = open(dir.path()).expect("guest");
        assert_eq!(
            (guest.ram_mib, guest.cpus, guest.boot_timeout),
            (1024, 2, Duration::from_secs(600))
        );
        let partial = dir_with(Some("boot_timeout_secs = 300\n"));
        let guest = open(partial.path()).expect("guest");
        assert_eq!(
            (guest.ram_mib, guest.cpus, guest.boot_timeout),
            (256, 1, Duration::from_secs(300))
        );
    }

    #[test]
    fn a_guest_file_that_makes_no_sense_is_refused() {
        assert!(invalid("ram = 1024\n").contains("unknown field"));
        assert!(invalid("ram_mib = \"1G\"\n").contains("invalid type"));
        assert!(invalid("ram_mib = -1\n").contains("invalid value"));
        assert_eq!(invalid("ram_mib = 0\n"), "ram_mib must be at least 1");
        assert_eq!(invalid("cpus = 0\n"), "cpus must be at least 1");
        assert!(invalid("boot_timeout_secs = 0\n").starts_with("boot_timeout_secs must be"));
        assert!(invalid("boot_timeout_secs = 86401\n").starts_with("boot_timeout_secs must be"));
        assert!(!invalid("ram_mib = [\n").is_empty());
    }

    #[test]
    fn a_directory_without_the_image_is_not_a_guest_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(GUEST_FILE), "ram_mib = 512\n").expect("guest.toml");
        assert!(matches!(open(dir.path()), Err(GuestError::NoImage(_))));
    }
}
