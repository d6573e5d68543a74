//! The Image DTO (`images`) and `pull`'s progress and result.
//!
//! Implements json-v3#types (Image) and "Streaming" (progress).

use serde::Serialize;

/// One catalog or bring-your-own image. `file` is a bare filename under `isos/`, never a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    pub id: String,
    pub os: String,
    pub variant: String,
    pub backend: String,
    pub file: String,
    pub downloaded: bool,
    pub bytes: u64,
    pub bytes_exact: bool,
    pub byo: bool,
}

/// `images` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImagesData {
    pub images: Vec<Image>,
}

/// A `progress` event: emitted only when the integer percentage changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgressData {
    pub id: String,
    pub done: u64,
    pub total: u64,
    pub percent: u32,
}

/// `pull` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullData {
    pub id: String,
    pub downloaded: bool,
    pub verified: bool,
    pub checksum_available: bool,
    /// Whether this pull fetched the bytes (false: a copy already on disk served), for the
    /// human line only; the wire's `downloaded` says the image is on disk either way.
    #[serde(skip)]
    pub fetched: bool,
}
