//! The work behind every stoat command: the data root, vm.toml, locks, images, QEMU, ssh,
//! recipes and projects.
//!
//! The public face is [`app`], one typed function per operation, and the few types its
//! callers hold (re-exported below); every other module is crate-private. Callers pass an
//! [`Env`] snapshot, a [`Cancel`] flag and an [`EventSink`] (in an [`app::Session`]) and get
//! back wire DTOs or a typed [`Error`] whose [`Error::code`] is the one table from failures
//! to contract error codes, and whose message each front end spells in its own words
//! ([`app::Spelling`]). The fuzz targets reach a few parsers through the hidden `fuzzing`
//! module, compiled only with the `fuzzing` feature.
//!
//! Environment variables come from the [`Env`] snapshot, except `STOAT_FAULT` (the tests'
//! pause points in `fault`). Notes and progress go to the sink; the only terminal I/O is a
//! person's `exec` and `cp -`, whose guest streams are this process's own stdin, stdout and
//! stderr. The working directory is read where a relative path or the project lookup needs it.

// Unsafe code is allowed only on the few functions that need it, each named in
// docs/decisions/unsafe.md.
#![deny(unsafe_code)]

pub mod app;
pub(crate) mod boot;
pub(crate) mod bounded;
pub(crate) mod child;
pub(crate) mod display;
pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod fault;
pub(crate) mod git;
pub(crate) mod guests;
pub(crate) mod hint;
pub(crate) mod host;
pub(crate) mod images;
pub(crate) mod jsonc;
pub(crate) mod keys;
pub(crate) mod lock;
pub(crate) mod log;
pub(crate) mod mcp_config;
pub(crate) mod ports;
pub(crate) mod project;
pub(crate) mod proxy;
pub(crate) mod qemu;
pub(crate) mod recipe_state;
pub(crate) mod recipes;
pub(crate) mod root;
pub(crate) mod shell;
pub(crate) mod size;
pub(crate) mod ssh;
pub(crate) mod vm;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(test)]
mod roundtrip_props;

pub use env::Env;
pub use error::{Error, Result, Spelled};
pub use events::{Cancel, EventSink, NullSink};
pub use root::Root;
