//! The `error` object of a failed result line.
//!
//! Implements json-v3#error-object: `code` and `message` always; the reserved
//! `subject` and `kind` are absent unless a later change sets them.

use serde::Serialize;

use crate::ErrorCode;

/// The error object: branch on `code`, never parse `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl WireError {
    /// Returns an error with a code and a human-readable message, and no reserved fields.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> WireError {
        WireError {
            code,
            message: message.into(),
            subject: None,
            kind: None,
        }
    }

    /// Returns a `usage` error.
    pub fn usage(message: impl Into<String>) -> WireError {
        WireError::new(ErrorCode::Usage, message)
    }

    /// Returns an `internal` error.
    pub fn internal(message: impl Into<String>) -> WireError {
        WireError::new(ErrorCode::Internal, message)
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WireError {}
