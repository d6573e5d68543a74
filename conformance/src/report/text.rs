//! Owns how text the SUT controls (its stdout, stderr, messages quoted in findings) is made
//! safe before any report shows it: control characters become visible escapes, so a broken
//! SUT's ANSI sequences or NUL bytes never reach a terminal, a YAML reader or an XML parser.

use std::fmt::Write as _;

/// Whether a character must be shown as an escape rather than passed on.
///
/// C0/C1 controls, DEL, the line/paragraph separators, the byte-order mark and the two
/// non-characters XML and YAML both refuse.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
}

fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// One line: every control character escaped, newlines and tabs included.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Several lines: newlines and tabs kept, every other control character escaped.
pub fn multi_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escape(c) && c != '\n' && c != '\t' {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// At most `max` characters, with a note of how many were cut.
pub fn truncate(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}... ({} more characters)", count - max)
}

/// `1 invocation`, `2 invocations`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The text with every path under a temporary directory (the sandboxes' parents, the
/// system's temp dirs) shown as `<temp>`: a skip reason names a cause, and the same cause
/// must read the same in every check and every run so the closing lines count it once.
pub fn without_temp_paths(text: &str) -> String {
    static PATH: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let path = PATH.get_or_init(|| {
        regex::Regex::new(r#"(file://)?/[^\s'"`,;()\[\]<>]+"#).expect("a valid pattern")
    });
    let roots = temp_roots();
    path.replace_all(text, |caps: &regex::Captures<'_>| {
        let found = &caps[0];
        let bare = found.trim_start_matches("file://");
        // Sentence punctuation after a path is not part of it.
        let kept = bare.trim_end_matches(['.', ':']);
        let tail = &bare[kept.len()..];
        let under_temp = roots
            .iter()
            .any(|root| kept == root || kept.starts_with(&format!("{root}/")))
            || kept.contains("/stoat-conf-");
        if under_temp {
            format!("<temp>{tail}")
        } else {
            found.to_string()
        }
    })
    .into_owned()
}

/// Directories temporary files live under, as given and canonical.
fn temp_roots() -> Vec<String> {
    let mut dirs: Vec<std::path::PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(std::path::PathBuf::from)
        .collect();
    dirs.push(std::env::temp_dir());
    for var in [
        "STOAT_CONFORMANCE_TMP",
        "STOAT_CONFORMANCE_REAL_TMP",
        "TMPDIR",
    ] {
        if let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()) {
            dirs.push(dir.into());
        }
    }
    let mut roots: Vec<String> = Vec::new();
    for dir in dirs {
        let canonical = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        for d in [dir, canonical] {
            let text = d.display().to_string().trim_end_matches('/').to_string();
            if !text.is_empty() && !roots.contains(&text) {
                roots.push(text);
            }
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_paths_are_one_word() {
        assert_eq!(
            without_temp_paths("X=/tmp/.tmpAb12/x is on tmpfs; see /usr/bin/qemu."),
            "X=<temp> is on tmpfs; see /usr/bin/qemu."
        );
        assert_eq!(
            without_temp_paths("`add file:///var/tmp/stoat-conf-1a-Zq/repo` refused: /dev/shm."),
            "`add <temp>` refused: <temp>."
        );
    }

    #[test]
    fn escapes_controls_keeps_text() {
        assert_eq!(one_line("a\u{1b}[31mb\nc\td"), "a\\u{1b}[31mb\\nc\\td");
        assert_eq!(multi_line("a\u{1b}b\nc\u{0}"), "a\\u{1b}b\nc\\u{0}");
        assert_eq!(one_line("é ok"), "é ok");
        assert_eq!(one_line("\u{85}\u{2028}"), "\\u{85}\\u{2028}");
    }

    #[test]
    fn truncates_by_characters() {
        assert_eq!(truncate("ééé", 2), "éé... (1 more characters)");
        assert_eq!(truncate("abc", 3), "abc");
    }
}
