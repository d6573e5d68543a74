//! The files a download writes into before it is complete, `isos/<file>.<pid>.<random>.part`,
//! and how any later command tells one a running pull still writes from one a killed pull
//! left behind: the pid in its name no longer runs. A `.part` without a pid in its name
//! (an older stoat, another tool) is left alone until it is two minutes old.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::local::PART_SUFFIX;

/// A `.part` without a writer's pid that is younger than this may still be downloading.
pub const FOREIGN_MIN_AGE: Duration = Duration::from_secs(120);

/// The name prefix of this process's part files for `file`.
pub fn prefix(file: &str) -> String {
    format!("{file}.{}.", std::process::id())
}

/// `(file, pid)` from `<file>.<pid>.<random>.part`; `None` for any other name.
fn parse(name: &str) -> Option<(&str, i32)> {
    let stem = name.strip_suffix(PART_SUFFIX)?;
    let mut parts = stem.rsplitn(3, '.');
    let _random = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let file = parts.next().filter(|f| !f.is_empty())?;
    Some((file, pid))
}

/// Whether no running pull holds the part file at `path`, judged at `now`.
fn is_stale(path: &Path, now: SystemTime) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    match parse(&name) {
        Some((_, pid)) => !crate::vm::staging::pid_alive(pid),
        None => path
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age >= FOREIGN_MIN_AGE),
    }
}

fn part_files(isos: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(isos) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .filter(|e| e.file_name().to_string_lossy().ends_with(PART_SUFFIX))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Every part file in `isos/` that no running pull holds (for `prune`).
pub fn stale(isos: &Path, now: SystemTime) -> Vec<PathBuf> {
    part_files(isos)
        .into_iter()
        .filter(|path| is_stale(path, now))
        .collect()
}

/// The part files killed pulls of `file` left (pid-named ones only: their file is certain),
/// largest first.
pub fn stale_of(isos: &Path, file: &str) -> Vec<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = part_files(isos)
        .into_iter()
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            matches!(parse(&name), Some((f, pid)) if f == file && !crate::vm::staging::pid_alive(pid))
        })
        .map(|path| (path.metadata().map(|m| m.len()).unwrap_or(0), path))
        .collect();
    found.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    found.into_iter().map(|(_, path)| path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_file_and_the_pid() {
        assert_eq!(parse("a.qcow2.123.Xy9z.part"), Some(("a.qcow2", 123)));
        assert_eq!(parse("a.qcow2.Xy9z.part"), None);
        assert_eq!(parse("a.qcow2.123.Xy9z"), None);
        assert!(prefix("a.iso").starts_with("a.iso."));
    }

    #[test]
    fn a_foreign_part_is_stale_only_when_old() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("a.iso.part");
        std::fs::write(&path, b"x").unwrap();
        let now = SystemTime::now();
        assert!(!is_stale(&path, now));
        assert!(is_stale(&path, now + Duration::from_secs(121)));
        let ours = temp.path().join(format!("{}abc.part", prefix("a.iso")));
        std::fs::write(&ours, b"x").unwrap();
        assert!(!is_stale(&ours, now + Duration::from_secs(1000)));
    }
}
