//! Owns [`Finding`] and [`Level`]: a contract violation as data, never a Rust error.
//!
//! A SUT breaking the contract is reported, not raised; harness failures are
//! [`crate::error::HarnessError`] instead.

use serde::{Deserialize, Serialize};

/// How much a broken rule weighs: a MUST fails the run, a SHOULD only warns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Must,
    Should,
}

impl Level {
    /// Returns the RFC 2119 word for this level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// One observed violation of one check, located by a JSON pointer into the line it concerns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub check_id: String,
    pub level: Level,
    /// Contract section the check enforces, e.g. `json-v3#exit-codes`.
    pub spec_ref: String,
    /// Where: `line 3/data/vms/0/share`, `exit`, `stdin`, `fake-log`...
    pub pointer: String,
    pub message: String,
}

impl Finding {
    /// Builds a finding for a catalog check id; level and spec come from the catalog.
    ///
    /// An id missing from the catalog is a programming error caught by the catalog lint test;
    /// it still yields a MUST finding so nothing is silently dropped.
    pub fn new(check_id: &str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let (level, spec_ref) = match crate::catalog::find(check_id) {
            Some(def) => (def.level, def.spec.to_string()),
            None => (Level::Must, "unknown".to_string()),
        };
        Finding {
            check_id: check_id.to_string(),
            level,
            spec_ref,
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}
