//! The human output of the commands whose text no other test pins, through the real binary
//! in the fake tier (planted VMs, a planted image, real qemu-img for cold snapshots; nothing
//! boots), as insta snapshots under `snapshots/`. Paths of the sandbox, ports and times are
//! masked so a snapshot says what a person reads and nothing of this machine. Each snapshot
//! was read when it was recorded: a change of text is a review, not a formality
//! (`INSTA_UPDATE=always` rewrites them). Not pinned here: text that is this host's (doctor:
//! test_ux pins it on planted hosts), generated text (completions, man), the remote-recipe
//! verbs (test_remote, beside the git remotes they need) and what needs a booted guest to
//! succeed (up, exec, ssh, cp, screenshot: their refusals are here).

use crate::common::{TestEnv, ALPINE_VIRT};

/// stdout and stderr of a human run, with the sandbox's paths masked; asserts its exit.
pub(crate) fn human(env: &TestEnv, args: &[&str], success: bool) -> String {
    let out = env.run(args);
    assert_eq!(
        out.status.success(),
        success,
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr);
    }
    mask(env, &text)
}

pub(crate) fn mask(env: &TestEnv, text: &str) -> String {
    let binary = std::fs::canonicalize(assert_cmd::cargo::cargo_bin("stoat")).unwrap();
    let text = text
        .replace(&binary.display().to_string(), "[STOAT]")
        .replace(&env.root().display().to_string(), "[ROOT]")
        .replace(&env.home().display().to_string(), "[HOME]")
        .replace(&env.tmp().display().to_string(), "[TMP]");
    let version = regex::Regex::new(r"stoat \d+\.\d+\.\d+").unwrap();
    version.replace_all(&text, "stoat [VERSION]").into_owned()
}

/// A sandbox with one stopped VM `w` (port 2250) and the alpine-virt image in isos/.
fn with_a_vm() -> TestEnv {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2250);
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    std::fs::write(isos.join("alpine-virt-3.24.1-x86_64.iso"), b"image").unwrap();
    env
}

#[test]
fn ls_and_get() {
    let env = TestEnv::new();
    insta::assert_snapshot!("ls_empty", human(&env, &["ls"], true));
    let env = with_a_vm();
    insta::assert_snapshot!("ls_one", human(&env, &["ls"], true));
}

/// Masks the ssh port a new VM gets (another process on this host may hold the first free one).
fn mask_ssh_port(text: &str) -> String {
    let port = regex::Regex::new(r"ssh port(:?) \d+").unwrap();
    port.replace_all(text, "ssh port$1 [PORT]").into_owned()
}

#[test]
fn images_create_update_and_get() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    insta::assert_snapshot!("images", human(&env, &["images"], true));
    let created = human(&env, &["create", "w", "--image", "alpine-virt"], true);
    insta::assert_snapshot!("create", mask_ssh_port(&created));
    insta::assert_snapshot!(
        "update",
        human(&env, &["update", "w", "--ram", "1024", "--cpus", "2"], true)
    );
    // -q: the display lines are the host's (which viewer is installed), pinned elsewhere.
    let got = human(&env, &["-q", "get", "w"], true);
    insta::assert_snapshot!("get_stopped", mask_ssh_port(&got));
}

#[test]
fn cold_snapshots_of_a_disk_vm() {
    let env = TestEnv::new();
    crate::common::create_disk(&env, "d");
    insta::assert_snapshot!("snapshot_none", human(&env, &["snapshot", "d"], true));
    insta::assert_snapshot!(
        "snapshot_save",
        human(&env, &["snapshot", "d", "clean"], true)
    );
    // The list's size and date columns are qemu-img's and the clock's.
    let listed = human(&env, &["snapshot", "d"], true);
    let row = regex::Regex::new(r"(?m)^clean .*$").unwrap();
    insta::assert_snapshot!(
        "snapshot_list",
        row.replace_all(&listed, "clean [SIZE AND DATE]")
    );
    insta::assert_snapshot!(
        "snapshot_restore",
        human(&env, &["snapshot", "d", "clean", "--restore"], true)
    );
    insta::assert_snapshot!(
        "snapshot_delete",
        human(&env, &["snapshot", "d", "clean", "--delete"], true)
    );
}

#[test]
fn forward_show_and_set() {
    let env = with_a_vm();
    insta::assert_snapshot!("forward_none", human(&env, &["forward", "w"], true));
    insta::assert_snapshot!(
        "forward_set",
        human(&env, &["forward", "w", "8080:80"], true)
    );
    insta::assert_snapshot!("forward_show", human(&env, &["forward", "w"], true));
}

#[test]
fn version_and_ssh_command() {
    let env = with_a_vm();
    insta::assert_snapshot!("version", human(&env, &["version"], true));
    insta::assert_snapshot!("ssh_command", human(&env, &["ssh-command", "w"], true));
}

