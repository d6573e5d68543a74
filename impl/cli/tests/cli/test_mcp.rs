//! `stoat mcp` through the real binary, JSON-RPC written to its stdin: the protocol
//! (initialize, tools/list, errors that never end the session), every guard (agent_access,
//! forbidden fields, names, host-path confinement, rate limits), and `mcp doctor`/`mcp install`.
//! REAL tier (`real_exec_and_copy_tools_on_the_test_guest`): exec and the copy tools on the
//! booted test guest, ignored unless asked for (needs STOAT_REAL_GUEST).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{JsonRun, Spawned, TestEnv, ALPINE_VIRT, PLANTED_PASSWORD};

/// `stoat mcp` in the test's sandbox, with `extra` variables on top.
fn mcp_command(env: &TestEnv, extra: &[(&str, &str)]) -> Command {
    let mut cmd = env.std_cmd(&["mcp"]);
    cmd.envs(extra.iter().copied());
    cmd
}

/// Runs one MCP session: writes `lines` to stdin, closes it, and returns every stdout line
/// parsed (each must be a JSON-RPC 2.0 message). The server must exit 0 at end of input.
fn session(env: &TestEnv, extra: &[(&str, &str)], lines: &[String]) -> Vec<Value> {
    let mut server = Spawned::start(mcp_command(env, extra).stdin(Stdio::piped()));
    let stdin = server.stdin().as_mut().unwrap();
    for line in lines {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    // wait closes stdin: the end of input ends the session.
    let out = server.wait(Duration::from_secs(300));
    let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    assert!(
        out.status.success(),
        "stoat mcp exited {:?}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains(PLANTED_PASSWORD));
    stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
            assert_eq!(value["jsonrpc"], "2.0", "{line}");
            value
        })
        .collect()
}

fn initialize() -> String {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"stoat-tests","version":"1"}}})
    .to_string()
}

fn initialized() -> String {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":tool,"arguments":arguments}})
    .to_string()
}

/// A session that initializes, lists the tools, then makes `calls`; returns the answers by id
/// (1-based). Every successful answer's structuredContent must validate against its tool's
/// outputSchema from that tools/list (a real JSON Schema validator, nothing to fetch).
pub(crate) fn calls(env: &TestEnv, extra: &[(&str, &str)], calls: &[(&str, Value)]) -> Vec<Value> {
    let mut lines = vec![
        initialize(),
        initialized(),
        json!({"jsonrpc":"2.0","id":"tools","method":"tools/list"}).to_string(),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        lines.push(call(i as u64 + 1, tool, args.clone()));
    }
    let answers = session(env, extra, &lines);
    assert_eq!(answers.len(), calls.len() + 2, "{answers:#?}");
    let schemas = output_schemas(&answers[1]);
    answers[2..]
        .iter()
        .enumerate()
        .map(|(i, a)| {
            assert_eq!(a["id"], i as u64 + 1);
            let result = a["result"].clone();
            if result["isError"] == false {
                let tool = calls[i].0;
                check_output(&schemas, tool, &result["structuredContent"]);
            }
            result
        })
        .collect()
}

/// Each tool's outputSchema, compiled, from a tools/list answer.
fn output_schemas(list: &Value) -> std::collections::BTreeMap<String, jsonschema::Validator> {
    list["result"]["tools"]
        .as_array()
        .expect("tools/list answers a list")
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().unwrap().to_owned();
            let schema = &tool["outputSchema"];
            assert_eq!(
                schema["type"], "object",
                "{name}: MCP wants an object schema"
            );
            let validator = jsonschema::draft202012::options()
                .build(schema)
                .unwrap_or_else(|e| panic!("{name}: outputSchema does not compile: {e}"));
            (name, validator)
        })
        .collect()
}

fn check_output(
    schemas: &std::collections::BTreeMap<String, jsonschema::Validator>,
    tool: &str,
    content: &Value,
) {
    let errors: Vec<String> = schemas[tool]
        .iter_errors(content)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}: structuredContent breaks its outputSchema: {errors:#?}\n{content:#}"
    );
}

/// The structured content of a successful tool result.
pub(crate) fn ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result:#}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, &result["structuredContent"]);
    &result["structuredContent"]
}

