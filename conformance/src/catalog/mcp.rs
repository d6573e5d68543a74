//! Owns the `stoat mcp` checks: the suite itself speaks JSON-RPC over the server's stdio
//! (initialize, tools/list, a tools/call per tool class), and judges what the contract says
//! of MCP: the tools it names exist, `wait` answers `healthy`, `forward` a ForwardList,
//! `access_denied` follows agent_access level by level, `rate_limited` when a bucket is
//! exhausted, and no result carries the console password in any decoded form.

use std::time::Duration;

use serde_json::{json, Value};

use super::helpers::{expect_eq, str_at};
use super::live::{Next, Watched};
use super::{scenario, v3_only, CheckDef, Tier};
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::Case;
use crate::sandbox::{Sandbox, VmFixture};

const NO_MCP: &str = "contract 2 has no `stoat mcp`: the MCP server was a separate process";

pub(super) const CHECKS: &[CheckDef] = &[
    v3_only(scenario("MCP.initialize", Must, Tier::Pure, "json-v3#versioning", "moves the MCP server from a separate Python process into stoat mcp in this binary.",
        "`stoat mcp` answers JSON-RPC initialize over stdio with protocolVersion, capabilities.tools and serverInfo", &["mcp"], initialize), NO_MCP),
    v3_only(scenario("MCP.tools-list", Must, Tier::Pure, "json-v3#versioning", "five MCP tools (project_status, project_up, project_down, project_apply, project_wait) alongside start, stop, apply_recipes and wait",
        "tools/list names every tool the contract names (start, stop, apply_recipes, wait, forward, copy_to, copy_from, the five project tools), each with an object inputSchema", &["mcp"], tools_list), NO_MCP),
    v3_only(scenario("MCP.call-per-class", Must, Tier::Pure, "json-v3#consumer-contract", "MCP wait returns healthy",
        "a tools/call per class: list_vms and vm_status (read-only), wait answering healthy and forward a ForwardList (mutating), destroy (destructive: the VM is gone), exec on a stopped VM (execution: not_running); no result carries the console password", &["mcp", "leaks"], call_per_class), NO_MCP),
    v3_only(scenario("MCP.access-denied", Must, Tier::Pure, "json-v3#error-codes", "access_denied MCP guest access was refused because the VM's agent_access level is too low",
        "per agent_access level: none refuses vm_status, observe allows vm_status but refuses stop and exec, manage refuses exec, each with access_denied", &["mcp", "access"], access_denied), NO_MCP),
    v3_only(scenario("MCP.rate-limited", Should, Tier::Pure, "json-v3#error-codes", "rate_limited MCP refused a tool call because its per-tool or shared rate bucket was exhausted",
        "calling one tool in a tight loop (up to 200 calls) is eventually refused with rate_limited", &["mcp"], rate_limited), NO_MCP),
    v3_only(scenario("MCP.doctor", Must, Tier::Pure, "json-v3#per-command-data", "mcp doctor {\"contract\":3,\"version\":\"1.2.3\",\"transport\":\"stdio\",\"binary\":\"/home/u/.local/bin/stoat\",\"clients\":[MCPClient,...]}",
        "`mcp doctor` answers the contract and version `version` answers, transport stdio, a binary, and MCPClient rows {client, path, installed: bool, command, current: bool}", &["mcp"], mcp_doctor), NO_MCP),
    v3_only(scenario("MCP.install", Must, Tier::Pure, "json-v3#per-command-data", "mcp install {\"client\":\"cursor\",\"path\":\"/home/u/.cursor/mcp.json\",\"json\":\"{...}\"}",
        "`mcp install cursor` (the contract's example client; SKIP when refused as usage) answers {client: cursor, path: absolute, json: a JSON object}, the file at path exists, and a later `mcp doctor` lists cursor installed at that path (writing that file is the command's job, so the sandbox rule allows it)", &["mcp", "state"], mcp_install), NO_MCP),
    v3_only(scenario("MCP.install-current", Should, Tier::Pure, "json-v3#types", "MCPClient.current is false when the client's entry names a different binary than the running one, which is the stale entry mcp doctor reports.",
        "right after `mcp install cursor` by the same binary, `mcp doctor`'s cursor row is current: true (SKIP when install is refused as usage)", &["mcp", "state"], mcp_install_current), NO_MCP),
];

/// One `stoat mcp` session.
struct Session {
    watched: Watched,
    next_id: u64,
    /// Every response line, for the leak search.
    seen: Vec<String>,
}

impl Session {
    fn start(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<Self>, HarnessError> {
        let watched = Watched::spawn(case, sandbox, &["mcp"], true)?;
        let mut session = Session {
            watched,
            next_id: 1,
            seen: Vec::new(),
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "stoat-conformance", "version": env!("CARGO_PKG_VERSION")}}),
        );
        match init {
            Some(response) if response.get("result").is_some() => {
                session.notify("notifications/initialized");
                Ok(Some(session))
            }
            other => {
                case.fail(
                    "mcp",
                    format!("`stoat mcp` did not answer initialize: {other:?}"),
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
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.watched.send_line(&line.to_string()) {
            return None;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            match self.watched.next(Duration::from_millis(500)) {
                Next::Line(text) => {
                    self.seen.push(text.clone());
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    if value.get("id") == Some(&json!(id)) {
                        return Some(value);
                    }
                }
                Next::Eof => return None,
                Next::Timeout => {}
            }
        }
        None
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

    fn finish(mut self) -> Vec<String> {
        self.watched.close_stdin();
        std::mem::take(&mut self.seen)
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
    let watched = Watched::spawn(case, &sandbox, &["mcp"], true)?;
    let mut session = Session {
        watched,
        next_id: 1,
        seen: Vec::new(),
    };
    let response = session.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "stoat-conformance", "version": "1"}}),
    );
    let Some(result) = response.as_ref().and_then(|r| r.get("result")).cloned() else {
        case.fail("mcp", format!("no initialize result: {response:?}"));
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
    session.finish();
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
    session.finish();
    Ok(())
}

fn leak_search(case: &mut Case<'_>, sandbox: &Sandbox, lines: &[String]) {
    for line in lines {
        if let Some(form) = crate::oracle::secret_form(line, &sandbox.console_password) {
            case.fail(
                "mcp",
                format!("an MCP response carries the console password ({form})"),
            );
        }
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            let mut texts = Vec::new();
            collect_strings(&value, &mut texts);
            for text in texts {
                if let Some(form) = crate::oracle::secret_form(&text, &sandbox.console_password) {
                    case.fail(
                        "mcp",
                        format!("an MCP result string carries the console password ({form})"),
                    );
                }
            }
        }
    }
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            out.push(text.clone());
            // Text content holding JSON is decoded once more, as a client would.
            if let Ok(inner) = serde_json::from_str::<Value>(text) {
                if !inner.is_string() {
                    collect_strings(&inner, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            collect_strings(v, out)
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
    let seen = session.finish();
    leak_search(case, &sandbox, &seen);
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
    let seen = session.finish();
    leak_search(case, &sandbox, &seen);
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
    session.finish();
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
