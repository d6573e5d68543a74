//! What the boot's two helper processes share: the console logger (qemu/console.rs) and the
//! network guard (qemu/netguard.rs) are each this very stoat binary run again with a hidden
//! first argument, listening on a unix socket QEMU connects to as a client. The parent binds
//! the socket before QEMU starts and hands it over on fd 3, so QEMU's connect never races the
//! helper; a helper ends when QEMU's end of the connection closes. Only a helper whose QEMU
//! did not start is killed, through the child handle that started it.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::error::QemuError;

/// The fd the listening socket is handed over on.
const LISTENER_FD: i32 = 3;

/// How long a helper waits for QEMU to connect before it gives up (a QEMU that failed to
/// start is normally seen at once and the helper killed; this is the backstop).
const ACCEPT_WAIT: Duration = Duration::from_secs(60);

/// A started helper, not yet handed to QEMU.
pub struct Helper {
    child: Child,
    socket: PathBuf,
}

impl Helper {
    /// QEMU is connected: the helper lives on by itself; a thread reaps it when it ends, so a
    /// long-lived caller (the MCP server) keeps no zombie.
    pub fn detach(self) {
        let mut child = self.child;
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }

    /// QEMU did not start: the helper is killed and reaped (a child never reaped, so its PID
    /// is still its own) and its socket removed.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Binds `socket` and starts `program <args>` with it on fd 3, in a session of its own with
/// no stdio (a `--json` pipe is never held open by it). `what` names the helper in an error.
#[allow(unsafe_code)] // pre_exec (docs/decisions/unsafe.md)
pub fn spawn(
    what: &'static str,
    program: &Path,
    args: &[&OsStr],
    socket: &Path,
) -> Result<Helper, QemuError> {
    let _ = std::fs::remove_file(socket);
    let listener =
        UnixListener::bind(socket).map_err(|error| QemuError::io("listen on a socket", error))?;
    let fd = listener.as_raw_fd();
    let mut command = Command::new(program);
    command
        .args(args)
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
        QemuError::io(what, error)
    })?;
    Ok(Helper {
        child,
        socket: socket.to_owned(),
    })
}

/// The helper's side: lets SIGINT and SIGTERM act as on any plain process, takes the
/// listening socket on fd 3, waits for QEMU's one connection (exiting if none comes within
/// [`ACCEPT_WAIT`]) and removes the socket's name.
#[allow(unsafe_code)] // the signal mask, fd 3 (docs/decisions/unsafe.md)
pub fn accept_qemu() -> std::io::Result<UnixStream> {
    // stoat holds SIGINT and SIGTERM from its first instruction; a helper has no handler,
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
    let (stream, _) = listener.accept()?;
    accepted.store(true, Ordering::SeqCst);
    drop(listener);
    if let Some(path) = path {
        let _ = std::fs::remove_file(path);
    }
    Ok(stream)
}
