//! Owns the exit statuses of `stoat-conformance` itself.

/// Every MUST passed (warnings and expected failures allowed).
pub const PASS: u8 = 0;
/// A MUST check failed or crashed, or a baseline entry is stale.
pub const VIOLATIONS: u8 = 1;
/// Bad command line.
pub const USAGE: u8 = 2;
/// The harness could not do its job (sandbox, spawn, report I/O).
pub const HARNESS_ERROR: u8 = 3;
