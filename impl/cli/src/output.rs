//! Answering: the one place that writes the result (JSON) or the prose (human) and decides
//! the exit status.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage. Under --json, exec exits 0 whenever the
//! guest command ran and doctor exits 0 with healthy:false (the reply says so through
//! `json_exit`); without --json, exec passes the guest's status through.

use std::io::Write;

use serde::Serialize;
use stoat_core::Error;
use stoat_wire::{Emitter, ErrorCode};

/// A command's answer: its data for the wire, its prose for a human, and any exit override.
pub struct Reply {
    pub data: serde_json::Value,
    pub human: String,
    /// Exit status in human mode (exec passes the guest's status; doctor 1 when unhealthy).
    pub human_exit: i32,
}

impl Reply {
    /// Returns a reply carrying `data` and the prose a human sees.
    pub fn new<T: Serialize>(data: &T, human: impl Into<String>) -> Reply {
        let data = serde_json::to_value(data)
            .unwrap_or_else(|e| panic!("wire DTOs always serialise: {e}"));
        Reply {
            data,
            human: human.into(),
            human_exit: 0,
        }
    }

    /// Sets the human-mode exit status.
    pub fn with_human_exit(mut self, status: i32) -> Reply {
        self.human_exit = status;
        self
    }
}

/// Writes the answer and returns the exit status.
pub fn finish(
    emitter: Option<Emitter>,
    cmd: &str,
    result: Result<Reply, Error>,
    json: bool,
) -> i32 {
    let exit = match &result {
        Ok(reply) if json => {
            let _ = reply;
            0
        }
        Ok(reply) => reply.human_exit,
        Err(err) if err.code() == ErrorCode::Usage => 2,
        Err(_) => 1,
    };
    match (emitter, result) {
        (Some(emitter), Ok(reply)) => {
            let _ = emitter.finish(Ok(&reply.data));
        }
        (Some(emitter), Err(err)) => {
            let _ = emitter.finish::<()>(Err(&err.to_wire()));
        }
        (None, Ok(reply)) => {
            if !reply.human.is_empty() {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(reply.human.as_bytes());
                if !reply.human.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
            }
        }
        (None, Err(err)) if err.code() == ErrorCode::Usage => {
            eprintln!("stoat: {err}\nrun `stoat help` for usage");
        }
        (None, Err(err)) => {
            eprintln!("stoat: {cmd}: {err}");
            if let Error::ImageNotDownloaded { id } = &err {
                eprintln!("hint: stoat pull {id}");
            }
        }
    }
    exit
}
