//! Owns [`Capture`]: one recorded invocation of a SUT (argv, stdin, exit, stdout, stderr).
//!
//! Plain serde data so that saved reports, `stoat-conformance check` and golden
//! transcripts (docs/golden.md) all read and write the same shape. Bytes that are not UTF-8
//! are stored as `{"base64": "..."}`.

use serde::{Deserialize, Serialize};

/// Raw bytes that serialize as a JSON string when they are UTF-8, else as `{"base64": ...}`
/// (the fakes' call log writes stdin the same way, so the type lives with them).
pub use stoat_fakes::bytes::Bytes;

/// How the SUT process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Ending {
    /// Exited normally with this status.
    Exited(i32),
    /// Killed by this signal (not by the harness).
    Signaled(i32),
    /// The harness killed it after the per-invocation timeout.
    TimedOut,
}

impl Ending {
    /// Returns the exit status when the process exited normally.
    pub fn code(self) -> Option<i32> {
        match self {
            Ending::Exited(code) => Some(code),
            _ => None,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Ending::Exited(code) => format!("exit {code}"),
            Ending::Signaled(signal) => format!("killed by signal {signal}"),
            Ending::TimedOut => "timed out (killed by the harness)".to_string(),
        }
    }
}

/// One invocation of the SUT as the harness saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    /// Arguments after the SUT's fixed leading argv.
    pub argv: Vec<String>,
    /// Whether the argv puts stoat in `--json` mode (the contract applies).
    #[serde(default = "default_true")]
    pub json: bool,
    #[serde(default)]
    pub stdin: Bytes,
    pub ending: Ending,
    #[serde(default)]
    pub stdout: Bytes,
    #[serde(default)]
    pub stderr: Bytes,
    #[serde(default)]
    pub duration_ms: u64,
}

fn default_true() -> bool {
    true
}

impl Capture {
    /// Builds a capture from a bare stdout stream (what `stoat-conformance check` reads).
    pub fn from_stdout(stdout: Vec<u8>, ending: Ending) -> Self {
        Capture {
            argv: Vec::new(),
            json: true,
            stdin: Bytes::default(),
            ending,
            stdout: Bytes(stdout),
            stderr: Bytes::default(),
            duration_ms: 0,
        }
    }

    /// Shell-like rendering of the argv for reports.
    pub fn argv_display(&self) -> String {
        self.argv
            .iter()
            .map(|arg| shell_quote(arg))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes one argument for display the way a POSIX shell would read it back. The rule of core's
/// `shell::display`, kept here because the suite judges stoat and depends on none of its crates.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_text_and_binary() {
        for raw in [b"hello\n".to_vec(), vec![0xff, 0xfe, 0x00, 0x01]] {
            let json = serde_json::to_string(&Bytes(raw.clone())).expect("serialize");
            let back: Bytes = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back.0, raw);
        }
    }

    #[test]
    fn quotes_like_a_shell() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
