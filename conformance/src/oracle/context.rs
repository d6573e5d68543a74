//! Owns [`Context`]: what the harness tells the oracle about an invocation beyond its bytes.

use super::leaks::Canaries;

/// What the harness knows about an invocation beyond its bytes.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The `cmd` every line must carry, when the scenario knows it.
    pub expect_cmd: Option<String>,
    /// Strings that must never appear (paths outside allowed pointers; secrets anywhere).
    pub canaries: Canaries,
    /// The contract edition the invocation is judged by.
    pub edition: crate::spec::Edition,
}
