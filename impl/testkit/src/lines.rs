//! Reading a running stoat's output line by line, with a deadline: a test synchronises on
//! what the process printed, and a process that never prints fails the test instead of
//! hanging it.

use std::io::BufRead;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The lines of a pipe, read on a thread of their own.
pub struct Lines {
    receiver: Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Starts reading `pipe` (a child's stdout or stderr).
    pub fn read(pipe: impl std::io::Read + Send + 'static) -> Lines {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Lines {
            receiver,
            seen: Vec::new(),
        }
    }

    /// Waits up to `within` for a line equal to `wanted`; returns every line read before it.
    /// Panics, naming what was read, when the pipe closes or the time is up first.
    pub fn until(&mut self, wanted: &str, within: Duration) -> Vec<String> {
        self.until_match(wanted, |line| line == wanted, within)
    }

    /// [`Lines::until`] for the first line `matches` accepts; `what` names it in a failure.
    pub fn until_match(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
        within: Duration,
    ) -> Vec<String> {
        let wanted = what;
        let deadline = Instant::now() + within;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) if matches(&line) => {
                    self.seen.push(line);
                    return before;
                }
                Ok(line) => {
                    self.seen.push(line.clone());
                    before.push(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line {wanted:?} within {within:?}; read: {:?}",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the pipe closed before {wanted:?}; read: {:?}", self.seen)
                }
            }
        }
    }

    /// Waits up to `within` for the pipe to close; returns the lines read until then.
    pub fn rest(&mut self, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut rest = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    rest.push(line);
                }
                Err(RecvTimeoutError::Disconnected) => return rest,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("the pipe stayed open for {within:?}; read: {:?}", self.seen)
                }
            }
        }
    }
}
