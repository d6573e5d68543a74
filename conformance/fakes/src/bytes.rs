//! Owns [`Bytes`]: raw bytes as JSON, a string when they are UTF-8 and `{"base64": ...}`
//! otherwise, the shape of stdin in the call log and of every capture the suite records.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Raw bytes that serialize as a JSON string when they are UTF-8, else as `{"base64": ...}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(&self.0);
                serde_json::json!({ "base64": encoded }).serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        match value {
            serde_json::Value::String(text) => Ok(Bytes(text.into_bytes())),
            serde_json::Value::Object(map) => {
                let encoded = map.get("base64").and_then(|v| v.as_str()).ok_or_else(|| {
                    serde::de::Error::custom("expected a string or {\"base64\": ...}")
                })?;
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map(Bytes)
                    .map_err(serde::de::Error::custom)
            }
            serde_json::Value::Null => Ok(Bytes::default()),
            _ => Err(serde::de::Error::custom(
                "expected a string or {\"base64\": ...}",
            )),
        }
    }
}
