//! Owns invocations a scenario watches WHILE they run: stdout read line by line as it
//! arrives (with the time it arrived), the moment the process exited, and a stdin the
//! scenario writes to (the MCP server's JSON-RPC). The ordinary `Case::run` captures a whole
//! invocation after the fact and cannot see "when": streaming and EOF checks need this.
//! The SUT leads its own process group; dropping the watch kills the group.

use std::io::{BufRead as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::run::Case;
use crate::sandbox::Sandbox;

/// What the next read gave.
#[derive(Debug)]
pub enum Next {
    Line(String),
    Eof,
    Timeout,
}

/// One running SUT invocation.
pub struct Watched {
    pid: i32,
    lines: Receiver<Option<String>>,
    exits: Receiver<(Instant, Option<i32>)>,
    exit: Option<(Instant, Option<i32>)>,
    pub stdin: Option<ChildStdin>,
    eof: bool,
    started: Instant,
    /// The case's clock of watched SUT time, credited when the watch ends.
    sut_clock: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Watched {
    /// Starts `<sut> <args>` in the sandbox; `stdin` gives it a pipe instead of /dev/null.
    pub fn spawn(
        case: &Case<'_>,
        sandbox: &Sandbox,
        args: &[&str],
        stdin: bool,
    ) -> Result<Self, HarnessError> {
        let sut = case.sut();
        let started = Instant::now();
        let mut command = Command::new(&sut.program);
        command
            .args(&sut.leading)
            .args(args)
            .env_clear()
            .envs(sandbox.env())
            .current_dir(&sandbox.work)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .process_group(0);
        let mut child = command.spawn().map_err(|source| HarnessError::Spawn {
            program: sut.program.display().to_string(),
            source,
        })?;
        let pid = child.id() as i32;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (line_tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            if let Some(stdout) = stdout {
                let mut reader = std::io::BufReader::new(stdout);
                loop {
                    let mut raw = Vec::new();
                    match reader.read_until(b'\n', &mut raw) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&raw);
                            let line = text.strip_suffix('\n').unwrap_or(&text).to_string();
                            if line_tx.send(Some(line)).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
            let _ = line_tx.send(None);
        });
        let (exit_tx, exits) = mpsc::channel();
        std::thread::spawn(move || {
            let status = child.wait().ok().and_then(|s| s.code());
            let _ = exit_tx.send((Instant::now(), status));
        });
        Ok(Watched {
            pid,
            lines,
            exits,
            exit: None,
            stdin,
            eof: false,
            started,
            sut_clock: case.watched_us.clone(),
        })
    }

    /// The next stdout line, waiting at most `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Next {
        if self.eof {
            return Next::Eof;
        }
        match self.lines.recv_timeout(timeout) {
            Ok(Some(line)) => Next::Line(line),
            Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                Next::Eof
            }
            Err(RecvTimeoutError::Timeout) => Next::Timeout,
        }
    }

    /// When the process exited and its status, once it has (not waiting).
    pub fn exited(&mut self) -> Option<(Instant, Option<i32>)> {
        if self.exit.is_none() {
            self.exit = self.exits.try_recv().ok();
        }
        self.exit
    }

    /// Writes one line to the SUT's stdin.
    pub fn send_line(&mut self, line: &str) -> bool {
        match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|_| stdin.flush())
                .is_ok(),
            None => false,
        }
    }

    /// Closes the SUT's stdin (end of the conversation).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.stdin = None;
        let ended = self.exited().map_or_else(Instant::now, |(at, _)| at);
        let ran = ended.saturating_duration_since(self.started).as_micros() as u64;
        self.sut_clock
            .fetch_add(ran, std::sync::atomic::Ordering::Relaxed);
        if self.pid > 1 {
            // The process group this watch created for its SUT.
            if let Some(group) = rustix::process::Pid::from_raw(self.pid) {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
        }
    }
}
