//! Copying a VM disk file so that the copy shares nothing writable with its source: a reflink
//! (FICLONE) where the filesystem offers one, otherwise a hole-preserving byte copy. The copy
//! is made owner-only (0600) and synced before it is reported done.
//!
//! A byte-exact copy keeps everything a qcow2 holds (internal snapshots, the reference to a
//! read-only catalog base), which `qemu-img convert` would drop or flatten.

use rustix::fs;
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::{Cancel, Error, Result};

/// How the copy was made (reported by the benchmark and the decision record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    Reflink,
    Sparse,
}

/// How much a byte copy moves between cancellation checks.
const CHUNK: usize = 64 << 20;

/// Copies `src` to the new file `dst` (which must not exist), owner-only.
pub fn copy_disk(src: &Path, dst: &Path, cancel: &Cancel) -> Result<CopyKind> {
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", file_label(dst)), e);
    let mut from =
        File::open(src).map_err(|e| Error::io(format!("open {}", file_label(src)), e))?;
    let mut to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dst)
        .map_err(|e| io("create", e))?;
    // The mode given to open is masked by the umask; say it again.
    to.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io("chmod", e))?;
    let kind = if reflink(&from, &to) {
        CopyKind::Reflink
    } else {
        sparse_copy(&mut from, &mut to, cancel).map_err(|e| match e {
            CopyError::Canceled => Error::Canceled,
            CopyError::Io(e) => io("copy into", e),
        })?;
        CopyKind::Sparse
    };
    to.sync_all().map_err(|e| io("sync", e))?;
    Ok(kind)
}

fn file_label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Shares the source's extents copy-on-write; false when the filesystem cannot.
fn reflink(from: &File, to: &File) -> bool {
    fs::ioctl_ficlone(to, from).is_ok()
}

enum CopyError {
    Canceled,
    Io(std::io::Error),
}

impl From<std::io::Error> for CopyError {
    fn from(e: std::io::Error) -> Self {
        CopyError::Io(e)
    }
}

/// Copies the data regions only (SEEK_DATA/SEEK_HOLE), so holes stay holes.
fn sparse_copy(
    from: &mut File,
    to: &mut File,
    cancel: &Cancel,
) -> std::result::Result<(), CopyError> {
    let len = from.metadata()?.len();
    to.set_len(len)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut pos: u64 = 0;
    while pos < len {
        let Some((start, end)) = next_data(from, pos, len)? else {
            break;
        };
        let mut at = start;
        while at < end {
            if cancel.is_cancelled() {
                return Err(CopyError::Canceled);
            }
            let want = (end - at).min(CHUNK as u64);
            let copied = match kernel_copy(from, to, at, want)? {
                Some(0) | None => user_copy(from, to, at, want, &mut buf)?,
                Some(n) => n,
            };
            if copied == 0 {
                break;
            }
            at += copied;
        }
        pos = end;
    }
    Ok(())
}

/// Copies up to `len` bytes at `offset` inside the kernel (copy_file_range); `None` when the
/// kernel or filesystem cannot, so the caller copies through user space.
fn kernel_copy(from: &File, to: &File, offset: u64, len: u64) -> std::io::Result<Option<u64>> {
    // The kernel takes a signed offset.
    i64::try_from(offset).map_err(std::io::Error::other)?;
    let (mut off_in, mut off_out) = (offset, offset);
    let len = usize::try_from(len).unwrap_or(CHUNK);
    match fs::copy_file_range(from, Some(&mut off_in), to, Some(&mut off_out), len) {
        Ok(n) => Ok(Some(n as u64)),
        Err(Errno::XDEV | Errno::NOSYS | Errno::INVAL | Errno::OPNOTSUPP) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Copies up to `len` bytes at `offset` through `buf`.
fn user_copy(
    from: &mut File,
    to: &mut File,
    offset: u64,
    len: u64,
    buf: &mut [u8],
) -> std::io::Result<u64> {
    let want = usize::try_from(len).unwrap_or(buf.len()).min(buf.len());
    from.seek(SeekFrom::Start(offset))?;
    let got = from.read(&mut buf[..want])?;
    to.seek(SeekFrom::Start(offset))?;
    to.write_all(&buf[..got])?;
    Ok(got as u64)
}

/// The next data region at or after `pos`, or `None` when only a hole remains. A filesystem
/// without SEEK_DATA reports the whole rest as data.
fn next_data(file: &File, pos: u64, len: u64) -> std::io::Result<Option<(u64, u64)>> {
    // The kernel takes a signed offset.
    i64::try_from(pos).map_err(std::io::Error::other)?;
    let start = match fs::seek(file, fs::SeekFrom::Data(pos)) {
        Ok(start) => start,
        Err(Errno::NXIO) => return Ok(None),
        Err(Errno::INVAL) => return Ok(Some((pos, len))),
        Err(err) => return Err(err.into()),
    };
    match fs::seek(file, fs::SeekFrom::Hole(start)) {
        Ok(end) => Ok(Some((start, end.min(len)))),
        Err(_) => Ok(Some((start, len))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_bytes_and_keeps_holes_owner_only() {
        let temp = tempfile::tempdir().unwrap();
        let src = temp.path().join("src");
        {
            let mut f = File::create(&src).unwrap();
            f.write_all(b"head").unwrap();
            f.seek(SeekFrom::Start(64 << 20)).unwrap();
            f.write_all(b"tail").unwrap();
        }
        let dst = temp.path().join("dst");
        copy_disk(&src, &dst, &Cancel::default()).unwrap();
        assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&dst).unwrap());
        let meta = std::fs::metadata(&dst).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() * 512 < 8 << 20, "holes stay holes");
        assert!(
            copy_disk(&src, &dst, &Cancel::default()).is_err(),
            "never overwrites"
        );
    }
}
