//! A program a test runs in the background ([`Spawned`]): its stdout and stderr read on
//! threads of their own, every read bounded by a deadline, and the process killed and reaped
//! when the handle goes, so a failing test leaves nothing running and never hangs.

use rustix::process::{self, Pid, Signal};
use std::collections::VecDeque;
use std::io::BufRead;
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::{eventually, JsonRun};

/// One output pipe of a [`Spawned`] program, line by line, its bytes kept exactly.
pub struct Stream {
    name: &'static str,
    receiver: Receiver<Vec<u8>>,
    /// Every byte read so far, in order.
    seen: Vec<u8>,
    /// Lines read off the pipe (by [`Spawned::wait`]) that no `line`/`until` has taken yet.
    pending: VecDeque<Vec<u8>>,
    closed: bool,
}

impl Stream {
    fn read(name: &'static str, pipe: Option<impl std::io::Read + Send + 'static>) -> Stream {
        let (sender, receiver) = mpsc::channel();
        if let Some(pipe) = pipe {
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(pipe);
                loop {
                    let mut line = Vec::new();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            if sender.send(line).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
        Stream {
            name,
            receiver,
            seen: Vec::new(),
            pending: VecDeque::new(),
            closed: false,
        }
    }

    fn text(line: &[u8]) -> String {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        String::from_utf8_lossy(line).into_owned()
    }

    /// The next line not taken yet, waiting up to `left` for it.
    fn next(&mut self, left: Duration) -> Result<Vec<u8>, RecvTimeoutError> {
        if let Some(line) = self.pending.pop_front() {
            return Ok(line);
        }
        if self.closed {
            return Err(RecvTimeoutError::Disconnected);
        }
        match self.receiver.recv_timeout(left) {
            Ok(line) => {
                self.seen.extend_from_slice(&line);
                Ok(line)
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                Err(RecvTimeoutError::Disconnected)
            }
            Err(timeout) => Err(timeout),
        }
    }

    fn shown(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.seen)
    }

    /// The next line (without its newline), or `None` once the pipe has closed; panics when
    /// nothing comes within `within`.
    #[track_caller]
    pub fn line(&mut self, within: Duration) -> Option<String> {
        match self.next(within) {
            Ok(line) => Some(Stream::text(&line)),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no line on {} within {within:?}; read: {:?}",
                self.name,
                self.shown()
            ),
        }
    }

    /// Waits up to `within` for a line equal to `wanted`; returns the lines read before it.
    #[track_caller]
    pub fn until(&mut self, wanted: &str, within: Duration) -> Vec<String> {
        self.until_match(wanted, |line| line == wanted, within)
    }

    /// [`Stream::until`] for the first line `matches` accepts; `what` names it in a failure.
    #[track_caller]
    pub fn until_match(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
        within: Duration,
    ) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.next(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no line {what:?} on {} within {within:?}; read: {:?}",
                    self.name,
                    self.shown()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{} closed before {what:?}; read: {:?}",
                    self.name,
                    self.shown()
                ),
            };
            let text = Stream::text(&line);
            if matches(&text) {
                return before;
            }
            before.push(text);
        }
    }

    /// Waits up to `within` for the pipe to close; returns the lines not taken until then.
    #[track_caller]
    pub fn rest(&mut self, within: Duration) -> Vec<String> {
        self.drain(within);
        self.pending
            .drain(..)
            .map(|line| Stream::text(&line))
            .collect()
    }

    /// Every byte read so far.
    pub fn bytes(&self) -> &[u8] {
        &self.seen
    }

    /// Reads the pipe until it closes (within `within`), keeping its lines for later takers.
    #[track_caller]
    fn drain(&mut self, within: Duration) {
        if !self.drained_by(Instant::now() + within) {
            panic!(
                "{} stayed open for {within:?}; read: {:?}",
                self.name,
                self.shown()
            );
        }
    }

    /// Reads the pipe until it closes or `deadline` passes (taking what has already come
    /// either way), keeping its lines for later takers; whether it closed.
    pub(crate) fn drained_by(&mut self, deadline: Instant) -> bool {
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) => {
                    self.seen.extend_from_slice(&line);
                    self.pending.push_back(line);
                }
                Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Err(RecvTimeoutError::Timeout) => return false,
            }
        }
        true
    }
}

/// A running program with piped stdout and stderr (stdin as the command set it; take a
/// piped one with [`Spawned::stdin`]). Dropped while it runs, it is killed and reaped.
pub struct Spawned {
    child: Child,
    stdin: Option<ChildStdin>,
    pub stdout: Stream,
    pub stderr: Stream,
    status: Option<ExitStatus>,
    /// Whether it leads a process group of its own ([`Spawned::start_group`]).
    group: bool,
}

