//! A deterministic `.tar.gz` of the apkovl overlay (docs/contract.md behaviour#qemu "apkovl
//! backend"): ustar headers owned by root, one fixed mtime, entries in the order given (the
//! `tar` crate writes them, `flate2` the gzip member), so equal inputs give equal bytes.

use std::io::Write as _;

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

/// ustar's name field; the overlay's paths are all far shorter.
const NAME_LEN: usize = 100;

/// The gzip-compressed tar of `entries`, in the order given.
pub fn tar_gz(entries: &[Entry]) -> Result<Vec<u8>, String> {
    // A gzip header with no name and mtime 0 (flate2's default): nothing varies by run.
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut gzip = append_all(gzip, entries)?;
    gzip.flush().map_err(|e| format!("gzip the overlay: {e}"))?;
    gzip.finish().map_err(|e| format!("gzip the overlay: {e}"))
}

/// The uncompressed ustar archive of `entries`.
#[cfg(test)]
pub fn tar(entries: &[Entry]) -> Result<Vec<u8>, String> {
    append_all(Vec::new(), entries)
}

fn append_all<W: std::io::Write>(out: W, entries: &[Entry]) -> Result<W, String> {
    let mut builder = tar::Builder::new(out);
    for entry in entries {
        let name = match entry.kind {
            EntryKind::Dir => format!("{}/", entry.path),
            _ => entry.path.clone(),
        };
        if name.len() > NAME_LEN || name.starts_with('/') || name.is_empty() {
            return Err(format!(
                "tar entry name {name:?} is empty, absolute or too long"
            ));
        }
        let mut header = tar::Header::new_ustar();
        header.set_mode(entry.mode & 0o7777);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(MTIME);
        let names = header
            .set_username("root")
            .and_then(|()| header.set_groupname("root"));
        names.map_err(|e| format!("tar header: {e}"))?;
        let body: &[u8] = match &entry.kind {
            EntryKind::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                &[]
            }
            EntryKind::File(body) => {
                header.set_entry_type(tar::EntryType::Regular);
                body
            }
            EntryKind::Symlink(target) => {
                if target.len() > NAME_LEN {
                    return Err(format!("symlink target {target:?} is too long"));
                }
                header.set_entry_type(tar::EntryType::Symlink);
                header
                    .set_link_name(target)
                    .map_err(|e| format!("symlink target {target:?}: {e}"))?;
                &[]
            }
        };
        header.set_size(body.len() as u64);
        builder
            .append_data(&mut header, &name, body)
            .map_err(|e| format!("tar entry {name:?}: {e}"))?;
    }
    builder
        .into_inner()
        .map_err(|e| format!("finish the tar: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

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
    fn the_system_gunzip_reads_back_the_tar_across_block_boundaries() {
        for len in [0usize, 1, 65_535, 200_000] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let entries = [Entry::file("big", 0o644, body)];
            assert_eq!(
                gunzip(&tar_gz(&entries).expect("tar")),
                tar(&entries).expect("tar"),
                "length {len}"
            );
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
