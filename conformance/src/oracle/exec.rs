//! Owns the per-stream encoding rules of an `exec` result: a stream is either plain text or
//! `*_base64` + `*_encoding:"base64"`, never both, never neither, and the base64 decodes.
//! Implements json-v3#exec-bytes; the "always emit" half follows
//! the decisions in docs/contract.md (design#decisions).

use base64::Engine as _;
use serde_json::Value;

use super::sink::{at, Sink, Stream};
use crate::ids;

pub(crate) fn check(stream: &Stream, sink: &mut Sink) {
    if stream.cmd() != Some("exec") {
        return;
    }
    let Some(data) = stream.ok_data() else { return };
    let Some((index, _)) = &stream.result else {
        return;
    };
    for name in ["stdout", "stderr"] {
        check_stream(*index, data, name, sink);
    }
}

/// Decodes one stream of an exec `data` object: the bytes, or a reason it cannot.
pub fn decode_stream(data: &Value, name: &str) -> Result<Vec<u8>, String> {
    let plain = data.get(name);
    let encoded = data.get(format!("{name}_base64"));
    match (plain, encoded) {
        (Some(Value::String(text)), None) => Ok(text.clone().into_bytes()),
        (None, Some(Value::String(b64))) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|error| format!("{name}_base64 does not decode: {error}")),
        (Some(_), Some(_)) => Err(format!("both {name} and {name}_base64 are present")),
        (None, None) => Err(format!("neither {name} nor {name}_base64 is present")),
        _ => Err(format!("{name} / {name}_base64 is not a string")),
    }
}

fn check_stream(index: usize, data: &Value, name: &str, sink: &mut Sink) {
    let plain_key = name.to_string();
    let b64_key = format!("{name}_base64");
    let enc_key = format!("{name}_encoding");
    let plain = data.get(&plain_key);
    let encoded = data.get(&b64_key);
    let encoding = data.get(&enc_key);
    sink.touch(ids::EXEC_STREAM_EXCLUSIVE);
    if plain.is_some() && encoded.is_some() {
        sink.find(
            ids::EXEC_STREAM_EXCLUSIVE,
            at(index, &format!("/data/{plain_key}")),
            format!("both {plain_key} and {b64_key} are present"),
        );
    }
    sink.touch(ids::EXEC_EMPTY_IS_STRING);
    if plain.is_none() && encoded.is_none() {
        sink.find(
            ids::EXEC_EMPTY_IS_STRING,
            at(index, &format!("/data/{plain_key}")),
            format!("{plain_key} is absent; an empty stream is reported as \"\""),
        );
    }
    sink.touch(ids::EXEC_ENCODING_TAG);
    match (encoded, encoding.and_then(Value::as_str)) {
        (Some(_), Some("base64")) => {}
        (Some(_), other) => sink.find(
            ids::EXEC_ENCODING_TAG,
            at(index, &format!("/data/{enc_key}")),
            format!("{b64_key} present but {enc_key} is {other:?}, expected \"base64\""),
        ),
        (None, Some("base64")) => sink.find(
            ids::EXEC_ENCODING_TAG,
            at(index, &format!("/data/{enc_key}")),
            format!("{enc_key} is \"base64\" but {b64_key} is absent"),
        ),
        _ => {}
    }
    if let Some(value) = encoded {
        sink.touch(ids::EXEC_BASE64_VALID);
        match value
            .as_str()
            .map(|s| base64::engine::general_purpose::STANDARD.decode(s))
        {
            Some(Ok(bytes)) => {
                sink.touch(ids::EXEC_BASE64_ONLY_NON_UTF8);
                if std::str::from_utf8(&bytes).is_ok() {
                    sink.find(
                        ids::EXEC_BASE64_ONLY_NON_UTF8,
                        at(index, &format!("/data/{b64_key}")),
                        format!(
                            "{b64_key} decodes to valid UTF-8; base64 is for streams that are not"
                        ),
                    );
                }
            }
            Some(Err(error)) => sink.find(
                ids::EXEC_BASE64_VALID,
                at(index, &format!("/data/{b64_key}")),
                format!("{b64_key} is not standard padded base64: {error}"),
            ),
            None => sink.find(
                ids::EXEC_BASE64_VALID,
                at(index, &format!("/data/{b64_key}")),
                format!("{b64_key} is not a string"),
            ),
        }
    }
}
