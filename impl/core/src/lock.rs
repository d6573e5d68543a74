//! flock-based locks: the data-root lock held across create, clone, rm, update and prune, and
//! non-blocking per-VM locks (apply). Released when the guard drops, even on panic.

use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::IoContext;
use crate::Result;

/// A held flock; dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

fn open(path: &Path) -> Result<File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).context(|| format!("create {}", parent.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .context(|| format!("open lock {}", path.display()))
}

/// Waits for an exclusive lock on `path`.
pub fn exclusive(path: &Path) -> Result<LockGuard> {
    let file = open(path)?;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(LockGuard { _file: file });
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context(|| format!("lock {}", path.display()));
        }
    }
}

/// Takes an exclusive lock on `path` if nobody holds it; `None` when somebody does.
pub fn try_exclusive(path: &Path) -> Result<Option<LockGuard>> {
    let file = open(path)?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(LockGuard { _file: file }));
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(err).context(|| format!("lock {}", path.display()))
    }
}
