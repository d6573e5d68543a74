//! Running shell text in a guest over the system `ssh` for apply: the body goes on stdin to
//! `ssh <ssh_args> [escalate...] <interpreter words>` (`sh -s` or `python3 -`), so the last
//! argv entries are always the interpreter words (docs/contract.md behaviour#recipes).
//!
//! [`GuestShell::stream`] merges stdout and stderr into one pipe and hands each line over as it
//! arrives (the `log` events); [`GuestShell::capture`] collects stdout under a deadline (outputs,
//! markers, health checks). A cancelled run sends SIGTERM to ssh, then SIGKILL after 5 s.
//! [`GuestShell::stream`] (apply's scripts) connects afresh, never through the VM's reused
//! connection (`ssh::mux`): a multiplexed ssh hands its output pipe to the master, so
//! killing it would not end our read, and the guest's watchdog would not see the connection
//! end. A shell made [`GuestShell::through_live_master`] runs [`GuestShell::capture`] through
//! the VM's master when one answers (a short script such as a live snapshot's unmount, which
//! then opens no connection of its own); after a kill its read is given up after
//! [`READ_AFTER_KILL`].
//!
//! A fresh connection can land in the seconds a cloud image's sshd restarts under cloud-init.
//! The remote command first writes exec's session mark (`ssh::session_mark`) to stderr, so
//! a run whose ssh exits 255 without it never started the interpreter: it is run again, for up
//! to [`BEFORE_SESSION_RETRY`], instead of reading as a failed script or an empty answer.

use rustix::process::{Pid, Signal};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ssh::argv::{ssh_args, ssh_args_with};
use crate::ssh::mux::Mux;
use crate::ssh::session_mark::{self, MarkFilter, WRITE_MARK};
use crate::vm::StoredVm;
use crate::{keys, Cancel, Env, Error, Result, Root};

/// How long a cancelled ssh gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(100);
/// How long a run that ssh could not start is tried again by default.
pub const BEFORE_SESSION_RETRY: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_secs(1);
/// What a capture keeps of ssh's stderr: enough for the mark and ssh's own few lines.
const STDERR_KEPT: u64 = 64 << 10;
/// How long a capture still reads after killing its ssh: a multiplexed ssh's output pipe is
/// also held by the master until the guest command ends.
const READ_AFTER_KILL: Duration = Duration::from_secs(2);

