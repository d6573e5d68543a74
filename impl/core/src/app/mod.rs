//! The application layer: one typed function per operation, called alike by the CLI's
//! commands, the MCP tools and the project fan-out (none of which call each other).
//!
//! Each function takes a [`Session`] and a typed request and returns the wire DTO of its
//! answer (`stoat_wire::dto`) or a typed [`crate::Error`]; non-terminal events go to the
//! session's [`EventSink`], so the function never knows whether its caller prints JSON lines,
//! prose, or nothing. Rendering (human text, the envelope, MCP content) is the caller's.
//! It is also core's operations room: a family's functions are in its `mod.rs` (`vmops`,
//! `runtime`, `host`), and an operation whose work is more than a call into a domain room has
//! that work in a crate-private file beside them (`vmops/create.rs`, `runtime/up.rs`,
//! `host/snapshot.rs` ...). Adding an operation: a function here, then a CLI adapter, then an
//! MCP tool if it has one (docs/architecture.md).

pub mod complete;
pub mod host;
pub mod images;
pub mod info;
pub mod mcp;
pub mod process;
pub mod project;
pub mod recipes;
pub mod runtime;
pub mod vmops;
pub mod vms;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

pub use crate::hint::{Op, Piece, Plain, Said, Setting, Spelling, Step, Value};

use crate::{Cancel, Env, Error, EventSink, NullSink, Result, Root};

/// What every operation gets: the environment snapshot, the cancel flag, where events go,
/// and the data root (resolved lazily: help, version and schema never touch it).
pub struct Session {
    pub env: Env,
    pub cancel: Cancel,
    events: Arc<dyn EventSink>,
    /// The command or tool name stoat's own log records for this session.
    label: String,
    root: OnceLock<Root>,
    /// Where project discovery starts instead of the process's working directory (MCP's `dir`).
    work_dir: Option<PathBuf>,
    /// The caller's words for settings and steps, in the messages core writes itself (a
    /// project run's per-VM errors, the failure an apply leaves for `wait`).
    spelling: &'static dyn Spelling,
}

impl Session {
    /// A session whose events go to `events`; `label` names it in stoat's own log.
    pub fn new(env: Env, cancel: Cancel, events: Arc<dyn EventSink>, label: &str) -> Session {
        crate::lock::configure(label, &env);
        Session {
            env,
            cancel,
            events,
            label: label.to_owned(),
            root: OnceLock::new(),
            work_dir: None,
            spelling: &Plain,
        }
    }

    /// Returns this session with core's own messages spelled in `spelling`'s words.
    pub fn with_spelling(mut self, spelling: &'static dyn Spelling) -> Session {
        self.spelling = spelling;
        self
    }

    /// Returns the caller's words for settings and steps.
    pub fn spelling(&self) -> &'static dyn Spelling {
        self.spelling
    }

    /// A session that drops every event.
    pub fn quiet(env: Env, cancel: Cancel, label: &str) -> Session {
        Session::new(env, cancel, Arc::new(NullSink), label)
    }

    /// Returns this session with project discovery starting at `dir`.
    pub fn with_work_dir(mut self, dir: PathBuf) -> Session {
        self.work_dir = Some(dir);
        self
    }

    /// Returns where the walk up to stoat.toml starts: the given directory, else the cwd.
    pub fn work_dir(&self) -> Result<PathBuf> {
        match &self.work_dir {
            Some(dir) => Ok(dir.clone()),
            None => std::env::current_dir().map_err(|e| Error::io("read the current directory", e)),
        }
    }

    /// Returns the data root, creating its directories the first time.
    pub fn root(&self) -> Result<&Root> {
        if let Some(root) = self.root.get() {
            return Ok(root);
        }
        let root = Root::resolve(&self.env)?;
        root.ensure()?;
        crate::log::append(&root, "info", &format!("cli cmd={}", self.label));
        Ok(self.root.get_or_init(|| root))
    }

    /// Appends an `info` line to stoat's own log under the data root (a front end's record of
    /// what it was asked, such as the MCP tool called).
    pub fn record(&self, text: &str) -> Result<()> {
        crate::log::append(self.root()?, "info", text);
        Ok(())
    }

    /// Returns where long operations send their events.
    pub fn events(&self) -> &dyn EventSink {
        self.events.as_ref()
    }

    /// Returns the shared handle of the event sink (for a session derived from this one).
    pub fn events_handle(&self) -> Arc<dyn EventSink> {
        Arc::clone(&self.events)
    }
}
