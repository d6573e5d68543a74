//! The MCP server's JSON-RPC 2.0 loop over stdio: one JSON message per line in, one per line
//! out, and nothing else ever on the protocol's stdout (fd 1 is pointed at stderr and fd 0 at
//! /dev/null for the rest of the process, so neither stoat nor a child tool can corrupt or
//! steal the stream). Bad input gets a JSON-RPC error, never an exit.
//!
//! Methods: initialize (version negotiation), ping, tools/list, tools/call; notifications are
//! never answered. Tool failures are tool results (`isError:true`, `{code, message}`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use serde_json::{json, Map, Value};
use stoat_core::{Cancel, Env, Error, Result};

use super::guards;
use super::rate::RateLimiter;
use super::spelling::MCP;
use super::tools::{self, Tool};
use stoat_core::app::{self, Session};

/// The protocol revisions this server speaks, oldest first. Every ordering question goes
/// through this list: revisions are names, not numbers, so they are never compared as strings.
pub const PROTOCOL_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The newest revision spoken here: the answer to a client asking for one we do not know.
fn newest_protocol() -> &'static str {
    PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]
}

/// Whether `have` is `wanted` or a later revision (an unknown `have` is older than all).
fn at_least(have: &str, wanted: &str) -> bool {
    let position = |v: &str| PROTOCOL_VERSIONS.iter().position(|known| *known == v);
    match (position(have), position(wanted)) {
        (Some(have), Some(wanted)) => have >= wanted,
        _ => false,
    }
}

/// Whether a revision has `structuredContent` (2025-06-18 added it, with `outputSchema`).
/// Offering an outputSchema where no structured content can follow would make a client
/// that checks results against it refuse every call, so the two go together.
fn has_structured_content(revision: &str) -> bool {
    at_least(revision, "2025-06-18")
}

/// JSON-RPC batches: 2025-03-26 added them and 2025-06-18 removed them again.
fn allows_batches(revision: &str) -> bool {
    !at_least(revision, "2025-06-18")
}

/// The longest message read; a longer line is answered with a parse error and skipped.
const MAX_LINE: u64 = 16 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// The longest error message sent, in bytes: a message echoes what the client sent (a VM
/// name, a tool or method name), and an echo of a 15 MB name must not come back whole
/// (docs/decisions/runtime.md "Guest-fed buffers").
const MAX_ECHO: usize = 1024;

/// `message` cut to [`MAX_ECHO`] bytes (on a character boundary), saying how much was cut.
fn cut_echo(message: &str) -> String {
    if message.len() <= MAX_ECHO {
        return message.to_owned();
    }
    let mut end = MAX_ECHO;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\u{2026} [cut: {} more bytes]",
        &message[..end],
        message.len() - end
    )
}

/// A JSON-RPC error.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
}

fn rpc_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
    }
}

/// One session's state.
pub struct Server {
    env: Env,
    cancel: Cancel,
    limiter: RateLimiter,
    protocol: &'static str,
}

impl Server {
    /// A server for `env`; a bad `STOAT_MCP_RATE*` value is `usage`.
    pub fn new(env: Env, cancel: Cancel) -> Result<Server> {
        let limiter = RateLimiter::from_env(&env)?;
        Ok(Server {
            env,
            cancel,
            limiter,
            protocol: newest_protocol(),
        })
    }

    /// Answers one line of input, or nothing (a notification, a response, a blank line).
    pub fn handle_line(&mut self, line: &[u8]) -> Option<Value> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        match serde_json::from_str::<Value>(text) {
            Err(e) => Some(error_response(
                Value::Null,
                rpc_error(PARSE_ERROR, format!("parse error: {e}")),
            )),
            Ok(Value::Array(_)) if !allows_batches(self.protocol) => Some(error_response(
                Value::Null,
                rpc_error(
                    INVALID_REQUEST,
                    format!(
                        "protocol revision {} has no JSON-RPC batches; send one message per line",
                        self.protocol
                    ),
                ),
            )),
            Ok(Value::Array(batch)) if batch.is_empty() => Some(error_response(
                Value::Null,
                rpc_error(INVALID_REQUEST, "empty batch"),
            )),
            Ok(Value::Array(batch)) => {
                let answers: Vec<Value> = batch
                    .into_iter()
                    .filter_map(|message| self.handle_message(message))
                    .collect();
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            Ok(message) => self.handle_message(message),
        }
    }

