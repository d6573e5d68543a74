//! `logs`: the tail of a VM's console or apply log, or of stoat's own log (docs/contract.md behaviour#host-commands
//! "logs"; design#logs, design#which), and `logs -f`, which goes on printing what is
//! appended (docs/decisions/cli.md "logs -f").
//!
//! Lines come back as written: stoat never writes a console password into any log (the
//! password is typed at the console, never echoed or logged), so nothing is scrubbed, and a
//! password that is also a common word (`stoat`) leaves the logs readable.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use stoat_wire::dto::LogsData;

use super::log_follow::{Change, Follower, LineSink};
use crate::bounded::tail as log_tail;
use crate::vm;
use crate::{Cancel, Error, EventSink, Result, Root};

/// How often a follow looks for new lines (and whether the VM still runs).
const POLL: Duration = Duration::from_millis(100);

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

    fn path_in(self, dir: &vm::VmDir) -> PathBuf {
        match self {
            Which::Console => dir.console_log(),
            Which::Apply => dir.apply_log(),
        }
    }
}

/// Reads a VM's log. A broken VM works (only its directory is needed); `not_found` otherwise.
pub fn vm_log(root: &Root, name: &str, which: Which, tail: i64) -> Result<LogsData> {
    let target = Target::vm(root, name, which)?;
    let lines = read_tail(&target.path, tail)?;
    Ok(target.data(lines))
}

/// Reads stoat's own log, `<root>/logs/stoat.log`.
pub fn stoat_log(root: &Root, tail: i64) -> Result<LogsData> {
    let target = Target::stoat(root);
    let lines = read_tail(&target.path, tail)?;
    Ok(target.data(lines))
}

/// The log a `logs` run reads, and the VM it belongs to.
pub struct Target {
    /// The VM's name and directory; `None` for stoat's own log.
    vm: Option<(String, PathBuf)>,
    which: Which,
    path: PathBuf,
}

impl Target {
    /// A VM's log: `not_found` without its directory.
    pub fn vm(root: &Root, name: &str, which: Which) -> Result<Target> {
        let loaded = vm::load(root, name)?;
        Ok(Target {
            path: which.path_in(&vm::VmDir::at(loaded.dir())),
            vm: Some((loaded.name().to_owned(), loaded.dir().to_owned())),
            which,
        })
    }

    /// stoat's own log.
    pub fn stoat(root: &Root) -> Target {
        Target {
            vm: None,
            which: Which::Console,
            path: root.logs().join("stoat.log"),
        }
    }

    fn data(&self, lines: Vec<String>) -> LogsData {
        LogsData {
            vm: self.vm.as_ref().map(|(name, _)| name.clone()),
            which: self.vm.as_ref().map(|_| self.which.as_str().to_owned()),
            lines,
        }
    }

    fn running(&self) -> bool {
        self.vm
            .as_ref()
            .is_none_or(|(_, dir)| vm::running_pid(dir).is_some())
    }
}

/// Why a follow ended; each is a normal end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowEnd {
    /// The VM stopped (or was not running): nothing more will be written.
    VmStopped,
    /// Ctrl-C (the cancel flag).
    Canceled,
    /// Whoever reads the lines went away (a closed pipe).
    ReaderGone,
}

/// Hands the target's last `tail` lines to `sink`, then every line appended, until the VM
/// stops (after the lines it wrote last), `cancel` is set, or `sink` fails. Replacement and
/// truncation of the file are said as notes.
pub fn follow(
    target: &Target,
    tail: i64,
    cancel: &Cancel,
    events: &dyn EventSink,
    sink: &mut LineSink,
) -> Result<FollowEnd> {
    // A failing sink is a reader gone (a normal end); a failing read is an error.
    let gone = Cell::new(false);
    let mut guarded = |line: &str| {
        let written = sink(line);
        gone.set(gone.get() || written.is_err());
        written
    };
    let stopped = |e: std::io::Error| {
        if gone.get() {
            Ok(FollowEnd::ReaderGone)
        } else {
            Err(Error::io(format!("read {}", target.path.display()), e))
        }
    };
    let mut follower = match Follower::start(&target.path, tail, &mut guarded) {
        Ok(follower) => follower,
        Err(e) => return stopped(e),
    };
    let file_name = target
        .path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    loop {
        if cancel.is_cancelled() {
            let _ = follower.finish(&mut guarded);
            return Ok(FollowEnd::Canceled);
        }
        // Asked before reading: once it has stopped, this read sees its last lines.
        let running = target.running();
        match follower.poll(&mut guarded) {
            Ok(Change::Replaced) => {
                events.note(&format!("{file_name} was replaced: reading the new one"))
            }
            Ok(Change::Truncated) => {
                events.note(&format!("{file_name} was truncated: reading it again"))
            }
            Ok(Change::Unchanged) => {}
            Err(e) => return stopped(e),
        }
        if !running {
            if let Err(e) = follower.finish(&mut guarded) {
                return stopped(e);
            }
            if let Some((name, _)) = &target.vm {
                events.note(&format!(
                    "{name} is not running: nothing more will be written"
                ));
            }
            return Ok(FollowEnd::VmStopped);
        }
        std::thread::sleep(POLL);
    }
}

/// Reads a file's last `tail` lines (all when `tail <= 0`); a missing file is empty.
fn read_tail(path: &Path, tail: i64) -> Result<Vec<String>> {
    let context = || format!("read {}", path.display());
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(context(), e)),
    };
    let end = file.metadata().map_err(|e| Error::io(context(), e))?.len();
    log_tail::last_lines(&mut file, end, tail).map_err(|e| Error::io(context(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::tail::tail_lines;

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
