//! Owns the stream and envelope rules: JSON lines, `v`/`type`/`cmd` on every line, exactly
//! one result and last, `ok` only on the result, `data` xor `error`, the error object, no
//! ANSI escapes. Implements json-v3#consumer-contract, json-v3#envelope.

use serde_json::Value;

use super::context::Context;
use super::sink::{at, walk, Sink, Stream};
use crate::finding::CheckId;
use crate::ids;
use crate::spec::Edition;

const KNOWN_EVENTS: &[&str] = &["progress", "stage", "log"];

pub(crate) fn check(stdout: &[u8], context: &Context, sink: &mut Sink) -> Stream {
    sink.touch(ids::ENV_NO_ANSI);
    if let Some(offset) = stdout.iter().position(|b| *b == 0x1b) {
        sink.find(
            ids::ENV_NO_ANSI,
            format!("byte {offset}"),
            "stdout carries an ESC (0x1b) byte: ANSI escapes are never allowed under --json",
        );
    }
    let mut lines = Vec::new();
    let text_lines = split_lines(stdout);
    sink.touch(ids::ENV_JSON_LINES);
    // Not-JSON lines are held until the result is known: before a project fan-out's
    // ProjectRun the contract tolerates prose (its one stated exception).
    let mut not_json: Vec<(usize, String)> = Vec::new();
    for (index, raw) in text_lines.iter().enumerate() {
        let parsed = match serde_json::from_slice::<Value>(raw) {
            Ok(value @ Value::Object(_)) => Some(value),
            Ok(other) => {
                not_json.push((
                    index,
                    format!(
                        "line is JSON but not an object: {}",
                        excerpt(&other.to_string())
                    ),
                ));
                None
            }
            Err(error) => {
                not_json.push((
                    index,
                    format!(
                        "line is not JSON ({error}): {}",
                        excerpt(&String::from_utf8_lossy(raw))
                    ),
                ));
                None
            }
        };
        lines.push(parsed);
    }

    let mut result_indexes = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(line) = line else { continue };
        check_line_fields(index, line, context.edition, sink);
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "result" {
            result_indexes.push(index);
        } else {
            check_event(index, kind, line, sink);
        }
        check_decoded_ansi(index, line, sink);
    }

    sink.touch(ids::ENV_RESULT_PRESENT);
    sink.touch(ids::ENV_ONE_RESULT);
    if result_indexes.len() > 1 {
        sink.find(
            ids::ENV_ONE_RESULT,
            at(result_indexes[1], ""),
            format!(
                "{} result lines (lines {:?}); exactly one is allowed",
                result_indexes.len(),
                result_indexes.iter().map(|i| i + 1).collect::<Vec<_>>()
            ),
        );
    }
    let result = result_indexes
        .last()
        .map(|index| (*index, lines[*index].clone().unwrap_or(Value::Null)));
    match &result {
        None => sink.find(
            ids::ENV_RESULT_PRESENT,
            "stdout",
            format!(
                "no result line in {} stdout line(s): the consumer classifies this as crashed",
                lines.len()
            ),
        ),
        Some((index, value)) => {
            sink.touch(ids::ENV_RESULT_LAST);
            let last = text_lines.len().saturating_sub(1);
            if result_indexes.first() != Some(&last) {
                let first = result_indexes.first().copied().unwrap_or(*index);
                sink.find(
                    ids::ENV_RESULT_LAST,
                    at(first, ""),
                    format!(
                        "the result line is line {} of {}; it must be last",
                        first + 1,
                        text_lines.len()
                    ),
                );
            }
            check_result(*index, value, context, sink);
        }
    }
    let fanout = result
        .as_ref()
        .is_some_and(|(index, value)| is_fanout_run(value) && *index + 1 == text_lines.len());
    for (index, message) in not_json {
        if fanout {
            sink.find(FANOUT_PURE, at(index, ""), message);
        } else {
            sink.find(ids::ENV_JSON_LINES, at(index, ""), message);
        }
    }
    if fanout {
        sink.touch(FANOUT_PURE);
    }
    check_cmd_consistent(&lines, result.as_ref(), sink);
    Stream { lines, result }
}

