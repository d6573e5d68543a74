//! flock-based locks: the data-root lock held across create, clone, rm, update and prune,
//! per-VM locks (up, down, apply) and a few others. Released when the guard drops, even on
//! panic.
//!
//! A wait for a lock is bounded (ten minutes unless the binary says otherwise, see
//! [`configure`]) and ends early on a cancel. Whoever takes a lock writes its pid and command
//! into the lock file, so a wait that gives up can say what holds it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::IoContext;
use crate::{Error, Result};

/// How long a command waits for a lock unless `STOAT_LOCK_WAIT_SECS` says otherwise: longer
/// than any one clone or create holds the data root on a sane disk.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);
/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_millis(100);

struct Settings {
    wait: Duration,
    command: String,
}

static SETTINGS: Mutex<Settings> = Mutex::new(Settings {
    wait: DEFAULT_WAIT,
    command: String::new(),
});

fn settings() -> std::sync::MutexGuard<'static, Settings> {
    SETTINGS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets, for this process, the command a held lock names (a wire name such as `update`) and
/// the wait bound: `STOAT_LOCK_WAIT_SECS` (seconds, decimals allowed) or [`DEFAULT_WAIT`].
pub fn configure(command: &str, env: &crate::Env) {
    let wait = env
        .get("STOAT_LOCK_WAIT_SECS")
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs >= 0.0 && *secs < 1e9)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_WAIT);
    let mut settings = settings();
    settings.wait = wait;
    settings.command = command.to_owned();
}

/// A held flock; dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

fn open(path: &Path) -> Result<File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).context(|| format!("create {}", parent.display()))?;
    }
    open_in_place(path)
}

/// Opens (creating) the lock file in a directory that must already exist.
fn open_in_place(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .context(|| format!("open lock {}", path.display()))
}

/// One attempt: `Some` when the lock is now ours.
fn attempt(file: &File, path: &Path) -> Result<bool> {
    loop {
        let Err(err) =
            rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        else {
            return Ok(true);
        };
        let err = std::io::Error::from(err);
        match err.kind() {
            std::io::ErrorKind::WouldBlock => return Ok(false),
            std::io::ErrorKind::Interrupted => continue,
            _ => return Err(err).context(|| format!("lock {}", path.display())),
        }
    }
}

/// Writes who holds the lock now (best effort: the lock works without it).
fn record_holder(mut file: &File) {
    let command = settings().command.clone();
    let line = format!("pid={} command={}\n", std::process::id(), command);
    if file.set_len(0).is_ok() {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Says what holds the lock at `path`, from what its holder wrote.
fn describe_holder(path: &Path) -> String {
    let text = crate::bounded::read_text(path, 4096).unwrap_or_default();
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|word| word.strip_prefix(key))
            .map(str::to_owned)
    };
    let pid = field("pid=").and_then(|p| p.parse::<i32>().ok());
    match (pid, field("command=")) {
        (Some(pid), command) if crate::vm::staging::pid_alive(pid) => match command {
            Some(command) if !command.is_empty() => format!("`stoat {command}` (pid {pid})"),
            _ => format!("pid {pid}"),
        },
        _ => "another process".to_owned(),
    }
}

/// Waits (bounded, see the module comment) for an exclusive lock on `path`; `timeout`
/// naming the holder when the bound passes, `canceled` when the command is cancelled.
pub fn exclusive(path: &Path) -> Result<LockGuard> {
    wait_for(open(path)?, path)
}