/// The `{code, message, ...}` of a failed tool result: its text, never structuredContent
/// (the outputSchema describes success only).
fn error_object(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result:#}");
    assert!(result.get("structuredContent").is_none(), "{result:#}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// The error code of a failed tool result.
fn err(result: &Value) -> String {
    let error = error_object(result);
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    error["code"].as_str().unwrap().to_owned()
}

fn vm_with_access(env: &TestEnv, name: &str, port: u16, access: &str) {
    env.write_basic_vm(name, port);
    let path = env.root().join(name).join("vm.toml");
    let mut toml = std::fs::read_to_string(&path).unwrap();
    toml.push_str(&format!("agent_access = \"{access}\"\n"));
    std::fs::write(path, toml).unwrap();
}

// ---------------------------------------------------------------- protocol

#[test]
fn initialize_and_list_tools() {
    let env = TestEnv::new();
    let lines = vec![
        initialize(),
        initialized(),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string(),
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}).to_string(),
    ];
    let answers = session(&env, &[], &lines);
    assert_eq!(answers.len(), 3);
    let init = &answers[0]["result"];
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "stoat");
    assert!(init["capabilities"]["tools"].is_object());
    let tools = answers[1]["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 27);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
        for hint in ["readOnlyHint", "destructiveHint", "openWorldHint"] {
            assert!(tool["annotations"][hint].is_boolean());
        }
    }
    assert_eq!(answers[2]["result"], json!({}));
}

#[test]
fn an_older_client_gets_its_version_and_text_only_results() {
    let env = TestEnv::new();
    let lines = vec![
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2024-11-05","capabilities":{},
            "clientInfo":{"name":"old","version":"1"}}})
        .to_string(),
        call(1, "list_vms", json!({})),
    ];
    let answers = session(&env, &[], &lines);
    assert_eq!(answers[0]["result"]["protocolVersion"], "2024-11-05");
    assert!(answers[1]["result"].get("structuredContent").is_none());
    assert_eq!(answers[1]["result"]["content"][0]["text"], r#"{"vms":[]}"#);
}

