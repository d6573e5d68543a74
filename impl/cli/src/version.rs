//! The build version stoat reports (`version`, `doctor`, the MCP server's `serverInfo`), in
//! a module of its own so the commands need not reach back into the crate root for it.

/// The build version stoat reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