fn wait_for(file: File, path: &Path) -> Result<LockGuard> {
    let wait = settings().wait;
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(5);
    let mut first = true;
    while !attempt(&file, path)? {
        if first {
            crate::fault::pause("lock-busy");
            first = false;
        }
        if crate::child::stopping() {
            return Err(Error::Canceled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::Timeout(format!(
                "gave up after {:.0} s waiting for the lock {}, held by {}",
                wait.as_secs_f64(),
                path.display(),
                describe_holder(path)
            )));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(MAX_PAUSE);
    }
    record_holder(&file);
    Ok(LockGuard { _file: file })
}

/// [`exclusive`] on a lock inside a VM's directory: a directory `rm` took away is never made
/// again (it would read as a name taken by no VM); its absence is the caller's `not_found`.
pub fn exclusive_in_vm(vm_dir: &Path) -> Result<LockGuard> {
    let path = crate::vm::VmDir::at(vm_dir).lock();
    let file = match open_in_place(&path) {
        Ok(file) => file,
        Err(_) if !vm_dir.is_dir() => {
            return Err(Error::NotFound {
                name: vm_dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            })
        }
        Err(e) => return Err(e),
    };
    wait_for(file, &path)
}

/// The data-root lock, then VM `name`'s own lock when the VM has a directory: what a command
/// that changes or removes a VM's record holds (rm, update, forward, clone's source), so it
/// never meets the VM half started, half stopped or in a live snapshot. While `up`, `down`
/// or a snapshot holds the VM's lock, the data-root lock is let go for the wait (other VMs'
/// commands go on), then both are taken again. No VM lock when there is no directory: the
/// caller's load answers for the missing VM.
pub fn root_and_vm(root: &crate::Root, name: &str) -> Result<(LockGuard, Option<LockGuard>)> {
    loop {
        let root_lock = exclusive(&root.lock_file())?;
        let Some(vm_dir) = crate::vm::own_dir(root, name) else {
            return Ok((root_lock, None));
        };
        let vm_lock_path = crate::vm::VmDir::at(&vm_dir).lock();
        let file = match open_in_place(&vm_lock_path) {
            Ok(file) => file,
            // Taken away between the look and the open (a broken VM's dir is still ours).
            Err(_) if !vm_dir.is_dir() => return Ok((root_lock, None)),
            Err(e) => return Err(e),
        };
        if attempt(&file, &vm_lock_path)? {
            record_holder(&file);
            return Ok((root_lock, Some(LockGuard { _file: file })));
        }
        drop(root_lock);
        match exclusive_in_vm(&vm_dir) {
            // Its holder is done; take both again, in order.
            Ok(held) => drop(held),
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Takes an exclusive lock on `path` if nobody holds it; `None` when somebody does.
pub fn try_exclusive(path: &Path) -> Result<Option<LockGuard>> {
    let file = open(path)?;
    if attempt(&file, path)? {
        record_holder(&file);
        Ok(Some(LockGuard { _file: file }))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_vm_waits_for_the_vm_lock_then_holds_both() {
        let temp = tempfile::tempdir().unwrap();
        let root = crate::Root::at(temp.path());
        std::fs::create_dir(root.vm_dir("a")).unwrap();
        let held = exclusive_in_vm(&root.vm_dir("a")).unwrap();
        let waiter = {
            let root = root.clone();
            std::thread::spawn(move || {
                let (_root_lock, vm_lock) = root_and_vm(&root, "a").unwrap();
                // Both held now: neither can be taken by anyone else.
                let free = |path: &Path| try_exclusive(path).unwrap().is_some();
                (
                    vm_lock.is_some(),
                    free(&root.lock_file()),
                    free(&root.vm_dir("a").join(".lock")),
                )
            })
        };
        // Whenever the waiter runs, the data-root lock is not kept from others for long:
        // it is let go while the VM's lock is held here.
        let deadline = Instant::now() + Duration::from_secs(30);
        let root_lock = loop {
            if let Some(guard) = try_exclusive(&root.lock_file()).unwrap() {
                break guard;
            }
            assert!(Instant::now() < deadline, "the data-root lock stayed held");
            std::thread::yield_now();
        };
        drop(root_lock);
        drop(held);
        assert_eq!(waiter.join().unwrap(), (true, false, false));
    }

    #[test]
    fn root_and_vm_takes_no_vm_lock_outside_the_data_root() {
        let temp = tempfile::tempdir().unwrap();
        let root = crate::Root::at(temp.path().join("root"));
        std::fs::create_dir_all(root.dir()).unwrap();
        let outside = temp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.vm_dir("link")).unwrap();
        for name in ["missing", "link", "../outside", ".staging", ""] {
            let (_root_lock, vm_lock) = root_and_vm(&root, name).unwrap();
            assert!(vm_lock.is_none(), "{name:?}");
        }
        assert!(!outside.join(".lock").exists());
    }
}
