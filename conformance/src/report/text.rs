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

#[cfg(test)]
mod tests {
    use super::*;

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
