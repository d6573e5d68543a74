//! The exec byte encoding: a guest stream goes on the wire as text when it is valid UTF-8,
//! and as base64 with `*_encoding:"base64"` otherwise, decided per stream.
//!
//! Implements json-v3#exec-bytes, the decision (docs/contract.md, design#decisions) that a
//! plain stream is always present (`""` when empty) unless its base64 twin is.

use base64::Engine;
use serde::ser::SerializeMap;

/// One captured guest stream, already decided: text or base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamBytes {
    /// Valid UTF-8 (including empty).
    Text(String),
    /// Anything else, base64 (standard alphabet, padded).
    Base64(String),
}

impl StreamBytes {
    /// Decides how `bytes` travel: as text when they are UTF-8, else as base64.
    pub fn from_bytes(bytes: Vec<u8>) -> StreamBytes {
        match String::from_utf8(bytes) {
            Ok(text) => StreamBytes::Text(text),
            Err(err) => StreamBytes::Base64(
                base64::engine::general_purpose::STANDARD.encode(err.into_bytes()),
            ),
        }
    }

    /// Returns the original bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            StreamBytes::Text(text) => text.as_bytes().to_vec(),
            StreamBytes::Base64(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_default(),
        }
    }

    /// Writes this stream as the fields named after `name` (`stdout` or `stderr`).
    pub(crate) fn serialize_fields<M: SerializeMap>(
        &self,
        name: &str,
        map: &mut M,
    ) -> Result<(), M::Error> {
        match self {
            StreamBytes::Text(text) => map.serialize_entry(name, text),
            StreamBytes::Base64(b64) => {
                map.serialize_entry(&format!("{name}_base64"), b64)?;
                map.serialize_entry(&format!("{name}_encoding"), "base64")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stays_text_and_other_bytes_become_base64() {
        assert_eq!(
            StreamBytes::from_bytes(b"hi\n".to_vec()),
            StreamBytes::Text("hi\n".into())
        );
        assert_eq!(
            StreamBytes::from_bytes(vec![]),
            StreamBytes::Text(String::new())
        );
        let raw = vec![0xff, 0xfe, 0x00, 0x01];
        let encoded = StreamBytes::from_bytes(raw.clone());
        assert_eq!(encoded, StreamBytes::Base64("//4AAQ==".into()));
        assert_eq!(encoded.to_bytes(), raw);
    }
}
