//! `screenshot`: QMP `screendump` as PNG into `<vm>/screenshots/<UTC timestamp>.png`, with the
//! real size and dimensions read back from the file (json-v3#per-command-data); with an
//! output path, the checked PNG then moves there (a directory gets it under its own name).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use stoat_wire::dto::ScreenshotData;

use crate::qemu::{QemuError, ScreenFormat};
use crate::vm::{connect_qmp, load_running};
use crate::{Error, Result, Root};

const PNG_SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Takes a screenshot of running VM `name`, kept at `output` (absolute) when given.
pub fn screenshot(root: &Root, name: &str, output: Option<&Path>) -> Result<ScreenshotData> {
    let (stored, _pid) = load_running(root, name)?;
    // Checked before QEMU is asked, so a mistyped path changes nothing.
    let output = output
        .map(|path| output_path(path, &stored.name))
        .transpose()?;
    let dir = stored.files().screenshots();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    let path = unused_path(&dir);
    let mut qmp = connect_qmp(&stored)?;
    qmp.screendump(&path, ScreenFormat::Png)
        .map_err(|error| match error {
            QemuError::MonitorRejected { desc, .. } => {
                Error::ScreenshotFailed(format!("{}: QEMU: {desc}", stored.name))
            }
            other => Error::from(other),
        })?;
    let bytes = std::fs::read(&path).map_err(|e| {
        Error::ScreenshotFailed(format!(
            "{}: QEMU wrote no file at {}: {e}",
            stored.name,
            path.display()
        ))
    })?;
    let (width, height) = png_size(&bytes).ok_or_else(|| {
        let _ = std::fs::remove_file(&path);
        Error::ScreenshotFailed(format!("{}: QEMU's screendump is not a PNG", stored.name))
    })?;
    let path = match output {
        Some(target) => {
            place(&bytes, &target)?;
            let _ = std::fs::remove_file(&path);
            target
        }
        None => path,
    };
    Ok(ScreenshotData {
        vm: stored.name,
        path: path.to_string_lossy().into_owned(),
        bytes: bytes.len() as u64,
        width,
        height,
    })
}

/// Where `-o PATH` puts the PNG: PATH itself, or `PATH/<vm>-<timestamp>.png` when PATH is a
/// directory. Its parent must be an existing directory.
fn output_path(path: &Path, vm: &str) -> Result<PathBuf> {
    if path.is_dir() {
        return Ok(unused_path_named(path, &format!("{vm}-")));
    }
    match path.parent() {
        Some(parent) if parent.is_dir() => Ok(path.to_path_buf()),
        _ => Err(Error::InvalidSpec(format!(
            "screenshot -o {}: no such directory to write it in",
            path.display()
        ))),
    }
}

/// Writes `bytes` to `target` whole or not at all: a temporary file beside it, then a rename.
fn place(bytes: &[u8], target: &Path) -> Result<()> {
    use std::io::Write as _;
    let dir = target.parent().unwrap_or(Path::new("/"));
    let io = |e: std::io::Error| Error::io(format!("write {}", target.display()), e);
    let mut temp = tempfile::Builder::new()
        .prefix(".stoat-screenshot.")
        .tempfile_in(dir)
        .map_err(io)?;
    temp.write_all(bytes).map_err(io)?;
    temp.persist(target).map_err(|e| io(e.error))?;
    Ok(())
}

/// Width and height from the IHDR chunk, which PNG requires first.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != PNG_SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(16), word(20)))
}

/// `<dir>/YYYY-MM-DDTHHMMSSZ.png` (the contract's example), `-N` added if two land in one second.
fn unused_path(dir: &Path) -> PathBuf {
    unused_path_named(dir, "")
}

/// `<dir>/<prefix>YYYY-MM-DDTHHMMSSZ.png`, `-N` added while the name is taken.
fn unused_path_named(dir: &Path, prefix: &str) -> PathBuf {
    let stamp = utc_stamp(SystemTime::now());
    let mut path = dir.join(format!("{prefix}{stamp}.png"));
    let mut n = 1;
    while path.exists() {
        path = dir.join(format!("{prefix}{stamp}-{n}.png"));
        n += 1;
    }
    path
}

/// A UTC timestamp safe in file names.
pub fn utc_stamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_are_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_069_832_045);
        assert_eq!(utc_stamp(t), "2026-11-30T201712Z");
        assert_eq!(utc_stamp(UNIX_EPOCH), "1970-01-01T000000Z");
    }

    #[test]
    fn png_header_gives_the_size() {
        let mut png = PNG_SIGNATURE.to_vec();
        png.extend_from_slice(&[0, 0, 0, 13]);
        png.extend_from_slice(b"IHDR");
        png.extend_from_slice(&720u32.to_be_bytes());
        png.extend_from_slice(&400u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((720, 400)));
        assert_eq!(png_size(b"P6 1 1 255"), None);
    }
}
