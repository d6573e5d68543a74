//! The last lines of a log file, read backwards from the end in fixed chunks: a console log
//! that grew to gigabytes costs what its last `n` lines cost, never the whole file. Each
//! byte is looked at at most twice (once backwards to find where the lines start, once
//! forwards to split them) and a line keeps at most [`LINE_CAP`] bytes, so a single line of
//! any length is read in time linear in its length and in bounded memory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::line::LineCutter;
#[cfg(doc)]
use super::line::LINE_CAP;

/// How much is read per step backwards.
const CHUNK: u64 = 64 * 1024;

/// The last `n` lines of `file[..end]` (every line when `n <= 0`), split as
/// [`tail_lines`] splits them, each cut to the line cap.
pub fn last_lines(file: &mut File, end: u64, n: i64) -> std::io::Result<Vec<String>> {
    let wanted = usize::try_from(n).ok().filter(|n| *n > 0);
    let (start, content_end) = find_start(file, end, wanted)?;
    let mut lines = Vec::new();
    if content_end <= start {
        return Ok(lines);
    }
    let mut cutter = LineCutter::default();
    let mut chunk = vec![0; CHUNK as usize];
    file.seek(SeekFrom::Start(start))?;
    let mut left = content_end - start;
    while left > 0 {
        let step = CHUNK.min(left) as usize;
        file.read_exact(&mut chunk[..step])?;
        left -= step as u64;
        cutter.feed(&chunk[..step], &mut |line| {
            lines.push(line);
            Ok(())
        })?;
    }
    // The region ends on a line's last byte: that line has no newline of its own.
    lines.push(cutter.take());
    if let Some(n) = wanted {
        if lines.len() > n {
            lines.drain(..lines.len() - n);
        }
    }
    Ok(lines)
}

/// Where the last `wanted` lines of `file[..end]` start (0 for every line), and where their
/// text ends once the trailing run of newlines and `\r` is left out.
fn find_start(file: &mut File, end: u64, wanted: Option<usize>) -> std::io::Result<(u64, u64)> {
    let mut content_end = None;
    let mut newlines = 0usize;
    let mut pos = end;
    let mut chunk = vec![0; CHUNK as usize];
    while pos > 0 {
        let step = CHUNK.min(pos);
        pos -= step;
        let chunk = &mut chunk[..step as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(chunk)?;
        // Vectorised searches, not a byte-at-a-time loop: a 40 MB line is one fast pass.
        let mut upto = chunk.len();
        if content_end.is_none() {
            match chunk.iter().rposition(|b| *b != b'\n' && *b != b'\r') {
                Some(i) => {
                    content_end = Some(pos + i as u64 + 1);
                    upto = i;
                }
                None => continue,
            }
        }
        if let (Some(content_end), Some(wanted)) = (content_end, wanted) {
            while let Some(i) = memchr::memrchr(b'\n', &chunk[..upto]) {
                newlines += 1;
                if newlines == wanted {
                    return Ok((pos + i as u64 + 1, content_end));
                }
                upto = i;
            }
        }
        if let (Some(content_end), None) = (content_end, wanted) {
            // Every line is wanted: only the end of the text had to be found.
            return Ok((0, content_end));
        }
    }
    Ok((0, content_end.unwrap_or(0)))
}

/// Where the last whole line of `file[..end]` ends (0 when there is none): a follow prints
/// the lines before it and reads the unfinished one as it is completed.
pub fn end_of_last_line(file: &mut File, end: u64) -> std::io::Result<u64> {
    let mut pos = end;
    let mut chunk = vec![0; CHUNK as usize];
    while pos > 0 {
        let step = CHUNK.min(pos);
        pos -= step;
        let chunk = &mut chunk[..step as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            return Ok(pos + i as u64 + 1);
        }
    }
    Ok(0)
}

/// Splits on `\n` after trimming trailing newlines, keeping the last `tail` when `tail > 0`.
/// A trailing `\r` (a console's CRLF) is dropped from each line. The tests' reference for
/// the streaming tail.
#[cfg(test)]
pub fn tail_lines(text: &str, tail: i64) -> Vec<String> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    if trimmed.is_empty() {
        return Vec::new();
    }
    let lines: Vec<String> = trimmed
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line).to_owned())
        .collect();
    match usize::try_from(tail) {
        Ok(n) if n > 0 && n < lines.len() => lines[lines.len() - n..].to_vec(),
        _ => lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        (dir, File::open(&path).unwrap(), bytes.len() as u64)
    }

    #[test]
    fn reads_the_same_lines_as_the_whole_text_would_give() {
        let text = b"a\nb\r\n\nc\nlast\n\n\n";
        for n in [-1, 0, 1, 2, 3, 4, 5, 9] {
            let (_dir, mut file, len) = file_with(text);
            assert_eq!(
                last_lines(&mut file, len, n).unwrap(),
                tail_lines(std::str::from_utf8(text).unwrap(), n),
                "n={n}"
            );
        }
    }

    #[test]
    fn spans_chunks_and_reads_only_what_it_needs() {
        let mut text = Vec::new();
        for i in 0..40_000 {
            text.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let (_dir, mut file, len) = file_with(&text);
        assert_eq!(
            last_lines(&mut file, len, 3).unwrap(),
            ["line 39997", "line 39998", "line 39999"]
        );
        let many = last_lines(&mut file, len, 20_000).unwrap();
        assert_eq!(many.len(), 20_000);
        assert_eq!(many[0], "line 20000");
        // An end inside the file reads up to it only.
        assert_eq!(last_lines(&mut file, 14, 1).unwrap(), ["line 1"]);
    }

    #[test]
    fn the_last_whole_line_ends_after_its_newline() {
        let (_dir, mut file, len) = file_with(b"one\ntwo\nthr");
        assert_eq!(end_of_last_line(&mut file, len).unwrap(), 8);
        let (_dir, mut file, len) = file_with(b"no newline yet");
        assert_eq!(end_of_last_line(&mut file, len).unwrap(), 0);
        let mut big = vec![b'x'; 200_000];
        big[5] = b'\n';
        let (_dir, mut file, len) = file_with(&big);
        assert_eq!(end_of_last_line(&mut file, len).unwrap(), 6);
    }
}
