//! Answering: [`Output`], the one place that writes the result (the JSON result line, or the
//! prose and the guest's bytes for a human) and decides the exit status. Commands return a
//! [`Reply`] and never look at the mode.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage. Under --json, exec exits 0 whenever the
//! guest command ran and doctor exits 0 with healthy:false (the reply says so through
//! `json_exit`); without --json, exec passes the guest's status through.

use std::io::Write;

use serde::Serialize;
use serde_json::value::RawValue;
use stoat_core::Error;
use stoat_wire::{Emitter, ErrorCode};

use crate::spelling::CLI;

/// A command's answer: its data for the wire, its prose for a human, and any exit override.
pub struct Reply {
    /// The data already written as JSON: the result line copies it as it is, so no
    /// `serde_json::Value` tree is built and freed for a large answer (`ls` of many VMs).
    pub data: Box<RawValue>,
    /// The prose a human reads (empty under --json: `Ctx::prose`).
    human: String,
    /// The guest's own bytes, passed through untouched in human mode (`exec`).
    pub guest: Option<GuestOutput>,
    /// Exit status in human mode (exec passes the guest's status; doctor 1 when unhealthy).
    pub human_exit: i32,
}

/// What a guest command wrote, for a human's terminal.
pub struct GuestOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Reply {
    /// Returns a reply carrying `data` and the prose a human sees.
    pub fn new<T: Serialize>(data: &T, human: impl Into<String>) -> Reply {
        let data = serde_json::value::to_raw_value(data)
            .unwrap_or_else(|e| panic!("wire DTOs always serialise: {e}"));
        Reply {
            data,
            human: human.into(),
            guest: None,
            human_exit: 0,
        }
    }

    /// Sets the guest's bytes a human sees instead of prose.
    pub fn with_guest_output(mut self, guest: GuestOutput) -> Reply {
        self.guest = Some(guest);
        self
    }

    /// Sets the human-mode exit status.
    pub fn with_human_exit(mut self, status: i32) -> Reply {
        self.human_exit = status;
        self
    }
}

/// Where the answer goes: the result line of the envelope, or a human's terminal.
pub enum Output {
    Json(Emitter),
    Human,
}

impl Output {
    /// The output of an invocation: JSON lines when `--json` gave an emitter.
    pub fn new(emitter: Option<Emitter>) -> Output {
        emitter.map_or(Output::Human, Output::Json)
    }

    /// Writes the answer and returns the exit status.
    pub fn finish(self, cmd: &str, result: Result<Reply, Error>) -> i32 {
        finish(self, cmd, result, None)
    }

    /// [`Output::finish`] with a `hint:` line for a person after an error (never on the wire).
    pub fn finish_hinted(
        self,
        cmd: &str,
        result: Result<Reply, Error>,
        hint: Option<String>,
    ) -> i32 {
        finish(self, cmd, result, hint)
    }
}

fn finish(output: Output, cmd: &str, result: Result<Reply, Error>, hint: Option<String>) -> i32 {
    let exit = match (&output, &result) {
        (Output::Json(_), Ok(_)) => 0,
        (Output::Human, Ok(reply)) => reply.human_exit,
        (_, Err(err)) if err.code() == ErrorCode::Usage => 2,
        // A shell's convention for a command its user interrupted (128 + SIGINT); the
        // contract's exit statuses (0, 1, 2) bind --json only.
        (Output::Human, Err(err)) if err.code() == ErrorCode::Canceled => 130,
        (_, Err(_)) => 1,
    };
    match (output, result) {
        (Output::Json(emitter), Ok(reply)) => {
            let _ = emitter.finish(Ok(&reply.data));
        }
        (Output::Json(emitter), Err(err)) => {
            let _ = emitter.finish::<()>(Err(&err.to_wire_in(&CLI)));
        }
        (Output::Human, Ok(reply)) => {
            if let Some(guest) = &reply.guest {
                let _ = std::io::stdout().write_all(&guest.stdout);
                let _ = std::io::stdout().flush();
                let _ = std::io::stderr().write_all(&guest.stderr);
            }
            let human = reply.human;
            if !human.is_empty() {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(human.as_bytes());
                if !human.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
            }
        }
        (Output::Human, Err(err)) if err.code() == ErrorCode::Usage => {
            eprintln!(
                "stoat: {}\nrun `stoat help` for usage",
                err.message_in(&CLI)
            );
        }
        (Output::Human, Err(err)) => {
            eprintln!("stoat: {cmd}: {}", err.message_in(&CLI));
            match &err {
                Error::ImageNotDownloaded { id } => eprintln!("hint: stoat pull {id}"),
                Error::NotRunning { name } => eprintln!("hint: start it with `stoat up {name}`"),
                _ => {}
            }
            if let Some(hint) = hint {
                eprintln!("hint: {hint}");
            }
        }
    }
    exit
}
