//! The running boot's console log, capped: QEMU writes the guest's serial console to a unix
//! socket (`-chardev socket,server=off`) and one small stoat process per boot (this module's
//! [`serve`], run as `stoat __console-log <vm>/console.log`) copies it into console.log,
//! which never passes [`RUNNING_BOOT_CAP`] bytes: at the cap it becomes console.log.1 and a
//! fresh console.log goes on (docs/decisions/runtime.md "Guest-fed buffers"). How it is
//! started, handed its socket and ended is qemu/helper.rs's.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::QemuError;
use super::helper::{self, Helper};

/// The first argument that makes the stoat binary the console logger (hidden: not a command).
pub const LOGGER_ARG: &str = "__console-log";

/// The most console.log holds during a boot, in bytes; with console.log.1 a boot's console
/// takes at most twice this on disk.
pub const RUNNING_BOOT_CAP: u64 = 4 << 20;

/// How much is read from the socket per step.
const CHUNK: usize = 64 * 1024;

/// The line a console.log opens with when it goes on from a rotated one.
pub fn continued_line() -> String {
    "===== stoat: this boot's console output goes on; what came before is in console.log.1 =====\n"
        .to_string()
}

/// Binds `socket` and starts `program __console-log <console_log>` with it on fd 3
/// (qemu/helper.rs).
pub fn spawn(program: &Path, socket: &Path, console_log: &Path) -> Result<Helper, QemuError> {
    helper::spawn(
        "start the console logger",
        program,
        &[OsStr::new(LOGGER_ARG), console_log.as_os_str()],
        socket,
    )
}

/// The logger's body: waits for QEMU's one connection, then copies the console into
/// `console_log` until QEMU closes.
pub fn serve(console_log: &Path) -> Result<(), std::io::Error> {
    let mut stream = helper::accept_qemu()?;
    let mut log = CappedLog::open(console_log, RUNNING_BOOT_CAP)?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => log.write(&buf[..n])?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// console.log as the logger writes it: appended to, and at `cap` bytes moved to
/// console.log.1 (replacing it) with a fresh console.log opened by [`continued_line`].
pub struct CappedLog {
    path: PathBuf,
    file: std::fs::File,
    len: u64,
    cap: u64,
}

impl CappedLog {
    pub fn open(path: &Path, cap: u64) -> std::io::Result<CappedLog> {
        let file = append(path, false)?;
        let len = file.metadata()?.len();
        Ok(CappedLog {
            path: path.to_owned(),
            file,
            len,
            cap,
        })
    }

    pub fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            if self.len >= self.cap {
                self.rotate()?;
            }
            let room = usize::try_from(self.cap - self.len).unwrap_or(usize::MAX);
            let take = room.min(bytes.len());
            self.file.write_all(&bytes[..take])?;
            self.len += take as u64;
            bytes = &bytes[take..];
        }
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        std::fs::rename(&self.path, super::launch::previous_boot_log(&self.path))?;
        self.file = append(&self.path, true)?;
        let line = continued_line();
        self.file.write_all(line.as_bytes())?;
        self.len = line.len() as u64;
        Ok(())
    }
}

fn append(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).mode(0o600);
    if truncate {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    options.open(path)
}

/// The console log's last line with something visible on it, cut to 160 characters and with
/// control characters dropped: a timeout message says how far the boot got.
pub fn last_line(console_log: &Path) -> Option<String> {
    let mut file = std::fs::File::open(console_log).ok()?;
    let end = file.metadata().ok()?.len();
    let lines = crate::bounded::tail::last_lines(&mut file, end, 20).ok()?;
    let line = lines.iter().rev().find(|line| !line.trim().is_empty())?;
    Some(
        line.chars()
            .filter(|c| !c.is_control())
            .take(160)
            .collect::<String>()
            .trim()
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_never_passes_its_cap_and_rotates_into_console_log_1() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("console.log");
        std::fs::write(&log, "boot line\n").unwrap();
        let mut capped = CappedLog::open(&log, 400).unwrap();
        for i in 0..100 {
            capped
                .write(format!("guest line {i}\n").as_bytes())
                .unwrap();
            assert!(std::fs::metadata(&log).unwrap().len() <= 400);
        }
        let kept = std::fs::read_to_string(dir.path().join("console.log.1")).unwrap();
        let now = std::fs::read_to_string(&log).unwrap();
        assert_eq!(kept.len(), 400, "the rotated file is full");
        assert!(
            kept.starts_with(&continued_line()),
            "rotated more than once"
        );
        let rest = now
            .strip_prefix(&continued_line())
            .expect("the fresh file says so");
        let joined = format!("{}{rest}", &kept[continued_line().len()..]);
        assert!(
            joined.ends_with("guest line 98\nguest line 99\n"),
            "{joined}"
        );
    }
}
