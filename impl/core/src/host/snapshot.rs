//! `snapshot`: list, save, restore and delete qcow2 snapshots of a STOPPED VM through
//! `qemu-img snapshot -l|-c|-a|-d <vm>/disk.qcow2` (docs/contract.md behaviour#host-commands).
//!
//! A running VM goes through QEMU's monitor (savevm/loadvm/delvm), with its 9p shares
//! unmounted in the guest around a save or a restore ([`super::share_pause`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stoat_wire::dto::{Snapshot, SnapshotActData, SnapshotListData};

use crate::vm::{self, StoredVm};
use crate::{Env, Error, Result, Root};

/// What to do with a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Save,
    Restore,
    Delete,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Save => "save",
            Action::Restore => "restore",
            Action::Delete => "delete",
        }
    }
}

/// One row of `qemu-img snapshot -l`, with the id qemu uses to address it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub snapshot: Snapshot,
}

/// A tag must be non-empty and hold no whitespace (it is one argv word and one table field).
pub fn validate_tag(tag: &str) -> Result<()> {
    if tag.is_empty() {
        return Err(Error::InvalidSpec("snapshot tag is empty".into()));
    }
    if tag.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::InvalidSpec(format!(
            "snapshot tag {tag:?} must not contain whitespace"
        )));
    }
    Ok(())
}

/// Loads a VM that can have snapshots: `not_found`, `broken`, then live → `no_disk`.
fn load_disk_vm(root: &Root, name: &str) -> Result<StoredVm> {
    let vm = vm::load_ok(root, name)?;
    if vm.config.mode == "live" {
        return Err(Error::NoDisk { name: vm.name });
    }
    Ok(vm)
}

fn disk_path(vm: &StoredVm) -> PathBuf {
    vm.dir.join("disk.qcow2")
}

/// Lists a VM's snapshots. A cloud VM that never started has no disk yet: an empty list.
pub fn list(root: &Root, env: &Env, name: &str) -> Result<SnapshotListData> {
    let vm = load_disk_vm(root, name)?;
    if vm.running_pid().is_some() {
        return running_list(&vm);
    }
    let disk = disk_path(&vm);
    let snapshots = if disk.exists() {
        list_rows(env, &disk)?
            .into_iter()
            .map(|row| row.snapshot)
            .collect()
    } else {
        Vec::new()
    };
    Ok(SnapshotListData {
        vm: vm.name,
        snapshots,
    })
}

/// Saves, restores or deletes `tag`. Checks run in the order: tag, VM, mode, disk, tag exists.
pub fn act(
    root: &Root,
    env: &Env,
    name: &str,
    tag: &str,
    action: Action,
) -> Result<SnapshotActData> {
    validate_tag(tag)?;
    let vm = load_disk_vm(root, name)?;
    if vm.running_pid().is_some() {
        running_act(root, env, &vm, tag, action)?;
        return Ok(SnapshotActData {
            vm: vm.name,
            tag: tag.to_owned(),
            action: action.as_str().to_owned(),
        });
    }
    let disk = disk_path(&vm);
    if !disk.exists() {
        // A cloud VM gets its qcow2 at first start.
        return Err(Error::NoDisk { name: vm.name });
    }
    let existing: Vec<Row> = list_rows(env, &disk)?
        .into_iter()
        .filter(|row| row.snapshot.tag == tag)
        .collect();
    match action {
        Action::Save => {
            // Like QEMU's savevm, a tag names one snapshot: the new one replaces the old.
            // Create first, then delete the old ones, so a failure never loses both.
            qemu_img(env, &["-c", tag], &disk)?;
            delete_oldest(env, tag, existing.len(), &disk)?;
        }
        Action::Restore | Action::Delete if existing.is_empty() => {
            return Err(Error::InvalidSpec(format!(
                "{} has no snapshot named {tag:?}",
                vm.name
            )));
        }
        Action::Restore => {
            qemu_img(env, &["-a", tag], &disk)?;
        }
        Action::Delete => {
            delete_oldest(env, tag, existing.len(), &disk)?;
        }
    }
    Ok(SnapshotActData {
        vm: vm.name,
        tag: tag.to_owned(),
        action: action.as_str().to_owned(),
    })
}

/// Deletes the `count` oldest snapshots named `tag`: `qemu-img snapshot -d` addresses a
/// snapshot by name only and removes the first (oldest) match.
fn delete_oldest(env: &Env, tag: &str, count: usize, disk: &Path) -> Result<()> {
    for _ in 0..count {
        qemu_img(env, &["-d", tag], disk)?;
    }
    Ok(())
}

/// A running VM's snapshots, from the monitor's `info snapshots` (QEMU has the disk open).
fn running_list(vm: &StoredVm) -> Result<SnapshotListData> {
    let mut qmp = crate::runtime::connect_qmp(vm)?;
    let rows = parse_table(&qmp.hmp("info snapshots")?);
    Ok(SnapshotListData {
        vm: vm.name.clone(),
        snapshots: rows.into_iter().map(|row| row.snapshot).collect(),
    })
}

