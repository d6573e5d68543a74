//! A real MCP client no one here wrote, the official Python SDK's stdio client
//! (tests/mcp_client/drive.py, installed by tests/mcp_client/setup.sh into target/mcp-venv),
//! drives `stoat mcp` end to end: initialize, tools/list, read-only and mutating calls,
//! access_denied, a path escape and rate_limited, once with the SDK's own newest revision and
//! once pinned to each revision the server accepts (every call succeeds: no outputSchema is
//! offered where no structuredContent follows). Ignored unless asked for (`make test`
//! includes it); asked for without the venv, it fails.

use std::path::PathBuf;
use std::process::Command;

use crate::common::TestEnv;

/// The venv's python; the test is `#[ignore]`d, so asked for without the venv it fails.
fn venv_python() -> PathBuf {
    let venv = match std::env::var_os("STOAT_MCP_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-venv"),
    };
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "no {}: run `make mcp-client` (impl/cli/tests/mcp_client/setup.sh)",
        python.display()
    );
    python
}

/// The protocol revisions `stoat mcp` accepts, oldest first.
const REVISIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

#[test]
#[ignore = "needs the MCP SDK venv (make mcp-client)"]
fn the_python_mcp_sdk_drives_stoat_mcp() {
    drive(None);
}

#[test]
#[ignore = "needs the MCP SDK venv (make mcp-client)"]
fn the_python_mcp_sdk_pinned_to_each_accepted_revision_calls_every_tool() {
    for revision in REVISIONS {
        drive(Some(revision));
    }
}

/// One run of drive.py against a fresh data root, asking for `revision` when given.
fn drive(revision: Option<&str>) {
    let python = venv_python();
    let env = TestEnv::new();
    for (name, port, access) in [("obs", 2401, "observe"), ("ex", 2402, "exec")] {
        env.write_basic_vm(name, port);
        let path = env.root().join(name).join("vm.toml");
        let mut toml = std::fs::read_to_string(&path).unwrap();
        toml.push_str(&format!("agent_access = \"{access}\"\n"));
        std::fs::write(path, toml).unwrap();
    }
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    std::fs::write(isos.join("alpine-virt-3.24.1-x86_64.iso"), b"image").unwrap();
    let export = env.root().join("shared").join("ex");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::write(env.tmp().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(env.tmp().join("secret"), export.join("link-out")).unwrap();

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/drive.py");
    let stoat = assert_cmd::cargo::cargo_bin("stoat");
    let out = Command::new(python)
        .arg(script)
        .arg(&stoat)
        .args(revision)
        .env_clear()
        .env("HOME", env.home())
        .env("STOAT_HOME", env.root())
        .env("PATH", format!("{}:/usr/bin:/bin", env.bin().display()))
        .env("STOAT_ACCEL", "tcg")
        .env("STOAT_GRAPHICAL", "0")
        .env("TMPDIR", env.tmp())
        .env("LANG", "C.UTF-8")
        .env("STOAT_MCP_RATE", "3/0.01")
        .current_dir(env.home())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the MCP client failed ({revision:?}):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all MCP client checks passed"));
    assert!(!env.home().join("escape").exists());
}
