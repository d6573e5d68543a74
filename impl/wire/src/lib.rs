//! The wire side of stoat's machine contract v3: the JSON-lines envelope, the error-code
//! registry, every DTO a `--json` line can carry, and the exec byte encoding.
//!
//! No I/O other than the `Write` an [`Emitter`] is given, and no knowledge of how stoat
//! does its work: `stoat-core` produces these types, the CLI and the MCP server print them.
//! Implements json-v3#envelope, json-v3#error-codes, json-v3#types, json-v3#per-command-data.

#![forbid(unsafe_code)]

pub mod bytes;
pub mod code;
pub mod dto;
pub mod emitter;
pub mod error;

pub use bytes::StreamBytes;
pub use code::{codes, ErrorCode};
pub use emitter::{Emitter, EventType, Stream, Terminator};
pub use error::WireError;

/// The contract version every line carries in `v`. It bumps only for a removal or a
/// meaning change; additions never bump it.
pub const CONTRACT_VERSION: u32 = 3;
