//! Running shell text in a guest over the system `ssh` for apply: the body goes on stdin to
//! `ssh <ssh_args> [escalate...] <interpreter words>` (`sh -s` or `python3 -`), so the last
//! argv entries are always the interpreter words (docs/contract.md behaviour#recipes).
//!
//! [`GuestShell::stream`] merges stdout and stderr into one pipe and hands each line over as it
//! arrives (the `log` events); [`GuestShell::capture`] collects stdout under a deadline (outputs,
//! markers, health checks). A cancelled run sends SIGTERM to ssh, then SIGKILL after 5 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::host::ssh_argv::ssh_args;
use crate::vm::StoredVm;
use crate::{keys, Cancel, Env, Error, Result, Root};

/// How long a cancelled ssh gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(100);

/// How to reach one VM's shell.
pub struct GuestShell {
    ssh: PathBuf,
    args: Vec<String>,
    /// Put before the interpreter words when the ssh user is not root (`sudo -n`).
    escalate: Vec<String>,
    path_var: String,
}

/// How a captured run ended.
#[derive(Debug)]
pub struct Captured {
    /// `None` when the deadline passed and ssh was killed.
    pub status: Option<ExitStatus>,
    pub stdout: String,
}

impl Captured {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

impl GuestShell {
    /// The shell of `vm`; `escalate` is the guest's escalation argv (from the guest registry).
    pub fn new(root: &Root, env: &Env, vm: &StoredVm, escalate: &[String]) -> Result<GuestShell> {
        let key = keys::ensure(root, env)?;
        let ssh = env.which("ssh").ok_or_else(|| Error::Tool {
            tool: "ssh".into(),
            message: "not found on PATH; install openssh-client (`stoat doctor` checks the host)"
                .into(),
        })?;
        let escalate = if vm.config.ssh_user() == "root" {
            Vec::new()
        } else {
            escalate.to_vec()
        };
        Ok(GuestShell {
            ssh,
            args: ssh_args(&key, vm),
            escalate,
            path_var: env.path_var().to_owned(),
        })
    }

    fn command(&self, interpreter: &[&str]) -> Command {
        let mut command = Command::new(&self.ssh);
        command
            .args(&self.args)
            .args(&self.escalate)
            .args(interpreter)
            .env("PATH", &self.path_var)
            .stdin(Stdio::piped());
        command
    }

    /// Runs `body` and calls `on_line` with each line of merged stdout/stderr (a trailing
    /// `\r` removed, invalid UTF-8 replaced) as soon as it is complete; a last partial line is
    /// flushed at the end.
    pub fn stream(
        &self,
        interpreter: &[&str],
        body: &str,
        cancel: &Cancel,
        mut on_line: impl FnMut(&str),
    ) -> Result<ExitStatus> {
        let (reader, writer) = std::io::pipe().map_err(|e| Error::io("make a pipe for ssh", e))?;
        let writer_err = writer
            .try_clone()
            .map_err(|e| Error::io("make a pipe for ssh", e))?;
        let mut command = self.command(interpreter);
        command.stdout(writer).stderr(writer_err);
        let mut child = command.spawn().map_err(|e| Error::io("run ssh", e))?;
        // The Command holds the pipe's write ends: drop it so the read end sees EOF.
        drop(command);
        let feeder = feed_stdin(&mut child, body);
        let watch = Watchdog::start(child.id(), cancel.clone());
        let mut lines = BufReader::new(reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match lines.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    let mut text = String::from_utf8_lossy(&buf).into_owned();
                    if text.ends_with('\n') {
                        text.pop();
                    }
                    if text.ends_with('\r') {
                        text.pop();
                    }
                    on_line(&text);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read ssh output", e)),
            }
        }
        // Stop the watchdog before reaping, so it can never signal a reused PID.
        watch.stop();
        let status = child.wait().map_err(|e| Error::io("wait for ssh", e))?;
        let _ = feeder.join();
        cancel.check()?;
        Ok(status)
    }

    /// Runs `body` with `sh -s` and collects stdout (stderr is dropped), killing ssh when
    /// `timeout` passes.
    pub fn capture(&self, body: &str, timeout: Duration, cancel: &Cancel) -> Result<Captured> {
        let mut command = self.command(&["sh", "-s"]);
        command.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = command.spawn().map_err(|e| Error::io("run ssh", e))?;
        let feeder = feed_stdin(&mut child, body);
        let mut stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(stdout) = stdout.as_mut() {
                let _ = stdout.read_to_end(&mut out);
            }
            out
        });
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| Error::io("wait for ssh", e))? {
                break Some(status);
            }
            if cancel.is_cancelled() || Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        };
        let _ = feeder.join();
        let out = reader.join().unwrap_or_default();
        cancel.check()?;
        Ok(Captured {
            status,
            stdout: String::from_utf8_lossy(&out).into_owned(),
        })
    }
}

/// Writes the body to ssh's stdin from a thread (the output pipe must be drained meanwhile),
/// then closes it so the interpreter sees the end of the script.
fn feed_stdin(child: &mut Child, body: &str) -> std::thread::JoinHandle<()> {
    let stdin = child.stdin.take();
    let body = body.to_owned();
    std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(body.as_bytes());
        }
    })
}

/// Stops a child ssh when the work is cancelled: SIGTERM, then SIGKILL after [`GRACE`].
struct Watchdog {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    fn start(pid: u32, cancel: Cancel) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                if cancel.is_cancelled() {
                    signal(pid, libc::SIGTERM);
                    let until = Instant::now() + GRACE;
                    while !flag.load(Ordering::SeqCst) && Instant::now() < until {
                        std::thread::sleep(POLL);
                    }
                    if !flag.load(Ordering::SeqCst) {
                        signal(pid, libc::SIGKILL);
                    }
                    return;
                }
                std::thread::sleep(POLL);
            }
        });
        Watchdog { done, thread }
    }

    /// Ends the watch; call it before reaping the child.
    fn stop(self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child's PID, which is not reaped while the watchdog runs.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}
