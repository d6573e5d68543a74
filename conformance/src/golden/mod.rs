//! Owns golden transcripts (docs/golden.md): the file format ([`format`]), typed
//! matchers ([`matcher`]), redaction ([`redact`]), the case list ([`spec`]) and the
//! record / verify / bless verbs ([`engine`]), all on the suite's own sandbox, SUT spawner
//! and oracle.

pub mod cli;
pub mod engine;
pub mod format;
pub mod matcher;
pub mod redact;
pub mod spec;

pub use engine::{record, verify, GoldenConfig, Recorded, Verdict, WriteMode};
pub use format::{GoldenCase, FORMAT};