#[test]
fn recipes_and_guests() {
    let env = TestEnv::new();
    insta::assert_snapshot!(
        "recipes_alpine",
        human(&env, &["recipes", "--os", "alpine"], true)
    );
    insta::assert_snapshot!(
        "check_recipes_applicable",
        human(&env, &["check-recipes", "docker", "--os", "alpine"], true)
    );
    // Human mode exits 1 when a recipe does not apply (docs/decisions/recipes.md).
    insta::assert_snapshot!(
        "check_recipes_not",
        human(
            &env,
            &["check-recipes", "docker,nope", "--os", "alpine"],
            false
        )
    );
    insta::assert_snapshot!("guest_ls", human(&env, &["guest", "ls"], true));
    insta::assert_snapshot!(
        "guest_show",
        human(&env, &["guest", "show", "alpine"], true)
    );
}

#[test]
fn project_init_and_status() {
    let env = TestEnv::new();
    insta::assert_snapshot!("init", human(&env, &["init"], true));
    insta::assert_snapshot!("status", human(&env, &["status"], true));
}

#[test]
fn prune_dry_run() {
    let env = with_a_vm();
    insta::assert_snapshot!("prune_dry_run", human(&env, &["prune"], true));
}

#[test]
fn mcp_doctor_and_install() {
    let env = TestEnv::new();
    insta::assert_snapshot!("mcp_doctor_none", human(&env, &["mcp", "doctor"], true));
    insta::assert_snapshot!(
        "mcp_install",
        human(&env, &["mcp", "install", "cursor"], true)
    );
    insta::assert_snapshot!("mcp_doctor_cursor", human(&env, &["mcp", "doctor"], true));
}

#[test]
fn errors_in_human_mode() {
    let env = with_a_vm();
    insta::assert_snapshot!("get_ghost", human(&env, &["get", "ghost"], false));
    insta::assert_snapshot!(
        "exec_stopped",
        human(&env, &["exec", "w", "--", "true"], false)
    );
    insta::assert_snapshot!("rm_ghost", human(&env, &["rm", "ghost", "--yes"], false));
}

/// Masks what another process on this host decides: the port a new VM gets, and durations.
fn mask_ports_and_times(text: &str) -> String {
    let port = regex::Regex::new(r"port \d+").unwrap();
    let after = regex::Regex::new(r"after \d+\.\ds").unwrap();
    after
        .replace_all(&port.replace_all(text, "port [PORT]"), "after [SECS]")
        .into_owned()
}

#[test]
fn clone_rm_and_wait() {
    let env = TestEnv::new();
    crate::common::create_live(&env, "w");
    let cloned = human(&env, &["clone", "w", "w2"], true);
    insta::assert_snapshot!("clone", mask_ports_and_times(&cloned));
    insta::assert_snapshot!("rm", human(&env, &["rm", "w2", "--yes"], true));
    let waited = human(&env, &["wait", "w", "--until", "stopped"], true);
    insta::assert_snapshot!("wait_stopped", mask_ports_and_times(&waited));
    insta::assert_snapshot!(
        "apply_dry_run_nothing",
        human(&env, &["apply", "w", "--dry-run"], true)
    );
}

#[test]
fn recipe_list_show_and_new() {
    let env = TestEnv::new();
    insta::assert_snapshot!(
        "recipe_new",
        human(&env, &["recipe", "new", "mine", "--os", "alpine"], true)
    );
    insta::assert_snapshot!("recipe_list", human(&env, &["recipe", "list"], true));
    insta::assert_snapshot!(
        "recipe_show",
        human(&env, &["recipe", "show", "docker"], true)
    );
}

#[test]
fn logs_schema_and_help() {
    let env = with_a_vm();
    std::fs::write(env.root().join("w/console.log"), "booting\nlogin:\n").unwrap();
    insta::assert_snapshot!("logs_console", human(&env, &["logs", "w"], true));
    insta::assert_snapshot!("schema_list", human(&env, &["schema"], true));
    insta::assert_snapshot!("help", human(&env, &["help"], true));
}

#[test]
fn runtime_errors_in_human_mode() {
    let env = with_a_vm();
    // A person's `down` of a stopped VM converges (exit 0, one line).
    insta::assert_snapshot!("down_stopped", human(&env, &["down", "w"], true));
    insta::assert_snapshot!(
        "screenshot_stopped",
        human(&env, &["screenshot", "w"], false)
    );
    insta::assert_snapshot!(
        "cp_stopped",
        human(&env, &["cp", "w:/etc/hosts", "hosts"], false)
    );
    insta::assert_snapshot!("apply_stopped", human(&env, &["apply", "w"], false));
    insta::assert_snapshot!("pull_unknown", human(&env, &["pull", "nope"], false));
    insta::assert_snapshot!(
        "snapshot_ghost",
        human(&env, &["snapshot", "ghost", "list"], false)
    );
}
