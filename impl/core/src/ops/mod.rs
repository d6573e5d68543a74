//! The commands that change VMs: create, update, rm, clone and forward (docs/contract.md:
//! behaviour#data-root, behaviour#images, behaviour#host-commands, json-v3#per-command-data).
//!
//! Every operation that chooses a port or writes a vm.toml holds the data-root lock from its
//! checks to its save, so concurrent invocations see each other's results.

pub mod clone;
pub mod create;
pub mod forward;
pub mod image_ref;
pub mod recipe_check;
pub mod remove;
pub mod update;

use std::path::Path;

use stoat_wire::dto::AgentAccess;

use crate::{Env, Error, Result};

/// The smallest RAM a VM may have, in MB.
pub const MIN_RAM_MB: u32 = 256;
/// The smallest number of vCPUs a VM may have.
pub const MIN_CPUS: u32 = 1;
/// The most vCPUs QEMU's x86 machines start without extra options.
pub const MAX_CPUS: u32 = 255;

/// The largest RAM a VM may have, in MB (1 TiB: beyond any host this runs on).
pub const MAX_RAM_MB: u32 = 1 << 20;
/// The smallest disk a disk or cloud VM may have (nothing boots from less).
pub const MIN_DISK_BYTES: u64 = 32 << 20;
/// The largest disk stoat makes (64 TiB, under qcow2's own limits).
pub const MAX_DISK_BYTES: u64 = 64 << 40;

/// Refuses RAM below the minimum or above any real host.
pub fn check_ram(ram_mb: u32) -> Result<()> {
    if ram_mb < MIN_RAM_MB {
        return Err(Error::InvalidSpec(format!(
            "ram {ram_mb} MB is below the minimum of {MIN_RAM_MB} MB (e.g. --ram 2048 or --ram 2G)"
        )));
    }
    if ram_mb > MAX_RAM_MB {
        return Err(Error::InvalidSpec(format!(
            "ram {ram_mb} MB is above the maximum of {MAX_RAM_MB} MB"
        )));
    }
    Ok(())
}

/// Refuses a disk size that cannot hold a system, or that no host could store.
pub fn check_disk_size(text: &str) -> Result<u64> {
    let bytes = crate::size::parse_size(text)?;
    if bytes < MIN_DISK_BYTES {
        return Err(Error::InvalidSpec(format!(
            "disk {text:?} is below the minimum of 32M"
        )));
    }
    if bytes > MAX_DISK_BYTES {
        return Err(Error::InvalidSpec(format!(
            "disk {text:?} is above the maximum of 64T"
        )));
    }
    Ok(bytes)
}

/// Refuses a vCPU count below the minimum.
pub fn check_cpus(cpus: u32) -> Result<()> {
    if cpus < MIN_CPUS {
        return Err(Error::InvalidSpec(format!(
            "cpus {cpus}: a VM needs at least {MIN_CPUS} (e.g. --cpus 2)"
        )));
    }
    if cpus > MAX_CPUS {
        return Err(Error::InvalidSpec(format!(
            "cpus {cpus}: QEMU's x86 machine takes at most {MAX_CPUS} (e.g. --cpus 4)"
        )));
    }
    Ok(())
}

/// Returns the stored spelling of an MCP access level, refusing unknown levels.
pub fn check_agent_access(level: &str) -> Result<String> {
    AgentAccess::parse(level.trim())
        .map(|level| level.as_str().to_owned())
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "agent access {level:?} is not one of none, observe, manage, exec"
            ))
        })
}

/// Returns a display preference as stored: `""` and `auto` mean "a window when graphical".
pub fn check_display(pref: &str) -> Result<String> {
    match pref.trim() {
        "" | "auto" => Ok(String::new()),
        "window" | "vnc" => Ok(pref.trim().to_owned()),
        other => Err(Error::InvalidSpec(format!(
            "display {other:?} is not one of auto, window, vnc"
        ))),
    }
}

/// Returns a share directory as stored: `~` expanded, made absolute, `""` for none.
pub fn resolve_share(env: &Env, text: &str) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let expanded = env.expand_tilde(trimmed)?;
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io("resolve the share against the current directory", e))?
            .join(expanded)
    };
    // A symlink anywhere in the path is resolved now: the VM records, and QEMU exports, the
    // directory the user saw, never what the link is later pointed at.
    if std::fs::symlink_metadata(&absolute).is_ok() {
        let real = absolute.canonicalize().map_err(|e| {
            Error::ShareInvalid(format!(
                "share {} cannot be resolved: {e}",
                absolute.display()
            ))
        })?;
        return path_text(&real);
    }
    path_text(&absolute)
}

/// Returns a path as UTF-8 text (vm.toml is text).
fn path_text(path: &Path) -> Result<String> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Error::InvalidSpec(format!("path {} is not UTF-8", path.display())))
}

/// Splits a comma-separated recipe list, dropping blanks and repeats (first one wins).
pub fn split_recipes<S: AsRef<str>>(items: &[S]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in items.iter().flat_map(|item| item.as_ref().split(',')) {
        let name = name.trim();
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// Makes a new VM's writable `shared/<name>` export, empty and readable by its owner only
/// (0700). Called under the data-root lock before the VM exists, so anything already there
/// was left by an interrupted rm or create of a VM by that name and is not this VM's.
pub fn make_shared_dir(root: &crate::Root, name: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let shared = root.shared(name);
    discard_shared_dir(root, name);
    std::fs::create_dir_all(&shared).map_err(|e| Error::io(format!("create shared/{name}"), e))?;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("chmod shared/{name}"), e))
}

/// Removes `shared/<name>` (a symlink itself, never its target).
pub fn discard_shared_dir(root: &crate::Root, name: &str) {
    let shared = root.shared(name);
    match std::fs::symlink_metadata(&shared) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(&shared);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&shared);
        }
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipes_split_trim_and_dedupe() {
        assert_eq!(split_recipes(&["a, b", "a", " ", "c"]), ["a", "b", "c"]);
        assert!(split_recipes(&[""]).is_empty());
    }

    #[test]
    fn share_expands_home_and_empty_clears() {
        let env = Env::from_pairs([("HOME", "/home/u")]);
        assert_eq!(resolve_share(&env, "~/src").unwrap(), "/home/u/src");
        assert_eq!(resolve_share(&env, "  ").unwrap(), "");
        assert!(resolve_share(&env, "rel").unwrap().starts_with('/'));
    }

    #[test]
    fn display_and_access_levels() {
        assert_eq!(check_display("auto").unwrap(), "");
        assert_eq!(check_display("vnc").unwrap(), "vnc");
        assert!(check_display("hdmi").is_err());
        assert_eq!(check_agent_access("observe").unwrap(), "observe");
        assert!(check_agent_access("root").is_err());
    }
}
