//! What a VM's settings may be, wherever they come from (`create`, `update`, `forward`, a
//! project's stoat.toml): the bounds of RAM, vCPUs and disk, the access and display words,
//! a share's stored path, a recipe list and a `HOST:GUEST` forward
//! (docs/contract.md behaviour#data-root and behaviour#host-commands).

use std::path::Path;

use stoat_wire::dto::AgentAccess;

use crate::hint::{Said, Setting, Value};
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
        return Err(Error::spelled(
            Error::InvalidSpec,
            Said::text(format!(
                "ram {ram_mb} MB is below the minimum of {MIN_RAM_MB} MB (e.g. "
            ))
            .example(Setting::Ram, Value::Number(2048))
            .then(")"),
        ));
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
        return Err(cpus_error(
            format!("cpus {cpus}: a VM needs at least {MIN_CPUS}"),
            2,
        ));
    }
    if cpus > MAX_CPUS {
        return Err(cpus_error(
            format!("cpus {cpus}: QEMU's x86 machine takes at most {MAX_CPUS}"),
            4,
        ));
    }
    Ok(())
}

/// A vCPU count refused, with a count that would do.
fn cpus_error(why: String, example: u64) -> Error {
    Error::spelled(
        Error::InvalidSpec,
        Said::text(format!("{why} (e.g. "))
            .example(Setting::Cpus, Value::Number(example))
            .then(")"),
    )
}

/// Reads an MCP access level as a person or an agent typed it (surrounding blanks ignored),
/// refusing unknown levels.
pub fn parse_agent_access(text: &str) -> Result<AgentAccess> {
    AgentAccess::parse(text.trim()).ok_or_else(|| {
        Error::InvalidSpec(format!(
            "agent access {text:?} is not one of none, observe, manage, exec"
        ))
    })
}

/// Where a VM's screen goes: `auto` (a window when the host has a graphical session, VNC
/// otherwise), always a `window`, or always `vnc`. vm.toml keeps `""` for auto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisplayPref {
    Auto,
    Window,
    Vnc,
}

impl DisplayPref {
    /// The word vm.toml keeps: `""` for auto.
    pub fn stored(self) -> &'static str {
        match self {
            DisplayPref::Auto => "",
            DisplayPref::Window => "window",
            DisplayPref::Vnc => "vnc",
        }
    }
}

/// Reads a display preference as a person typed it (surrounding blanks ignored): `""` and
/// `auto` are [`DisplayPref::Auto`].
pub fn parse_display(text: &str) -> Result<DisplayPref> {
    match text.trim() {
        "" | "auto" => Ok(DisplayPref::Auto),
        "window" => Ok(DisplayPref::Window),
        "vnc" => Ok(DisplayPref::Vnc),
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

/// One requested forward before range checks: the integers the user typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortPair {
    pub host: i64,
    pub guest: i64,
}

/// Parses `HOST:GUEST`; anything that is not two integers is a usage error.
pub fn parse_pair(text: &str) -> Result<PortPair> {
    parse_pair_named(text, "forward:")
}

/// [`parse_pair`], its usage error led by `lead`, the words that name where the pair was
/// given (`forward:` for the command, a front end's flag for another command's option).
pub fn parse_pair_named(text: &str, lead: &str) -> Result<PortPair> {
    let usage = || {
        Error::Usage(format!(
            "{lead} {text:?} is not HOST:GUEST (two port numbers)"
        ))
    };
    let (host, guest) = text.trim().split_once(':').ok_or_else(usage)?;
    let number = |part: &str| part.trim().parse::<i64>().map_err(|_| usage());
    Ok(PortPair {
        host: number(host)?,
        guest: number(guest)?,
    })
}

/// Converts a port number, refusing anything outside 1-65535.
pub fn port_in_range(port: i64, which: &str) -> Result<u16> {
    u16::try_from(port)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| Error::InvalidSpec(format!("{which} port {port} is not in 1-65535")))
}

/// Refuses host ports below 1024, which only root may bind.
pub fn refuse_privileged(host_port: u16) -> Result<()> {
    if host_port < 1024 {
        return Err(Error::InvalidSpec(format!(
            "host port {host_port} is below 1024 and needs root"
        )));
    }
    Ok(())
}

/// A host port the user gives for a VM's ssh: in range and not privileged, said as the ssh
/// port's (whether it is free of other VMs' claims is the caller's, under the data-root lock).
pub fn check_ssh_port(port: u16) -> Result<()> {
    let prefixed = |e: Error| match e {
        Error::InvalidSpec(why) => Error::InvalidSpec(format!("ssh port: {why}")),
        other => other,
    };
    port_in_range(i64::from(port), "host").map_err(prefixed)?;
    refuse_privileged(port).map_err(prefixed)
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
        assert_eq!(parse_display("auto").unwrap(), DisplayPref::Auto);
        assert_eq!(parse_display("").unwrap().stored(), "");
        assert_eq!(parse_display(" vnc ").unwrap().stored(), "vnc");
        assert_eq!(parse_display("window").unwrap(), DisplayPref::Window);
        assert_eq!(
            parse_display(" hdmi ").unwrap_err().message(),
            "invalid spec: display \"hdmi\" is not one of auto, window, vnc"
        );
        assert_eq!(
            parse_agent_access(" observe ").unwrap(),
            AgentAccess::Observe
        );
        assert_eq!(
            parse_agent_access(" root").unwrap_err().message(),
            "invalid spec: agent access \" root\" is not one of none, observe, manage, exec"
        );
    }

    #[test]
    fn pairs_parse_or_are_usage_errors() {
        assert_eq!(
            parse_pair(" 8080:80 ").unwrap(),
            PortPair {
                host: 8080,
                guest: 80
            }
        );
        assert_eq!(
            parse_pair("70000:0").unwrap(),
            PortPair {
                host: 70000,
                guest: 0
            }
        );
        for bad in ["8080", "a:80", "8080:", ":80", "1:2:3"] {
            assert!(matches!(parse_pair(bad), Err(Error::Usage(_))), "{bad}");
        }
    }

    #[test]
    fn ranges() {
        assert!(port_in_range(0, "host").is_err());
        assert!(port_in_range(65536, "host").is_err());
        assert_eq!(port_in_range(65535, "host").unwrap(), 65535);
        assert!(refuse_privileged(1023).is_err());
        assert!(refuse_privileged(1024).is_ok());
    }
}
