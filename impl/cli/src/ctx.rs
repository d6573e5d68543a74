//! What every command gets: the output mode, the environment, the cancel flag, the event
//! sink, and the data root (resolved lazily: help, version and schema never touch it).

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use stoat_core::{Cancel, Env, EventSink, Result, Root};
use stoat_wire::dto::{LogData, ProgressData, StageData};
use stoat_wire::{EventType, Stream};

/// The context of one invocation.
pub struct Ctx {
    pub json: bool,
    pub quiet: bool,
    pub env: Env,
    pub cancel: Cancel,
    cmd: &'static str,
    sink: Sink,
    root: OnceLock<Root>,
    /// Where project discovery starts instead of the process's working directory (MCP's `dir`).
    work_dir: Option<PathBuf>,
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
        let sink = Sink {
            stream,
            quiet: quiet || json,
        };
        Ctx {
            json,
            quiet: quiet || json,
            env,
            cancel,
            cmd,
            sink,
            root: OnceLock::new(),
            work_dir: None,
        }
    }

    /// Returns this context with project discovery starting at `dir`.
    pub fn with_work_dir(mut self, dir: PathBuf) -> Ctx {
        self.work_dir = Some(dir);
        self
    }

    /// Returns where the walk up to stoat.toml starts: the given directory, else the cwd.
    pub fn work_dir(&self) -> Result<PathBuf> {
        match &self.work_dir {
            Some(dir) => Ok(dir.clone()),
            None => std::env::current_dir()
                .map_err(|e| stoat_core::Error::io("read the current directory", e)),
        }
    }

    /// Returns the data root, creating its directories the first time.
    pub fn root(&self) -> Result<&Root> {
        if let Some(root) = self.root.get() {
            return Ok(root);
        }
        let root = Root::resolve(&self.env)?;
        root.ensure()?;
        stoat_core::log::append(&root, "info", &format!("cli cmd={}", self.cmd));
        Ok(self.root.get_or_init(|| root))
    }

    /// Returns where long operations send their events.
    pub fn sink(&self) -> &dyn EventSink {
        &self.sink
    }

    /// Writes a non-terminal event line under --json; nothing otherwise.
    pub fn json_event<T: serde::Serialize>(&self, kind: EventType, data: &T) {
        if let Some(stream) = &self.sink.stream {
            let _ = stream.event(kind, data);
        }
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
}

impl EventSink for Sink {
    fn progress(&self, data: &ProgressData) {
        match &self.stream {
            Some(stream) => {
                let _ = stream.event(EventType::Progress, data);
            }
            None if !self.quiet => {
                let _ = write!(
                    std::io::stderr(),
                    "\r{}  {:>3}%  {} / {}",
                    data.id,
                    data.percent,
                    data.done,
                    data.total
                );
                if data.percent >= 100 {
                    let _ = writeln!(std::io::stderr());
                }
            }
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
