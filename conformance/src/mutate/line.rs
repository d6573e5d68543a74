//! Owns the operators that rewrite single JSON lines on their way out (events as they
//! stream, the result and what follows it at exit): one function per operator, given the
//! line's value, its `type` and its text; `None` keeps the line as the SUT wrote it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::result::planted_password;

/// Whether `kind` is a non-terminal event that carries data.
fn is_data_event(kind: &str) -> bool {
    matches!(kind, "progress" | "stage" | "log")
}

/// `v-2`: v:2 on every line.
pub(super) fn v_2(value: &mut Value, _kind: &str, _line: &str) -> Option<Vec<String>> {
    value["v"] = json!(2);
    Some(vec![value.to_string()])
}

/// `event-without-data`: a progress, stage or log event without its data.
pub(super) fn event_without_data(
    value: &mut Value,
    kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    if !is_data_event(kind) {
        return None;
    }
    if let Some(map) = value.as_object_mut() {
        map.remove("data");
    }
    Some(vec![value.to_string()])
}

/// `progress-repeat`: every progress event written twice.
pub(super) fn progress_repeat(_value: &mut Value, kind: &str, line: &str) -> Option<Vec<String>> {
    (kind == "progress").then(|| vec![line.to_string(), line.to_string()])
}

/// `unknown-event-interleaved`: an unknown event type before every data-carrying event.
pub(super) fn unknown_event_interleaved(
    value: &mut Value,
    kind: &str,
    line: &str,
) -> Option<Vec<String>> {
    if !is_data_event(kind) {
        return None;
    }
    let cmd = value.get("cmd").cloned().unwrap_or(Value::Null);
    let unknown = json!({"v": value.get("v").cloned().unwrap_or(json!(3)), "type": "x_checkpoint",
        "cmd": cmd, "data": {"of": kind, "nested": {"list": [1, "two"]}}});
    Some(vec![unknown.to_string(), line.to_string()])
}

/// `progress-kib`: progress done/total in KiB instead of bytes.
pub(super) fn progress_kib(value: &mut Value, kind: &str, _line: &str) -> Option<Vec<String>> {
    if kind != "progress" {
        return None;
    }
    for field in ["done", "total"] {
        if let Some(bytes) = value
            .pointer(&format!("/data/{field}"))
            .and_then(Value::as_u64)
        {
            value["data"][field] = json!(bytes / 1024);
        }
    }
    Some(vec![value.to_string()])
}

/// `mcp-denied-internal`: an MCP access_denied answered as internal.
pub(super) fn mcp_denied_internal(
    value: &mut Value,
    _kind: &str,
    line: &str,
) -> Option<Vec<String>> {
    value
        .get("jsonrpc")
        .is_some()
        .then(|| vec![line.replace("access_denied", "internal")])
}

/// `mcp-leak-password`: the console password in an MCP tool result.
pub(super) fn mcp_leak_password(
    value: &mut Value,
    _kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    add_to_mcp_result(value, "x_console", planted_password())
}

/// An MCP response whose `result` object gains `key: text` (kept as it was without a text).
fn add_to_mcp_result(value: &mut Value, key: &str, text: Option<String>) -> Option<Vec<String>> {
    if !value.get("result").is_some_and(Value::is_object) {
        return None;
    }
    value["result"][key] = json!(text?);
    Some(vec![value.to_string()])
}

/// `leak-password-split-log`: after every log event, two more log events that each carry
/// one half of the console password (neither half is the secret on its own).
pub(super) fn leak_password_split_log(
    value: &mut Value,
    kind: &str,
    line: &str,
) -> Option<Vec<String>> {
    if kind != "log" {
        return None;
    }
    let password = planted_password()?;
    let (first, second) = password.split_at(password.len() / 2);
    let cmd = value.get("cmd").cloned().unwrap_or(Value::Null);
    let event = |text: &str| {
        json!({"v": value.get("v").cloned().unwrap_or(json!(3)), "type": "log", "cmd": cmd,
            "data": {"line": text}})
        .to_string()
    };
    Some(vec![
        line.to_string(),
        event(&format!("console: {first}")),
        event(second),
    ])
}

/// `mcp-leak-data-root`: every MCP result names a disk under the data root.
pub(super) fn mcp_leak_data_root(
    value: &mut Value,
    _kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    let disk = std::env::var("STOAT_HOME")
        .ok()
        .map(|root| format!("{root}/work/disk.qcow2"));
    add_to_mcp_result(value, "x_disk", disk)
}

/// `mcp-answer-notification`: a response (id null, an empty result) to every JSON-RPC
/// notification the client sends, as a server that answers whatever it reads would.
pub(super) fn mcp_answer_notification(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let notification =
        value.get("method").is_some_and(Value::is_string) && value.get("id").is_none();
    notification.then(|| json!({"jsonrpc": "2.0", "id": null, "result": {}}).to_string())
}

/// `mcp-rate-unlimited`'s memory of one MCP session (the kit wraps one server): the tool
/// each `tools/call` request named, by its id as JSON text, and each tool's last successful
/// result.
struct McpCalls {
    tool_of: BTreeMap<String, String>,
    last_ok: BTreeMap<String, Value>,
}

static MCP_CALLS: Mutex<McpCalls> = Mutex::new(McpCalls {
    tool_of: BTreeMap::new(),
    last_ok: BTreeMap::new(),
});

