//! `forward`: show, set or clear a VM's host→guest port forwards, and the port-clash rules
//! that `update --ssh-port` shares.
//!
//! Implements docs/contract.md behaviour#host-commands; json-v3#per-command-data: `forward` rows.

use stoat_wire::dto::{AppliesAt, ForwardData};

use crate::vm::{self, ForwardConfig, Loaded, StoredVm};
use crate::{lock, Error, Result, Root};

/// One requested forward before range checks: the integers the user typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortPair {
    pub host: i64,
    pub guest: i64,
}

/// Parses `HOST:GUEST`; anything that is not two integers is a usage error.
pub fn parse_pair(text: &str) -> Result<PortPair> {
    let usage = || {
        Error::Usage(format!(
            "forward: {text:?} is not HOST:GUEST (two port numbers)"
        ))
    };
    let (host, guest) = text.trim().split_once(':').ok_or_else(usage)?;
    let number = |part: &str| part.trim().parse::<i64>().map_err(|_| usage());
    Ok(PortPair {
        host: number(host)?,
        guest: number(guest)?,
    })
}

/// Shows a VM's forwards; a broken VM has none and is never active.
pub fn show(root: &Root, name: &str) -> Result<ForwardData> {
    let (forwards, active) = match vm::load(root, name)? {
        Loaded::Ok(stored) => (
            stored.config.wire_forwards(),
            stored.running_pid().is_some(),
        ),
        Loaded::Broken { .. } => (Vec::new(), false),
    };
    Ok(ForwardData {
        vm: name.to_owned(),
        forwards,
        active,
        applies_at: None,
    })
}

/// Replaces a VM's forwards (an empty list clears them) after every validation rule.
pub fn set(root: &Root, name: &str, pairs: &[PortPair]) -> Result<ForwardData> {
    let _root_lock = lock::exclusive(&root.lock_file())?;
    let mut stored = vm::load_ok(root, name)?;
    let forwards = validate(root, &stored, pairs)?;
    stored.config.forwards = forwards;
    vm::save(&stored)?;
    let running = stored.running_pid().is_some();
    Ok(ForwardData {
        vm: stored.name.clone(),
        forwards: stored.config.wire_forwards(),
        active: !running,
        applies_at: Some(if running {
            AppliesAt::NextStart
        } else {
            AppliesAt::Now
        }),
    })
}

/// Checks requested forwards in upstream's order: range, privileged host ports, duplicates,
/// this VM's ssh port, then every other VM's claims.
fn validate(root: &Root, stored: &StoredVm, pairs: &[PortPair]) -> Result<Vec<ForwardConfig>> {
    let mut forwards: Vec<ForwardConfig> = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let forward = ForwardConfig {
            hostport: port_in_range(pair.host, "host")?,
            guestport: port_in_range(pair.guest, "guest")?,
        };
        refuse_privileged(forward.hostport)?;
        if forwards.iter().any(|f| f.hostport == forward.hostport) {
            return Err(Error::InvalidSpec(format!(
                "host port {} is forwarded twice",
                forward.hostport
            )));
        }
        if forward.hostport == stored.config.sshport {
            return Err(Error::InvalidSpec(format!(
                "host port {} is {}'s own ssh port",
                forward.hostport, stored.name
            )));
        }
        forwards.push(forward);
    }
    let hosts: Vec<u16> = forwards.iter().map(|f| f.hostport).collect();
    check_other_vms(root, &stored.name, &hosts, "")?;
    Ok(forwards)
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

/// Refuses host ports that another VM claims: its ssh port or a declared forward (a broken
/// VM's ssh port too). `prefix` starts the message (`"ssh port: "` for update).
pub fn check_other_vms(root: &Root, this_vm: &str, host_ports: &[u16], prefix: &str) -> Result<()> {
    for loaded in vm::list(root)? {
        if loaded.name() == this_vm {
            continue;
        }
        let claims: Vec<(u16, &str)> = match &loaded {
            Loaded::Ok(other) => std::iter::once((other.config.sshport, "ssh port"))
                .chain(
                    other
                        .config
                        .forwards
                        .iter()
                        .map(|f| (f.hostport, "declared forward")),
                )
                .collect(),
            Loaded::Broken { dir, .. } => crate::ports::broken_ssh_port(dir)
                .map(|port| (port, "ssh port"))
                .into_iter()
                .collect(),
        };
        for (port, kind) in claims {
            if port != 0 && host_ports.contains(&port) {
                return Err(Error::InvalidSpec(format!(
                    "{prefix}host port {port} is {}'s {kind}",
                    loaded.name()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