impl Spawned {
    /// Starts `command` with its stdout and stderr piped.
    pub fn start(command: &mut Command) -> Spawned {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.get_program()));
        Spawned {
            stdin: child.stdin.take(),
            stdout: Stream::read("stdout", child.stdout.take()),
            stderr: Stream::read("stderr", child.stderr.take()),
            child,
            status: None,
            group: false,
        }
    }

    /// [`Spawned::start`] as the leader of a new process group (as a shell runs a job):
    /// [`Spawned::signal_group`] reaches everything it started, and so does the kill when the
    /// handle goes.
    pub fn start_group(command: &mut Command) -> Spawned {
        use std::os::unix::process::CommandExt;
        let mut spawned = Spawned::start(command.process_group(0));
        spawned.group = true;
        spawned
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn process(&self) -> Pid {
        Pid::from_child(&self.child)
    }

    /// The piped stdin (the command must have asked for one); dropping it closes it.
    pub fn stdin(&mut self) -> &mut Option<ChildStdin> {
        &mut self.stdin
    }

    /// Sends `signal` (a named signal's number, `libc::SIGTERM` say) to the process.
    pub fn signal(&self, signal: i32) {
        assert!(self.status.is_none(), "signal to a process already reaped");
        // Our own child, not yet reaped (so its PID is still ours).
        process::kill_process(self.process(), named(signal)).unwrap();
    }

    /// Sends `signal` to the process group it leads ([`Spawned::start_group`]), as a
    /// terminal's Ctrl-C does.
    pub fn signal_group(&self, signal: i32) {
        assert!(self.group, "signal_group needs Spawned::start_group");
        assert!(self.status.is_none(), "signal to a process already reaped");
        // The group our unreaped child leads.
        process::kill_process_group(self.process(), named(signal)).unwrap();
    }

    /// Its exit status if it has ended (reaping it), `None` while it runs.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().unwrap();
        }
        self.status
    }

    /// Its state letter in `/proc/<pid>/stat` (`R`, `S`, `T` when stopped, `Z` ...), read
    /// without reaping it; `None` once it is gone.
    pub fn proc_state(&self) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        stat.rsplit(')').next()?.trim_start().chars().next()
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.try_status().is_none()
    }

    /// Waits up to `within` for it to end, then for its pipes to close; returns everything
    /// it wrote (lines already read included).
    #[track_caller]
    pub fn wait(&mut self, within: Duration) -> Output {
        self.stdin = None;
        let status = eventually(within, || self.try_status());
        self.stdout.drain(within);
        self.stderr.drain(within);
        Output {
            status,
            stdout: self.stdout.seen.clone(),
            stderr: self.stderr.seen.clone(),
        }
    }

    /// [`Spawned::wait`], its output checked as a `--json` run's ([`JsonRun::check`]).
    #[track_caller]
    pub fn json(&mut self, within: Duration) -> JsonRun {
        JsonRun::check(self.wait(within))
    }

    /// SIGKILL to the group it leads ([`Spawned::start_group`]) even once it has ended and
    /// been reaped (a group outlives its leader while a member lives, and its ID names no
    /// other group meanwhile), then [`Spawned::kill`].
    pub(crate) fn kill_group(&mut self) {
        assert!(self.group, "kill_group needs Spawned::start_group");
        let _ = process::kill_process_group(self.process(), Signal::KILL);
        self.kill();
    }

    /// SIGKILL (to its whole group if it leads one), then reaps it.
    pub fn kill(&mut self) {
        if self.status.is_none() {
            if self.group {
                // The group our unreaped child leads.
                let _ = process::kill_process_group(self.process(), Signal::KILL);
            }
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The PIDs of the processes whose command line (its words joined by NUL, as
/// `/proc/<pid>/cmdline` holds them) contains `needle`.
pub fn pids_with_cmdline(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The signal numbered `signal`, which must be a named one.
#[track_caller]
fn named(signal: i32) -> Signal {
    Signal::from_named_raw(signal).unwrap_or_else(|| panic!("{signal} names no signal"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn keeps_every_byte_and_the_lines_no_one_took_yet() {
        let mut run = Spawned::start(&mut sh("echo one; echo two >&2; printf 'three\\377'"));
        assert!(run.stdout.until("one", Duration::from_secs(10)).is_empty());
        let output = run.wait(Duration::from_secs(10));
        assert!(output.status.success());
        assert_eq!(output.stdout, b"one\nthree\xff");
        assert_eq!(output.stderr, b"two\n");
        // Read off the pipe by `wait`, still there for a later look.
        assert!(run.stderr.until("two", Duration::from_secs(1)).is_empty());
        assert_eq!(run.stdout.rest(Duration::from_secs(1)), ["three\u{fffd}"]);
    }

    #[test]
    fn a_dropped_handle_kills_its_group() {
        let mut run = Spawned::start_group(&mut sh("sleep 60 & echo $!; wait"));
        let child: i32 = run
            .stdout
            .line(Duration::from_secs(10))
            .expect("the background sleep's pid")
            .parse()
            .unwrap();
        let leader = run.pid();
        drop(run);
        for pid in [leader, child] {
            eventually(Duration::from_secs(10), || {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map_or(true, |stat| stat.contains(") Z"))
            });
        }
    }
}
