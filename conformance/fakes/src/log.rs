//! Owns the fakes' call log: one JSON line per call, appended to `STOAT_FAKE_LOG`.

use std::io::Write as _;
use std::path::Path;

use super::script::FakeCall;

/// Appends one call to the log named by `STOAT_FAKE_LOG` (silently skipped when unset).
pub fn append(call: &FakeCall) {
    let Some(path) = std::env::var_os(super::LOG_ENV) else {
        return;
    };
    let Ok(mut line) = serde_json::to_string(call) else {
        return;
    };
    line.push('\n');
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write per line: O_APPEND keeps concurrent fakes from interleaving.
        let _ = file.write_all(line.as_bytes());
    }
}

/// Reads every call from a log file; unreadable lines are skipped.
pub fn read(path: &Path) -> Vec<FakeCall> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Records the pid of a daemon the fakes started, for the sandbox's cleanup.
pub fn record_pid(pid: u32) {
    let Some(path) = std::env::var_os(super::PIDS_ENV) else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{pid}");
    }
}
