//! What every command gets: the core [`Session`] (environment, cancel flag, data root, event
//! sink) and the output mode. Commands reach the session through `Deref`.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use stoat_core::app::{project::STARTED, Session};
use stoat_core::{Cancel, Env, EventSink};
use stoat_wire::dto::{LogData, ProgressData, ProjectRunVm, StageData};
use stoat_wire::{EventType, Stream};

use crate::progress::HumanProgress;

/// The context of one invocation.
pub struct Ctx {
    json: bool,
    quiet: bool,
    session: Session,
    sink: Arc<Sink>,
}

impl std::ops::Deref for Ctx {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Ctx {
    pub fn new(
        json: bool,
        quiet: bool,
        env: Env,
        cancel: Cancel,
        stream: Option<Stream>,
        cmd: &'static str,
    ) -> Ctx {
        let sink = Arc::new(Sink {
            stream,
            quiet: quiet || json,
            progress: HumanProgress::new(),
        });
        let events: Arc<dyn EventSink> = sink.clone();
        Ctx {
            json,
            quiet: quiet || json,
            session: Session::new(env, cancel, events, cmd).with_spelling(&crate::spelling::CLI),
            sink,
        }
    }

    /// The prose of an answer, written only when a human reads it: under --json nobody does,
    /// and some prose costs reads of its own or holds what the wire must never carry (a
    /// generated console password). The one place a command's text depends on the mode.
    pub fn prose(
        &self,
        write: impl FnOnce() -> stoat_core::Result<String>,
    ) -> stoat_core::Result<String> {
        if self.json {
            Ok(String::new())
        } else {
            write()
        }
    }

    /// True under --json: the contract's answer, where a person's mode may differ.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// True under `-q` (and under --json, which implies it).
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Whether the guest of `exec` gets stoat's stdin: only a human's (json-v3#json-implies).
    pub fn hands_stdin_to_guest(&self) -> bool {
        !self.json
    }

    /// Why a confirmation cannot be asked for, or `None` when a human at a terminal can be
    /// asked. Under --json stdin is never read (json-v3#json-implies).
    pub fn prompt_refusal(&self) -> Option<&'static str> {
        if self.json {
            Some("pass -y to confirm")
        } else if self.quiet || !std::io::stdin().is_terminal() {
            Some("not asking without a terminal; pass -y to confirm")
        } else {
            None
        }
    }

    /// Ends any human progress display (before the answer is written).
    pub fn finish_progress(&self) {
        self.sink.progress.finish();
    }
}

/// JSON lines under --json; prose on stderr otherwise.
struct Sink {
    stream: Option<Stream>,
    quiet: bool,
    progress: HumanProgress,
}

impl EventSink for Sink {
    fn progress(&self, data: &ProgressData) {
        match &self.stream {
            Some(stream) => {
                let _ = stream.event(EventType::Progress, data);
            }
            None if !self.quiet => self.progress.progress(data),
            None => {}
        }
    }

    fn stage(&self, data: &StageData) {
        match &self.stream {
            Some(stream) => {
                let _ = stream.event(EventType::Stage, data);
            }
            None if !self.quiet => {
                let _ = writeln!(std::io::stderr(), "==> {}", data.recipe);
            }
            None => {}
        }
    }

    fn vm(&self, event: &ProjectRunVm) {
        if let Some(stream) = &self.stream {
            let _ = stream.event(EventType::Vm, event);
            return;
        }
        let text = match (event.status.as_str(), &event.error) {
            (STARTED, _) => format!("==> {} ({})", event.key, event.name),
            (_, Some(error)) => format!("    {}: {error}", event.name),
            ("skipped", _) => format!("    {}: skipped", event.name),
            _ => return,
        };
        self.note(&text);
    }

    fn note(&self, text: &str) {
        if self.stream.is_none() && !self.quiet {
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    }

    fn log(&self, data: &LogData) {
        match &self.stream {
            Some(stream) => {
                let _ = stream.event(EventType::Log, data);
            }
            None if !self.quiet => {
                let _ = writeln!(std::io::stderr(), "{}", data.line);
            }
            None => {}
        }
    }
}
