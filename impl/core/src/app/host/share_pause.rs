//! The guest's 9p shares around a live snapshot. QEMU refuses `savevm` while a virtio-9p
//! export is mounted in the guest (its open files cannot be saved), so stoat unmounts every
//! mounted 9p share over ssh first, and mounts the same ones again afterwards, whether the
//! monitor command worked or not. `loadvm` gets the same treatment: the restored guest is in
//! the state of the save, where the shares were unmounted. Both scripts go through the VM's
//! reused connection when its master answers (a restore ends it first, so the remount after
//! one connects afresh), and a script ssh could not start is run again within a bound
//! ([`GuestShell::capture`]).

use std::time::Duration;

use crate::guests;
use crate::ssh::guest_shell::GuestShell;
use crate::vm::StoredVm;
use crate::{Cancel, Env, Root};

/// How long each of the two guest scripts may take.
const GUEST_STEP: Duration = Duration::from_secs(30);

/// Unmounts each mounted 9p share; prints `ok <tag> <point> <rw|ro>` or `busy <point> <why>`.
const UNMOUNT: &str = r#"sync
list=$(awk '$3 == "9p" {print $1, $2, substr($4, 1, 2)}' /proc/mounts)
[ -n "$list" ] || exit 0
while read -r tag point mode; do
  if why=$(umount "$point" 2>&1); then
    echo "ok $tag $point $mode"
  else
    echo "busy $point $(echo "$why" | tr '\n' ' ')"
  fi
done <<STOAT_EOF
$list
STOAT_EOF
"#;

/// One share unmounted for the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Share {
    tag: String,
    point: String,
    /// `rw` or `ro`, as it was mounted.
    mode: String,
}

/// What [`unmount`] did: the shares to mount again, and why a share may still be mounted.
pub struct Paused {
    shell: Option<GuestShell>,
    shares: Vec<Share>,
    /// Set when a share may still be mounted: said to the user if QEMU then refuses.
    pub problem: Option<String>,
}

/// Unmounts the running VM's mounted 9p shares in the guest. Never fails: when the guest
/// cannot be reached or a share is busy, `problem` says so and QEMU has the last word.
pub fn unmount(root: &Root, env: &Env, vm: &StoredVm) -> Paused {
    // Unmounting needs root; a guest the registry does not know gets the common `sudo -n`.
    let escalate = guests::registry(root)
        .ok()
        .and_then(|registry| registry.get(&vm.config.os).map(|g| g.escalate.clone()))
        .unwrap_or_else(|| vec!["sudo".to_owned(), "-n".to_owned()]);
    // Through the VM's master when one answers: a fresh connection costs a handshake, and
    // sshd may hold a burst of them against the host (OpenSSH's PerSourcePenalties).
    let shell = match GuestShell::new(root, env, vm, &escalate)
        .and_then(|shell| shell.through_live_master(root, env, vm))
    {
        Ok(shell) => shell,
        Err(err) => return unreachable(None, &err.to_string()),
    };
    let captured = match shell.capture(UNMOUNT, GUEST_STEP, &Cancel::default()) {
        Ok(captured) if captured.success() => captured,
        Ok(_) => return unreachable(Some(shell), "ssh did not run the unmount"),
        Err(err) => return unreachable(Some(shell), &err.to_string()),
    };
    let (shares, busy) = parse(&captured.stdout);
    let problem =
        (!busy.is_empty()).then(|| format!("stoat could not unmount it ({})", busy.join("; ")));
    Paused {
        shell: Some(shell),
        shares,
        problem,
    }
}

fn unreachable(shell: Option<GuestShell>, why: &str) -> Paused {
    Paused {
        shell,
        shares: Vec::new(),
        problem: Some(format!(
            "stoat could not reach the guest over ssh to unmount it ({why})"
        )),
    }
}

/// The unmounted shares and the busy ones (`<point> <why>`), from [`UNMOUNT`]'s output.
fn parse(stdout: &str) -> (Vec<Share>, Vec<String>) {
    let mut shares = Vec::new();
    let mut busy = Vec::new();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("ok") => {
                if let (Some(tag), Some(point), Some(mode)) =
                    (words.next(), words.next(), words.next())
                {
                    shares.push(Share {
                        tag: tag.to_owned(),
                        point: point.to_owned(),
                        mode: match mode {
                            "ro" => "ro",
                            _ => "rw",
                        }
                        .to_owned(),
                    });
                }
            }
            Some("busy") => busy.push(words.collect::<Vec<_>>().join(" ")),
            _ => {}
        }
    }
    (shares, busy)
}

/// The guest script that mounts `shares` again (each one not mounted now).
fn mount_script(shares: &[Share]) -> String {
    let mut body = String::new();
    for share in shares {
        let tag = crate::shell::quote(&share.tag);
        let point = crate::shell::quote(&share.point);
        body.push_str(&format!(
            "awk -v p={point} '$2 == p && $3 == \"9p\" {{found=1}} END {{exit !found}}' /proc/mounts || mount -t 9p -o trans=virtio,version=9p2000.L,{} {tag} {point}\n",
            share.mode
        ));
    }
    body
}

/// Mounts again what [`unmount`] unmounted. Best effort: a share that does not come back is
/// not a failed snapshot (the guest can `mount -a`); nothing to do when nothing was unmounted.
pub fn remount(paused: Paused) {
    let (Some(shell), false) = (paused.shell, paused.shares.is_empty()) else {
        return;
    };
    let _ = shell.capture(
        &mount_script(&paused.shares),
        GUEST_STEP,
        &Cancel::default(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unmount_report_parses() {
        let (shares, busy) = parse(
            "ok work /mnt/work rw\nbusy /mnt/host umount: /mnt/host: target is busy. \nok host /srv/h ro\nnoise\n",
        );
        assert_eq!(
            shares,
            vec![
                Share {
                    tag: "work".into(),
                    point: "/mnt/work".into(),
                    mode: "rw".into()
                },
                Share {
                    tag: "host".into(),
                    point: "/srv/h".into(),
                    mode: "ro".into()
                },
            ]
        );
        assert_eq!(busy, vec!["/mnt/host umount: /mnt/host: target is busy."]);
    }

    #[test]
    fn the_mount_script_mounts_each_share_with_its_mode() {
        let script = mount_script(&[Share {
            tag: "host".into(),
            point: "/mnt/host".into(),
            mode: "ro".into(),
        }]);
        assert!(
            script.contains("mount -t 9p -o trans=virtio,version=9p2000.L,ro 'host' '/mnt/host'"),
            "{script}"
        );
    }
}
