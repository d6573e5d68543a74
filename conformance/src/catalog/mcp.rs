//! Owns the `stoat mcp` checks: the suite itself speaks JSON-RPC over the server's stdio
//! (initialize, tools/list, a tools/call per tool class), and judges what the contract says
//! of MCP: the tools it names exist, `wait` answers `healthy`, `forward` a ForwardList,
//! `access_denied` follows agent_access level by level, `rate_limited` when a bucket is
//! exhausted, and no session carries the console password in any decoded form or a host
//! path where the contract allows none (every session goes through the leak search).
//! The transport checks judge what the MCP revisions and JSON-RPC 2.0 say of the stream
//! itself: no answer to a notification, nothing but JSON-RPC messages on stdout, the
//! revision the client asked for when the server shows it speaks it, and a tool result's
//! text carrying its structured content.

use std::time::Duration;

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at};
use super::live::{Next, Watched};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Rule, ScriptBytes};
use crate::finding::Level::{Must, Should};
use crate::run::Case;
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::{Editions, Source};

const NO_MCP: &str = "contract 2 has no `stoat mcp`: the MCP server was a separate process";

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "MCP.initialize",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#versioning",
        quote: "moves the MCP server from a separate Python process into stoat mcp in this binary.",
        title: "`stoat mcp` answers JSON-RPC initialize over stdio with protocolVersion, capabilities.tools and serverInfo",
        tags: &["mcp"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(initialize)
    },
    CheckDef {
        id: "MCP.tools-list",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#versioning",
        quote: "five MCP tools (project_status, project_up, project_down, project_apply, project_wait) alongside start, stop, apply_recipes and wait",
        title: "tools/list names every tool the contract names (start, stop, apply_recipes, wait, forward, copy_to, copy_from, the five project tools), each with an object inputSchema",
        tags: &["mcp"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(tools_list)
    },
    CheckDef {
        id: "MCP.call-per-class",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#consumer-contract",
        quote: "MCP wait returns healthy",
        title: "a tools/call per class: list_vms and vm_status (read-only), wait answering healthy and forward a ForwardList (mutating), destroy (destructive: the VM is gone), exec on a stopped VM (execution: not_running); no response carries the console password, nor a host path outside share, project, local, dir and guest output",
        tags: &["mcp", "leaks"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(call_per_class)
    },
    CheckDef {
        id: "MCP.access-denied",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "access_denied MCP guest access was refused because the VM's agent_access level is too low",
        title: "per agent_access level: none refuses vm_status, observe allows vm_status but refuses stop and exec, manage refuses exec, each with access_denied",
        tags: &["mcp", "access"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(access_denied)
    },
    CheckDef {
        id: "MCP.rate-limited",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "rate_limited MCP refused a tool call because its per-tool or shared rate bucket was exhausted",
        title: "calling one tool in a tight loop (up to 200 calls) is eventually refused with rate_limited",
        tags: &["mcp"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(rate_limited)
    },
    CheckDef {
        id: "MCP.doctor",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "mcp doctor {\"contract\":3,\"version\":\"1.2.3\",\"transport\":\"stdio\",\"binary\":\"/home/u/.local/bin/stoat\",\"clients\":[MCPClient,...]}",
        title: "`mcp doctor` answers the contract and version `version` answers, transport stdio, a binary, and MCPClient rows {client, path, installed: bool, command, current: bool}",
        tags: &["mcp"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(mcp_doctor)
    },
    CheckDef {
        id: "MCP.install",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "mcp install {\"client\":\"cursor\",\"path\":\"/home/u/.cursor/mcp.json\",\"json\":\"{...}\"}",
        title: "`mcp install cursor` (the contract's example client; SKIP when refused as usage) answers {client: cursor, path: absolute, json: a JSON object}, the file at path exists, and a later `mcp doctor` lists cursor installed at that path (writing that file is the command's job, so the sandbox rule allows it)",
        tags: &["mcp", "state"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(mcp_install)
    },
    CheckDef {
        id: "MCP.install-current",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "MCPClient.current is false when the client's entry names a different binary than the running one, which is the stale entry mcp doctor reports.",
        title: "right after `mcp install cursor` by the same binary, `mcp doctor`'s cursor row is current: true (SKIP when install is refused as usage)",
        tags: &["mcp", "state"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(mcp_install_current)
    },
    CheckDef {
        id: "MCP.notification-unanswered",
        level: Must,
        tier: Tier::Pure,
        spec: "mcp#jsonrpc-notification",
        source: Source::Mcp,
        quote: "The Server MUST NOT reply to a Notification, including those that are within a batch request.",
        title: "after initialize, five notifications (initialized, cancelled for a request never sent, an unknown method, and tools/list and ping sent without an id) get no response: nothing but the answer to a later ping request comes back",
        tags: &["mcp", "jsonrpc"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(notification_unanswered)
    },
    CheckDef {
        id: "MCP.stdout-messages-only",
        level: Must,
        tier: Tier::Fake,
        spec: "mcp#stdio",
        source: Source::Mcp,
        quote: "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
        title: "every line `stoat mcp` writes to stdout is one JSON-RPC 2.0 message, through a session that also runs an exec whose guest writes to its stdout, a malformed line and an unknown method",
        tags: &["mcp", "jsonrpc"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(stdout_messages_only)
    },
    CheckDef {
        id: "MCP.version-echoed",
        level: Must,
        tier: Tier::Pure,
        spec: "mcp#version-negotiation",
        source: Source::Mcp,
        quote: "If the server supports the requested protocol version, it MUST respond with the same version.",
        title: "one session per revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, one no revision has, and every revision the server answered): a revision the server answered in some session (so it speaks it) is answered unchanged whenever a client asks for it",
        tags: &["mcp", "jsonrpc"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(version_echoed)
    },
    CheckDef {
        id: "MCP.structured-content-text",
        level: Should,
        tier: Tier::Pure,
        spec: "mcp#structured-content",
        source: Source::Mcp,
        quote: "For backwards compatibility, a tool that returns structured content SHOULD also return the serialized JSON in a TextContent block.",
        title: "on revision 2025-06-18, every tool result carrying structuredContent (list_vms, vm_status, forward, wait, list_images, list_recipes) also carries a text block whose JSON is that same value (SKIP when the server negotiated an older revision or sent no structuredContent)",
        tags: &["mcp"],
        editions: Editions::V3 { change: NO_MCP },
        ..scenario(structured_content_text)
    },
];

/// One `stoat mcp` session.
struct Session {
    watched: Watched,
    next_id: u64,
    /// Every response line, for the leak search.
    seen: Vec<String>,
}

impl Session {
    /// A server process, not yet initialized.
    fn spawn(case: &Case<'_>, sandbox: &Sandbox) -> Result<Self, HarnessError> {
        let watched = Watched::spawn(case, sandbox, &["mcp"], true)?;
        Ok(Session {
            watched,
            next_id: 1,
            seen: Vec::new(),
        })
    }

    /// Sends `initialize` asking for `revision`; its response, if one came.
    fn initialize(&mut self, revision: &str) -> Option<Value> {
        self.request(
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {},
                   "clientInfo": {"name": "stoat-conformance", "version": env!("CARGO_PKG_VERSION")}}),
        )
    }

    fn start(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<Self>, HarnessError> {
        let mut session = Session::spawn(case, sandbox)?;
        let init = session.initialize("2025-06-18");
        match init {
            Some(response) if response.get("result").is_some() => {
                session.notify("notifications/initialized");
                Ok(Some(session))
            }
            other => {
                case.fail(
                    "mcp",
                    format!(
                        "`stoat mcp` did not answer initialize: {}",
                        other.map_or("no response line".to_string(), |r| crate::oracle::excerpt(
                            &r.to_string()
                        ))
                    ),
                );
                Ok(None)
            }
        }
    }

    fn notify(&mut self, method: &str) {
        self.watched
            .send_line(&json!({"jsonrpc": "2.0", "method": method}).to_string());
    }

    /// Sends a request and returns its response (skipping notifications), if one came.
    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.request_noting(method, params).0
    }

    /// Sends a request; its response, if one came, and every other line read before it.
    fn request_noting(&mut self, method: &str, params: Value) -> (Option<Value>, Vec<String>) {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut others = Vec::new();
        if !self.watched.send_line(&line.to_string()) {
            return (None, others);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            match self.watched.next(Duration::from_millis(500)) {
                Next::Line(text) => {
                    self.seen.push(text.clone());
                    let value = serde_json::from_str::<Value>(&text).ok();
                    if value.as_ref().and_then(|v| v.get("id")) == Some(&json!(id)) {
                        return (value, others);
                    }
                    others.push(text);
                }
                Next::Eof => return (None, others),
                Next::Timeout => {}
            }
        }
        (None, others)
    }

    /// Sends one line as it is (a notification, or bytes that are no message at all).
    fn send_raw(&mut self, line: &str) -> bool {
        self.watched.send_line(line)
    }

    /// Closes stdin and reads what the server still writes until it closes stdout (at most
    /// `limit`): every line of the session is in `seen` afterwards.
    fn drain(&mut self, limit: Duration) {
        self.watched.close_stdin();
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            match self.watched.next(Duration::from_millis(200)) {
                Next::Line(text) => self.seen.push(text),
                Next::Eof => return,
                Next::Timeout => {}
            }
        }
    }

    /// tools/call: (is_error, structured content or the parsed text content).
    fn call(&mut self, tool: &str, arguments: Value) -> Option<(bool, Value)> {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        let result = response.get("result")?;
        let is_error = result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let content = result.get("structuredContent").cloned().or_else(|| {
            result
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str(t).ok())
        })?;
        Some((is_error, content))
    }

    /// Ends the session; every line it answered is searched for leaks.
    fn finish(mut self, case: &mut Case<'_>, sandbox: &Sandbox) {
        self.watched.close_stdin();
        let seen = std::mem::take(&mut self.seen);
        leak_search(case, sandbox, &seen);
    }
}

/// The error code of a refused call.
fn code(answer: &Option<(bool, Value)>) -> Option<String> {
    match answer {
        Some((true, content)) => str_at(content, "/code").map(str::to_string),
        _ => None,
    }
}

fn initialize(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let mut session = Session::spawn(case, &sandbox)?;
    let response = session.initialize("2025-06-18");
    let Some(result) = response.as_ref().and_then(|r| r.get("result")).cloned() else {
        case.fail(
            "mcp",
            format!(
                "no initialize result: {}",
                response.map_or("no response line".to_string(), |r| crate::oracle::excerpt(
                    &r.to_string()
                ))
            ),
        );
        return Ok(());
    };
    case.ensure(
        result.get("protocolVersion").is_some_and(Value::is_string),
        "result/protocolVersion",
        "initialize names its protocolVersion",
    );
    case.ensure(
        result
            .pointer("/capabilities/tools")
            .is_some_and(Value::is_object),
        "result/capabilities/tools",
        "initialize offers the tools capability",
    );
    case.ensure(
        str_at(&result, "/serverInfo/name").is_some(),
        "result/serverInfo/name",
        "initialize names the server",
    );
    session.finish(case, &sandbox);
    Ok(())
}

fn tools_list(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    let tools = session
        .request("tools/list", json!({}))
        .and_then(|r| r.pointer("/result/tools").cloned())
        .and_then(|t| t.as_array().cloned())
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| str_at(t, "/name")).collect();
    for wanted in [
        "start",
        "stop",
        "apply_recipes",
        "wait",
        "forward",
        "copy_to",
        "copy_from",
        "project_status",
        "project_up",
        "project_down",
        "project_apply",
        "project_wait",
    ] {
        case.ensure(
            names.contains(&wanted),
            "result/tools",
            format!("tools/list has no {wanted} tool; the contract names it"),
        );
    }
    for tool in &tools {
        case.ensure(
            str_at(tool, "/inputSchema/type") == Some("object"),
            "result/tools",
            format!("tool {:?} has no object inputSchema", str_at(tool, "/name")),
        );
    }
    session.finish(case, &sandbox);
    Ok(())
}

/// Members of MCP payloads that may carry a host path: the VM's share and project, a
/// copy's local file, a project status's dir, and guest output (the same DTOs as the CLI's).
const MCP_PATH_KEYS: &[&str] = &["share", "project", "local", "dir", "stdout", "stderr"];

/// The leak oracle over one MCP session: the console password nowhere in any decoded form;
/// the sandbox's host paths only in [`MCP_PATH_KEYS`]; a VM's own paths not even in an
/// error message (the CLI's LEAK rules, read over JSON-RPC).
fn leak_search(case: &mut Case<'_>, sandbox: &Sandbox, lines: &[String]) {
    let canaries = sandbox.canaries();
    for line in lines {
        if let Some(form) = crate::oracle::secret_form(line, &sandbox.console_password) {
            case.fail(
                "mcp",
                format!("an MCP response carries the console password ({form})"),
            );
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            for canary in canaries.paths.iter().chain(&canaries.vm_dirs) {
                if line.contains(&canary.value) {
                    case.fail(
                        "mcp",
                        format!(
                            "a non-JSON line of the MCP server names the {} path",
                            canary.label
                        ),
                    );
                }
            }
            continue;
        };
        let mut texts = Vec::new();
        collect_strings(&value, None, &mut texts);
        for (key, text) in texts {
            if let Some(form) = crate::oracle::secret_form(&text, &sandbox.console_password) {
                case.fail(
                    "mcp",
                    format!("an MCP result string carries the console password ({form})"),
                );
            }
            let key = key.as_deref().unwrap_or("");
            if key == "message" {
                for canary in &canaries.vm_dirs {
                    if text.contains(&canary.value) {
                        case.fail(
                            "mcp",
                            format!("an MCP error message names a host path of {}", canary.label),
                        );
                    }
                }
                continue;
            }
            if MCP_PATH_KEYS.contains(&key) {
                continue;
            }
            for canary in &canaries.paths {
                if text.contains(&canary.value) {
                    case.fail(
                        "mcp",
                        format!(
                            "an MCP result names the {} path in {key:?}, where the contract allows no host path",
                            canary.label
                        ),
                    );
                }
            }
        }
    }
}

/// Every string under `value` with the member name it stands under (`None` in an array at
/// the top); text holding JSON is decoded once more, as a client would, its strings keyed
/// by their own members.
fn collect_strings(value: &Value, key: Option<&str>, out: &mut Vec<(Option<String>, String)>) {
    match value {
        Value::String(text) => {
            out.push((key.map(str::to_string), text.clone()));
            if let Ok(inner) = serde_json::from_str::<Value>(text) {
                if !inner.is_string() {
                    collect_strings(&inner, key, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, key, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push((None, k.clone()));
            collect_strings(v, Some(k), out)
        }),
        _ => {}
    }
}

fn call_per_class(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(
        &VmFixture::live("work")
            .allow_exec(Some(true))
            .forward(8080, 80),
    )?;
    sandbox.write_vm(
        &VmFixture::live("scratch")
            .allow_exec(Some(true))
            .sshport(2201),
    )?;
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    match session.call("list_vms", json!({})) {
        Some((false, content)) => {
            let text = content.to_string();
            case.ensure(
                text.contains("\"work\""),
                "list_vms",
                "list_vms does not list work",
            );
        }
        other => case.fail("list_vms", format!("list_vms failed: {other:?}")),
    }
    match session.call("vm_status", json!({"vm": "work"})) {
        Some((false, content)) => {
            case.ensure(
                content.to_string().contains("\"work\""),
                "vm_status",
                "vm_status does not describe work",
            );
        }
        other => case.fail("vm_status", format!("vm_status failed: {other:?}")),
    }
    match session.call(
        "wait",
        json!({"vm": "work", "until": "stopped", "timeout": "5s"}),
    ) {
        Some((false, content)) => {
            case.ensure(
                content.get("healthy").is_some_and(Value::is_boolean),
                "wait/healthy",
                format!("MCP wait returns healthy; it answered {content}"),
            );
        }
        Some((true, content)) if str_at(&content, "/code") == Some("usage") => {
            match session.call("wait", json!({"vm": "work", "until": "stopped"})) {
                Some((false, content)) => {
                    case.ensure(
                        content.get("healthy").is_some_and(Value::is_boolean),
                        "wait/healthy",
                        format!("MCP wait returns healthy; it answered {content}"),
                    );
                }
                other => case.fail("wait", format!("wait failed: {other:?}")),
            }
        }
        other => case.fail("wait", format!("wait failed: {other:?}")),
    }
    match session.call("forward", json!({"vm": "work"})) {
        Some((false, content)) => {
            case.ensure(
                content.get("forwards").is_some_and(Value::is_array),
                "forward/forwards",
                format!("MCP forward returns ForwardList (forwards); it answered {content}"),
            );
        }
        other => case.fail("forward", format!("forward failed: {other:?}")),
    }
    let destroyed = session.call("destroy", json!({"vm": "scratch"}));
    if matches!(destroyed, Some((false, _))) {
        let got = case.json(&sandbox, &["get", "scratch"])?;
        case.ensure(
            got.code() == Some("not_found"),
            "destroy",
            "MCP destroy answered ok but scratch still exists",
        );
    } else {
        case.fail(
            "destroy",
            format!("destroy of a stopped VM failed: {destroyed:?}"),
        );
    }
    let exec = session.call("exec", json!({"vm": "work", "command": ["true"]}));
    case.ensure(
        code(&exec).as_deref() == Some("not_running"),
        "exec",
        format!("exec on a stopped VM answers not_running; got {exec:?}"),
    );
    session.finish(case, &sandbox);
    Ok(())
}

fn set_access(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    vm: &str,
    level: &str,
) -> Result<bool, HarnessError> {
    let ran = case.json(sandbox, &["update", vm, "--agent-access", level])?;
    Ok(case.expect_ok(&ran).is_some())
}

fn access_denied(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    for (name, port) in [("n", 2210), ("o", 2211), ("m", 2212)] {
        sandbox.write_vm(&VmFixture::live(name).sshport(port))?;
    }
    for (name, level) in [("n", "none"), ("o", "observe"), ("m", "manage")] {
        if !set_access(case, &sandbox, name, level)? {
            return Ok(());
        }
    }
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    let denied = |case: &mut Case<'_>, answer: Option<(bool, Value)>, what: &str| {
        case.ensure(
            code(&answer).as_deref() == Some("access_denied"),
            "mcp",
            format!("{what}: expected access_denied, got {answer:?}"),
        );
    };
    let answer = session.call("vm_status", json!({"vm": "n"}));
    denied(case, answer, "vm_status on agent_access none");
    let answer = session.call("stop", json!({"vm": "o"}));
    denied(case, answer, "stop on agent_access observe");
    let answer = session.call("exec", json!({"vm": "o", "command": ["true"]}));
    denied(case, answer, "exec on agent_access observe");
    let answer = session.call("exec", json!({"vm": "m", "command": ["true"]}));
    denied(case, answer, "exec on agent_access manage");
    let allowed = session.call("vm_status", json!({"vm": "o"}));
    case.ensure(
        matches!(allowed, Some((false, _))),
        "mcp",
        format!("vm_status on agent_access observe is allowed; got {allowed:?}"),
    );
    session.finish(case, &sandbox);
    Ok(())
}

fn rate_limited(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let mut sandbox = case.sandbox()?;
    // The reference's knob makes the bucket small; a SUT without it is called until refused.
    sandbox.set_env("STOAT_MCP_RATE", "3/0.01");
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    let mut refused = None;
    for call in 0..200 {
        let answer = session.call("list_vms", json!({}));
        if answer.is_none() {
            case.fail("mcp", format!("call {call}: no answer"));
            break;
        }
        if let Some(code) = code(&answer) {
            refused = Some(code);
            break;
        }
    }
    case.ensure(
        refused.as_deref() == Some("rate_limited"),
        "mcp",
        format!("200 list_vms calls in a tight loop were never refused with rate_limited (first refusal: {refused:?})"),
    );
    session.finish(case, &sandbox);
    Ok(())
}

/// `mcp doctor`'s data, and `version`'s, in one sandbox.
fn doctor_and_version(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
) -> Result<Option<(Value, Value)>, HarnessError> {
    let version = case.json(sandbox, &["version"])?;
    let version = case.expect_ok(&version).cloned();
    let doctor = case.json(sandbox, &["mcp", "doctor"])?;
    let doctor = case.expect_ok(&doctor).cloned();
    Ok(version.zip(doctor))
}

/// The `mcp doctor` row of `client`, if listed.
fn client_row(doctor: &Value, client: &str) -> Option<Value> {
    doctor
        .get("clients")
        .and_then(Value::as_array)?
        .iter()
        .find(|row| str_at(row, "/client") == Some(client))
        .cloned()
}

fn mcp_doctor(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let Some((version, doctor)) = doctor_and_version(case, &sandbox)? else {
        return Ok(());
    };
    for field in ["contract", "version"] {
        case.ensure(
            doctor.get(field).is_some() && doctor.get(field) == version.get(field),
            &format!("/data/{field}"),
            format!(
                "`mcp doctor` answers {field} {:?}, `version` {:?}: both describe the running binary",
                doctor.get(field),
                version.get(field)
            ),
        );
    }
    expect_eq(case, &doctor, "/transport", &json!("stdio"));
    case.ensure(
        str_at(&doctor, "/binary").is_some_and(|b| !b.is_empty()),
        "/data/binary",
        "binary names the running executable",
    );
    let Some(rows) = doctor.get("clients").and_then(Value::as_array) else {
        case.fail("/data/clients", "clients is a list of MCPClient");
        return Ok(());
    };
    for (index, row) in rows.iter().enumerate() {
        for (field, is_type) in [
            ("client", Value::is_string as fn(&Value) -> bool),
            ("path", Value::is_string),
            ("installed", Value::is_boolean),
            ("command", Value::is_string),
            ("current", Value::is_boolean),
        ] {
            case.ensure(
                row.get(field).is_some_and(is_type),
                &format!("/data/clients/{index}/{field}"),
                format!("MCPClient.{field} is missing or of the wrong type: {row}"),
            );
        }
    }
    Ok(())
}

/// Runs `mcp install cursor`; `None` (with a skip) when the SUT refuses it as usage.
fn install_cursor(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<Value>, HarnessError> {
    let ran = case.json(sandbox, &["mcp", "install", "cursor"])?;
    if ran.code() == Some("usage") {
        case.skip("`mcp install cursor` is refused as usage: this implementation does not offer the client the contract's example names");
        return Ok(None);
    }
    Ok(case.expect_ok(&ran).cloned())
}

fn mcp_install(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let Some(installed) = install_cursor(case, &sandbox)? else {
        return Ok(());
    };
    expect_eq(case, &installed, "/client", &json!("cursor"));
    let path = str_at(&installed, "/path").unwrap_or("").to_string();
    case.ensure(
        path.starts_with('/') && std::path::Path::new(&path).is_file(),
        "/data/path",
        format!("path {path:?} is not an absolute path to the file the install wrote"),
    );
    let entry = str_at(&installed, "/json").and_then(|j| serde_json::from_str::<Value>(j).ok());
    case.ensure(
        entry.as_ref().is_some_and(Value::is_object),
        "/data/json",
        format!(
            "json {:?} is not the JSON text of an entry",
            installed.get("json")
        ),
    );
    let doctor = case.json(&sandbox, &["mcp", "doctor"])?;
    let Some(doctor) = case.expect_ok(&doctor).cloned() else {
        return Ok(());
    };
    match client_row(&doctor, "cursor") {
        Some(row) => {
            expect_eq(case, &row, "/installed", &json!(true));
            expect_eq(case, &row, "/path", &json!(path));
        }
        None => case.fail(
            "/data/clients",
            "after `mcp install cursor`, `mcp doctor` has no cursor row",
        ),
    }
    Ok(())
}

fn mcp_install_current(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    if install_cursor(case, &sandbox)?.is_none() {
        return Ok(());
    }
    let doctor = case.json(&sandbox, &["mcp", "doctor"])?;
    let Some(doctor) = case.expect_ok(&doctor).cloned() else {
        return Ok(());
    };
    let Some(row) = client_row(&doctor, "cursor") else {
        case.fail(
            "/data/clients",
            "after `mcp install cursor`, `mcp doctor` has no cursor row",
        );
        return Ok(());
    };
    case.ensure(
        row.get("current") == Some(&json!(true)),
        "/data/clients",
        format!("the entry this binary just installed is reported stale: {row}"),
    );
    Ok(())
}

/// What a line of the server's stdout is, as JSON-RPC 2.0 reads it: `Ok` with the kind of
/// message, `Err` with why it is none.
fn jsonrpc_kind(line: &str) -> Result<&'static str, String> {
    let value: Value = serde_json::from_str(line).map_err(|_| "not JSON".to_string())?;
    let Some(object) = value.as_object() else {
        return Err("JSON but not an object".into());
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err("an object without \"jsonrpc\": \"2.0\"".into());
    }
    if let Some(method) = object.get("method") {
        if !method.is_string() {
            return Err("a method that is not a string".into());
        }
        return Ok(if object.contains_key("id") {
            "request"
        } else {
            "notification"
        });
    }
    let id_ok = object
        .get("id")
        .is_some_and(|id| id.is_string() || id.is_number() || id.is_null());
    if !id_ok {
        return Err("a response without a string, number or null id".into());
    }
    match (object.contains_key("result"), object.contains_key("error")) {
        (true, false) | (false, true) => Ok("response"),
        (true, true) => Err("a response with both result and error".into()),
        (false, false) => Err("a response with neither result nor error".into()),
    }
}

fn notification_unanswered(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    // Session::start sent notifications/initialized; these follow it.
    let notifications = [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 4242, "reason": "stoat-conformance: a request never sent"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/stoat-conformance/unknown", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "ping"}),
    ];
    for notification in &notifications {
        session.send_raw(&notification.to_string());
    }
    // Requests are answered in the order they are read, so everything a notification could
    // have caused is on stdout before the answer to this ping.
    let (fence, before) = session.request_noting("ping", json!({}));
    if fence.is_none() {
        case.fail(
            "mcp",
            "no answer to a ping request sent after the notifications",
        );
    }
    for line in before {
        if jsonrpc_kind(&line) == Ok("response") {
            case.fail(
                "mcp",
                format!(
                    "a response to a notification (initialized, cancelled, an unknown method, tools/list or ping without an id): {}",
                    crate::oracle::excerpt(&line)
                ),
            );
        }
    }
    session.finish(case, &sandbox);
    Ok(())
}

fn stdout_messages_only(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let mut sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").allow_exec(Some(true)))?;
    sandbox.start_running("work")?;
    // The guest's command writes to its stdout: that belongs in exec's result, never on the
    // server's own stdout.
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            when: crate::fakes::script::Match {
                arg_contains: Some("stoat-conformance-guest".into()),
                ..Default::default()
            },
            stdout: Some(ScriptBytes::text("guest line on stdout\n")),
            stderr: Some(ScriptBytes::text("guest line on stderr\n")),
            ..Default::default()
        },
    ))?;
    let Some(mut session) = Session::start(case, &sandbox)? else {
        return Ok(());
    };
    let _ = session.request("tools/list", json!({}));
    let _ = session.call("list_vms", json!({}));
    let _ = session.call("vm_status", json!({"vm": "work"}));
    let _ = session.call("vm_status", json!({"vm": "ghost"}));
    let _ = session.call(
        "exec",
        json!({"vm": "work", "command": ["echo", "stoat-conformance-guest"]}),
    );
    let _ = session.request("stoat-conformance/unknown-method", json!({}));
    session.send_raw("{this is not json");
    let _ = session.request("ping", json!({}));
    session.drain(Duration::from_secs(10));
    let seen = session.seen.clone();
    for (index, line) in seen.iter().enumerate() {
        if let Err(why) = jsonrpc_kind(line) {
            case.fail(
                "mcp",
                format!(
                    "stdout line {} of `stoat mcp` is no JSON-RPC message ({why}): {}",
                    index + 1,
                    crate::oracle::excerpt(line)
                ),
            );
        }
    }
    session.finish(case, &sandbox);
    Ok(())
}

/// The revisions `stoat mcp`'s clients ask for, oldest first (MCP's published ones up to
/// 2025-11-25), and one no revision has.
const REVISIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const NO_REVISION: &str = "1999-01-01";

/// One session asking for `revision`: the revision its initialize answered, if any.
fn negotiate(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    revision: &str,
) -> Result<Option<String>, HarnessError> {
    let mut session = Session::spawn(case, sandbox)?;
    let answered = session
        .initialize(revision)
        .and_then(|r| r.pointer("/result/protocolVersion").cloned())
        .and_then(|v| v.as_str().map(str::to_string));
    session.finish(case, sandbox);
    Ok(answered)
}

fn version_echoed(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let mut asked: Vec<(String, Option<String>)> = Vec::new();
    for revision in REVISIONS.iter().chain([&NO_REVISION]) {
        let answered = negotiate(case, &sandbox, revision)?;
        asked.push((revision.to_string(), answered));
    }
    // A revision the server answered is one it speaks: ask for each of those too.
    let mut index = 0;
    while index < asked.len() && asked.len() < 16 {
        if let Some(answer) = asked[index].1.clone() {
            if !asked.iter().any(|(revision, _)| *revision == answer) {
                let again = negotiate(case, &sandbox, &answer)?;
                asked.push((answer, again));
            }
        }
        index += 1;
    }
    let spoken: std::collections::BTreeSet<&str> =
        asked.iter().filter_map(|(_, a)| a.as_deref()).collect();
    if spoken.is_empty() {
        case.fail(
            "result/protocolVersion",
            "no initialize named a protocolVersion",
        );
        return Ok(());
    }
    for (revision, answered) in &asked {
        if spoken.contains(revision.as_str()) && answered.as_deref() != Some(revision.as_str()) {
            case.fail(
                "result/protocolVersion",
                format!(
                    "asked for {revision}, which this server speaks (it answered {revision} to some client), it answered {}",
                    answered.as_deref().map_or("no protocolVersion".to_string(), |a| format!("{a:?}"))
                ),
            );
        }
    }
    Ok(())
}

fn structured_content_text(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80))?;
    let mut session = Session::spawn(case, &sandbox)?;
    let answered = session
        .initialize("2025-06-18")
        .and_then(|r| r.pointer("/result/protocolVersion").cloned());
    match answered.as_ref().and_then(Value::as_str) {
        Some("2025-06-18") => {}
        Some(other)
            if REVISIONS.iter().position(|r| *r == other)
                < REVISIONS.iter().position(|r| *r == "2025-06-18") =>
        {
            case.skip(format!("asked for 2025-06-18, the server negotiated {other}, a revision without structuredContent"));
            session.finish(case, &sandbox);
            return Ok(());
        }
        _ => {}
    }
    session.notify("notifications/initialized");
    let calls = [
        ("list_vms", json!({})),
        ("vm_status", json!({"vm": "work"})),
        ("forward", json!({"vm": "work"})),
        ("wait", json!({"vm": "work", "until": "stopped"})),
        ("list_images", json!({})),
        ("list_recipes", json!({})),
    ];
    let mut compared = 0;
    for (tool, arguments) in calls {
        let Some(response) =
            session.request("tools/call", json!({"name": tool, "arguments": arguments}))
        else {
            case.fail("mcp", format!("no response to the {tool} call"));
            continue;
        };
        let Some(structured) = response.pointer("/result/structuredContent") else {
            continue;
        };
        compared += 1;
        let texts: Vec<&str> = response
            .pointer("/result/content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| str_at(b, "/type") == Some("text"))
                    .filter_map(|b| str_at(b, "/text"))
                    .collect()
            })
            .unwrap_or_default();
        let agrees = texts
            .iter()
            .any(|text| serde_json::from_str::<Value>(text).ok().as_ref() == Some(structured));
        if !agrees {
            case.fail(
                format!("{tool}/result/content"),
                format!(
                    "{tool}'s structuredContent is not the JSON of any text block ({} text blocks): structuredContent {}, text {}",
                    texts.len(),
                    crate::oracle::excerpt(&structured.to_string()),
                    crate::oracle::excerpt(texts.first().copied().unwrap_or("(none)"))
                ),
            );
        }
    }
    if compared == 0 && case.findings.is_empty() {
        case.skip("no tool result carried structuredContent: nothing to compare with the text");
    }
    session.finish(case, &sandbox);
    Ok(())
}
