//! stoat's own log, `<root>/logs/stoat.log`: one line per event, appended.
//!
//! Callers never pass a console password here (design#logs); a failure to log is ignored
//! because logging must never make a command fail.

use std::io::Write;

use crate::Root;

/// Appends one line `<utc time> <level> <message>` to stoat.log.
pub fn append(root: &Root, level: &str, message: &str) {
    let path = root.logs().join("stoat.log");
    let _ = std::fs::create_dir_all(root.logs());
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let line = format!(
            "{} {level} {}\n",
            humanish_now(),
            message.replace('\n', " ")
        );
        let _ = file.write_all(line.as_bytes());
    }
}

/// Returns the current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn humanish_now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_reads_as_utc_seconds() {
        let now = super::humanish_now();
        assert_eq!(now.len(), "2026-08-05T00:00:00Z".len(), "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }
}
