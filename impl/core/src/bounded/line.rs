//! Splitting a log's bytes into lines with a length cap: a line longer than [`LINE_CAP`]
//! keeps its first `LINE_CAP` bytes and ends with a marker saying how much was cut, so a
//! console line of gigabytes costs a fixed amount of memory and one pass over its bytes
//! (docs/decisions/runtime.md "Guest-fed buffers").

/// The longest line `logs` and `logs -f` hand over whole, in bytes.
pub const LINE_CAP: usize = 64 * 1024;

/// The text that ends a cut line; `cut` is how many bytes were left out.
pub fn cut_marker(cut: u64) -> String {
    format!(" [stoat: line cut, {cut} more bytes]")
}

/// Collects one line at a time from pieces of bytes, keeping at most `LINE_CAP + 1` of them
/// (the extra byte tells a `\r` that ends a line of exactly `LINE_CAP` bytes).
#[derive(Default)]
pub struct LineCutter {
    kept: Vec<u8>,
    /// Bytes of the current line beyond those kept.
    dropped: u64,
}

impl LineCutter {
    /// Whether nothing of an unfinished line is held.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped == 0
    }

    /// Feeds `bytes`; each line they complete goes to `line` without its `\n`.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        line: &mut dyn FnMut(String) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut rest = bytes;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.push(&rest[..i]);
            line(self.take())?;
            rest = &rest[i + 1..];
        }
        self.push(rest);
        Ok(())
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = (LINE_CAP + 1)
            .saturating_sub(self.kept.len())
            .min(bytes.len());
        self.kept.extend_from_slice(&bytes[..room]);
        self.dropped += (bytes.len() - room) as u64;
    }

    /// The held line, ended: without a console's trailing `\r`, cut when over the cap.
    pub fn take(&mut self) -> String {
        let mut kept = std::mem::take(&mut self.kept);
        let mut dropped = std::mem::take(&mut self.dropped);
        if dropped == 0 && kept.ends_with(b"\r") {
            kept.pop();
        }
        if kept.len() > LINE_CAP {
            dropped += (kept.len() - LINE_CAP) as u64;
            kept.truncate(LINE_CAP);
        }
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            text.push_str(&cut_marker(dropped));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(pieces: &[&[u8]]) -> (Vec<String>, LineCutter) {
        let mut out = Vec::new();
        let mut cutter = LineCutter::default();
        for piece in pieces {
            cutter
                .feed(piece, &mut |l| {
                    out.push(l);
                    Ok(())
                })
                .unwrap();
        }
        (out, cutter)
    }

    #[test]
    fn short_lines_come_back_as_written_without_cr() {
        let (out, mut rest) = lines(&[b"a\r\nb", b"c\n\nd"]);
        assert_eq!(out, ["a", "bc", ""]);
        assert_eq!(rest.take(), "d");
        assert!(rest.is_empty());
    }

    #[test]
    fn a_long_line_keeps_the_cap_and_says_how_much_was_cut() {
        let long = vec![b'x'; LINE_CAP * 3 + 7];
        let (out, _) = lines(&[&long[..1000], &long[1000..], b"\r\nnext\n"]);
        assert_eq!(out.len(), 2);
        let expected = format!(
            "{}{}",
            "x".repeat(LINE_CAP),
            cut_marker((LINE_CAP * 2 + 8) as u64)
        );
        assert_eq!(out[0], expected);
        assert_eq!(out[1], "next");
        // Exactly the cap, with a CRLF: whole, no marker.
        let exact = [vec![b'y'; LINE_CAP], b"\r\n".to_vec()].concat();
        assert_eq!(lines(&[&exact]).0, ["y".repeat(LINE_CAP)]);
    }
}