/// How to reach one VM's shell.
pub struct GuestShell {
    ssh: PathBuf,
    args: Vec<String>,
    /// Put before the interpreter words when the ssh user is not root (`sudo -n`).
    escalate: Vec<String>,
    path_var: String,
    /// How long a run is tried again when ssh fails before any session.
    retry_for: Duration,
    /// Set by [`GuestShell::through_live_master`]: what a capture needs to go through the
    /// VM's master (its key, its VM, the master).
    master: Option<(PathBuf, StoredVm, Mux)>,
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
        let ssh = env.require_tool("ssh", "openssh-client")?;
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
            retry_for: BEFORE_SESSION_RETRY,
            master: None,
        })
    }

    /// The same shell, whose captures go through the VM's master when one answers at the
    /// time of each run (and directly otherwise: they never become the master).
    pub fn through_live_master(mut self, root: &Root, env: &Env, vm: &StoredVm) -> Result<Self> {
        let key = keys::ensure(root, env)?;
        let mux = Mux::for_vm(&key, vm);
        self.master = Some((key, vm.clone(), mux));
        Ok(self)
    }

    /// The same shell, trying a run that ssh could not start again for `retry_for` at most
    /// (zero: never).
    pub fn retrying_for(mut self, retry_for: Duration) -> GuestShell {
        self.retry_for = retry_for;
        self
    }

    /// The ssh command for one run; `through_master`: through the VM's master when this
    /// shell has one and it answers now.
    #[allow(unsafe_code)] // pre_exec (docs/decisions/unsafe.md)
    fn command(&self, interpreter: &[&str], through_master: bool) -> Command {
        let mut command = Command::new(&self.ssh);
        let watched = crate::ssh::argv::quote_remote_command(&[WATCHED.to_owned()]);
        let routed = self
            .master
            .as_ref()
            .filter(|_| through_master)
            .and_then(|(key, vm, mux)| Some((key, vm, mux.live_client()?)));
        match routed {
            Some((key, vm, route)) => {
                route.configure(&mut command);
                command.args(ssh_args_with(key, vm, route.options()));
            }
            None => {
                command.args(&self.args);
            }
        }
        command
            .arg(WRITE_MARK.trim_end())
            .args(&self.escalate)
            // The interpreter's words stay the last arguments, as they always were.
            .args(["sh", "-c", watched.as_str(), "stoat"])
            .args(interpreter)
            .env("PATH", &self.path_var)
            .stdin(Stdio::piped());
        // SAFETY: only prctl, async-signal-safe, between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(|| {
                // A SIGKILLed stoat takes its ssh along, which ends the guest's watchdog wait.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
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
        let deadline = Instant::now() + self.retry_for;
        loop {
            let (status, held) = self.stream_once(interpreter, body, cancel, &mut on_line)?;
            if held.is_none() || !self.again(status.code(), deadline, cancel)? {
                for line in held.unwrap_or_default().split_inclusive(|b| *b == b'\n') {
                    on_line(&line_text(line));
                }
                return Ok(status);
            }
        }
    }

    /// One run of [`GuestShell::stream`]: its status, and what ssh said when no session
    /// opened (`None` once one did: its lines went to `on_line`).
    fn stream_once(
        &self,
        interpreter: &[&str],
        body: &str,
        cancel: &Cancel,
        on_line: &mut impl FnMut(&str),
    ) -> Result<(ExitStatus, Option<Vec<u8>>)> {
        let (reader, writer) = std::io::pipe().map_err(|e| Error::io("make a pipe for ssh", e))?;
        let writer_err = writer
            .try_clone()
            .map_err(|e| Error::io("make a pipe for ssh", e))?;
        let mut command = self.command(interpreter, false);
        command.stdout(writer).stderr(writer_err);
        let mut child = command.spawn().map_err(|e| Error::io("run ssh", e))?;
        // The Command holds the pipe's write ends: drop it so the read end sees EOF.
        drop(command);
        let feeder = feed_stdin(&mut child, body);
        let watch = Watchdog::start(child.id(), cancel.clone());
        let mut lines = BufReader::new(reader);
        let mut filter = MarkFilter::default();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match lines.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                // Whole lines go in, so whole lines come out (the last may lack its `\n`).
                Ok(_) => {
                    for line in filter.feed(&buf).split_inclusive(|b| *b == b'\n') {
                        on_line(&line_text(line));
                    }
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
        let held = (!filter.opened()).then(|| filter.into_held());
        Ok((status, held))
    }

    /// Runs `body` with `sh -s` and collects stdout (stderr is dropped), killing ssh when
    /// `timeout` passes.
    pub fn capture(&self, body: &str, timeout: Duration, cancel: &Cancel) -> Result<Captured> {
        let deadline = Instant::now() + self.retry_for;
        loop {
            let (captured, opened) = self.capture_once(body, timeout, cancel)?;
            let code = captured.status.and_then(|s| s.code());
            if opened || captured.status.is_none() || !self.again(code, deadline, cancel)? {
                return Ok(captured);
            }
        }
    }

    /// One run of [`GuestShell::capture`], and whether its session opened.
    fn capture_once(
        &self,
        body: &str,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<(Captured, bool)> {
        let mut command = self.command(&["sh", "-s"], true);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| Error::io("run ssh", e))?;
        let feeder = feed_stdin(&mut child, body);
        // Bounded as every captured tool output is: the rest is read and dropped.
        let stdout = drain(child.stdout.take(), crate::child::CAPTURE_LIMIT as u64);
        let stderr = drain(child.stderr.take(), STDERR_KEPT);
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
        let read_until = status.is_none().then(|| Instant::now() + READ_AFTER_KILL);
        let out = joined(stdout, read_until);
        let (opened, _) = session_mark::split(&joined(stderr, read_until));
        cancel.check()?;
        let captured = Captured {
            status,
            stdout: String::from_utf8_lossy(&out).into_owned(),
        };
        Ok((captured, opened))
    }

    /// After a run with no session: true when it should run again (ssh's own failure, 255,
    /// while `deadline` has not passed), having paused first.
    fn again(&self, code: Option<i32>, deadline: Instant, cancel: &Cancel) -> Result<bool> {
        if code != Some(255) || Instant::now() + RETRY_PAUSE > deadline {
            return Ok(false);
        }
        std::thread::sleep(RETRY_PAUSE);
        cancel.check()?;
        Ok(true)
    }
}