#[test]
fn malformed_input_never_ends_the_session() {
    let env = TestEnv::new();
    let lines: Vec<String> = [
        "{this is not json",
        "",
        "[]",
        "\"just a string\"",
        r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vm_status","arguments":{"vm":42}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_vms","arguments":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let answers = session(&env, &[], &lines);
    let codes: Vec<Value> = answers.iter().map(|a| a["error"]["code"].clone()).collect();
    assert_eq!(
        codes,
        [
            json!(-32700),
            json!(-32600),
            json!(-32600),
            json!(-32601),
            json!(-32602),
            Value::Null,
            json!(-32602),
            Value::Null
        ],
        "{answers:#?}"
    );
    assert_eq!(answers[0]["id"], Value::Null);
    assert_eq!(err(&answers[5]["result"]), "usage");
    assert_eq!(answers[7]["result"], json!({}));
}

#[test]
fn json_mode_refuses_to_serve() {
    let env = TestEnv::new();
    let run = env.json(&["mcp"]);
    run.error("usage");
}

// ---------------------------------------------------------------- tools and guards

#[test]
fn read_only_tools_return_the_cli_dtos_and_hide_none_vms() {
    let env = TestEnv::new();
    vm_with_access(&env, "seen", 2301, "observe");
    vm_with_access(&env, "hidden", 2302, "none");
    let results = calls(
        &env,
        &[],
        &[
            ("list_vms", json!({})),
            ("vm_status", json!({"vm":"seen"})),
            ("vm_status", json!({"vm":"hidden"})),
            ("vm_status", json!({"vm":"ghost"})),
            ("vm_status", json!({"vm":"../seen"})),
            ("logs", json!({"vm":"seen","which":"console","n":5})),
            ("list_images", json!({})),
            ("project_status", json!({})),
        ],
    );
    let names: Vec<&str> = ok(&results[0])["vms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["seen"]);
    let status = ok(&results[1]);
    assert_eq!(status["vm"]["name"], "seen");
    assert_eq!(status["vm"]["agent_access"], "observe");
    assert!(status["vm"]["recipes_detail"].is_array());
    assert_eq!(err(&results[2]), "access_denied");
    assert_eq!(err(&results[3]), "not_found");
    assert_eq!(err(&results[4]), "invalid_spec");
    assert_eq!(ok(&results[5])["which"], "console");
    assert!(ok(&results[6])["images"].is_array());
    assert_eq!(
        err(&results[7]),
        "not_found",
        "no stoat.toml at or above the server's cwd"
    );
}

#[test]
fn agent_access_levels_gate_each_class() {
    let env = TestEnv::new();
    vm_with_access(&env, "obs", 2311, "observe");
    vm_with_access(&env, "man", 2312, "manage");
    vm_with_access(&env, "ex", 2313, "exec");
    let results = calls(
        &env,
        &[],
        &[
            ("exec", json!({"vm":"obs","command":["id"]})),
            ("stop", json!({"vm":"obs"})),
            ("destroy", json!({"vm":"obs"})),
            ("update", json!({"vm":"obs","cpus":2})),
            ("exec", json!({"vm":"man","command":["id"]})),
            ("copy_to", json!({"vm":"man","local":"f","remote":"/tmp/f"})),
            ("update", json!({"vm":"man","cpus":2})),
            ("exec", json!({"vm":"ex","command":["id"]})),
        ],
    );
    for (i, result) in results.iter().enumerate().take(6) {
        assert_eq!(err(result), "access_denied", "call {}", i + 1);
    }
    assert_eq!(ok(&results[6])["changed"], json!(["cpus"]));
    // exec is allowed on "ex"; it fails only because the VM is not running
    assert_eq!(err(&results[7]), "not_running");
    assert!(env.root().join("obs").join("vm.toml").exists());
}

#[test]
fn create_update_destroy_through_mcp() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    std::fs::write(
        env.root()
            .join("isos")
            .join("alpine-virt-3.24.1-x86_64.iso"),
        b"image",
    )
    .unwrap();
    let results = calls(
        &env,
        &[],
        &[
            (
                "create",
                json!({"name":"w","image":"alpine-virt","ram_mb":512,"agent_access":"manage"}),
            ),
            (
                "create",
                json!({"name":"x","image":"alpine-virt","share":"/etc"}),
            ),
            (
                "create",
                json!({"name":"x","image":"alpine-virt","console_password":"pw"}),
            ),
            ("create", json!({"name":"x","image":"/tmp/byo.qcow2"})),
            ("create", json!({"name":"../x","image":"alpine-virt"})),
            ("update", json!({"vm":"w","share":"/etc"})),
            ("update", json!({"vm":"w","agent_access":"exec"})),
            ("update", json!({"vm":"w","image":"other"})),
            ("update", json!({"vm":"w","ram_mb":1024,"recipes":[]})),
            ("forward", json!({"vm":"w","pairs":["8080:80"]})),
            ("forward", json!({"vm":"w"})),
            (
                "wait",
                json!({"vm":"w","until":"stopped","timeout_seconds":1}),
            ),
            ("destroy", json!({"vm":"w"})),
            ("list_vms", json!({})),
        ],
    );
    let vm = &ok(&results[0])["vm"];
    assert_eq!(vm["name"], "w");
    assert_eq!(vm["ram_mb"], 512);
    assert_eq!(err(&results[1]), "access_denied");
    assert_eq!(err(&results[2]), "access_denied");
    assert_eq!(err(&results[3]), "invalid_spec");
    assert_eq!(err(&results[4]), "invalid_spec");
    assert!(!env.root().join("x").exists());
    for (i, result) in results.iter().enumerate().take(8).skip(5) {
        assert_eq!(err(result), "access_denied", "call {}", i + 1);
    }
    let updated = ok(&results[8]);
    assert_eq!(updated["vm"]["ram_mb"], 1024);
    assert_eq!(updated["vm"]["agent_access"], "manage");
    assert_eq!(
        ok(&results[9]),
        &json!({"forwards":[{"host_port":8080,"guest_port":80}]})
    );
    assert_eq!(ok(&results[10])["forwards"][0]["guest_port"], 80);
    assert_eq!(ok(&results[11]), &json!({"healthy": true}));
    assert_eq!(ok(&results[12])["deleted"], true);
    assert_eq!(ok(&results[13]), &json!({"vms": []}));
}

/// Every tool that can succeed without a booted guest, called once successfully: `calls`
/// validates each answer against the tool's outputSchema. The rest need a running VM: the
/// Python SDK's run (test_mcp_client.rs) calls them on the fake tier's running VM and project,
/// and the real tier calls exec and the copies on the test guest
/// (`real_exec_and_copy_tools_on_the_test_guest`).
#[test]
fn every_tool_answers_what_its_output_schema_says() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    std::fs::write(
        env.root()
            .join("isos")
            .join("alpine-virt-3.24.1-x86_64.iso"),
        b"image",
    )
    .unwrap();
    let project = env.home().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("stoat.toml"),
        "[project]\nname = \"shop\"\n\n[vm.web]\nimage = \"debian-13\"\n",
    )
    .unwrap();
    let dir = project.display().to_string();
    let wanted = [
        (
            "create",
            json!({"name":"w","image":"alpine-virt","mode":"disk","disk":"64M"}),
        ),
        ("list_vms", json!({})),
        ("vm_status", json!({"vm":"w"})),
        ("list_images", json!({})),
        ("list_recipes", json!({})),
        ("check_recipes", json!({"recipes":["nope"],"os":"alpine"})),
        ("logs", json!({"vm":"w"})),
        ("doctor", json!({})),
        ("update", json!({"vm":"w","cpus":2})),
        ("forward", json!({"vm":"w","pairs":["8080:80"]})),
        (
            "wait",
            json!({"vm":"w","until":"stopped","timeout_seconds":1}),
        ),
        ("snapshot", json!({"vm":"w","tag":"t1"})),
        ("restore", json!({"vm":"w","tag":"t1"})),
        ("clone", json!({"source":"w","name":"w2"})),
        ("destroy", json!({"vm":"w2"})),
        ("prune", json!({})),
        ("project_status", json!({"dir": dir})),
        ("project_down", json!({"dir": dir})),
    ];
    let results = calls(&env, &[], &wanted);
    for ((tool, _), result) in wanted.iter().zip(&results) {
        assert_eq!(result["isError"], false, "{tool}: {result:#}");
    }
    let needs_a_guest = [
        "start",
        "stop",
        "apply_recipes",
        "exec",
        "copy_to",
        "copy_from",
        "project_up",
        "project_apply",
        "project_wait",
    ];
    let listed = calls(&env, &[], &[]);
    assert!(listed.is_empty());
    let covered: std::collections::BTreeSet<&str> = wanted
        .iter()
        .map(|(tool, _)| *tool)
        .chain(needs_a_guest)
        .collect();
    assert_eq!(
        covered.len(),
        27,
        "every tool is here or named as needing a guest"
    );
}

