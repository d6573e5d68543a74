//! The last lines of a log file, read backwards from the end in fixed chunks: a console log
//! that grew to gigabytes costs what its last `n` lines cost, never the whole file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::logs::tail_lines;

/// How much is read per step backwards.
const CHUNK: u64 = 64 * 1024;

/// The last `n` lines of `file[..end]` (every line when `n <= 0`), split as [`tail_lines`]
/// splits them.
pub fn last_lines(file: &mut File, end: u64, n: i64) -> std::io::Result<Vec<String>> {
    let Ok(wanted) = usize::try_from(n) else {
        return all_lines(file, end);
    };
    if wanted == 0 {
        return all_lines(file, end);
    }
    // `region` holds file[start..end]; it grows backwards until it holds `wanted` newlines
    // before its trailing blank run (so its last `wanted` lines are whole) or the file's start.
    let mut region: Vec<u8> = Vec::new();
    let mut start = end;
    while start > 0 && newlines_before_trailing_blank(&region) < wanted {
        let step = CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0; step as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&region);
        region = chunk;
    }
    Ok(tail_lines(&String::from_utf8_lossy(&region), n))
}

/// Every line of `file[..end]`: the answer holds them all anyway.
fn all_lines(file: &mut File, end: u64) -> std::io::Result<Vec<String>> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.take(end).read_to_end(&mut bytes)?;
    Ok(tail_lines(&String::from_utf8_lossy(&bytes), 0))
}

fn newlines_before_trailing_blank(region: &[u8]) -> usize {
    let kept = region
        .iter()
        .rposition(|b| *b != b'\n' && *b != b'\r')
        .map_or(0, |i| i + 1);
    region[..kept].iter().filter(|b| **b == b'\n').count()
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
