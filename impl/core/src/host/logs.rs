//! `logs`: the tail of a VM's console or apply log, or of stoat's own log (docs/contract.md behaviour#host-commands
//! "logs"; design#logs, design#which).
//!
//! Lines come back as written: stoat never writes a console password into any log (the
//! password is typed at the console, never echoed or logged), so nothing is scrubbed, and a
//! password that is also a common word (`stoat`) leaves the logs readable.

use std::path::Path;

use stoat_wire::dto::LogsData;

use crate::vm;
use crate::{Error, Result, Root};

/// Which VM log to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Console,
    Apply,
}

impl Which {
    /// Parses `--which`; anything but `console` or `apply` is `unknown_log`.
    pub fn parse(text: &str) -> Result<Which> {
        match text {
            "console" => Ok(Which::Console),
            "apply" => Ok(Which::Apply),
            other => Err(Error::UnknownLog(other.to_owned())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Which::Console => "console",
            Which::Apply => "apply",
        }
    }

    fn file_name(self) -> &'static str {
        match self {
            Which::Console => "console.log",
            Which::Apply => "last-provision.log",
        }
    }
}

/// Reads a VM's log. A broken VM works (only its directory is needed); `not_found` otherwise.
pub fn vm_log(root: &Root, name: &str, which: &str, tail: i64) -> Result<LogsData> {
    let which = Which::parse(which)?;
    let loaded = vm::load(root, name)?;
    let lines = read_tail(&loaded.dir().join(which.file_name()), tail)?;
    Ok(LogsData {
        vm: Some(loaded.name().to_owned()),
        which: Some(which.as_str().to_owned()),
        lines,
    })
}

/// Reads stoat's own log, `<root>/logs/stoat.log`.
pub fn stoat_log(root: &Root, tail: i64) -> Result<LogsData> {
    let lines = read_tail(&root.logs().join("stoat.log"), tail)?;
    Ok(LogsData {
        vm: None,
        which: None,
        lines,
    })
}

/// Reads a file's last `tail` lines (all when `tail <= 0`); a missing file is empty.
fn read_tail(path: &Path, tail: i64) -> Result<Vec<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(tail_lines(&String::from_utf8_lossy(&bytes), tail)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(format!("read {}", path.display()), e)),
    }
}

/// Splits on `\n` after trimming trailing newlines, keeping the last `tail` when `tail > 0`.
/// A trailing `\r` (a console's CRLF) is dropped from each line.
pub fn tail_lines(text: &str, tail: i64) -> Vec<String> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.is_empty() {
        return Vec::new();
    }
    let lines: Vec<String> = trimmed
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line).to_owned())
        .collect();
    match usize::try_from(tail) {
        Ok(n) if n > 0 && n < lines.len() => lines[lines.len() - n..].to_vec(),
        _ => lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_rules() {
        assert_eq!(tail_lines("a\nb\nc\n\n", 2), ["b", "c"]);
        assert_eq!(tail_lines("a\nb\nc", 0), ["a", "b", "c"]);
        assert_eq!(tail_lines("a\nb\nc", -3), ["a", "b", "c"]);
        assert_eq!(tail_lines("a\nb", 10), ["a", "b"]);
        assert!(tail_lines("", 5).is_empty());
        assert!(tail_lines("\n\n", 5).is_empty());
        assert_eq!(tail_lines("a\r\n\nb\r\n", 0), ["a", "", "b"]);
    }

    #[test]
    fn bad_which_is_unknown_log() {
        assert!(matches!(Which::parse("dmesg"), Err(Error::UnknownLog(_))));
        assert_eq!(Which::parse("apply").unwrap(), Which::Apply);
    }
}
