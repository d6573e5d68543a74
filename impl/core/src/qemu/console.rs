//! The running boot's console log, capped: QEMU writes the guest's serial console to a unix
//! socket (`-chardev socket,server=off`) and one small stoat process per boot (this module's
//! [`serve`], run as `stoat __console-log <vm>/console.log`) copies it into console.log,
//! which never passes [`RUNNING_BOOT_CAP`] bytes: at the cap it becomes console.log.1 and a
//! fresh console.log goes on (docs/decisions/runtime.md "Guest-fed buffers"). The parent binds
//! the socket before QEMU starts and hands it over as fd 3, so QEMU's connect never races the
//! logger; the logger ends when QEMU's end of the socket closes. Only a logger whose QEMU did not
//! start is killed, through the child handle that started it.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::error::QemuError;

/// The first argument that makes the stoat binary the console logger (hidden: not a command).
pub const LOGGER_ARG: &str = "__console-log";

/// The most console.log holds during a boot, in bytes; with console.log.1 a boot's console
/// takes at most twice this on disk.
pub const RUNNING_BOOT_CAP: u64 = 4 << 20;

/// The fd the listening socket is handed over on.
const LISTENER_FD: i32 = 3;

/// How long the logger waits for QEMU to connect before it gives up (a QEMU that failed to
/// start is normally seen at once and the logger killed; this is the backstop).
const ACCEPT_WAIT: Duration = Duration::from_secs(60);

/// How much is read from the socket per step.
const CHUNK: usize = 64 * 1024;

/// The socket QEMU's console chardev connects to.
pub fn socket_path(vm_dir: &Path) -> PathBuf {
    vm_dir.join("con.sock")
}

/// The line a console.log opens with when it goes on from a rotated one.
pub fn continued_line() -> String {
    "===== stoat: this boot's console output goes on; what came before is in console.log.1 =====\n"
        .to_string()
}

/// A started logger, not yet handed to QEMU.
pub struct Logger {
    child: Child,
    socket: PathBuf,
}

impl Logger {
    /// QEMU is connected: the logger lives on by itself; a thread reaps it when it ends, so a
    /// long-lived caller (the MCP server) keeps no zombie.
    pub fn detach(self) {
        let mut child = self.child;
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }

    /// QEMU did not start: the logger is killed and reaped (a child never reaped, so its PID
    /// is still its own) and its socket removed.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Binds `socket` and starts `program __console-log <console_log>` with it on fd 3, in a
/// session of its own with no stdio (a `--json` pipe is never held open by it).
#[allow(unsafe_code)] // pre_exec (docs/decisions/unsafe.md)
pub fn spawn(program: &Path, socket: &Path, console_log: &Path) -> Result<Logger, QemuError> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)
        .map_err(|error| QemuError::io("listen on the console socket", error))?;
    let fd = listener.as_raw_fd();
    let mut command = Command::new(program);
    command
        .arg(LOGGER_ARG)
        .arg(console_log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only async-signal-safe calls (setsid, dup2, fcntl) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::setsid();
            if fd == LISTENER_FD {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            } else if libc::dup2(fd, LISTENER_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|error| {
        let _ = std::fs::remove_file(socket);
        QemuError::io("start the console logger", error)
    })?;
    Ok(Logger {
        child,
        socket: socket.to_owned(),
    })
}

/// The logger's body: takes the listening socket on fd 3, waits for QEMU's one connection,
/// removes the socket's name, then copies the console into `console_log` until QEMU closes.
#[allow(unsafe_code)] // the signal mask, fd 3 (docs/decisions/unsafe.md)
pub fn serve(console_log: &Path) -> Result<(), std::io::Error> {
    // stoat holds SIGINT and SIGTERM from its first instruction; the logger has no handler,
    // so it takes them as any plain process does.
    // SAFETY: sigset manipulation on a local set, then this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
    // SAFETY: fd 3 is the listening socket `spawn` handed over; nothing else owns it here.
    let listener = unsafe { UnixListener::from_raw_fd(LISTENER_FD) };
    let path = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf));
    let accepted = Arc::new(AtomicBool::new(false));
    let watch = Arc::clone(&accepted);
    std::thread::spawn(move || {
        std::thread::sleep(ACCEPT_WAIT);
        if !watch.load(Ordering::SeqCst) {
            std::process::exit(1);
        }
    });
    let (mut stream, _) = listener.accept()?;
    accepted.store(true, Ordering::SeqCst);
    drop(listener);
    if let Some(path) = path {
        let _ = std::fs::remove_file(path);
    }
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
pub fn last_line(vm_dir: &Path) -> Option<String> {
    let mut file = std::fs::File::open(super::VmPaths::new(vm_dir).console_log).ok()?;
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