#[test]
fn rate_limits_refuse_with_a_retry_hint() {
    let env = TestEnv::new();
    let results = calls(
        &env,
        &[("STOAT_MCP_RATE", "2/0.01")],
        &[
            ("list_vms", json!({})),
            ("list_vms", json!({})),
            ("list_vms", json!({})),
            ("list_images", json!({})),
        ],
    );
    ok(&results[0]);
    ok(&results[1]);
    assert_eq!(err(&results[2]), "rate_limited");
    let refusal = error_object(&results[2]);
    let hint = refusal["retry_after_seconds"].as_u64().unwrap();
    assert!((90..=100).contains(&hint), "{hint}");
    assert!(refusal["message"]
        .as_str()
        .unwrap()
        .contains("retry in about"));
    ok(&results[3]);

    let shared = calls(
        &env,
        &[("STOAT_MCP_RATE_SHARED", "1/0.01")],
        &[("list_vms", json!({})), ("list_images", json!({}))],
    );
    ok(&shared[0]);
    assert_eq!(err(&shared[1]), "rate_limited");
}

#[test]
fn a_bad_rate_setting_is_a_usage_error() {
    let env = TestEnv::new();
    let out = mcp_command(&env, &[("STOAT_MCP_RATE", "lots")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn copy_tools_stay_in_the_vms_export() {
    let env = TestEnv::new();
    vm_with_access(&env, "ex", 2321, "exec");
    let export = env.root().join("shared").join("ex");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::write(export.join("inside.txt"), "x").unwrap();
    let outside = env.tmp().join("secret.txt");
    std::fs::write(&outside, "s").unwrap();
    std::os::unix::fs::symlink(&outside, export.join("link")).unwrap();
    std::os::unix::fs::symlink(env.tmp(), export.join("dir")).unwrap();
    std::fs::create_dir_all(env.root().join("shared").join("ex-evil")).unwrap();
    let evil = env.root().join("shared").join("ex-evil").join("f");
    let absolute_inside = export.join("inside.txt");
    let results = calls(
        &env,
        &[],
        &[
            (
                "copy_to",
                json!({"vm":"ex","local":"../ex-evil/f","remote":"/tmp/x"}),
            ),
            (
                "copy_to",
                json!({"vm":"ex","local":outside.to_str().unwrap(),"remote":"/tmp/x"}),
            ),
            (
                "copy_to",
                json!({"vm":"ex","local":"link","remote":"/tmp/x"}),
            ),
            (
                "copy_from",
                json!({"vm":"ex","remote":"/etc/passwd","local":"dir/stolen"}),
            ),
            (
                "copy_from",
                json!({"vm":"ex","remote":"/etc/passwd","local":evil.to_str().unwrap()}),
            ),
            (
                "copy_from",
                json!({"vm":"ex","remote":"/etc/passwd","local":"~/x"}),
            ),
            // inside the export: the guard passes, the VM is simply not running
            (
                "copy_to",
                json!({"vm":"ex","local":"inside.txt","remote":"/tmp/x"}),
            ),
            (
                "copy_to",
                json!({"vm":"ex","local":absolute_inside.to_str().unwrap(),"remote":"/tmp/x"}),
            ),
            (
                "copy_from",
                json!({"vm":"ex","remote":"/etc/hostname","local":"new.txt"}),
            ),
        ],
    );
    for (i, result) in results.iter().enumerate().take(6) {
        assert_eq!(err(result), "access_denied", "call {}", i + 1);
    }
    for (i, result) in results.iter().enumerate().take(9).skip(6) {
        assert_eq!(err(result), "not_running", "call {}", i + 1);
    }
    assert!(!env.tmp().join("stolen").exists());
    assert!(!evil.exists());
}

// ---------------------------------------------------------------- mcp doctor / install

fn cursor_config(env: &TestEnv) -> PathBuf {
    env.home().join(".cursor").join("mcp.json")
}

fn stoat_binary() -> PathBuf {
    std::fs::canonicalize(assert_cmd::cargo::cargo_bin("stoat")).unwrap()
}

#[test]
fn mcp_install_keeps_other_entries_and_doctor_sees_it() {
    let env = TestEnv::new();
    let config = cursor_config(&env);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        r#"{"theme":"dark","mcpServers":{"other":{"command":"/usr/bin/other","args":["x"]}}}"#,
    )
    .unwrap();
    let run = env.json(&["mcp", "install", "cursor"]);
    let data = run.data();
    assert_eq!(data["client"], "cursor");
    assert_eq!(data["path"], config.to_str().unwrap());
    let entry: Value = serde_json::from_str(data["json"].as_str().unwrap()).unwrap();
    assert_eq!(entry["args"], json!(["mcp"]));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(written["theme"], "dark");
    assert_eq!(written["mcpServers"]["other"]["command"], "/usr/bin/other");
    assert_eq!(written["mcpServers"]["stoat"], entry);

    let doctor = env.json(&["mcp", "doctor"]);
    let data = doctor.data();
    assert_eq!(data["contract"], 3);
    assert_eq!(data["transport"], "stdio");
    assert_eq!(Path::new(data["binary"].as_str().unwrap()), stoat_binary());
    let clients = data["clients"].as_array().unwrap();
    let cursor = clients.iter().find(|c| c["client"] == "cursor").unwrap();
    assert_eq!(cursor["installed"], true);
    assert_eq!(cursor["current"], true);
    let desktop = clients
        .iter()
        .find(|c| c["client"] == "claude-desktop")
        .unwrap();
    assert_eq!(desktop["installed"], false);
    assert_eq!(desktop["current"], false);
    assert_eq!(desktop["command"], "");
    for name in ["claude-code", "vscode", "windsurf"] {
        assert!(clients.iter().any(|c| c["client"] == name), "{name}");
    }
}

#[test]
fn mcp_doctor_reports_a_stale_entry() {
    let env = TestEnv::new();
    let config = env.home().join(".claude.json");
    std::fs::write(
        &config,
        r#"{"mcpServers":{"stoat":{"command":"/old/place/stoat","args":["mcp"]}}}"#,
    )
    .unwrap();
    let data = env.json(&["mcp", "doctor"]).data().clone();
    let code = data["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == "claude-code")
        .unwrap()
        .clone();
    assert_eq!(code["installed"], true);
    assert_eq!(code["current"], false);
    assert_eq!(code["command"], "/old/place/stoat");
    // install makes it current; vscode gets its typed entry under "servers"
    env.json(&["mcp", "install", "claude-code"]);
    env.json(&["mcp", "install", "vscode"]);
    let vscode: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home().join(".config/Code/User/mcp.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(vscode["servers"]["stoat"]["type"], "stdio");
    let data = env.json(&["mcp", "doctor"]).data().clone();
    assert!(data["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["client"] == "claude-code" || c["client"] == "vscode")
        .all(|c| c["current"] == true));
}

/// The `current` flag of one client in `mcp doctor --json`, run with `extra` set.
fn doctor_current(env: &TestEnv, client: &str, extra: &[(&str, &str)]) -> Value {
    let mut cmd = env.cmd(&["mcp", "doctor", "--json"]);
    for (key, value) in extra {
        cmd.env(key, value);
    }
    let run = JsonRun::check(cmd.output().unwrap());
    run.data()["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == client)
        .unwrap()["current"]
        .clone()
}

#[test]
fn mcp_install_keeps_jsonc_comments_and_records_the_environment() {
    let env = TestEnv::new();
    let config = env.home().join(".config/Code/User/mcp.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = "// VS Code MCP servers\n{\n  /* the ones I use */\n  \"servers\": {\n    \"other\": {\"type\": \"stdio\", \"command\": \"/usr/bin/other\"}, // keep\n  },\n  \"inputs\": [],\n}\n";
    std::fs::write(&config, before).unwrap();
    let run = env.json(&["mcp", "install", "vscode"]);
    let entry: Value = serde_json::from_str(run.data()["json"].as_str().unwrap()).unwrap();
    assert_eq!(entry["env"]["STOAT_HOME"], env.root().to_str().unwrap());
    assert_eq!(entry["env"]["STOAT_ACCEL"], "tcg");
    assert!(
        entry["env"].get("HOME").is_none(),
        "only stoat's settings: {entry}"
    );
    let after = std::fs::read_to_string(&config).unwrap();
    for kept in [
        "// VS Code MCP servers\n",
        "/* the ones I use */",
        "\"command\": \"/usr/bin/other\"}, // keep\n",
        "\"inputs\": [],\n}",
    ] {
        assert!(after.contains(kept), "lost {kept:?}:\n{after}");
    }
    assert!(after.contains("\"STOAT_HOME\""), "{after}");
    assert_eq!(doctor_current(&env, "vscode", &[]), true, "{after}");

    // Same command, other settings: the client would start a different stoat.
    let elsewhere = env.tmp().join("other-root");
    std::fs::create_dir_all(&elsewhere).unwrap();
    assert_eq!(
        doctor_current(
            &env,
            "vscode",
            &[("STOAT_HOME", elsewhere.to_str().unwrap())]
        ),
        false
    );
    assert_eq!(
        doctor_current(&env, "vscode", &[("STOAT_ACCEL", "kvm")]),
        false
    );
    assert_eq!(
        doctor_current(&env, "vscode", &[("STOAT_MCP_RATE", "5/1")]),
        false,
        "a setting the entry does not record"
    );

    // The right command without the settings is not current either; install refreshes it.
    let bare = format!(
        "{{\"servers\": {{\"stoat\": {{\"type\": \"stdio\", \"command\": {:?}, \"args\": [\"mcp\"]}}}}}}",
        stoat_binary().display().to_string()
    );
    std::fs::write(&config, bare).unwrap();
    assert_eq!(doctor_current(&env, "vscode", &[]), false);
    env.json(&["mcp", "install", "vscode"]);
    assert_eq!(doctor_current(&env, "vscode", &[]), true);
}

#[test]
fn mcp_install_leaves_an_invalid_config_untouched() {
    let env = TestEnv::new();
    let config = cursor_config(&env);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let broken = "{\"mcpServers\": {\"other\": } // hand-edited\n";
    std::fs::write(&config, broken).unwrap();
    env.json(&["mcp", "install", "cursor"])
        .error("invalid_spec");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), broken);
    env.json(&["mcp", "install", "emacs"]).error("usage");
}

#[test]
fn mcp_install_edits_a_symlinked_config_at_its_target() {
    let env = TestEnv::new();
    let dotfiles = env.tmp().join("dotfiles-mcp.json");
    std::fs::write(&dotfiles, r#"{"mcpServers":{}}"#).unwrap();
    let config = cursor_config(&env);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&dotfiles, &config).unwrap();
    env.json(&["mcp", "install", "cursor"]);
    assert!(config.symlink_metadata().unwrap().file_type().is_symlink());
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&dotfiles).unwrap()).unwrap();
    assert!(written["mcpServers"]["stoat"].is_object());
}

// ---------------------------------------------------------------- REAL tier

/// MCP on the test guest: exec and the copy tools through `stoat mcp` on a running VM
/// with agent_access exec, then the same VM at observe is refused exec and copies.
#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_exec_and_copy_tools_on_the_test_guest() {
    use crate::common::{real_guest, timed, RealGuard};
    let guest = real_guest();
    let env = TestEnv::new();
    let image = guest.image.display().to_string();
    env.json(&[
        "create",
        "ex",
        "--image",
        &image,
        "--ram",
        "256",
        "--cpus",
        "1",
        "--disk",
        "256M",
        "--agent-access",
        "exec",
    ])
    .data();
    let _guard = RealGuard(env.root().join("ex"));
    timed("up", || env.json(&["up", "ex"]).data().clone());
    timed("wait reachable", || {
        env.json(&["wait", "ex", "--until", "reachable", "--timeout", "120s"])
            .data()
            .clone()
    });
    let export = env.root().join("shared").join("ex");
    let payload = b"from the host\x00\xff\n";
    std::fs::write(export.join("in.bin"), payload).unwrap();

    let results = timed("mcp exec + copies", || {
        calls(
            &env,
            &[],
            &[
                (
                    "exec",
                    json!({"vm":"ex","command":["sh","-c","echo hi $(id -un); echo oops >&2; exit 3"]}),
                ),
                (
                    "copy_to",
                    json!({"vm":"ex","local":"in.bin","remote":"/tmp/in.bin"}),
                ),
                (
                    "exec",
                    json!({"vm":"ex","command":["wc","-c","/tmp/in.bin"]}),
                ),
                (
                    "copy_from",
                    json!({"vm":"ex","remote":"/tmp/in.bin","local":"back.bin"}),
                ),
                (
                    "copy_from",
                    json!({"vm":"ex","remote":"/etc/hostname","local":"../escape"}),
                ),
            ],
        )
    });
    let exec = ok(&results[0]);
    assert_eq!(exec["vm"], "ex");
    assert_eq!(exec["exit_code"], 3);
    assert_eq!(exec["stdout"], "hi stoat\n");
    assert_eq!(exec["stderr"], "oops\n");
    let local_in = export.join("in.bin").display().to_string();
    assert_eq!(
        ok(&results[1]),
        &json!({"vm":"ex","local":local_in,"remote":"/tmp/in.bin","to_remote":true})
    );
    assert_eq!(
        ok(&results[2])["stdout"],
        format!("{} /tmp/in.bin\n", payload.len())
    );
    let local_back = export.join("back.bin");
    assert_eq!(
        ok(&results[3]),
        &json!({"vm":"ex","local":local_back.display().to_string(),"remote":"/tmp/in.bin","to_remote":false})
    );
    assert_eq!(std::fs::read(&local_back).unwrap(), payload);
    assert_eq!(err(&results[4]), "access_denied");
    assert!(!env.root().join("shared").join("escape").exists());

    // The same running VM at observe: reads still work, exec and copies are refused.
    env.json(&["update", "ex", "--agent-access", "observe"])
        .data();
    let results = calls(
        &env,
        &[],
        &[
            ("vm_status", json!({"vm":"ex"})),
            ("exec", json!({"vm":"ex","command":["true"]})),
            (
                "copy_to",
                json!({"vm":"ex","local":"in.bin","remote":"/tmp/again.bin"}),
            ),
            (
                "copy_from",
                json!({"vm":"ex","remote":"/tmp/in.bin","local":"again.bin"}),
            ),
        ],
    );
    assert_eq!(ok(&results[0])["vm"]["state"], "running");
    for (i, result) in results.iter().enumerate().skip(1) {
        assert_eq!(err(result), "access_denied", "call {}", i + 1);
    }
    assert!(!export.join("again.bin").exists());
    let check = env.json_raw(&["--json", "exec", "ex", "ls", "/tmp/again.bin"]);
    assert_ne!(check.data()["exit_code"], 0, "nothing reached the guest");
    timed("down", || env.json(&["down", "ex"]).data().clone());
}

// ---------------------------------------------------------------- project tools

#[test]
fn project_tools_take_a_dir_and_respect_each_vms_access() {
    let env = TestEnv::new();
    let project = env.home().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("stoat.toml"),
        "[project]\nname = \"shop\"\n\n[vm.web]\nimage = \"debian-13\"\n\n[vm.db]\nimage = \"debian-13\"\n",
    )
    .unwrap();
    let dir = project.display().to_string();
    let results = calls(
        &env,
        &[],
        &[
            ("project_status", json!({"dir": dir})),
            ("project_status", json!({"dir": "relative/shop"})),
            (
                "project_status",
                json!({"dir": env.tmp().display().to_string()}),
            ),
        ],
    );
    let status = ok(&results[0]);
    assert_eq!(status["project"], "shop");
    let keys: Vec<&str> = status["vms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["web", "db"]);
    assert!(
        status["vms"][0].get("state").is_none(),
        "not created yet: {status}"
    );
    assert_eq!(err(&results[1]), "usage");
    assert_eq!(err(&results[2]), "not_found", "no stoat.toml there");

    // A declared VM the agent may only observe: status works, the fan-out is refused
    // before anything runs, and the VM is untouched.
    vm_with_access(&env, "shop-db", 2231, "observe");
    let before = env.vm_toml("shop-db");
    let results = calls(
        &env,
        &[],
        &[
            ("project_status", json!({"dir": dir})),
            ("project_down", json!({"dir": dir})),
            ("project_up", json!({"dir": dir})),
        ],
    );
    ok(&results[0]);
    assert_eq!(err(&results[1]), "access_denied");
    assert_eq!(err(&results[2]), "access_denied");
    assert_eq!(env.vm_toml("shop-db"), before);
    assert!(
        !env.root().join("shop-web").exists(),
        "project_up created nothing"
    );
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
/// A guest's console holding one 40 MB line: MCP `logs` answers it cut, in a response of
/// bounded size, and the session goes on (a `ping` after it and a second `logs` are answered).
pub(crate) fn mcp_logs_of_a_40_mb_line_answer_cut_and_the_session_goes_on() -> TestEnv {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2255);
    let mut text = b"before\n".to_vec();
    text.extend(std::iter::repeat_n(b'y', 40 << 20));
    text.extend_from_slice(b"\nafter\n");
    std::fs::write(env.root().join("w/console.log"), &text).unwrap();
    let lines = [
        initialize(),
        initialized(),
        call(1, "logs", json!({"vm": "w", "which": "console"})),
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}).to_string(),
        call(3, "logs", json!({"vm": "w", "which": "console", "n": 1})),
    ];
    let answers = session(&env, &[], &lines);
    assert_eq!(answers.len(), 4, "every request is answered");
    let logs = &answers[1];
    assert_eq!(logs["id"], 1);
    let size = logs.to_string().len();
    assert!(size < 1 << 20, "a {size}-byte answer for a 40 MB line");
    let lines = ok(&logs["result"])["lines"].as_array().unwrap().clone();
    let long = lines
        .iter()
        .filter_map(Value::as_str)
        .find(|line| line.starts_with("yyyy"))
        .expect("the long line is there");
    assert!(
        long.ends_with(&format!(
            " [stoat: line cut, {} more bytes]",
            (40 << 20) - 65536
        )),
        "{}",
        &long[long.len() - 60..]
    );
    assert_eq!(lines.last().and_then(Value::as_str), Some("after"));
    assert_eq!(answers[2]["id"], 2);
    assert_eq!(answers[2]["result"], json!({}));
    assert_eq!(ok(&answers[3]["result"])["lines"], json!(["after"]));
    env
}