/// savevm / loadvm / delvm through the monitor. Restore and delete of an unknown tag are
/// `invalid_spec`, as offline; QEMU's refusals are `monitor_rejected`. Save and restore
/// unmount the guest's 9p shares around the command ([`super::share_pause`]).
fn running_act(root: &Root, env: &Env, vm: &StoredVm, tag: &str, action: Action) -> Result<()> {
    let mut qmp = crate::runtime::connect_qmp(vm)?;
    if action != Action::Save {
        let rows = parse_table(&qmp.hmp("info snapshots")?);
        if !rows.iter().any(|row| row.snapshot.tag == tag) {
            return Err(Error::InvalidSpec(format!(
                "{} has no snapshot named {tag:?}",
                vm.name
            )));
        }
    }
    let verb = match action {
        Action::Save => "savevm",
        Action::Restore => "loadvm",
        Action::Delete => return qmp.hmp_silent(&format!("delvm {tag}")).map_err(Error::from),
    };
    let paused = super::share_pause::unmount(root, env, vm);
    if action == Action::Restore {
        // The guest's TCP state goes back in time: a reused ssh connection would be out of step.
        super::ssh_mux::close(env, vm);
    }
    let answer = qmp.hmp_silent(&format!("{verb} {tag}"));
    let problem = paused.problem.clone();
    super::share_pause::remount(paused);
    answer.map_err(|error| match (error, problem) {
        // QEMU's text names the host directory: it is left out, the cause is known here.
        (crate::qemu::QemuError::MonitorRejected { command, .. }, Some(problem)) => {
            Error::MonitorRejected(format!(
                "{command} (a 9p share may still be mounted in the guest: {problem}); stop what uses it and retry, or `stoat down {}` and snapshot it stopped",
                vm.name
            ))
        }
        (error, _) => Error::from(error),
    })
}

fn list_rows(env: &Env, disk: &Path) -> Result<Vec<Row>> {
    match qemu_img(env, &["-l"], disk) {
        Ok(out) => Ok(parse_table(&out)),
        Err(Error::Tool { message, .. }) if message.contains("No such file") => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Runs `qemu-img snapshot <args> <disk>`; returns stdout, or a `qemu-img` tool error.
fn qemu_img(env: &Env, args: &[&str], disk: &Path) -> Result<String> {
    let program = env.which("qemu-img").ok_or_else(|| Error::Tool {
        tool: "qemu-img".into(),
        message: "not found on PATH; `stoat doctor` says how to install it".into(),
    })?;
    let mut command = Command::new(program);
    command
        .arg("snapshot")
        .args(args)
        .arg(disk)
        .env("PATH", env.path_var())
        .stdin(Stdio::null());
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error("run qemu-img"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(Error::Tool {
        tool: "qemu-img".into(),
        message: format!("{}{}", stderr.trim(), stdout.trim()),
    })
}

/// Parses `qemu-img snapshot -l` (or the monitor's `info snapshots`): keeps rows of at least
/// six fields whose fifth is a `YYYY-MM-DD` date. ID and ICOUNT may be `--`; CRLF is fine.
pub fn parse_table(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !is_date(fields[4]) {
                return None;
            }
            let size_display = format!("{} {}", fields[2], fields[3]);
            Some(Row {
                id: fields[0].to_owned(),
                snapshot: Snapshot {
                    tag: fields[1].to_owned(),
                    vm_state: !size_display.starts_with("0 "),
                    size_display,
                    created_display: format!("{} {}", fields[4], fields[5]),
                },
            })
        })
        .collect()
}

fn is_date(field: &str) -> bool {
    let bytes = field.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Snapshot list:\n\
ID      TAG               VM_SIZE                DATE        VM_CLOCK     ICOUNT\n\
1       clean                 0 B 2026-08-04 00:21:33  0000:00:00.000          0\n";

    #[test]
    fn parses_a_real_qemu_img_sample() {
        let rows = parse_table(SAMPLE);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].id, "1");
        assert_eq!(
            rows[0].snapshot,
            Snapshot {
                tag: "clean".into(),
                vm_state: false,
                size_display: "0 B".into(),
                created_display: "2026-08-04 00:21:33".into(),
            }
        );
    }

    #[test]
    fn tolerates_crlf_and_dashes_and_reports_vm_state() {
        let text =
            "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\r\n\
--        booted          203 MiB 2026-08-04 12:00:00  0000:01:02.003         --\r\n\
garbage line\r\n";
        let rows = parse_table(text);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].id, "--");
        assert_eq!(rows[0].snapshot.tag, "booted");
        assert!(rows[0].snapshot.vm_state);
        assert_eq!(rows[0].snapshot.size_display, "203 MiB");
        assert_eq!(rows[0].snapshot.created_display, "2026-08-04 12:00:00");
    }

    #[test]
    fn empty_or_headerless_output_is_no_rows() {
        assert!(parse_table("").is_empty());
        assert!(parse_table("Snapshot list:\nID TAG VM_SIZE DATE VM_CLOCK ICOUNT\n").is_empty());
    }

    #[test]
    fn tag_rules() {
        assert!(validate_tag("clean").is_ok());
        for bad in ["", "a b", "a\tb", "a\nb"] {
            assert!(
                matches!(validate_tag(bad), Err(Error::InvalidSpec(_))),
                "{bad:?}"
            );
        }
    }
}
