//! stoat-conformance: runs ANY stoat executable and reports, check by check, where it keeps
//! or breaks machine contract v3 (restated with rule ids in docs/contract.md).
//!
//! Vocabulary:
//! - a **check** is one catalog entry ([`catalog`]) with a stable id, the contract sentence
//!   it enforces, a level (MUST fails, SHOULD warns), tags and a tier (pure, fake, real);
//! - the **oracle** ([`oracle`]) judges EVERY invocation the suite makes against the
//!   universal rules (envelope, exit codes, leaks, lists, schemas); its rules are checks too;
//! - a **scenario** is the body of a non-oracle check: it builds a [`sandbox`], runs the SUT
//!   and asserts the command-specific part;
//! - a **run** ([`run`]) schedules checks and emits events; reporters ([`report`]) consume them.
//!
//! This crate never depends on `impl/`: it is an independent reading of the contract.

#![deny(unsafe_code)]

pub mod bench;
pub mod capture;
pub mod catalog;
pub mod cli;
pub mod error;
pub mod exit;
pub mod explore;
pub mod explore_cli;
pub mod finding;
pub mod golden;
pub mod ids;
pub mod mutate;
pub mod oracle;
pub mod report;
pub mod repro_cli;
pub mod run;
pub mod sandbox;
pub mod spec;

/// The fake host tools, a crate of their own (the reference's test kit uses them too).
pub use stoat_fakes as fakes;

pub use capture::Capture;
pub use finding::{CheckId, Finding, Level};
