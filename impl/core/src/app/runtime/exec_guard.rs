//! exec's guard: what stops the guest command when stoat is gone without a word. Why: a
//! SIGKILLed stoat runs no handler, its ssh dies with it, and nothing in a session without a
//! terminal tells the guest: the command, and what it double-forked, would run on.
//!
//! So each exec starts the stoat binary again as its guard (`stoat __exec-guard <ssh argv>`),
//! on the host, before the command: in a process group of its own (a terminal's Ctrl-C does
//! not reach it), not stopped with stoat's other tools, its stdin a pipe only stoat holds.
//! When the exec ends, however it ends, stoat writes `done` and reaps it, so what the command
//! meant to leave running (a daemon) stays. When that stdin ends without `done` (stoat gone,
//! even SIGKILLed: the pipe closes with it), the guard runs the ssh it was given, a login of
//! its own, never through the VM's master (which may have been stoat's own ssh), whose guest
//! script stops everything that carries the exec's mark as a cancel does, and SIGKILLs what
//! is left 2 s later.
//!
//! It costs the guest nothing while the command runs: before it, a watchdog process in the
//! guest read the session's stdin for its end, a fork that under emulation cost more than
//! the rest of a short exec (docs/decisions/performance.md).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The first argument that makes the stoat binary an exec's guard (hidden: not a command).
pub const GUARD_ARG: &str = "__exec-guard";

/// What stoat writes when the exec has ended.
const DONE: &[u8] = b"done\n";

/// How long a guard told `done` has to end before it is killed.
const GUARD_END: Duration = Duration::from_secs(5);

/// How long the guard's stop may take: a fresh login to a guest that may be slow, the
/// SIGTERM, the 2 s before SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(60);

/// One exec's guard, told `done` and reaped when dropped.
pub(super) struct Guard {
    process: Child,
    told: Option<ChildStdin>,
}

impl Guard {
    /// Starts the guard with `stop`, an ssh whose remote command is [`stop_script`]'s; its
    /// program, arguments, environment and directory are the guard's to run.
    pub(super) fn start(stop: &Command) -> std::io::Result<Guard> {
        let mut guard = Command::new(std::env::current_exe()?);
        guard
            .arg(GUARD_ARG)
            .arg(stop.get_program())
            .args(stop.get_args());
        for (name, value) in stop.get_envs() {
            match value {
                Some(value) => guard.env(name, value),
                None => guard.env_remove(name),
            };
        }
        if let Some(dir) = stop.get_current_dir() {
            guard.current_dir(dir);
        }
        // Neither registered with stoat's tools nor dying with stoat: outliving a SIGKILLed
        // stoat is its job.
        let mut process = guard
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let told = process.stdin.take();
        Ok(Guard { process, told })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut told) = self.told.take() {
            let _ = told.write_all(DONE);
        }
        let deadline = Instant::now() + GUARD_END;
        let mut pause = Duration::from_micros(100);
        while Instant::now() < deadline {
            if !matches!(self.process.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The guard's guest script: stops what carries the mark (`term`, the cancel's stop), then
/// `kill` (the same with SIGKILL) 2 s later. Its output goes nowhere, and a hangup of its
/// session does not stop it.
pub(super) fn stop_script(term: &str, kill: &str) -> String {
    format!("trap '' HUP PIPE; exec >/dev/null 2>&1 </dev/null; ( {term} ); sleep 2; ( {kill} )")
}

/// The guard's body: `stop` is the ssh to run (program first) unless stdin says `done`.
pub fn serve(stop: &[OsString]) -> std::io::Result<()> {
    guard(std::io::stdin().lock(), stop)
}

fn guard(told: impl Read, stop: &[OsString]) -> std::io::Result<()> {
    let mut heard = Vec::new();
    // Up to the end of the pipe: `done`, or nothing when stoat is gone.
    told.take(DONE.len() as u64 + 1).read_to_end(&mut heard)?;
    if heard == DONE {
        return Ok(());
    }
    let Some((program, args)) = stop.split_first() else {
        return Ok(());
    };
    let mut ssh = Command::new(program);
    ssh.args(args).stdin(Stdio::null());
    // Killed at the limit, like any stop of a cancelled command.
    match crate::child::cleanup_output(&mut ssh, STOP_LIMIT) {
        Ok(_) => Ok(()),
        Err(crate::child::RunError::Spawn(e)) => Err(e),
        Err(crate::child::RunError::Canceled) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touching(file: &std::path::Path) -> Vec<OsString> {
        ["touch".into(), file.as_os_str().to_owned()].into()
    }

    #[test]
    fn the_end_of_stdin_without_done_runs_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stopped");
        guard(&b""[..], &touching(&file)).unwrap();
        assert!(file.exists());
    }

    #[test]
    fn done_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stopped");
        guard(DONE, &touching(&file)).unwrap();
        assert!(!file.exists());
        // Anything else is not `done`.
        guard(&b"done\nmore"[..], &touching(&file)).unwrap();
        assert!(file.exists());
    }
}