    fn handle_message(&mut self, message: Value) -> Option<Value> {
        let Value::Object(message) = message else {
            return Some(error_response(
                Value::Null,
                rpc_error(INVALID_REQUEST, "a message must be a JSON object"),
            ));
        };
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str);
        let Some(method) = method else {
            // A response to us (we send no requests) is ignored; anything else is invalid.
            if message.contains_key("result") || message.contains_key("error") {
                return None;
            }
            return Some(error_response(
                valid_id(id).unwrap_or(Value::Null),
                rpc_error(INVALID_REQUEST, "no method"),
            ));
        };
        let Some(id) = id else {
            self.handle_notification(method);
            return None;
        };
        let Some(id) = valid_id(Some(id)) else {
            return Some(error_response(
                Value::Null,
                rpc_error(INVALID_REQUEST, "id must be a string or a number"),
            ));
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error_response(
                id,
                rpc_error(INVALID_REQUEST, "jsonrpc must be \"2.0\""),
            ));
        }
        let params = message.get("params");
        Some(match self.handle_request(method, params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => error_response(id, error),
        })
    }

    fn handle_notification(&mut self, _method: &str) {
        // notifications/initialized, notifications/cancelled (calls run one at a time, to
        // completion) and anything else: nothing to answer.
    }

    fn handle_request(
        &mut self,
        method: &str,
        params: Option<&Value>,
    ) -> std::result::Result<Value, RpcError> {
        if let Some(params) = params {
            if !params.is_object() && !params.is_null() {
                return Err(rpc_error(INVALID_PARAMS, "params must be an object"));
            }
        }
        match method {
            "initialize" => self.initialize(params),
            "ping" => Ok(json!({})),
            "tools/list" => {
                let structured = has_structured_content(self.protocol);
                let described: Vec<Value> = tools::TOOLS
                    .iter()
                    .map(|tool| {
                        let mut entry = tool.describe();
                        if !structured {
                            if let Some(entry) = entry.as_object_mut() {
                                entry.remove("outputSchema");
                            }
                        }
                        entry
                    })
                    .collect();
                Ok(json!({ "tools": described }))
            }
            "tools/call" => self.call(params),
            other => Err(rpc_error(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    /// Answers the client's protocol version when spoken here, else the newest one.
    fn initialize(&mut self, params: Option<&Value>) -> std::result::Result<Value, RpcError> {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                rpc_error(
                    INVALID_PARAMS,
                    "initialize needs params.protocolVersion (a string)",
                )
            })?;
        self.protocol = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or_else(newest_protocol);
        Ok(json!({
            "protocolVersion": self.protocol,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "stoat", "title": "stoat VM manager", "version": crate::version::VERSION},
            "instructions": "stoat manages QEMU VMs on this host. Each VM's agent_access (none, observe, manage, exec) limits what these tools may do with it; copy tools reach only <stoat home>/shared/<vm> on the host.",
        }))
    }

    fn call(&mut self, params: Option<&Value>) -> std::result::Result<Value, RpcError> {
        let params = params.and_then(Value::as_object);
        let name = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| rpc_error(INVALID_PARAMS, "tools/call needs params.name (a string)"))?;
        let arguments = match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(rpc_error(
                    INVALID_PARAMS,
                    "tools/call params.arguments must be an object",
                ))
            }
        };
        let tool = tools::find(name)
            .ok_or_else(|| rpc_error(INVALID_PARAMS, format!("unknown tool: {name}")))?;
        let outcome = match self.limiter.take(tool.name, Instant::now()) {
            Err(refusal) => Err((
                refusal.to_error(),
                Some(("retry_after_seconds", refusal.retry_after_seconds)),
            )),
            Ok(()) => self.run_guarded(tool, arguments).map_err(|e| (e, None)),
        };
        Ok(match outcome {
            Ok(data) => self.tool_result(data, false),
            Err((err, extra)) => {
                let mut object = json!({"code": err.code().as_str(), "message": cut_echo(&err.message_in(&MCP))});
                if let Some((key, value)) = extra {
                    object[key] = Value::from(value);
                }
                self.tool_result(object, true)
            }
        })
    }

    /// The guards in order (forbidden fields, argument shapes, names, agent_access), then the
    /// tool itself, with a panic turned into `internal`.
    fn run_guarded(&self, tool: &Tool, mut arguments: Map<String, Value>) -> Result<Value> {
        guards::refuse_forbidden(tool.name, tool.forbidden, &arguments)?;
        tool.validate(&mut arguments)?;
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut ctx =
            Session::quiet(self.env.clone(), self.cancel.clone(), "mcp").with_spelling(&MCP);
        if let Some(dir) = text("dir") {
            ctx = ctx.with_work_dir(guards::project_dir(&dir)?);
        }
        ctx.record(&format!("mcp tool={}", tool.name))?;
        if let Some(param) = tool.vm_param {
            let vm = text(param).unwrap_or_default();
            guards::check_vm_name(&vm)?;
            app::mcp::require_access(&ctx, tool.name, &vm, tool.class.needs())?;
        }
        match panic::catch_unwind(AssertUnwindSafe(|| (tool.run)(&ctx, arguments))) {
            Ok(result) => result,
            Err(_) => Err(Error::Internal(format!("{} panicked", tool.name))),
        }
    }

    fn tool_result(&self, data: Value, is_error: bool) -> Value {
        let text = data.to_string();
        let mut result = json!({
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
        });
        // structuredContent arrived with 2025-06-18; older clients get the text alone. It
        // must match the tool's outputSchema (clients check it, some even on errors), which
        // describes success: a failure's `{code, message}` is the text alone.
        if !is_error && has_structured_content(self.protocol) {
            result["structuredContent"] = data;
        }
        result
    }
}

