//! A time limit on every stoat command a stretch of test code runs ([`bounded`]): a command
//! that hangs fails its test, naming itself, instead of hanging the whole run.
//!
//! Not assert_cmd's `timeout`: that kills stoat alone and then reads its pipes to their end,
//! which a child stoat started (an ssh, a qemu-img) still holds open when stoat hangs on it,
//! so the read hangs in its place. Here the command runs as a [`Spawned`] process group, the
//! whole group is killed once the limit passes, and the pipes are waited on within the same
//! limit.

use std::cell::Cell;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::Spawned;

thread_local! {
    /// The limit [`bounded`] set for this thread's commands, if any.
    static LIMIT: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// Runs `body` with a time limit on every stoat command it runs through [`TestEnv::run`],
/// [`TestEnv::json`] and [`TestEnv::json_raw`] (on this thread): a command still running (or
/// its output still open) `limit` after it started is killed, with every process of its
/// group, and the call panics naming the command line and the limit. The limit before is
/// restored when `body` returns or panics; nested, the smaller limit holds.
///
/// [`TestEnv::run`]: crate::TestEnv::run
/// [`TestEnv::json`]: crate::TestEnv::json
/// [`TestEnv::json_raw`]: crate::TestEnv::json_raw
pub fn bounded<R>(limit: Duration, body: impl FnOnce() -> R) -> R {
    /// Puts the limit before back, on a panic too.
    struct Restore(Option<Duration>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMIT.with(|cell| cell.set(self.0));
        }
    }
    let before = LIMIT.with(Cell::get);
    let _restore = Restore(before);
    LIMIT.with(|cell| cell.set(Some(before.map_or(limit, |outer| outer.min(limit)))));
    body()
}

/// The limit in force on this thread ([`bounded`]), if any.
pub(crate) fn limit() -> Option<Duration> {
    LIMIT.with(Cell::get)
}

/// Runs `command` (shown as `shown` in a failure) as [`assert_cmd::Command::output`] does
/// (stdin closed at once, stdout and stderr read), but leading a process group of its own
/// ([`Spawned::start_group`]) and within `limit`: past it, the group is killed and this
/// panics.
#[track_caller]
pub(crate) fn output_within(mut command: Command, shown: &str, limit: Duration) -> Output {
    let started = Instant::now();
    let deadline = started + limit;
    let mut run = Spawned::start_group(command.stdin(Stdio::null()));
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match run.try_status() {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(pause.min(deadline - Instant::now())),
        }
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    // Both pipes are read (up to the deadline) before either is judged, so a failure shows
    // what each said.
    let stdout_closed = run.stdout.drained_by(deadline);
    let stderr_closed = run.stderr.drained_by(deadline);
    if let (Some(status), true, true) = (status, stdout_closed, stderr_closed) {
        return Output {
            status,
            stdout: run.stdout.bytes().to_vec(),
            stderr: run.stderr.bytes().to_vec(),
        };
    }
    let shown_status = match status {
        Some(status) => format!("ended ({status}) but its output stayed open, then killed"),
        None => "killed".to_owned(),
    };
    // Past the limit: the command's whole group goes, and with it whatever held the pipes.
    run.kill_group();
    let after_kill = Instant::now() + Duration::from_secs(2);
    let so_far = |stream: &mut crate::Stream| {
        let closed = stream.drained_by(after_kill);
        let text = String::from_utf8_lossy(stream.bytes()).into_owned();
        if closed {
            text
        } else {
            format!("{text}(still open)")
        }
    };
    let (stdout, stderr) = (so_far(&mut run.stdout), so_far(&mut run.stderr));
    panic!(
        "`{shown}` ran past its bound of {limit:?} and was {shown_status} after {:.1?}\n\
         stdout: {stdout}\nstderr: {stderr}",
        started.elapsed(),
    );
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
    fn a_command_within_its_bound_answers_as_it_would_unbounded() {
        let out = output_within(
            sh("echo out; echo err >&2; exit 3"),
            "sh",
            Duration::from_secs(20),
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_child_holding_the_output_open_is_killed_with_the_command() {
        let started = Instant::now();
        let failed = std::panic::catch_unwind(|| {
            output_within(
                sh("sleep 600 & echo $! >&2; exit 0"),
                "holder",
                Duration::from_secs(1),
            )
        });
        let message = *failed.unwrap_err().downcast::<String>().unwrap();
        assert!(
            message.starts_with("`holder` ran past its bound of 1s and was ended (exit status: 0)"),
            "{message}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        let sleep = message.rsplit("stderr: ").next().unwrap().trim();
        assert!(sleep.parse::<u32>().is_ok(), "{message}");
        crate::eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(format!("/proc/{sleep}/stat"))
                .map_or(true, |stat| stat.contains(") Z"))
        });
    }

    #[test]
    fn the_limit_before_comes_back_after_a_panic_and_the_smaller_one_holds() {
        assert_eq!(limit(), None);
        let caught = std::panic::catch_unwind(|| {
            bounded(Duration::from_secs(5), || {
                assert_eq!(limit(), Some(Duration::from_secs(5)));
                bounded(Duration::from_secs(60), || {
                    assert_eq!(limit(), Some(Duration::from_secs(5)));
                });
                bounded(Duration::from_secs(1), || {
                    assert_eq!(limit(), Some(Duration::from_secs(1)));
                    panic!("a failing row");
                })
            })
        });
        assert!(caught.is_err());
        assert_eq!(limit(), None);
    }
}