pub(crate) fn an_over_long_name_is_echoed_back_only_cut() -> TestEnv {
    let env = TestEnv::new();
    let name = "a".repeat(15 << 20);
    let lines = [
        initialize(),
        initialized(),
        call(1, "stop", json!({"vm": name})),
        call(2, "create", json!({"name": name, "image": "debian-13"})),
        call(3, &name, json!({})),
        json!({"jsonrpc":"2.0","id":4,"method":name}).to_string(),
    ];
    let answers = session(&env, &[], &lines);
    assert_eq!(answers.len(), 5, "{answers:#?}");
    for answer in &answers[1..] {
        let text = answer.to_string();
        assert!(text.len() < 2048, "{} bytes: {}", text.len(), &text[..200]);
        assert!(text.contains("aaaa"), "the name is still echoed: {text}");
        assert!(text.contains(" more bytes]"), "{text}");
    }
    env
}

#[test]
fn the_clone_tool_says_a_clone_is_an_independent_copy() {
    let env = TestEnv::new();
    let answers = session(
        &env,
        &[],
        &[
            initialize(),
            initialized(),
            json!({"jsonrpc":"2.0","id":"tools","method":"tools/list"}).to_string(),
        ],
    );
    let clone = answers[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "clone")
        .expect("a clone tool")
        .clone();
    let description = clone["description"].as_str().unwrap();
    assert!(!description.contains("overlay"), "{description}");
    assert!(description.contains("independent copy"), "{description}");
}

