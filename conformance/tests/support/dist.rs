//! The release tarball as `make dist` packs it (ci-kit/dist.sh), from the binaries in `bins`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Packs the tarball into `out`; returns its path.
pub fn pack(out: &Path, bins: &Path) -> PathBuf {
    let dist = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../ci-kit/dist.sh"))
        .arg(out)
        .env("STOAT_DIST_BIN_DIR", bins)
        .output()
        .expect("dist.sh");
    assert!(
        dist.status.success(),
        "{}",
        String::from_utf8_lossy(&dist.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&dist.stdout).trim())
}
