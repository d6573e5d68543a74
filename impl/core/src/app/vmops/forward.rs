//! `forward`: show, set, clear, add to or remove from a VM's host→guest port forwards, and the port-clash rules
//! that `update --ssh-port` shares.
//!
//! Implements docs/contract.md behaviour#host-commands; json-v3#per-command-data: `forward` rows.

use stoat_wire::dto::{AppliesAt, ForwardData};

use crate::hint::{Said, Setting};
use crate::vm::spec::{parse_pair, port_in_range, refuse_privileged, PortPair};
use crate::vm::{self, ForwardConfig, Loaded, StoredVm};
use crate::{lock, Error, Result, Root};

/// A forward to take out of the list: its host port, and the guest port when the user named
/// one (then it must match).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removal {
    pub host: i64,
    pub guest: Option<i64>,
}

/// Parses `HOST` or `HOST:GUEST` for `--remove`; anything else is a usage error.
pub fn parse_removal(text: &str) -> Result<Removal> {
    if text.contains(':') {
        let pair = parse_pair(text)?;
        return Ok(Removal {
            host: pair.host,
            guest: Some(pair.guest),
        });
    }
    let host = text.trim().parse::<i64>().map_err(|_| {
        Error::Usage(format!(
            "forward: {text:?} is not HOST or HOST:GUEST (port numbers)"
        ))
    })?;
    Ok(Removal { host, guest: None })
}

/// How a set changes the saved list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// The whole list becomes these (empty clears it).
    Replace(Vec<PortPair>),
    /// Take out `remove`, then append `add`: the rest of the list stays as it is.
    Change {
        add: Vec<PortPair>,
        remove: Vec<Removal>,
    },
}

/// Shows a VM's forwards. `active` says they are live: the VM runs and its QEMU was started
/// with exactly the saved list. A broken VM has none and is never active.
pub fn show(root: &Root, name: &str) -> Result<ForwardData> {
    let (forwards, active) = match vm::load(root, name)? {
        Loaded::Ok(stored) => (
            stored.config.wire_forwards(),
            live_forwards(&stored).is_some_and(|live| live == pairs_of(&stored.config.forwards)),
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

/// The forwards the running QEMU has, `None` when the VM is not running.
pub fn live_forwards(stored: &StoredVm) -> Option<Vec<(u16, u16)>> {
    let pid = stored.running_pid()?;
    Some(crate::qemu::launch::live_forwards(&stored.files().qemu(), pid).unwrap_or_default())
}

fn pairs_of(forwards: &[ForwardConfig]) -> Vec<(u16, u16)> {
    forwards.iter().map(|f| (f.hostport, f.guestport)).collect()
}

/// Changes a VM's forwards after every validation rule; nothing is saved when one fails.
///
/// `active` and `applies_at` answer "is the saved list the one in force": on a stopped VM it
/// is (`now`, true: the next start uses it and nothing else is live); on a running VM only
/// when its QEMU already has exactly these forwards, else `next_start`, false.
pub fn set(root: &Root, name: &str, edit: &Edit) -> Result<ForwardData> {
    // The VM's own lock too: an `up` halfway would start with the list before this change
    // while the answer says the change is in force.
    let (_root_lock, _vm_lock) = lock::root_and_vm(root, name)?;
    let mut stored = vm::load_ok(root, name)?;
    let pairs = match edit {
        Edit::Replace(pairs) => pairs.clone(),
        Edit::Change { add, remove } => edited(&stored, add, remove)?,
    };
    let forwards = validate(root, &stored, &pairs)?;
    stored.config.forwards = forwards;
    vm::save(&stored)?;
    let in_force =
        live_forwards(&stored).is_none_or(|live| live == pairs_of(&stored.config.forwards));
    Ok(ForwardData {
        vm: stored.name.clone(),
        forwards: stored.config.wire_forwards(),
        active: in_force,
        applies_at: Some(if in_force {
            AppliesAt::Now
        } else {
            AppliesAt::NextStart
        }),
    })
}

/// The saved list with `remove` taken out and `add` appended, as pairs for [`validate`].
/// Removing a forward that is not there, or adding a host port that is, names it.
fn edited(stored: &StoredVm, add: &[PortPair], remove: &[Removal]) -> Result<Vec<PortPair>> {
    let mut pairs: Vec<PortPair> = stored
        .config
        .forwards
        .iter()
        .map(|f| PortPair {
            host: i64::from(f.hostport),
            guest: i64::from(f.guestport),
        })
        .collect();
    for removal in remove {
        let matches =
            |p: &PortPair| p.host == removal.host && removal.guest.is_none_or(|g| g == p.guest);
        let before = pairs.len();
        pairs.retain(|p| !matches(p));
        if pairs.len() == before {
            let what = match removal.guest {
                Some(guest) => format!("{}:{guest}", removal.host),
                None => format!("from host port {}", removal.host),
            };
            return Err(Error::InvalidSpec(format!(
                "{} has no forward {what} to remove",
                stored.name
            )));
        }
    }
    for pair in add {
        if let Some(existing) = pairs.iter().find(|p| p.host == pair.host) {
            return Err(Error::spelled(
                Error::InvalidSpec,
                Said::text(format!(
                    "host port {} already forwards to guest port {} on {}; ",
                    pair.host, existing.guest, stored.name
                ))
                .setting(Setting::Remove)
                .then(" it first"),
            ));
        }
        pairs.push(*pair);
    }
    Ok(pairs)
}

/// Checks requested forwards in upstream's order: range, privileged host ports, duplicates,
/// this VM's ssh port, then every other VM's claims.
fn validate(root: &Root, stored: &StoredVm, pairs: &[PortPair]) -> Result<Vec<ForwardConfig>> {
    validate_for(root, &stored.name, stored.config.sshport, pairs)
}

/// [`validate`] for the VM `name` whose ssh port is `ssh_port` (a VM `create` is making).
pub(super) fn validate_for(
    root: &Root,
    name: &str,
    ssh_port: u16,
    pairs: &[PortPair],
) -> Result<Vec<ForwardConfig>> {
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
        if forward.hostport == ssh_port {
            return Err(Error::InvalidSpec(format!(
                "host port {} is {name}'s own ssh port",
                forward.hostport
            )));
        }
        forwards.push(forward);
    }
    let hosts: Vec<u16> = forwards.iter().map(|f| f.hostport).collect();
    check_other_vms(root, name, &hosts, "")?;
    Ok(forwards)
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
