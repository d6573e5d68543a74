//! `logs -f`: the lines appended to a log file, followed by name as `tail -F` follows one.
//!
//! The file is polled: each poll reads what was appended since the last one, in fixed
//! chunks, and hands over every whole line. A file replaced by another (the apply log is
//! recreated per run) is read from its start once the old one is drained; a file shorter
//! than what was read (truncated in place) is read again from its start; a missing file is
//! waited for. Only an unfinished line is held, and at most the line cap of it: a longer
//! line is handed over cut, with a marker, once it ends.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::bounded::line::LineCutter;
use crate::bounded::tail as log_tail;

/// How much is read per step.
const CHUNK: usize = 64 * 1024;

/// Where a line goes; an error (a closed pipe) ends the follow.
pub type LineSink<'a> = dyn FnMut(&str) -> std::io::Result<()> + 'a;

/// What became of the followed file since the last poll, for a person watching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    /// Another file now has the name: reading it from its start.
    Replaced,
    /// The same file got shorter: reading it again from its start.
    Truncated,
}

/// A log file followed by name.
pub struct Follower {
    path: PathBuf,
    open: Option<OpenLog>,
    pending: LineCutter,
}

struct OpenLog {
    file: File,
    /// (device, inode): which file the name named when it was opened.
    identity: (u64, u64),
    offset: u64,
}

impl Follower {
    /// Opens `path` (a missing file is waited for) and hands its last `n` whole lines (every
    /// line when `n <= 0`) to `sink`; polls go on from the end of the last whole line.
    pub fn start(path: &Path, n: i64, sink: &mut LineSink) -> std::io::Result<Follower> {
        let mut follower = Follower {
            path: path.to_owned(),
            open: None,
            pending: LineCutter::default(),
        };
        if let Some(mut open) = open_log(path)? {
            let len = open.file.metadata()?.len();
            let cut = log_tail::end_of_last_line(&mut open.file, len)?;
            for line in log_tail::last_lines(&mut open.file, cut, n)? {
                sink(&line)?;
            }
            open.offset = cut;
            follower.open = Some(open);
        }
        Ok(follower)
    }

    /// Hands every whole line written since the last poll to `sink`.
    pub fn poll(&mut self, sink: &mut LineSink) -> std::io::Result<Change> {
        let named = match std::fs::metadata(&self.path) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let Some(named) = named else {
            // Removed: what the open file still has was written before; keep it.
            return self.drain(sink).map(|()| Change::Unchanged);
        };
        let identity = (named.dev(), named.ino());
        let change = match &self.open {
            None => {
                self.open = open_log(&self.path)?;
                Change::Unchanged
            }
            Some(open) if open.identity != identity => {
                self.drain(sink)?;
                self.finish(sink)?;
                self.open = open_log(&self.path)?;
                Change::Replaced
            }
            Some(open) if named.len() < open.offset => {
                self.finish(sink)?;
                if let Some(open) = &mut self.open {
                    open.offset = 0;
                }
                Change::Truncated
            }
            Some(_) => Change::Unchanged,
        };
        self.drain(sink)?;
        Ok(change)
    }

    /// Hands over the unfinished line, if any: nothing more will complete it.
    pub fn finish(&mut self, sink: &mut LineSink) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        sink(&self.pending.take())
    }

    /// Reads the open file from its offset to its end.
    fn drain(&mut self, sink: &mut LineSink) -> std::io::Result<()> {
        let Some(open) = &mut self.open else {
            return Ok(());
        };
        open.file.seek(SeekFrom::Start(open.offset))?;
        let mut chunk = vec![0; CHUNK];
        loop {
            let read = open.file.read(&mut chunk)?;
            if read == 0 {
                return Ok(());
            }
            open.offset += read as u64;
            self.pending.feed(&chunk[..read], &mut |line| sink(&line))?;
        }
    }
}

fn open_log(path: &Path) -> std::io::Result<Option<OpenLog>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    Ok(Some(OpenLog {
        file,
        identity: (meta.dev(), meta.ino()),
        offset: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    struct Seen(Vec<String>);

    impl Seen {
        fn sink(&mut self) -> impl FnMut(&str) -> std::io::Result<()> + '_ {
            |line| {
                self.0.push(line.to_owned());
                Ok(())
            }
        }
        fn take(&mut self) -> Vec<String> {
            std::mem::take(&mut self.0)
        }
    }

    fn append(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    #[test]
    fn tail_then_appended_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        append(&path, b"one\ntwo\r\nthree\nhalf");
        let mut seen = Seen(Vec::new());
        let mut follower = Follower::start(&path, 2, &mut seen.sink()).unwrap();
        assert_eq!(seen.take(), ["two", "three"]);
        follower.poll(&mut seen.sink()).unwrap();
        assert!(seen.take().is_empty(), "an unfinished line waits");
        append(&path, b" done\nnext\n");
        follower.poll(&mut seen.sink()).unwrap();
        assert_eq!(seen.take(), ["half done", "next"]);
        append(&path, b"cut off");
        follower.poll(&mut seen.sink()).unwrap();
        follower.finish(&mut seen.sink()).unwrap();
        assert_eq!(seen.take(), ["cut off"]);
    }

    #[test]
    fn a_missing_file_is_waited_for_and_a_replaced_one_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last-provision.log");
        let mut seen = Seen(Vec::new());
        let mut follower = Follower::start(&path, 10, &mut seen.sink()).unwrap();
        assert_eq!(follower.poll(&mut seen.sink()).unwrap(), Change::Unchanged);
        append(&path, b"first run\n");
        follower.poll(&mut seen.sink()).unwrap();
        assert_eq!(seen.take(), ["first run"]);
        // A new run: a new file under the name (written aside, renamed over).
        let aside = dir.path().join("new");
        append(&aside, b"second run\n");
        std::fs::rename(&aside, &path).unwrap();
        assert_eq!(follower.poll(&mut seen.sink()).unwrap(), Change::Replaced);
        assert_eq!(seen.take(), ["second run"]);
    }

    #[test]
    fn a_truncated_file_is_read_again_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last-provision.log");
        append(&path, b"a long first run\n");
        let mut seen = Seen(Vec::new());
        let mut follower = Follower::start(&path, 0, &mut seen.sink()).unwrap();
        assert_eq!(seen.take(), ["a long first run"]);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(b"new\n")
            .unwrap();
        assert_eq!(follower.poll(&mut seen.sink()).unwrap(), Change::Truncated);
        assert_eq!(seen.take(), ["new"]);
    }

    #[test]
    fn a_long_line_is_held_only_up_to_the_cap_and_handed_over_cut() {
        use crate::bounded::line::{cut_marker, LINE_CAP};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let mut seen = Seen(Vec::new());
        let mut follower = Follower::start(&path, 0, &mut seen.sink()).unwrap();
        append(&path, &vec![b'x'; LINE_CAP * 2 + 10]);
        follower.poll(&mut seen.sink()).unwrap();
        assert!(seen.take().is_empty(), "the line has not ended yet");
        append(&path, b"\n");
        follower.poll(&mut seen.sink()).unwrap();
        let expected = format!(
            "{}{}",
            "x".repeat(LINE_CAP),
            cut_marker(LINE_CAP as u64 + 10)
        );
        assert_eq!(seen.take(), [expected]);
    }
}