fn valid_id(id: Option<Value>) -> Option<Value> {
    id.filter(|id| id.is_string() || id.is_number())
}

fn error_response(id: Value, error: RpcError) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": error.code, "message": cut_echo(&error.message)},
    })
}

/// Serves MCP on the process's stdin/stdout until stdin closes.
pub fn serve(env: Env, cancel: Cancel) -> Result<()> {
    let mut server = Server::new(env, cancel)?;
    let (input, mut output) = take_stdio()?;
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line);
        match read {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("read MCP input", e)),
        }
        let answer = if line.len() as u64 >= MAX_LINE && line.last() != Some(&b'\n') {
            skip_rest_of_line(&mut reader);
            Some(error_response(
                Value::Null,
                rpc_error(PARSE_ERROR, format!("message longer than {MAX_LINE} bytes")),
            ))
        } else {
            server.handle_line(&line)
        };
        if let Some(answer) = answer {
            let mut text = answer.to_string();
            text.push('\n');
            if output
                .write_all(text.as_bytes())
                .and_then(|()| output.flush())
                .is_err()
            {
                return Ok(()); // the client went away
            }
        }
    }
}

fn skip_rest_of_line(reader: &mut impl BufRead) {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        match reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut sink) {
            Ok(0) => return,
            Ok(_) if sink.last() == Some(&b'\n') => return,
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Takes stdin and stdout for the protocol: duplicates them (close-on-exec) and points fd 0
/// at /dev/null and fd 1 at stderr, so children and stray prints cannot touch the stream.
fn take_stdio() -> Result<(File, File)> {
    let _ = std::io::stdout().flush();
    let devnull = File::open("/dev/null").map_err(|e| Error::io("open /dev/null", e))?;
    // Duplicated with F_DUPFD_CLOEXEC at 3 or above.
    let input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::io("take stdin", e))?;
    let output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::io("take stdout", e))?;
    rustix::stdio::dup2_stdin(&devnull)
        .and_then(|()| rustix::stdio::dup2_stdout(rustix::stdio::stderr()))
        .map_err(|e| Error::io("redirect stdio", e.into()))?;
    Ok((File::from(input), File::from(output)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> (tempfile::TempDir, Server) {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().to_str().unwrap().to_owned();
        let root = format!("{home}/stoat");
        let env = Env::from_pairs([("HOME", home.as_str()), ("STOAT_HOME", root.as_str())]);
        (temp, Server::new(env, Cancel::default()).unwrap())
    }

    fn ask(server: &mut Server, text: &str) -> Value {
        server.handle_line(text.as_bytes()).expect("an answer")
    }

    #[test]
    fn negotiates_the_protocol_version() {
        let (_t, mut s) = server();
        for (asked, answered) in [
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", "2024-11-05"),
            ("2025-06-18", "2025-06-18"),
            ("2025-11-25", "2025-11-25"),
            ("1999-01-01", "2025-11-25"),
            ("9999-99-99", "2025-11-25"),
        ] {
            let reply = ask(
                &mut s,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{asked}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
                ),
            );
            assert_eq!(reply["result"]["protocolVersion"], answered);
            assert_eq!(reply["result"]["serverInfo"]["name"], "stoat");
        }
        let reply = ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
        );
        assert_eq!(reply["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn bad_input_gets_json_rpc_errors() {
        let (_t, mut s) = server();
        let code = |s: &mut Server, text: &str| ask(s, text)["error"]["code"].clone();
        assert_eq!(code(&mut s, "{not json"), PARSE_ERROR);
        assert_eq!(ask(&mut s, "{not json")["id"], Value::Null);
        assert_eq!(code(&mut s, "[]"), INVALID_REQUEST);
        assert_eq!(code(&mut s, "42"), INVALID_REQUEST);
        assert_eq!(
            code(&mut s, r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#),
            METHOD_NOT_FOUND
        );
        assert_eq!(
            code(&mut s, r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(&mut s, r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(
                &mut s,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#
            ),
            INVALID_PARAMS
        );
        assert_eq!(
            code(
                &mut s,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}"#
            ),
            INVALID_PARAMS
        );
        assert_eq!(
            code(
                &mut s,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_vms","arguments":[1]}}"#
            ),
            INVALID_PARAMS
        );
        assert_eq!(
            code(
                &mut s,
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#
            ),
            INVALID_PARAMS
        );
        assert!(s.handle_line(b"\xff\xfe").is_some());
        // notifications, responses and blank lines get no answer
        assert!(s
            .handle_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .is_none());
        assert!(s
            .handle_line(br#"{"jsonrpc":"2.0","method":"nope"}"#)
            .is_none());
        assert!(s
            .handle_line(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#)
            .is_none());
        assert!(s.handle_line(b"  \n").is_none());
        // and after all that, it still answers
        assert_eq!(
            ask(&mut s, r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)["result"],
            json!({})
        );
    }

    #[test]
    fn revisions_are_ordered_by_the_list_not_by_their_text() {
        assert!(at_least("2025-11-25", "2025-06-18"));
        assert!(!at_least("2025-03-26", "2025-06-18"));
        assert!(
            !at_least("zzzz", "2024-11-05"),
            "an unknown revision is not newer"
        );
        assert!(allows_batches("2025-03-26"));
        assert!(!allows_batches("2025-06-18"));
        assert!(!allows_batches("2025-11-25"));
    }

    #[test]
    fn batches_are_refused_where_the_revision_has_none() {
        let (_t, mut s) = server();
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        assert_eq!(ask(&mut s, batch)["error"]["code"], INVALID_REQUEST);
        ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        assert_eq!(ask(&mut s, batch)["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn batches_answer_each_request() {
        let (_t, mut s) = server();
        ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        let reply = ask(
            &mut s,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#,
        );
        let answers = reply.as_array().unwrap();
        assert_eq!(answers.len(), 2);
        assert_eq!(answers[1]["error"]["code"], METHOD_NOT_FOUND);
    }

    #[test]
    fn tool_errors_are_results() {
        let (_t, mut s) = server();
        let reply = ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vm_status","arguments":{"vm":"ghost"}}}"#,
        );
        let result = &reply["result"];
        assert_eq!(result["isError"], true);
        assert!(result.get("structuredContent").is_none(), "{result}");
        let text = |result: &Value| -> Value {
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
        };
        assert_eq!(text(result)["code"], "not_found");
        let reply = ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vm_status","arguments":{"vm":"../etc"}}}"#,
        );
        assert_eq!(text(&reply["result"])["code"], "invalid_spec");
        let reply = ask(
            &mut s,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_vms"}}"#,
        );
        assert_eq!(reply["result"]["isError"], false);
        assert_eq!(reply["result"]["structuredContent"], json!({"vms": []}));
    }

    #[test]
    fn output_schemas_are_offered_only_where_structured_content_follows() {
        for (revision, structured) in [
            ("2024-11-05", false),
            ("2025-03-26", false),
            ("2025-06-18", true),
            ("2025-11-25", true),
        ] {
            let (_t, mut s) = server();
            ask(
                &mut s,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{revision}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
                ),
            );
            let listed = ask(&mut s, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            let tools = listed["result"]["tools"].as_array().unwrap();
            assert!(!tools.is_empty());
            for tool in tools {
                assert_eq!(
                    tool.get("outputSchema").is_some(),
                    structured,
                    "{revision}: {}",
                    tool["name"]
                );
                assert!(tool["inputSchema"].is_object(), "{revision}");
            }
            let called = ask(
                &mut s,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_vms"}}"#,
            );
            assert_eq!(
                called["result"].get("structuredContent").is_some(),
                structured,
                "{revision}"
            );
        }
    }
}
