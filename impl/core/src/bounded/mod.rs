//! Reading a file that stoat parses, with a size cap: a catalog, a manifest, a recipe, a
//! stoat.toml or a vm.toml that turns out to be `/dev/zero` or a huge file is refused
//! instead of filling memory.

pub mod line;
pub mod tail;

use std::io::Read;
use std::path::Path;

/// Why a bounded read failed.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    TooBig {
        limit: u64,
    },
    /// A FIFO or a socket: reading it could wait forever for a writer.
    NotRegular {
        kind: &'static str,
    },
}

impl ReadError {
    /// A short phrase that completes "vm.toml ..." or "<file> ...".
    pub fn describe(&self) -> String {
        match self {
            ReadError::Io(e) if e.raw_os_error() == Some(libc::EISDIR) => "is a directory".into(),
            ReadError::Io(e) => format!("cannot be read: {e}"),
            ReadError::TooBig { limit } => format!("is larger than {}", human(*limit)),
            ReadError::NotRegular { kind } => format!("is {kind}, not a regular file"),
        }
    }
}

/// The largest text file stoat parses (catalogs, manifests, recipes, project files); real
/// ones are a few kilobytes.
pub const TEXT_LIMIT: u64 = 4 << 20;

fn human(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

/// The payload of the I/O error [`read_to_string`] gives for a file over its limit; the
/// error table reads it as bad input (`invalid_spec`), not a host failure.
#[derive(Debug)]
pub struct TooBig {
    limit: u64,
}

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the file is larger than {}", human(self.limit))
    }
}

impl std::error::Error for TooBig {}

/// The payload of the I/O error [`read_to_string`] gives for a FIFO or a socket; the error
/// table reads it as bad input (`invalid_spec`), like [`TooBig`].
#[derive(Debug)]
pub struct NotRegular {
    kind: &'static str,
}

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the file is {}, not a regular file", self.kind)
    }
}

impl std::error::Error for NotRegular {}

/// Whether `error` is [`read_to_string`]'s refusal of a file over its limit, or of a FIFO or
/// socket.
pub fn is_too_big(error: &std::io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<TooBig>() || inner.is::<NotRegular>())
}

/// `std::fs::read_to_string` capped at [`TEXT_LIMIT`]: a longer file (or an endless device)
/// is an `InvalidData` error carrying [`TooBig`], so callers keep their own error mapping.
pub fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    match read_text(path.as_ref(), TEXT_LIMIT) {
        Ok(text) => Ok(text),
        Err(ReadError::Io(e)) => Err(e),
        Err(ReadError::TooBig { limit }) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            TooBig { limit },
        )),
        Err(ReadError::NotRegular { kind }) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NotRegular { kind },
        )),
    }
}

/// Opens `path` for reading without ever waiting: `O_NONBLOCK`, so the open of a FIFO with
/// no writer returns at once, and a FIFO or socket is then refused by its type; a device
/// that has nothing to read fails its read (EAGAIN) instead of blocking.
pub fn open(path: &Path) -> Result<std::fs::File, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(ReadError::Io)?;
    let kind = file.metadata().map_err(ReadError::Io)?.file_type();
    if kind.is_fifo() {
        return Err(ReadError::NotRegular { kind: "a FIFO" });
    }
    if kind.is_socket() {
        return Err(ReadError::NotRegular { kind: "a socket" });
    }
    Ok(file)
}

/// Reads at most `limit` bytes of `path`; a longer file (or endless device) is `TooBig`.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open(path)?;
    // Room for a typical file up front: it is then read by one read(2) and the one that
    // finds the end, not by a series of small growing reads.
    let mut bytes = Vec::with_capacity(limit.saturating_add(1).min(16 * 1024) as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooBig { limit });
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_input_is_refused_at_the_limit() {
        match read(Path::new("/dev/zero"), 4096) {
            Err(ReadError::TooBig { limit: 4096 }) => {}
            other => panic!("{other:?}"),
        }
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read(&file, 3).unwrap(), b"abc");
        assert_eq!(
            read(temp.path(), 3).unwrap_err().describe(),
            "is a directory"
        );
        let endless = read_to_string("/dev/zero").unwrap_err();
        assert_eq!(endless.to_string(), "the file is larger than 4 MiB");
        assert!(is_too_big(&endless));
        let fifo = temp.path().join("fifo");
        use rustix::fs::{mkfifoat, Mode, CWD};
        mkfifoat(CWD, &fifo, Mode::RUSR | Mode::WUSR).unwrap();
        assert_eq!(
            read(&fifo, 3).unwrap_err().describe(),
            "is a FIFO, not a regular file"
        );
        let refused = read_to_string(&fifo).unwrap_err();
        assert!(is_too_big(&refused));
        assert_eq!(
            refused.to_string(),
            "the file is a FIFO, not a regular file"
        );
        assert_eq!(
            read_to_string(temp.path().join("none")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
    }
}
