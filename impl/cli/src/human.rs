//! Small helpers for human output: aligned tables, and text from a guest or a recipe made
//! harmless for a terminal. Never colour: stoat's prose is plain text.

use std::fmt::Write as _;

/// `text` with every control character but tab shown as visible text (`\x1b`, `\x07`,
/// `\u{9b}`): a guest's console or a recipe's description cannot move the cursor, set the
/// window title or start an OSC sequence in the user's terminal. Under --json the bytes stay
/// as they are (docs/decisions/runtime.md "Guest-fed buffers").
pub fn visible(text: &str) -> String {
    if !text.chars().any(is_hidden) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !is_hidden(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    out
}

/// One line of a guest's console or log for a person: the carriage returns it ends with go
/// (a serial console ends lines with CR LF, at times CR CR LF, and a CR before the newline
/// moves nothing), then [`visible`] (a CR inside the line, which could hide what came before
/// it, is still shown).
pub fn visible_line(line: &str) -> String {
    visible(line.trim_end_matches('\r'))
}

/// [`visible`] for each line of `text`: its newlines stay, so lines still read as lines.
pub fn visible_lines(text: &str) -> String {
    text.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

/// C0 controls but tab, DEL, and the C1 controls (U+0080..U+009F, where a lone U+009B is a
/// CSI to some terminals).
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// Renders rows as left-aligned columns separated by two spaces; a cell's control
/// characters are shown as [`visible`] text.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| visible(cell)).collect())
        .collect();
    let rows = &rows;
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut push_row = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                let pad = widths[i] - cell.chars().count() + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    };
    push_row(header.to_vec());
    for row in rows {
        push_row(row.iter().map(String::as_str).collect());
    }
    out
}

/// Formats a byte count in binary units with one decimal (`595.2MiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n}B")
    } else {
        format!("{value:.1}{}", UNITS[unit])
    }
}
