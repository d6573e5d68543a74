//! `snapshot`: list, save, restore and delete qcow2 snapshots of a STOPPED VM through
//! `qemu-img snapshot -l|-c|-a|-d <vm>/disk.qcow2` (docs/contract.md behaviour#host-commands).
//!
//! A running VM goes through QEMU's monitor (savevm/loadvm/delvm), with its 9p shares
//! unmounted in the guest around a save or a restore ([`super::share_pause`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use stoat_wire::dto::{SnapshotActData, SnapshotListData};

use crate::hint::{Op, Said, Setting, Step};
use crate::images::snapshot_table::{parse_table, Row};
use crate::vm::Mode;
use crate::vm::{self, StoredVm};
use crate::{lock, Env, Error, Result, Root};

/// What to do with a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Save a new snapshot; a tag that already names one is refused (nothing lost by mistake).
    Save,
    /// Save, replacing the snapshot the tag names if there is one (`--force`).
    Replace,
    Restore,
    Delete,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Save | Action::Replace => "save",
            Action::Restore => "restore",
            Action::Delete => "delete",
        }
    }
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
    if vm.config.mode == Mode::Live {
        return Err(Error::NoDisk { name: vm.name });
    }
    Ok(vm)
}

fn disk_path(vm: &StoredVm) -> PathBuf {
    vm.files().disk()
}

/// A failure while `rm` took the VM away is that VM's absence: the answer a sequential
/// order gives (rm first), never the half-deleted disk's `internal`.
fn or_gone<T>(root: &Root, name: &str, result: Result<T>) -> Result<T> {
    result.map_err(|err| match load_disk_vm(root, name) {
        Err(gone @ Error::NotFound { .. }) => gone,
        _ => err,
    })
}

/// Lists a VM's snapshots. A cloud VM that never started has no disk yet: an empty list.
pub fn list(root: &Root, env: &Env, name: &str) -> Result<SnapshotListData> {
    or_gone(root, name, list_now(root, env, name))
}

fn list_now(root: &Root, env: &Env, name: &str) -> Result<SnapshotListData> {
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
    // The VM's own lock, as up and down take it: a snapshot never meets a VM half started
    // or half stopped. Loaded again under it, as it is now.
    let _vm_lock = or_gone(root, name, lock::exclusive_in_vm(&vm.dir))?;
    or_gone(root, name, act_locked(root, env, name, tag, action))
}

fn act_locked(
    root: &Root,
    env: &Env,
    name: &str,
    tag: &str,
    action: Action,
) -> Result<SnapshotActData> {
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
        Action::Save if !existing.is_empty() => return Err(tag_taken(&vm.name, tag)),
        Action::Save | Action::Replace => {
            // A tag names one snapshot: the new one replaces the old.
            // Create first, then delete the old ones, so a failure never loses both.
            match qemu_img(env, &["-c", tag], &disk) {
                Ok(_) => delete_oldest(env, tag, existing.len(), &disk)?,
                // A qemu-img stopped by a cancel may have written the snapshot before it
                // died: the disk says. Written, the save is done (the old ones of that tag
                // still go); not written, nothing changed.
                Err(Error::Canceled) => {
                    if tag_count_now(env, tag, &disk)? <= existing.len() {
                        return Err(Error::Canceled);
                    }
                    finish_deletes(env, tag, existing.len(), &disk)?;
                }
                Err(e) => return Err(e),
            }
        }
        Action::Restore | Action::Delete if existing.is_empty() => {
            return Err(no_such_tag(&vm.name, tag));
        }
        Action::Restore => match qemu_img(env, &["-a", tag], &disk) {
            Ok(_) => {}
            // Applied means the disk's active tables are the snapshot's now.
            Err(Error::Canceled) if qcow2::active_is_snapshot(&disk, tag) == Some(true) => {}
            Err(e) => return Err(e),
        },
        Action::Delete => match delete_oldest(env, tag, existing.len(), &disk) {
            Ok(()) => {}
            // Some deleted before the cancel: the delete is done, so the rest go too.
            Err(Error::Canceled) => {
                let left = tag_count_now(env, tag, &disk)?;
                if left >= existing.len() {
                    return Err(Error::Canceled);
                }
                finish_deletes(env, tag, left, &disk)?;
            }
            Err(e) => return Err(e),
        },
    }
    Ok(SnapshotActData {
        vm: vm.name,
        tag: tag.to_owned(),
        action: action.as_str().to_owned(),
    })
}