/// `mcp-rate-unlimited`, on the way in: notes which tool a `tools/call` request names; the
/// request itself goes on to the SUT unchanged.
pub(super) fn mcp_note_tool_call(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    if value.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let id = value.get("id")?.to_string();
    let tool = value.pointer("/params/name").and_then(Value::as_str)?;
    if let Ok(mut calls) = MCP_CALLS.lock() {
        calls.tool_of.insert(id, tool.to_string());
    }
    None
}

/// `mcp-rate-unlimited`, on the way out: a tool call refused with `rate_limited` is answered
/// with that tool's last successful result instead, as a server without rate buckets would
/// have answered a repeated read; every successful result is remembered for that.
pub(super) fn mcp_rate_unlimited(
    value: &mut Value,
    _kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    value.get("jsonrpc")?;
    let id = value.get("id")?.to_string();
    let result = value.get("result")?.clone();
    let mut calls = MCP_CALLS.lock().ok()?;
    let tool = calls.tool_of.get(&id)?.clone();
    let refused = result.get("isError").and_then(Value::as_bool) == Some(true);
    if !refused {
        calls.last_ok.insert(tool, result);
        return None;
    }
    if !result.to_string().contains("rate_limited") {
        return None;
    }
    value["result"] = calls.last_ok.get(&tool)?.clone();
    Some(vec![value.to_string()])
}

/// Whether `value` is the server's answer to `initialize` (a result naming its revision).
fn initialize_answer(value: &Value) -> bool {
    value.get("jsonrpc").is_some()
        && value
            .pointer("/result/protocolVersion")
            .is_some_and(Value::is_string)
}

/// `mcp-stray-line`: a line of prose on stdout before the answer to initialize.
pub(super) fn mcp_stray_line(value: &mut Value, _kind: &str, line: &str) -> Option<Vec<String>> {
    initialize_answer(value).then(|| {
        vec![
            "stoat mcp: serving the Model Context Protocol on stdio".to_string(),
            line.to_string(),
        ]
    })
}

/// `mcp-version-older`: initialize answered with the revision before the one the server
/// chose (MCP's published revisions in order; the oldest, and one not listed, stay).
pub(super) fn mcp_version_older(
    value: &mut Value,
    _kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    const ORDER: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
    if !initialize_answer(value) {
        return None;
    }
    let chosen = value.pointer("/result/protocolVersion")?.as_str()?;
    let at = ORDER.iter().position(|r| *r == chosen)?;
    value["result"]["protocolVersion"] = json!(ORDER[at.saturating_sub(1)]);
    Some(vec![value.to_string()])
}

/// `mcp-text-disagrees`: a tool result with structuredContent whose text blocks carry that
/// JSON with one member more.
pub(super) fn mcp_text_disagrees(
    value: &mut Value,
    _kind: &str,
    _line: &str,
) -> Option<Vec<String>> {
    value.pointer("/result/structuredContent")?;
    let blocks = value.pointer_mut("/result/content")?.as_array_mut()?;
    let mut changed = false;
    for block in blocks {
        let Some(mut parsed) = block
            .get("text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
        else {
            continue;
        };
        if let Some(object) = parsed.as_object_mut() {
            object.insert("x_text_only".into(), json!(true));
            block["text"] = json!(parsed.to_string());
            changed = true;
        }
    }
    changed.then(|| vec![value.to_string()])
}

/// `extra-field-deep`: an extra member in every object at every depth.
pub(super) fn extra_field_deep(value: &mut Value, _kind: &str, _line: &str) -> Option<Vec<String>> {
    add_member_everywhere(value);
    Some(vec![value.to_string()])
}

/// `field-order`: object members in reverse order.
pub(super) fn field_order(value: &mut Value, _kind: &str, _line: &str) -> Option<Vec<String>> {
    Some(vec![render(value, true, false)])
}

/// `json-escape-all`: every string character as a `\uXXXX` escape.
pub(super) fn json_escape_all(value: &mut Value, _kind: &str, _line: &str) -> Option<Vec<String>> {
    Some(vec![render(value, false, true)])
}

fn add_member_everywhere(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (_, child) in map.iter_mut() {
                add_member_everywhere(child);
            }
            // Shaped like its siblings: to a DTO object it is an extra field, to a map (Guest.svc
            // of strings, Guest.backend of tables, a recipe detail's params) an extra entry of the
            // map's own kind, both of which a producer may add.
            let tables = !map.is_empty() && map.values().all(Value::is_object);
            let extra = if tables {
                json!({"added": true})
            } else {
                json!("added")
            };
            map.insert("x_future_member".into(), extra);
        }
        Value::Array(items) => items.iter_mut().for_each(add_member_everywhere),
        _ => {}
    }
}

/// Serializes `value` with object members in reverse order and/or every string character
/// as a `\\uXXXX` escape: both are the same JSON to any conforming parser.
fn render(value: &Value, reverse: bool, escape_all: bool) -> String {
    let string = |text: &str| -> String {
        if !escape_all {
            return Value::String(text.to_string()).to_string();
        }
        let mut out = String::from("\"");
        for unit in text.encode_utf16() {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        out.push('"');
        out
    };
    match value {
        Value::String(text) => string(text),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| render(v, reverse, escape_all))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(map) => {
            let mut members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", string(k), render(v, reverse, escape_all)))
                .collect();
            if reverse {
                members.reverse();
            }
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}