/// The design rule that keeps a fan-out's stream JSON lines although the contract lets it
/// write prose.
pub(crate) const FANOUT_PURE: CheckId = ids::PROJECT_FANOUT_JSON_LINES;

/// A project-scope `up`, `down` or `apply` answering a ProjectRun: the one place the contract
/// tolerates "human progress lines before the final ProjectRun result".
fn is_fanout_run(result: &Value) -> bool {
    let cmd = result.get("cmd").and_then(Value::as_str).unwrap_or("");
    matches!(cmd, "up" | "down" | "apply")
        && result
            .pointer("/data/project")
            .is_some_and(Value::is_string)
        && result.pointer("/data/vms").is_some_and(Value::is_array)
}

/// Splits stdout into lines; a final newline ends the last line rather than starting one.
fn split_lines(stdout: &[u8]) -> Vec<&[u8]> {
    if stdout.is_empty() {
        return Vec::new();
    }
    let body = stdout.strip_suffix(b"\n").unwrap_or(stdout);
    body.split(|b| *b == b'\n').collect()
}

fn check_line_fields(index: usize, line: &Value, edition: Edition, sink: &mut Sink) {
    // Each edition states its own number: one rule id per edition.
    let rule = match edition {
        Edition::V2 => ids::ENV_V_IS_2,
        Edition::V3 => ids::ENV_V_IS_3,
    };
    sink.touch(rule);
    match line.get("v") {
        Some(v) if v.as_u64() == Some(edition.number()) => {}
        Some(v) => sink.find(
            rule,
            at(index, "/v"),
            format!("v is {v}, the contract version is the integer {edition}"),
        ),
        None => sink.find(rule, at(index, "/v"), "v is missing"),
    }
    sink.touch(ids::ENV_LINE_FIELDS);
    for field in ["type", "cmd"] {
        match line.get(field) {
            Some(Value::String(_)) => {}
            Some(other) => sink.find(
                ids::ENV_LINE_FIELDS,
                at(index, &format!("/{field}")),
                format!("{field} must be a string, got {other}"),
            ),
            None => sink.find(
                ids::ENV_LINE_FIELDS,
                at(index, &format!("/{field}")),
                format!("{field} is missing"),
            ),
        }
    }
}

fn check_event(index: usize, kind: &str, line: &Value, sink: &mut Sink) {
    sink.touch(ids::ENV_OK_ONLY_ON_RESULT);
    if line.get("ok").is_some() {
        sink.find(
            ids::ENV_OK_ONLY_ON_RESULT,
            at(index, "/ok"),
            format!("a {kind:?} event carries ok; ok is on result lines only"),
        );
    }
    if KNOWN_EVENTS.contains(&kind) {
        sink.touch(ids::ENV_EVENT_DATA);
        if !line.get("data").is_some_and(Value::is_object) {
            sink.find(
                ids::ENV_EVENT_DATA,
                at(index, "/data"),
                format!("a {kind:?} event must carry a data object"),
            );
        }
        if line.get("error").is_some() {
            sink.find(
                ids::ENV_EVENT_DATA,
                at(index, "/error"),
                format!("a {kind:?} event carries error; error is on failed results only"),
            );
        }
    }
}