/// Core's hints of what to set or run next, in each front end's words: the CLI names its
/// flags and command lines, MCP the tool arguments and tool calls, never a `--` flag.
#[test]
fn hints_name_tool_arguments_and_tools_never_cli_flags() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    vm_with_access(&env, "obs", 2321, "observe");
    let results = calls(
        &env,
        &[],
        &[
            (
                "create",
                json!({"name":"small","image":"alpine-virt","ram_mb":100}),
            ),
            (
                "create",
                json!({"name":"many","image":"alpine-virt","cpus":1000}),
            ),
            ("stop", json!({"vm":"obs"})),
        ],
    );
    let messages: Vec<String> = results
        .iter()
        .map(|result| {
            let error = error_object(result);
            error["message"].as_str().unwrap().to_owned()
        })
        .collect();
    for message in &messages {
        assert!(!message.contains("--"), "{message}");
    }
    assert_eq!(
        messages[0],
        "invalid spec: ram 100 MB is below the minimum of 256 MB (e.g. ram_mb: 2048)"
    );
    assert_eq!(
        messages[1],
        "invalid spec: cpus 1000: QEMU's x86 machine takes at most 255 (e.g. cpus: 4)"
    );
    assert_eq!(
        messages[2],
        "access denied: stop needs agent_access manage on obs, which allows observe; a person can \
         raise it with the stoat CLI's update operation on obs with agent access manage (no tool \
         does it)"
    );
    // The same mistake through the CLI keeps its flags, in prose and under --json.
    let args = ["create", "small", "--image", "alpine-virt", "--ram", "100"];
    let cli =
        "invalid spec: ram 100 MB is below the minimum of 256 MB (e.g. --ram 2048 or --ram 2G)";
    assert_eq!(env.json(&args).error("invalid_spec"), cli);
    let human = env.run(&args);
    assert_eq!(
        String::from_utf8_lossy(&human.stderr),
        format!("stoat: create: {cli}\n")
    );
}
