//! Finds the reference stoat for the tests that judge it, and refuses a stale one.
//!
//! Conformance never depends on impl/ crates, so cargo cannot hand these tests the
//! reference's path. They take `STOAT_REFERENCE`, else the workspace's `target/debug/stoat`,
//! and fail (never skip) when it is missing or older than a source file cargo's dep-info lists
//! for it: a stale binary would judge code that no longer exists.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The reference stoat, fresh; panics with the command that fixes it otherwise.
pub fn fresh_reference() -> PathBuf {
    if let Some(path) = std::env::var_os("STOAT_REFERENCE").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/stoat");
    let path = std::fs::canonicalize(&path).unwrap_or_else(|_| {
        panic!(
            "no reference stoat at {}: run `cargo build -p stoat-cli` (or set STOAT_REFERENCE)",
            path.display()
        )
    });
    let built = modified(&path).expect("the reference's mtime");
    if let Some(newer) = sources_of(&path)
        .into_iter()
        .find(|source| modified(source).is_some_and(|m| m > built))
    {
        panic!(
            "{} is older than {}: run `cargo build -p stoat-cli` (or set STOAT_REFERENCE)",
            path.display(),
            newer.display()
        );
    }
    path
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The files cargo's dep-info (`<binary>.d`, `target: dep dep ...`) says the binary is built
/// from; spaces inside a path are escaped as `\ `.
fn sources_of(binary: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(binary.with_extension("d")) else {
        return Vec::new();
    };
    let Some((_, deps)) = text.lines().next().and_then(|line| line.split_once(": ")) else {
        return Vec::new();
    };
    let mut sources = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => {
                if !current.is_empty() {
                    sources.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        sources.push(PathBuf::from(current));
    }
    sources
}