fn check_result(index: usize, result: &Value, context: &Context, sink: &mut Sink) {
    sink.touch(ids::ENV_OK_BOOL);
    let ok = match result.get("ok") {
        Some(Value::Bool(ok)) => Some(*ok),
        Some(other) => {
            sink.find(
                ids::ENV_OK_BOOL,
                at(index, "/ok"),
                format!("ok must be a bool, got {other}"),
            );
            None
        }
        None => {
            sink.find(
                ids::ENV_OK_BOOL,
                at(index, "/ok"),
                "the result line has no ok",
            );
            None
        }
    };
    let data = result.get("data");
    let error = result.get("error");
    sink.touch(ids::ENV_DATA_XOR_ERROR);
    match (data, error) {
        (Some(_), Some(_)) => sink.find(
            ids::ENV_DATA_XOR_ERROR,
            at(index, ""),
            "the result carries both data and error",
        ),
        (None, None) => sink.find(
            ids::ENV_DATA_XOR_ERROR,
            at(index, ""),
            "the result carries neither data nor error",
        ),
        _ => {}
    }
    if let Some(ok) = ok {
        sink.touch(ids::ENV_OK_MATCHES_PAYLOAD);
        if ok && data.is_none() {
            sink.find(
                ids::ENV_OK_MATCHES_PAYLOAD,
                at(index, "/data"),
                "ok:true without data",
            );
        }
        if !ok && error.is_none() {
            sink.find(
                ids::ENV_OK_MATCHES_PAYLOAD,
                at(index, "/error"),
                "ok:false without error",
            );
        }
    }
    if let Some(data) = data {
        sink.touch(ids::ENV_DATA_OBJECT);
        if !data.is_object() {
            sink.find(
                ids::ENV_DATA_OBJECT,
                at(index, "/data"),
                format!("data must be an object, got {}", excerpt(&data.to_string())),
            );
        }
    }
    if let Some(error) = error {
        sink.touch(ids::ENV_ERROR_SHAPE);
        match error {
            Value::Object(map) => {
                for field in ["code", "message"] {
                    if !map.get(field).is_some_and(Value::is_string) {
                        sink.find(
                            ids::ENV_ERROR_SHAPE,
                            at(index, &format!("/error/{field}")),
                            format!("error.{field} must be a string"),
                        );
                    }
                }
                sink.touch(ids::ENV_ERROR_MESSAGE_NONEMPTY);
                if map
                    .get("message")
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.trim().is_empty())
                {
                    sink.find(
                        ids::ENV_ERROR_MESSAGE_NONEMPTY,
                        at(index, "/error/message"),
                        "error.message is empty",
                    );
                }
            }
            other => sink.find(
                ids::ENV_ERROR_SHAPE,
                at(index, "/error"),
                format!(
                    "error must be an object, got {}",
                    excerpt(&other.to_string())
                ),
            ),
        }
    }
    if let Some(expected) = &context.expect_cmd {
        sink.touch(ids::ENV_CMD_MATCHES);
        let actual = result.get("cmd").and_then(Value::as_str).unwrap_or("");
        if actual != expected {
            sink.find(
                ids::ENV_CMD_MATCHES,
                at(index, "/cmd"),
                format!("cmd is {actual:?}, expected {expected:?}"),
            );
        }
    }
}

fn check_cmd_consistent(lines: &[Option<Value>], result: Option<&(usize, Value)>, sink: &mut Sink) {
    let Some((_, result)) = result else { return };
    let Some(cmd) = result.get("cmd").and_then(Value::as_str) else {
        return;
    };
    for (index, line) in lines.iter().enumerate() {
        let Some(line) = line else { continue };
        sink.touch(ids::ENV_CMD_CONSISTENT);
        if let Some(other) = line.get("cmd").and_then(Value::as_str) {
            if other != cmd {
                sink.find(
                    ids::ENV_CMD_CONSISTENT,
                    at(index, "/cmd"),
                    format!("cmd {other:?} differs from the result's {cmd:?}"),
                );
            }
        }
    }
}

/// A `\u001b` escaped inside a JSON string is still colour once decoded.
fn check_decoded_ansi(index: usize, line: &Value, sink: &mut Sink) {
    let mut pointer = String::new();
    let mut hits = Vec::new();
    walk(line, &mut pointer, &mut |path, _key, value| {
        if value.as_str().is_some_and(|s| s.contains('\u{1b}')) && !is_guest_stream(path) {
            hits.push(path.to_string());
        }
    });
    for path in hits {
        sink.find(
            ids::ENV_NO_ANSI,
            at(index, &path),
            "a string value carries an ANSI escape (\\u001b)",
        );
    }
}

/// Guest output (exec streams, log lines) is the guest's own bytes and may hold escapes.
fn is_guest_stream(path: &str) -> bool {
    matches!(path, "/data/stdout" | "/data/stderr" | "/data/line")
        || path.starts_with("/data/lines/")
}

pub fn excerpt(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}...")
    }
}