/// One line of output as text: a trailing `\n`, then `\r`, removed; invalid UTF-8 replaced.
fn line_text(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

/// What a [`drain`] thread read; with `until`, given up (nothing) when the thread is still
/// reading then: a pipe the killed ssh shared with a master may stay open for long.
fn joined(reader: std::thread::JoinHandle<Vec<u8>>, until: Option<Instant>) -> Vec<u8> {
    if let Some(until) = until {
        while !reader.is_finished() {
            if Instant::now() >= until {
                return Vec::new();
            }
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
    reader.join().unwrap_or_default()
}

/// Reads a child's pipe to its end on a thread, keeping the first `limit` bytes.
fn drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    limit: u64,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.by_ref().take(limit).read_to_end(&mut out);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        out
    })
}

/// The guest side of every apply run (run by `sh -c`, after the escalation words, with the
/// interpreter's words as its arguments). It reads the body (stdin, to its end) into a
/// temporary file and runs the interpreter on it, in a session of its own (`setsid`, where
/// the guest has it), so the script and everything it starts, double-forked children
/// included, are one process group. A watchdog looks every second at the ssh server process
/// serving this connection (the nearest `sshd`, `sshd-session` or `dropbear` above it): apply
/// connects afresh for each run, so that process ends with the connection, as when stoat is
/// SIGKILLed (its ssh dies with it), and the watchdog then stops the group (SIGTERM, SIGKILL
/// 2 s later). The temporary file is removed either way.
const WATCHED: &str = "f=$(mktemp /tmp/.stoat-apply.XXXXXX 2>/dev/null) || f=/tmp/.stoat-apply.$$; \
cat >\"$f\" || { rm -f \"$f\"; exit 125; }; \
if command -v setsid >/dev/null 2>&1; then setsid \"$@\" <\"$f\" & else \"$@\" <\"$f\" & fi; c=$!; \
srv=; p=$$; while [ \"$p\" -gt 1 ] 2>/dev/null; do q=$p; read -r _ n _ p _ </proc/$q/stat 2>/dev/null || break; \
case $n in '(sshd)'|'(sshd-session)'|'(dropbear)') srv=$q; break;; esac; done; w=; \
if [ -n \"$srv\" ]; then { while [ -d /proc/$srv ]; do sleep 1; done; kill -TERM -$c 2>/dev/null || kill -TERM $c; rm -f \"$f\"; sleep 2; kill -KILL -$c 2>/dev/null; } >/dev/null 2>&1 </dev/null & w=$!; fi; \
wait $c; s=$?; [ -z \"$w\" ] || kill $w 2>/dev/null; rm -f \"$f\"; exit $s";

/// Writes the body to ssh's stdin from a thread (the output pipe must be drained meanwhile),
/// then closes it so the guest side sees the end of the script.
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
                    // Until ssh is gone the cancel is still at work (see child::Finishing).
                    let _finishing = crate::child::finishing();
                    signal(pid, Signal::TERM);
                    let until = Instant::now() + GRACE;
                    while !flag.load(Ordering::SeqCst) && Instant::now() < until {
                        std::thread::sleep(POLL);
                    }
                    if !flag.load(Ordering::SeqCst) {
                        signal(pid, Signal::KILL);
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

/// Our own child's PID, which is not reaped while the watchdog runs.
fn signal(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}