/// A restore or delete of a tag that names no snapshot.
fn no_such_tag(vm: &str, tag: &str) -> Error {
    Error::InvalidSpec(format!("{vm} has no snapshot named {tag:?}"))
}

/// A save over a tag that names a snapshot already, without being told to replace it.
fn tag_taken(vm: &str, tag: &str) -> Error {
    let replace = Step::on(Op::Snapshot, vm)
        .operand(tag)
        .with(Setting::Force, None);
    Error::spelled(
        Error::InvalidSpec,
        Said::text(format!("{vm} already has a snapshot named {tag:?}; "))
            .step(replace)
            .then(" replaces it, or pick another tag"),
    )
}

/// Deletes the `count` oldest snapshots named `tag`: `qemu-img snapshot -d` addresses a
/// snapshot by name only and removes the first (oldest) match.
fn delete_oldest(env: &Env, tag: &str, count: usize, disk: &Path) -> Result<()> {
    for _ in 0..count {
        qemu_img(env, &["-d", tag], disk)?;
    }
    Ok(())
}

/// How long one qemu-img run that finishes a cancelled change (or looks at the disk after
/// one) may take: the cancel must still answer.
const AFTER_CANCEL_LIMIT: Duration = Duration::from_secs(20);

/// After a cancel: how many snapshots named `tag` the disk has now (qemu-img runs although
/// the command was cancelled; it only reads).
fn tag_count_now(env: &Env, tag: &str, disk: &Path) -> Result<usize> {
    let out = qemu_img_as(env, &["-l"], disk, Run::AfterCancel)?;
    Ok(parse_table(&out)
        .into_iter()
        .filter(|row| row.snapshot.tag == tag)
        .count())
}

/// After a cancel, a change that had taken is completed: the `count` oldest snapshots
/// named `tag` are deleted (a save's replaced ones, a delete's remaining ones).
fn finish_deletes(env: &Env, tag: &str, count: usize, disk: &Path) -> Result<()> {
    for _ in 0..count {
        qemu_img_as(env, &["-d", tag], disk, Run::AfterCancel)?;
    }
    Ok(())
}

/// A running VM's snapshots, from the monitor's `info snapshots` (QEMU has the disk open).
fn running_list(vm: &StoredVm) -> Result<SnapshotListData> {
    let mut qmp = crate::vm::connect_qmp(vm)?;
    let rows = parse_table(&qmp.hmp("info snapshots")?);
    Ok(SnapshotListData {
        vm: vm.name.clone(),
        snapshots: rows.into_iter().map(|row| row.snapshot).collect(),
    })
}

/// How long the monitor may take to answer a live save or restore.
const RAM_STATE_LIMIT: Duration = Duration::from_secs(600);

/// savevm / loadvm / delvm through the monitor. Restore and delete of an unknown tag are
/// `invalid_spec`, as offline; QEMU's refusals are `monitor_rejected`. Save and restore
/// unmount the guest's 9p shares around the command ([`super::share_pause`]).
fn running_act(root: &Root, env: &Env, vm: &StoredVm, tag: &str, action: Action) -> Result<()> {
    let mut qmp = crate::vm::connect_qmp(vm)?;
    if action != Action::Replace {
        let rows = parse_table(&qmp.hmp("info snapshots")?);
        let exists = rows.iter().any(|row| row.snapshot.tag == tag);
        match (action, exists) {
            (Action::Save, true) => return Err(tag_taken(&vm.name, tag)),
            (Action::Restore | Action::Delete, false) => return Err(no_such_tag(&vm.name, tag)),
            _ => {}
        }
    }
    let verb = match action {
        Action::Save | Action::Replace => "savevm",
        Action::Restore => "loadvm",
        Action::Delete => return qmp.hmp_silent(&format!("delvm {tag}")).map_err(Error::from),
    };
    let paused = super::share_pause::unmount(root, env, vm);
    if action == Action::Restore {
        // The guest's TCP state goes back in time: a reused ssh connection would be out of step.
        crate::ssh::mux::close(env, vm);
    }
    // The monitor answers savevm and loadvm when the guest's RAM is written or read back:
    // seconds for a small idle guest, much longer for a large or busy one, or on a loaded host.
    let answer = qmp
        .set_timeout(RAM_STATE_LIMIT)
        .and_then(|()| qmp.hmp_silent(&format!("{verb} {tag}")));
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

/// How a qemu-img run relates to a cancel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Stopped by a cancel like every tool (its end is then `canceled`).
    Normal,
    /// Runs although a cancel came, bounded by [`AFTER_CANCEL_LIMIT`]: it reads the disk or
    /// completes a change that had already taken.
    AfterCancel,
}

