//! A minimal, deterministic `.tar.gz` writer for the apkovl overlay (docs/contract.md behaviour#qemu
//! "apkovl backend"): POSIX ustar headers owned by root, one fixed mtime, entries in the order
//! given, wrapped in a gzip member of stored (uncompressed) deflate blocks. The overlay is a few
//! KiB of text, so compression buys nothing and this keeps stoat free of a deflate dependency;
//! stored blocks are plain RFC 1951, which every gunzip (busybox's included) reads.

/// What one tar entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File(Vec<u8>),
    Symlink(String),
}

/// One entry: a relative path (no leading `/`, no trailing `/`), its mode and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub mode: u32,
    pub kind: EntryKind,
}

impl Entry {
    pub fn dir(path: &str, mode: u32) -> Entry {
        Entry {
            path: path.into(),
            mode,
            kind: EntryKind::Dir,
        }
    }

    pub fn file(path: &str, mode: u32, body: impl Into<Vec<u8>>) -> Entry {
        Entry {
            path: path.into(),
            mode,
            kind: EntryKind::File(body.into()),
        }
    }

    pub fn symlink(path: &str, target: &str) -> Entry {
        Entry {
            path: path.into(),
            mode: 0o777,
            kind: EntryKind::Symlink(target.into()),
        }
    }
}

/// Every entry's mtime: a fixed instant (2024-01-01T00:00:00Z) so equal inputs give equal
/// bytes; not 0, which some tar implementations warn about.
pub const MTIME: u64 = 1_704_067_200;

const BLOCK: usize = 512;
/// ustar's name field; the overlay's paths are all far shorter.
const NAME_LEN: usize = 100;

/// The gzip-compressed tar of `entries`, in the order given.
pub fn tar_gz(entries: &[Entry]) -> Result<Vec<u8>, String> {
    Ok(gzip_stored(&tar(entries)?))
}

/// The uncompressed ustar archive: a header (and padded body) per entry, then two zero blocks.
pub fn tar(entries: &[Entry]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for entry in entries {
        out.extend_from_slice(&header(entry)?);
        if let EntryKind::File(body) = &entry.kind {
            out.extend_from_slice(body);
            out.resize(out.len().next_multiple_of(BLOCK), 0);
        }
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    Ok(out)
}

fn header(entry: &Entry) -> Result<[u8; BLOCK], String> {
    let name = match entry.kind {
        EntryKind::Dir => format!("{}/", entry.path),
        _ => entry.path.clone(),
    };
    if name.len() > NAME_LEN || name.starts_with('/') || name.is_empty() {
        return Err(format!(
            "tar entry name {name:?} is empty, absolute or too long"
        ));
    }
    let (size, typeflag, link) = match &entry.kind {
        EntryKind::Dir => (0, b'5', ""),
        EntryKind::File(body) => (body.len() as u64, b'0', ""),
        EntryKind::Symlink(target) => (0, b'2', target.as_str()),
    };
    if link.len() > NAME_LEN {
        return Err(format!("symlink target {link:?} is too long"));
    }
    let mut h = [0u8; BLOCK];
    put(&mut h, 0, name.as_bytes());
    put(
        &mut h,
        100,
        octal(u64::from(entry.mode & 0o7777), 8).as_bytes(),
    );
    put(&mut h, 108, octal(0, 8).as_bytes());
    put(&mut h, 116, octal(0, 8).as_bytes());
    put(&mut h, 124, octal(size, 12).as_bytes());
    put(&mut h, 136, octal(MTIME, 12).as_bytes());
    h[148..156].fill(b' ');
    h[156] = typeflag;
    put(&mut h, 157, link.as_bytes());
    put(&mut h, 257, b"ustar\0");
    put(&mut h, 263, b"00");
    put(&mut h, 265, b"root");
    put(&mut h, 297, b"root");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    // Six octal digits, NUL, space: the classic checksum layout.
    put(&mut h, 148, format!("{sum:06o}\0 ").as_bytes());
    Ok(h)
}

/// `value` in octal, zero-padded to `width - 1` digits plus the terminating NUL.
fn octal(value: u64, width: usize) -> String {
    format!("{value:0w$o}\0", w = width - 1)
}

fn put(block: &mut [u8; BLOCK], at: usize, bytes: &[u8]) {
    block[at..at + bytes.len()].copy_from_slice(bytes);
}

/// One gzip member (RFC 1952) whose deflate stream is stored blocks only.
pub fn gzip_stored(data: &[u8]) -> Vec<u8> {
    const MAX_STORED: usize = 0xFFFF;
    // ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=3 (Unix)
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let mut chunks = data.chunks(MAX_STORED).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        // BFINAL in bit 0, BTYPE=00 (stored); the rest of the byte pads to the boundary.
        out.push(u8::from(last));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// CRC-32 (IEEE 802.3, reflected, as gzip uses it).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    #[test]
    fn crc32_matches_the_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut child = Command::new("gzip")
            .arg("-dc")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("gzip runs");
        let mut stdin = child.stdin.take().expect("stdin");
        let input = bytes.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("gzip output");
        writer.join().expect("writer").expect("write");
        assert!(out.status.success(), "gzip refused the stream");
        out.stdout
    }

    #[test]
    fn gzip_round_trips_through_the_system_gunzip_across_block_boundaries() {
        for len in [0usize, 1, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            assert_eq!(gunzip(&gzip_stored(&data)), data, "length {len}");
        }
    }

    #[test]
    fn tar_lists_with_the_system_tar() {
        let entries = [
            Entry::dir("etc", 0o755),
            Entry::file("etc/hello", 0o600, "hi\n"),
            Entry::symlink("etc/link", "/etc/hello"),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.tar.gz");
        std::fs::write(&path, tar_gz(&entries).expect("tar")).expect("write");
        let out = Command::new("tar")
            .arg("-tvzf")
            .arg(&path)
            .output()
            .expect("tar runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("drwxr-xr-x root/root"), "{text}");
        assert!(lines[0].ends_with(" etc/"), "{text}");
        assert!(lines[1].starts_with("-rw------- root/root"), "{text}");
        assert!(lines[1].contains(" 3 2024-01-01"), "{text}");
        assert!(lines[2].ends_with("etc/link -> /etc/hello"), "{text}");
    }

    #[test]
    fn equal_entries_give_equal_bytes_and_bad_names_are_refused() {
        let entries = [Entry::file("a", 0o644, "x")];
        assert_eq!(tar_gz(&entries), tar_gz(&entries));
        assert!(tar(&[Entry::file("/abs", 0o644, "x")]).is_err());
        assert!(tar(&[Entry::file(&"n".repeat(101), 0o644, "x")]).is_err());
    }
}
