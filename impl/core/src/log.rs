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
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days algorithm).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::format_utc(1_785_888_000), "2026-08-05T00:00:00Z");
    }
}