/// Runs `qemu-img snapshot <args> <disk>`; returns stdout, or a `qemu-img` tool error.
fn qemu_img(env: &Env, args: &[&str], disk: &Path) -> Result<String> {
    qemu_img_as(env, args, disk, Run::Normal)
}

fn qemu_img_as(env: &Env, args: &[&str], disk: &Path, run: Run) -> Result<String> {
    let mut command = crate::images::qemu_img::command(env)?;
    command.arg("snapshot").args(args).arg(disk);
    let output = match run {
        Run::Normal => crate::child::output(&mut command, crate::child::Group::Own),
        Run::AfterCancel => crate::child::cleanup_output(&mut command, AFTER_CANCEL_LIMIT),
    }
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

/// Just enough of the qcow2 format to tell whether a restore took: a restore makes the
/// image's active L1 table point at exactly the L2 tables of the snapshot's L1 table.
mod qcow2 {
    use std::io::{Read, Seek, SeekFrom};
    use std::path::Path;

    /// The offset bits of an L1 entry (the flag bits, such as "copied", are left out).
    const L1_OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
    /// Sanity bounds for what a header claims (a stoat VM's disk is far inside them).
    const MAX_L1: u32 = 1 << 24;
    const MAX_SNAPSHOTS: u32 = 1 << 16;

    fn be32(b: &[u8]) -> u32 {
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    fn be64(b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        u64::from_be_bytes(a)
    }

    fn read_at(file: &mut std::fs::File, offset: u64, len: usize) -> Option<Vec<u8>> {
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut buf = vec![0u8; len];
        file.read_exact(&mut buf).ok()?;
        Some(buf)
    }

    fn l1(file: &mut std::fs::File, offset: u64, size: u32) -> Option<Vec<u64>> {
        if size > MAX_L1 {
            return None;
        }
        let bytes = read_at(file, offset, size as usize * 8)?;
        Some(
            bytes
                .chunks_exact(8)
                .map(|e| be64(e) & L1_OFFSET_MASK)
                .collect(),
        )
    }

    /// Whether the active L1 table of `disk` equals that of its first snapshot named `tag`
    /// (the one `qemu-img snapshot -a` applies); `None` when the file cannot be read as a
    /// qcow2 or has no such snapshot.
    pub fn active_is_snapshot(disk: &Path, tag: &str) -> Option<bool> {
        let mut file = std::fs::File::open(disk).ok()?;
        let header = read_at(&mut file, 0, 72)?;
        if &header[..4] != b"QFI\xfb" {
            return None;
        }
        let active = l1(&mut file, be64(&header[40..]), be32(&header[36..]))?;
        let count = be32(&header[60..]);
        if count > MAX_SNAPSHOTS {
            return None;
        }
        let mut at = be64(&header[64..]);
        for _ in 0..count {
            let entry = read_at(&mut file, at, 40)?;
            let (l1_offset, l1_size) = (be64(&entry[0..]), be32(&entry[8..]));
            let id_size = u64::from(u16::from_be_bytes([entry[12], entry[13]]));
            let name_size = u16::from_be_bytes([entry[14], entry[15]]) as usize;
            let extra = u64::from(be32(&entry[36..]));
            let name = read_at(&mut file, at + 40 + extra + id_size, name_size)?;
            let len = 40 + extra + id_size + name_size as u64;
            at += len.div_ceil(8) * 8;
            if name == tag.as_bytes() {
                let snapshot = l1(&mut file, l1_offset, l1_size)?;
                let width = active.len().max(snapshot.len());
                let entry = |t: &[u64], i: usize| t.get(i).copied().unwrap_or(0);
                return Some((0..width).all(|i| entry(&active, i) == entry(&snapshot, i)));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
