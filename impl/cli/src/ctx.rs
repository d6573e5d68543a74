//! What every command gets: the core [`Session`] (environment, cancel flag, data root, event
//! sink) and the output mode. Commands reach the session through `Deref`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use stoat_core::app::Session;
use stoat_core::{Cancel, Env, EventSink};
use stoat_wire::dto::{LogData, ProgressData, StageData};
use stoat_wire::{EventType, Stream};

use crate::progress::HumanProgress;

/// The context of one invocation.
pub struct Ctx {
    pub json: bool,
    pub quiet: bool,
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
            session: Session::new(env, cancel, events, cmd),
            sink,
        }
    }

    /// Returns this context with project discovery starting at `dir`.
    pub fn with_work_dir(mut self, dir: PathBuf) -> Ctx {
        self.session = self.session.with_work_dir(dir);
        self
    }

    /// Writes a non-terminal event line under --json; nothing otherwise.
    pub fn json_event<T: serde::Serialize>(&self, kind: EventType, data: &T) {
        if let Some(stream) = &self.sink.stream {
            let _ = stream.event(kind, data);
        }
    }

    /// Ends any human progress display (before the answer is written).
    pub fn finish_progress(&self) {
        self.sink.progress.finish();
    }

    /// Says something to a human (stderr), unless quiet or under --json.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "{text}");
        }
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
