//! The work behind every stoat command: the data root, vm.toml, locks, images, QEMU, ssh,
//! recipes and projects.
//!
//! No terminal I/O and no ambient environment reads: callers pass an [`Env`] snapshot and an
//! [`EventSink`], and get back wire DTOs or a typed [`Error`] whose [`Error::code`] is the one
//! table from failures to contract error codes.

pub mod app;
pub mod boot;
pub mod bounded;
pub mod child;
pub mod display;
pub mod env;
pub mod error;
pub mod events;
pub mod fault;
pub mod git;
pub mod guests;
pub mod host;
pub mod images;
pub mod jsonc;
pub mod keys;
pub mod lock;
pub mod log;
pub mod mcp_config;
pub mod ops;
pub mod ports;
pub mod project;
pub mod proxy;
pub mod qemu;
pub mod recipe_state;
pub mod recipes;
pub mod root;
pub mod runtime;
pub mod shell;
pub mod size;
pub mod ssh;
pub mod vm;

pub use env::Env;
pub use error::{Error, Result};
pub use events::{Cancel, EventSink, NullSink};
pub use root::Root;
