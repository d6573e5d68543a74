//! A real MCP client no one here wrote, the official Python SDK's stdio client
//! (tests/mcp_client/drive.py, installed by tests/mcp_client/setup.sh into target/mcp-venv),
//! drives `stoat mcp` end to end: initialize, tools/list, then every tool tools/list offers,
//! each called at least once with a successful result whose meaning drive.py checks (and the
//! SDK checks against the tool's outputSchema from 2025-06-18 on), beside the refusals:
//! access_denied, a path escape and rate_limited. It runs once with the SDK's own newest
//! revision and once pinned to each revision the server accepts (older revisions get no
//! outputSchema, as no structuredContent follows). drive.py ends by checking that the tools it
//! called successfully are exactly the tools listed, so a new tool without a call fails here.
//!
//! FAKE tier, set up here: stoat-fake's booting QEMU (and passt), its ssh running each remote
//! command on this host (`run_locally`: the guest is this host), an scp that copies here, a
//! local recipe, a real tiny alpine ISO (kernel extraction), a stopped live VM `ex` the agent
//! may exec in, an observe VM `obs`, and a one-VM project `shop` whose VM the agent creates.
//! Ignored unless asked for (`make test` includes it); asked for without the venv, it fails.

use std::path::PathBuf;

use serde_json::json;

use crate::common::{
    fake_booted_qemu, free_port, stub, Reaper, TestEnv, ALPINE_VIRT, PLANTED_PASSWORD,
};
use crate::test_runtime::write_live_vm;

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

/// An scp whose guest is this host (as the fake ssh's `run_locally` makes it): copies its
/// last-but-one operand to its last, each without its `user@host:` prefix, so a copy to the
/// guest and back round-trips real bytes.
const SCP_HERE: &str = r#"for arg; do src=$dst; dst=$arg; done
case $src in *@*:*) src=${src#*:} ;; esac
case $dst in *@*:*) dst=${dst#*:} ;; esac
exec cp -- "$src" "$dst"
"#;

/// What the recipe `hello` prints when applied.
const RECIPE_SAYS: &str = "hello from the recipe";

/// One run of drive.py against a fresh data root, asking for `revision` when given.
fn drive(revision: Option<&str>) {
    let python = venv_python();
    let mut env = TestEnv::new();
    fake_booted_qemu(&env);
    env.fake_script(&json!({"tools": {"ssh": [{"run_locally": true}]}}));
    stub(&env, "scp", SCP_HERE);

    // obs: an observe VM (stopped); ex: a live VM the agent may exec in, which boots under the
    // fake QEMU (its kernel already extracted) and has the local recipe `hello`.
    env.write_basic_vm("obs", 2401);
    let obs = env.root().join("obs").join("vm.toml");
    let toml = std::fs::read_to_string(&obs).unwrap() + "agent_access = \"observe\"\n";
    std::fs::write(obs, toml).unwrap();
    write_live_vm(
        &env,
        "ex",
        free_port(),
        "agent_access = \"exec\"\nrecipes = [\"hello\"]\n",
    );
    env.write_recipe(
        "hello",
        "schema = 3\nname = \"hello\"\nversion = \"1.0\"\ndescription = \"says hello\"\nscript = \"install.sh\"\n",
        &format!("echo {RECIPE_SAYS}\n"),
    );

    // The alpine-virt image in isos/ (create takes it by catalog id), a real tiny ISO so the
    // project's VM can have its kernel extracted when it starts.
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    env.fake_alpine_iso(&env.root().join("isos").join(ALPINE_VIRT));
    let project = env.home().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("stoat.toml"),
        "[project]\nname = \"shop\"\n\n[vm.web]\nimage = \"alpine-virt\"\nram = 256\ncpus = 1\nrecipes = [\"hello\"]\n",
    )
    .unwrap();

    // ex's export directory: a file to send, and a link out of it (refused).
    let export = env.root().join("shared").join("ex");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::write(export.join("in.txt"), "round trip \u{fc}ber stoat\n").unwrap();
    std::fs::write(env.tmp().join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(env.tmp().join("secret"), export.join("link-out")).unwrap();
    // The "guest" side of the copies (the guest is this host).
    let guest = env.tmp().join("guest");
    std::fs::create_dir_all(&guest).unwrap();

    let _stop = Reaper::watch(&env, &["ex", "shop-web"]);
    let fixture = json!({
        "observe_vm": "obs",
        "exec_vm": "ex",
        "recipe": "hello",
        "recipe_says": RECIPE_SAYS,
        "export": export,
        "send": "in.txt",
        "guest_dir": guest,
        "project_dir": project,
        "project": "shop",
        "project_vms": {"web": "shop-web"},
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/drive.py");
    let stoat = assert_cmd::cargo::cargo_bin("stoat");
    let out = env
        .command(&python)
        .arg(script)
        .arg(&stoat)
        .arg(fixture.to_string())
        .args(revision)
        .env("STOAT_MCP_RATE", "3/0.01")
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
    assert!(!stdout.contains(PLANTED_PASSWORD));
    assert!(!env.home().join("escape").exists());
    assert!(!env.root().join("escape").exists());
}
