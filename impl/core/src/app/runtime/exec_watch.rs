//! exec in a terminal, watched from the guest. Why: in a terminal, ssh's stdin is the user's
//! own, so the pipe whose end tells `--json`'s guest-side watchdog that stoat is gone does not
//! exist, and a SIGKILLed stoat (no handler runs, nothing stops the guest command) used to
//! leave the command, and what it double-forked, running in the guest.
//!
//! So once the command has run [`WATCH_AFTER`] (a short command, `exec vm true`, pays
//! nothing), a second ssh, the watch, starts: on a connection of its own, never through the
//! VM's master (through one, its session was seen to get the end of its input while stoat
//! still held the pipe, and it then stopped a command nobody had cancelled); in a process
//! group of its own, so the terminal's Ctrl-C never reaches it; its stdin a pipe only stoat
//! holds. In the guest it reads lines: `done` ends it quietly; the end of its input without
//! `done` (stoat gone, even SIGKILLed: the pipe closes with it, and the watch's ssh dies with
//! stoat) sends SIGTERM to everything carrying the exec's mark and what is below it, as a
//! cancel does, and SIGKILL to what is left 2 s later. When the command ends, however it
//! ends, stoat writes `done`, closes the pipe and reaps the watch, so what the command meant
//! to leave running (a daemon) stays. A cancel still stops the command itself, directly.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::child;

/// How long the command runs (from its session's opening) before its watch starts.
pub(super) const WATCH_AFTER: Duration = Duration::from_millis(200);

/// How long a watch told `done` has to end before it is killed.
const WATCH_END: Duration = Duration::from_secs(5);

/// What the exec tells its watch's thread.
enum Event {
    /// The session opened: the command runs in the guest.
    Opened,
    /// ssh has ended (so has the command, or it was canceled).
    Ended,
}

/// The watch of one terminal exec attempt: a thread that starts the watch's ssh when it is
/// time and ends it with `done` once the exec says so (or is dropped).
pub(super) struct Watch {
    events: Sender<Event>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts waiting; `launch` makes the watch's ssh (given the guest script of
    /// [`watch_script`] as its remote command), called only if the command runs long enough.
    pub(super) fn start(launch: impl FnOnce() -> Command + Send + 'static) -> Watch {
        let (events, received) = mpsc::channel();
        let thread = std::thread::spawn(move || watch(received, launch));
        Watch {
            events,
            thread: Some(thread),
        }
    }

    /// What to call once the session has opened (from ssh's stderr reader).
    pub(super) fn opened(&self) -> impl FnOnce() + Send + 'static {
        let events = self.events.clone();
        move || {
            let _ = events.send(Event::Opened);
        }
    }
}

impl Drop for Watch {
    /// The command has ended (or the exec gave up on it): the watch hears `done` and is
    /// reaped before the exec answers.
    fn drop(&mut self) {
        let _ = self.events.send(Event::Ended);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch(events: Receiver<Event>, launch: impl FnOnce() -> Command) {
    if !matches!(events.recv(), Ok(Event::Opened)) {
        return;
    }
    if !matches!(
        events.recv_timeout(WATCH_AFTER),
        Err(RecvTimeoutError::Timeout)
    ) {
        return;
    }
    let mut command = launch();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Started and waited for on this thread: the watch dies with the thread that started it.
    let Ok(mut ssh) = child::spawn_unregistered(&mut command) else {
        return;
    };
    let stdin = ssh.stdin.take();
    let _ = events.recv();
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(b"done\n");
    }
    reap(&mut ssh);
}

/// Waits up to [`WATCH_END`] for the watch to end, then kills it.
fn reap(ssh: &mut Child) {
    let deadline = Instant::now() + WATCH_END;
    let mut pause = Duration::from_millis(1);
    while Instant::now() < deadline {
        if !matches!(ssh.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    let _ = ssh.kill();
    let _ = ssh.wait();
}

/// The watch's guest script: `done` ends it; the end of its input without it runs `term`
/// (the cancel's stop), then `kill` (the same with SIGKILL) 2 s later. Its output goes
/// nowhere once the session may be gone, and a hangup of the session does not stop it.
pub(super) fn watch_script(term: &str, kill: &str) -> String {
    format!(
        "trap '' HUP PIPE; while read -r l; do [ \"$l\" = done ] && exit 0; done; exec >/dev/null 2>&1 </dev/null; ( {term} ); sleep 2; ( {kill} )"
    )
}
