//! Host commands through the real binary: ssh-command, ssh, logs, doctor, prune, snapshot
//! (real qemu-img on a real qcow2) and capabilities.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{eventually, FakeRunningVm, Spawned, TestEnv, PLANTED_PASSWORD};

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn write_mode_vm(env: &TestEnv, name: &str, mode: &str, port: u16) {
    env.write_vm(
        name,
        &format!("name = \"{name}\"\nmode = \"{mode}\"\nos = \"alpine\"\nsshport = {port}\nconsole_password = \"{PLANTED_PASSWORD}\"\n"),
    );
}

// ---- ssh-command and ssh ----

#[test]
fn ssh_command_gives_the_full_argv_and_makes_the_key() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2203);
    let run = env.json(&["ssh-command", "work"]);
    let key = env.root().join("id_stoat").display().to_string();
    assert_eq!(
        strings(&run.data()["argv"]),
        [
            "ssh",
            "-p",
            "2203",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "BatchMode=yes",
            "-i",
            &key,
            "stoat@127.0.0.1",
        ]
    );
    assert!(env.root().join("id_stoat").is_file());
    assert!(env.root().join("id_stoat.pub").is_file());
    let human = env.run(&["ssh-command", "work"]);
    assert_eq!(human.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(human.stdout).unwrap().trim_end(),
        strings(&run.data()["argv"]).join(" ")
    );
}

#[test]
fn ssh_command_defaults_to_root_and_reports_errors() {
    let env = TestEnv::new();
    write_mode_vm(&env, "bare", "disk", 2204);
    let argv = strings(&env.json(&["ssh-command", "bare"]).data()["argv"]);
    assert_eq!(argv.last().unwrap(), "root@127.0.0.1");
    env.json(&["ssh-command", "ghost"]).error("not_found");
    env.write_broken_vm("bad");
    env.json(&["ssh-command", "bad"]).error("broken");
    env.json(&["ssh-command"]).error("usage");
}

#[test]
fn ssh_refuses_json_and_checks_before_exec() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2205);
    env.write_broken_vm("bad");
    env.json(&["ssh", "work"]).error("usage");
    for (vm, word) in [
        ("ghost", "not found"),
        ("bad", "broken"),
        ("work", "not running"),
    ] {
        let out = env.run(&["ssh", vm]);
        assert_eq!(out.status.code(), Some(1), "{vm}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(word), "{vm}");
    }
}

#[test]
fn ssh_waits_for_a_login_then_replaces_stoat_with_ssh_and_the_same_argv() {
    let mut env = TestEnv::new();
    // A guest whose sshd answers: ssh reaches it, then the scripted status is the session's.
    env.write_basic_vm("work", stoat_testkit::banner_port());
    env.fake_tool("ssh");
    env.fake_script(&json!({"tools": {"ssh": [{"exit": 7}]}}));
    let expected = strings(&env.json(&["ssh-command", "work"]).data()["argv"]);
    let _qemu = FakeRunningVm::start(&env.root().join("work"));
    let out = env.run(&["ssh", "work"]);
    assert_eq!(out.status.code(), Some(7), "ssh's own status: {out:?}");
    // Two calls of the ssh on PATH: stoat's login check (it waits like exec), then the
    // session, with ssh-command's argv after the program name (no master in the fake tier).
    let calls = env.fake_calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls.iter().all(|call| call["tool"] == "ssh"), "{calls:?}");
    assert_eq!(calls[0]["remote_command"], "true", "{calls:?}");
    assert_eq!(strings(&calls[1]["argv"]), expected[1..]);
    assert!(expected[0].ends_with("ssh"), "{expected:?}");
}

#[test]
fn ssh_with_a_command_and_exec_t_hand_the_guest_its_argv_with_a_terminal() {
    let mut env = TestEnv::new();
    env.write_basic_vm("work", stoat_testkit::banner_port());
    env.fake_tool("ssh");
    env.fake_script(&json!({"tools": {"ssh": [{"exit": 3}]}}));
    let expected = strings(&env.json(&["ssh-command", "work"]).data()["argv"]);
    let _qemu = FakeRunningVm::start(&env.root().join("work"));
    // The guest's words, quoted so its shell splits them back the same: a space stays inside.
    let session = |args: &[&str]| {
        env.clear_fake_calls();
        let out = env.run(args);
        assert_eq!(
            out.status.code(),
            Some(3),
            "the guest command's status: {out:?}"
        );
        let calls = env.fake_calls();
        strings(&calls.last().unwrap()["argv"])
    };
    let argv = session(&["ssh", "work", "--", "echo", "a b"]);
    // Off a terminal no terminal is asked for, as plain ssh does.
    assert_eq!(argv[..expected.len() - 1], expected[1..], "{argv:?}");
    assert_eq!(argv[expected.len() - 1..], ["'echo' 'a b'"], "{argv:?}");
    let argv = session(&["exec", "-t", "work", "--", "echo", "a b"]);
    assert_eq!(argv[0], "-tt", "{argv:?}");
    assert_eq!(argv[1..expected.len()], expected[1..], "{argv:?}");
    assert_eq!(argv[expected.len()..], ["'echo' 'a b'"], "{argv:?}");
    // A terminal cannot ride in a JSON answer.
    let message = env
        .json_raw(&["--json", "exec", "-t", "work", "--", "true"])
        .error("usage");
    assert!(message.contains("-t"), "{message}");
}

// ---- logs ----

#[test]
fn vm_logs_tail_and_keep_every_word() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2207);
    // A console password that is a common word: nothing in the logs is rewritten for it.
    let toml = env.vm_toml("work").replace(
        &format!("console_password = \"{PLANTED_PASSWORD}\""),
        "console_password = \"stoat\"",
    );
    env.write_vm("work", &toml);
    let console = env.root().join("work/console.log");
    std::fs::write(
        &console,
        "boot 1\nboot 2\r\nDebian stoat-nocloud login: stoat\nlast\n\n",
    )
    .unwrap();
    std::fs::create_dir_all(env.root().join("logs")).unwrap();
    std::fs::write(
        env.root().join("logs/stoat.log"),
        "2026-12-01T00:00:00Z created stoat\n",
    )
    .unwrap();
    let run = env.json(&["logs", "work", "-n", "0"]);
    let data = run.data();
    assert_eq!(data["vm"], "work");
    assert_eq!(data["which"], "console");
    assert_eq!(
        strings(&data["lines"]),
        [
            "boot 1",
            "boot 2",
            "Debian stoat-nocloud login: stoat",
            "last"
        ]
    );
    // stoat's own log: its first line (stoat appends one per command) keeps its word.
    assert_eq!(
        strings(&env.json(&["logs"]).data()["lines"])[0],
        "2026-12-01T00:00:00Z created stoat"
    );
    assert_eq!(
        strings(&env.json(&["logs", "work", "-n", "2"]).data()["lines"]).len(),
        2
    );
    assert_eq!(
        strings(&env.json(&["logs", "work", "-n", "-5"]).data()["lines"]).len(),
        4
    );
    assert_eq!(
        strings(&env.json(&["logs", "work", "-n", "1"]).data()["lines"]),
        ["last"]
    );
    let human = env.run(&["logs", "work"]);
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(text.contains("login: stoat\n"), "{text}");
}

#[test]
fn apply_log_missing_files_and_broken_vms() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2208);
    let run = env.json(&["logs", "work", "--which", "apply"]);
    assert_eq!(run.data()["which"], "apply");
    assert_eq!(run.data()["lines"], json!([]));
    std::fs::write(env.root().join("work/last-provision.log"), "step\ndone\n").unwrap();
    assert_eq!(
        strings(&env.json(&["logs", "work", "--which", "apply"]).data()["lines"]),
        ["step", "done"]
    );
    env.write_broken_vm("bad");
    std::fs::write(env.root().join("bad/console.log"), "still readable\n").unwrap();
    assert_eq!(
        strings(&env.json(&["logs", "bad"]).data()["lines"]),
        ["still readable"]
    );
    env.json(&["logs", "ghost"]).error("not_found");
    let bad = env.json(&["logs", "work", "--which", "dmesg"]);
    bad.error("unknown_log");
    assert_eq!(
        env.run(&["logs", "work", "--which", "dmesg"]).status.code(),
        Some(1)
    );
}

#[test]
fn stoat_log_has_no_vm_key_and_logs_this_run() {
    let env = TestEnv::new();
    let run = env.json(&["logs"]);
    assert!(run.data().get("vm").is_none() && run.data().get("which").is_none());
    let lines = strings(&run.data()["lines"]);
    assert!(lines.last().unwrap().ends_with("cli cmd=logs"), "{lines:?}");
}

// ---- doctor ----

#[test]
fn doctor_on_an_empty_path_is_unhealthy_but_answers() {
    let mut env = TestEnv::new();
    let empty = env.tmp().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    env.set_env("PATH", &empty.display().to_string());
    let run = env.json(&["doctor"]);
    assert_eq!(run.exit, 0);
    let data = run.data();
    assert_eq!(data["healthy"], false);
    let names: Vec<&str> = data["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "qemu-system-x86_64",
            "qemu-img",
            "ssh",
            "scp",
            "ssh-keygen",
            "xorriso",
            "passt",
            "/dev/kvm",
            "git",
            "xattr"
        ]
    );
    let qemu_img = &data["checks"][1];
    assert_eq!(qemu_img["ok"], false);
    assert_eq!(qemu_img["optional"], false);
    let git = &data["checks"][8];
    assert_eq!(
        (git["ok"].clone(), git["optional"].clone()),
        (json!(false), json!(true))
    );
    let kvm = &data["checks"][7];
    assert_eq!(
        kvm["optional"], true,
        "STOAT_ACCEL=tcg makes /dev/kvm optional"
    );
    assert!(kvm["detail"].as_str().unwrap().contains("STOAT_ACCEL=tcg"));

    let human = env.run(&["doctor"]);
    assert_eq!(human.status.code(), Some(1));
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(
        text.contains("\nFAIL    qemu-img            not found"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "not healthy: qemu-system-x86_64, qemu-img, ssh, scp, ssh-keygen, xorriso, passt failed\n"
        ),
        "{text}"
    );
    if std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .contains("debian")
    {
        assert!(
            text.contains("\n  qemu-img: sudo apt-get install -y qemu-utils\n"),
            "{text}"
        );
        assert_eq!(
            strings(&qemu_img["fix"]),
            ["sudo", "apt-get", "install", "-y", "qemu-utils"]
        );
    }
}

#[test]
fn doctor_with_every_tool_is_healthy_under_tcg() {
    let mut env = TestEnv::new();
    env.fake_host_tools();
    // Only the fakes: doctor's PATH holds nothing else.
    let tools = env.bin();
    env.set_env("PATH", &tools.display().to_string());
    let run = env.json(&["doctor"]);
    assert_eq!(run.data()["healthy"], true, "{}", run.stdout);
    assert_eq!(
        run.data()["checks"][0]["detail"],
        tools.display().to_string()
    );
    assert_eq!(run.data()["checks"][7]["ok"], false, "git stays optional");
    let human = env.run(&["doctor"]);
    assert_eq!(human.status.code(), Some(0));
    assert!(String::from_utf8(human.stdout)
        .unwrap()
        .ends_with("healthy: this host can run VMs\n"));

    // An accelerator `up` refuses: doctor is not healthy either, and says why.
    env.set_env("STOAT_ACCEL", "bogus");
    let run = env.json(&["doctor"]);
    assert_eq!(run.data()["healthy"], false, "{}", run.stdout);
    let accel = run.data()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "STOAT_ACCEL")
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(accel["ok"], false);
    assert_eq!(accel["optional"], false);
    assert!(
        accel["detail"].as_str().unwrap().contains("bogus"),
        "{accel}"
    );
    env.write_basic_vm("w", 2290);
    env.json(&["up", "w", "--no-wait"]).error("invalid_spec");
    // ` TCG ` is what `up` reads as tcg: doctor agrees and stays healthy.
    env.set_env("STOAT_ACCEL", " TCG ");
    assert_eq!(env.json(&["doctor"]).data()["healthy"], true);
}

// ---- prune ----

fn age(path: &Path, minutes: u32) {
    let status = Command::new("touch")
        .arg("-d")
        .arg(format!("{minutes} minutes ago"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn prune_dry_run_lists_and_apply_deletes_in_order() {
    let env = TestEnv::new();
    env.write_basic_vm("good", 2210); // base = <root>/isos/base.qcow2
    env.write_broken_vm("bad");
    std::fs::write(
        env.root().join("bad/vm.toml"),
        "iso = \"alpine.iso\"\nmode = \"disk\n",
    )
    .unwrap();
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    for file in [
        "base.qcow2",
        "alpine.iso",
        "old.iso",
        "stale.iso.part",
        "fresh.iso.part",
        ".manifest",
    ] {
        std::fs::write(isos.join(file), "x").unwrap();
    }
    age(&isos.join("stale.iso.part"), 5);
    std::fs::write(env.root().join("id_stoat"), "key").unwrap();
    std::fs::create_dir_all(env.root().join("recipes/mine")).unwrap();

    let root = env.root().display().to_string();
    let expect = json!([
        {"class": "broken_vm", "path": format!("{root}/bad")},
        {"class": "orphaned_image", "path": format!("{root}/isos/old.iso")},
        {"class": "partial_download", "path": format!("{root}/isos/stale.iso.part")},
    ]);
    let plain = env.json(&["prune"]);
    assert_eq!(plain.data()["dry_run"], true);
    assert_eq!(plain.data()["items"], json!([expect[2]]));
    let dry = env.json(&["prune", "--broken", "--images"]);
    assert_eq!(dry.data()["items"], expect);
    assert!(isos.join("old.iso").exists() && env.root().join("bad").exists());
    let human = String::from_utf8(env.run(&["prune", "--broken"]).stdout).unwrap();
    assert!(human.contains(&format!("broken vm: {root}/bad")), "{human}");
    assert!(human.contains("(dry run: nothing was deleted; re-run with --apply)"));

    let applied = env.json(&["prune", "--broken", "--images", "--apply"]);
    assert_eq!(applied.data()["dry_run"], false);
    assert_eq!(applied.data()["items"], expect);
    assert!(!isos.join("old.iso").exists());
    assert!(!isos.join("stale.iso.part").exists());
    assert!(!env.root().join("bad").exists());
    // alpine.iso was referenced only by the broken VM just deleted: a second run finds it.
    for kept in ["base.qcow2", "fresh.iso.part", ".manifest"] {
        assert!(isos.join(kept).exists(), "{kept}");
    }
    assert!(env.root().join("id_stoat").exists());
    assert!(env.root().join("recipes/mine").exists());
    assert!(env.root().join("good/vm.toml").exists());
    let again = env.json(&["prune", "--images"]);
    assert_eq!(
        again.data()["items"][0]["path"],
        format!("{root}/isos/alpine.iso")
    );
    assert_eq!(
        String::from_utf8(env.run(&["prune"]).stdout)
            .unwrap()
            .trim(),
        "nothing to prune"
    );
}

#[test]
fn prune_keeps_a_running_broken_vm() {
    let env = TestEnv::new();
    env.write_broken_vm("bad");
    let _qemu = FakeRunningVm::start(&env.root().join("bad"));
    let run = env.json(&["prune", "--broken", "--apply"]);
    assert_eq!(run.data()["items"], json!([]));
    assert!(env.root().join("bad/vm.toml").exists());
}

// ---- snapshot ----

fn make_disk(env: &TestEnv, vm: &str) {
    crate::common::make_qcow2(&env.root().join(vm).join("disk.qcow2"), "16M");
}

#[test]
fn snapshot_save_list_restore_delete_on_a_real_qcow2() {
    let env = TestEnv::new();
    write_mode_vm(&env, "work", "disk", 2211);
    make_disk(&env, "work");
    assert_eq!(
        env.json(&["snapshot", "work"]).data()["snapshots"],
        json!([])
    );
    let save = env.json(&["snapshot", "work", "clean"]);
    assert_eq!(
        save.data(),
        &json!({"vm": "work", "tag": "clean", "action": "save"})
    );
    // A tag in use is refused, naming --force, and the snapshot stays; --force replaces it
    // (a tag names one snapshot: replaced, not doubled).
    let again = env.json(&["snapshot", "work", "clean"]);
    assert!(again.error("invalid_spec").contains("--force"));
    assert_eq!(
        env.json(&["snapshot", "work"]).data()["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let human = env.run(&["snapshot", "work", "clean"]);
    assert_eq!(human.status.code(), Some(1));
    let said = String::from_utf8(human.stderr).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    let forced = env.json(&["snapshot", "work", "clean", "--force"]);
    assert_eq!(forced.data()["action"], "save");
    let list = env.json(&["snapshot", "work"]);
    let snaps = list.data()["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 1, "{}", list.stdout);
    assert_eq!(snaps[0]["tag"], "clean");
    assert_eq!(snaps[0]["vm_state"], false);
    assert_eq!(snaps[0]["size_display"], "0 B");
    let restore = env.json(&["snapshot", "work", "clean", "--restore"]);
    assert_eq!(restore.data()["action"], "restore");
    env.json(&["snapshot", "work", "nope", "--restore"])
        .error("invalid_spec");
    env.json(&["snapshot", "work", "nope", "--delete"])
        .error("invalid_spec");
    let human = String::from_utf8(env.run(&["snapshot", "work"]).stdout).unwrap();
    assert!(
        human.starts_with("TAG") && human.contains("clean"),
        "{human}"
    );
    let delete = env.run(&["snapshot", "work", "clean", "--delete"]);
    assert_eq!(
        String::from_utf8(delete.stdout).unwrap().trim(),
        "deleted snapshot clean of work"
    );
    assert_eq!(
        env.json(&["snapshot", "work"]).data()["snapshots"],
        json!([])
    );
    assert_eq!(
        String::from_utf8(env.run(&["snapshot", "work"]).stdout)
            .unwrap()
            .trim(),
        "work has no snapshots"
    );
}

#[test]
fn snapshot_errors() {
    let env = TestEnv::new();
    write_mode_vm(&env, "work", "disk", 2212);
    make_disk(&env, "work");
    write_mode_vm(&env, "live", "live", 2213);
    env.write_basic_vm("fresh", 2214); // cloud, never started: no disk yet
    env.write_broken_vm("bad");
    env.json(&["snapshot", "work", "a b"]).error("invalid_spec");
    env.json(&["snapshot", "work", ""]).error("invalid_spec");
    env.json(&["snapshot", "ghost", "a b"])
        .error("invalid_spec"); // the tag is checked first
    env.json(&["snapshot", "work", "--restore"]).error("usage");
    env.json(&["snapshot", "work", "--delete"]).error("usage");
    env.json(&["snapshot", "work", "t", "--restore", "--delete"])
        .error("usage");
    env.json(&["snapshot", "ghost"]).error("not_found");
    env.json(&["snapshot", "bad"]).error("broken");
    env.json(&["snapshot", "bad", "t"]).error("broken");
    env.json(&["snapshot", "live"]).error("no_disk");
    env.json(&["snapshot", "live", "t"]).error("no_disk");
    assert_eq!(
        env.json(&["snapshot", "fresh"]).data()["snapshots"],
        json!([])
    );
    env.json(&["snapshot", "fresh", "t"]).error("no_disk");
    let _qemu = FakeRunningVm::start(&env.root().join("work"));
    let running = env.json(&["snapshot", "work", "t"]);
    assert!(running.error("monitor_unreachable").contains("qmp.sock"));
    assert_eq!(
        env.run(&["snapshot", "work", "--restore"]).status.code(),
        Some(2)
    );
}

// ---- capabilities ----

fn entry<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

#[test]
fn capabilities_without_a_target() {
    let env = TestEnv::new();
    let run = env.json(&["capabilities"]);
    let data = run.data();
    assert_eq!(data["schema"], 1);
    assert_eq!(data["host"]["os"], "linux");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(data["host"]["arch"], "amd64");
    }
    assert_eq!(data["host"]["project_state"], "absent");
    assert!(data.get("target").is_none());
    assert_eq!(
        data["access_policy"],
        json!({"mcp_agent_access_enforced": true, "cli_agent_access_enforced": false, "cli_commands": ["exec", "cp"]})
    );
    for name in ["runtime.qemu-kvm", "runtime.qemu-tcg"] {
        entry(&data["profiles"], name);
    }
    for name in [
        "vm.lifecycle",
        "vm.exec",
        "vm.cp",
        "vm.snapshot",
        "vm.screenshot",
        "images.pull",
        "recipes.apply",
        "mcp.server",
    ] {
        entry(&data["capabilities"], name);
    }
    assert_eq!(
        entry(&data["capabilities"], "project.fanout")["limits"],
        json!([{"code": "project_file_required"}])
    );
    assert_eq!(
        entry(&data["unavailable"], "runtime.fork")["reason"],
        json!({"code": "not_implemented"})
    );
    std::fs::write(env.home().join("stoat.toml"), "[project]\n").unwrap();
    assert_eq!(
        env.json(&["capabilities"]).data()["host"]["project_state"],
        "available"
    );
    let human = env.run(&["capabilities"]);
    assert_eq!(human.status.code(), Some(0));
    assert!(String::from_utf8(human.stdout)
        .unwrap()
        .contains("runtime.fork"));
}

#[test]
fn capabilities_with_a_target_reads_without_touching() {
    let env = TestEnv::new();
    write_mode_vm(&env, "live", "live", 2215);
    env.write_basic_vm("work", 2216);
    env.write_broken_vm("bad");
    let before = std::fs::read_dir(env.root().join("live")).unwrap().count();
    let toml = env.vm_toml("live");
    let run = env.json(&["capabilities", "live"]);
    let data = run.data();
    assert_eq!(
        data["target"],
        json!({"name": "live", "mode": "live", "agent_access": "manage"})
    );
    let snapshot = entry(&data["capabilities"], "vm.snapshot");
    assert_eq!(snapshot["status"], "limited");
    assert!(snapshot["limits"]
        .as_array()
        .unwrap()
        .contains(&json!({"code": "disk_required"})));
    assert_eq!(
        entry(&data["capabilities"], "vm.exec")["limits"],
        json!([{"code": "agent_access_required"}])
    );
    assert_eq!(env.vm_toml("live"), toml);
    assert_eq!(
        std::fs::read_dir(env.root().join("live")).unwrap().count(),
        before
    );
    assert!(!env.root().join("id_stoat").exists(), "no key is made");

    let work = env.json(&["capabilities", "work"]);
    assert_eq!(work.data()["target"]["mode"], "cloud");
    assert_ne!(
        entry(&work.data()["capabilities"], "vm.snapshot")["status"],
        "limited"
    );

    let bad = env.json(&["capabilities", "bad"]);
    assert_eq!(bad.data()["target"]["mode"], "unknown");
    assert_eq!(
        entry(&bad.data()["capabilities"], "vm.exec")["reason"],
        json!({"code": "target_mode_unknown"})
    );
    env.json(&["capabilities", "ghost"]).error("not_found");
}

// ---- logs -f ----

/// How long a follow gets to show a line or to end: generous, it is only ever waited out
/// when something is wrong.
const FOLLOW_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Waits for a follow's stdout to close, then for its exit status; returns the lines read
/// last.
fn end(follow: &mut Spawned) -> (Vec<String>, Option<i32>) {
    let rest = follow.stdout.rest(FOLLOW_WAIT);
    (rest, follow.wait(FOLLOW_WAIT).status.code())
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

#[test]
fn logs_follow_prints_each_new_line_across_a_new_boot_until_the_vm_stops() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2251);
    let console = env.root().join("w/console.log");
    std::fs::write(&console, "old 1\nold 2\nold 3\n").unwrap();
    let running = FakeRunningVm::start(&env.root().join("w"));
    let mut follow = env.spawn(&["logs", "w", "-f", "-n", "2"]);
    assert_eq!(follow.stdout.until("old 3", FOLLOW_WAIT), ["old 2"]);
    append(&console, "appended\n");
    assert!(follow.stdout.until("appended", FOLLOW_WAIT).is_empty());
    // A line is shown once it is whole.
    append(&console, "half");
    append(&console, " and the rest\n");
    assert!(follow
        .stdout
        .until("half and the rest", FOLLOW_WAIT)
        .is_empty());
    // A console log made anew (a new file under the name) is read from its start.
    let fresh = env.root().join("w/console.log.new");
    std::fs::write(
        &fresh,
        "===== stoat: boot at 2026-12-01T00:00:00Z =====\nsecond boot\n",
    )
    .unwrap();
    std::fs::rename(&fresh, &console).unwrap();
    assert_eq!(
        follow.stdout.until("second boot", FOLLOW_WAIT),
        ["===== stoat: boot at 2026-12-01T00:00:00Z ====="]
    );
    follow
        .stderr
        .until("console.log was replaced: reading the new one", FOLLOW_WAIT);
    // Written just before the VM stops, without a newline: still shown, then the end.
    append(&console, "last words");
    drop(running);
    let (rest, status) = end(&mut follow);
    assert_eq!(rest, ["last words"]);
    assert_eq!(status, Some(0), "the VM stopping ends the follow normally");
    follow.stderr.until(
        "w is not running: nothing more will be written",
        FOLLOW_WAIT,
    );
}

#[test]
fn logs_follow_of_a_truncated_apply_log_reads_it_again() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2252);
    let log = env.root().join("w/last-provision.log");
    let _running = FakeRunningVm::start(&env.root().join("w"));
    // No apply log yet: it is waited for.
    let mut follow = env.spawn(&["logs", "w", "--which", "apply", "-f"]);
    append(&log, "=== recipe base ===\nfirst run of a recipe\n");
    follow.stdout.until("first run of a recipe", FOLLOW_WAIT);
    // The next run truncates the same file and writes it again.
    std::fs::write(&log, "second\n").unwrap();
    assert!(follow.stdout.until("second", FOLLOW_WAIT).is_empty());
    follow.stderr.until(
        "last-provision.log was truncated: reading it again",
        FOLLOW_WAIT,
    );
}

#[test]
fn logs_follow_of_a_stopped_vm_prints_the_tail_and_ends() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2253);
    std::fs::write(env.root().join("w/console.log"), "a\nb\nunfinished").unwrap();
    let out = env.run(&["logs", "w", "--follow", "-n", "5"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "a\nb\nunfinished\n");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "w is not running: nothing more will be written\n"
    );
    let quiet = env.run(&["-q", "logs", "w", "-f"]);
    assert!(quiet.stderr.is_empty(), "-q silences the note");
    // The errors of `logs` stay the same.
    assert_eq!(env.run(&["logs", "ghost", "-f"]).status.code(), Some(1));
    assert_eq!(
        env.run(&["logs", "w", "-f", "--which", "dmesg"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn logs_follow_of_stoats_own_log_ends_on_sigint_with_status_0() {
    let env = TestEnv::new();
    let mut follow = env.spawn(&["logs", "-f", "-n", "1"]);
    // Its own line (every command logs one), then another command's as it is written.
    follow.stdout.until_match(
        "cli cmd=logs",
        |l| l.ends_with(" cli cmd=logs"),
        FOLLOW_WAIT,
    );
    assert!(env.run(&["ls"]).status.success());
    follow
        .stdout
        .until_match("cli cmd=ls", |l| l.ends_with(" cli cmd=ls"), FOLLOW_WAIT);
    follow.signal(libc::SIGINT);
    let (rest, status) = end(&mut follow);
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(status, Some(0), "Ctrl-C is how a follow ends");
}

#[test]
fn logs_follow_ends_when_its_reader_goes_away() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2254);
    let console = env.root().join("w/console.log");
    std::fs::write(&console, "first\n").unwrap();
    let _running = FakeRunningVm::start(&env.root().join("w"));
    // The reader takes one line and closes its end of the pipe before it shows that line,
    // so once the test sees it nobody reads stoat's output any more.
    let mut follow = Spawned::start_group(&mut env.shell(
        "stoat logs w -f 2>/dev/null | { read -r line; exec <&-; printf '%s\\n' \"$line\"; }",
    ));
    follow.stdout.until("first", FOLLOW_WAIT);
    // The next line cannot be written: stoat ends (as `stoat logs -f w | head -1` wants);
    // under pipefail the shell's status is stoat's (a SIGPIPE death would be 141).
    append(&console, "nobody reads this\n");
    let status = eventually(FOLLOW_WAIT, || follow.try_status());
    assert_eq!(status.code(), Some(0));
}

#[test]
fn logs_follow_under_json_is_a_usage_error() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2255);
    let run = env.json(&["logs", "w", "-f"]);
    let message = run.error("usage");
    assert_eq!(run.exit, 2);
    assert_eq!(run.lines.len(), 1, "{}", run.stdout);
    assert_eq!(run.result["cmd"], "logs");
    assert!(message.contains("logs -f"), "{message}");
    // Refused before anything runs: stoat's own log is not followed either.
    env.json(&["logs", "--follow"]).error("usage");
}

/// The bytes `stoat ARGS` read with `root` as its data root: its `rchar`, which the kernel adds
/// to the waiting shell's own once it has reaped it. A count of work the host's load does not
/// change, unlike seconds.
fn bytes_read(env: &TestEnv, root: &Path, args: &str) -> u64 {
    let out = env
        .shell(&format!(
            "a=$(grep rchar /proc/$$/io); STOAT_HOME='{}' stoat {args} >/dev/null; b=$(grep rchar /proc/$$/io); echo \"${{a#rchar: }} ${{b#rchar: }}\"",
            root.display()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let numbers: Vec<u64> = text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(
        numbers.len(),
        2,
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    numbers[1] - numbers[0]
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn logs_of_a_40_mb_line_are_read_in_linear_work_cut_and_escapes_show_only_to_a_human(
) -> TestEnv {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2254);
    let console = env.root().join("w/console.log");
    let mut text = b"\x1b]0;pwned\x07title \x1b[2Jcleared\tkept\n".to_vec();
    text.extend(std::iter::repeat_n(b'y', 40 << 20));
    text.extend_from_slice(b"\nafter\n");
    std::fs::write(&console, &text).unwrap();
    // The same log with a quarter of the line, in a second data root.
    let quarter_env = env.tmp().join("quarter");
    let quarter_vm = quarter_env.join("w");
    std::fs::create_dir_all(&quarter_vm).unwrap();
    std::fs::copy(env.root().join("w/vm.toml"), quarter_vm.join("vm.toml")).unwrap();
    let mut short = b"first\n".to_vec();
    short.extend(std::iter::repeat_n(b'y', 10 << 20));
    short.extend_from_slice(b"\nafter\n");
    std::fs::write(quarter_vm.join("console.log"), &short).unwrap();
    // The work is linear in the file: a quarter of the line costs about a quarter of the
    // reading (quadratic work would cost a sixteenth), and no byte is read more than twice.
    // The seconds it takes are benchmarks' (docs/benchmarks.md), not a test's.
    let file = text.len() as u64;
    for tail in ["0", "2"] {
        let quarter = bytes_read(&env, &quarter_env, &format!("--json logs w -n {tail}"));
        let whole = bytes_read(&env, &env.root(), &format!("--json logs w -n {tail}"));
        eprintln!("logs -n {tail}: {quarter} bytes read for 10 MiB, {whole} for 40 MiB");
        assert!(
            whole <= 2 * file + (1 << 20),
            "-n {tail} read {whole} bytes of a {file}-byte log"
        );
        assert!(
            whole <= 5 * quarter,
            "-n {tail}: {whole} bytes read for 40 MiB against {quarter} for 10 MiB"
        );
    }
    for tail in ["0", "2", "3"] {
        let run = env.json(&["logs", "w", "-n", tail]);
        let lines = strings(&run.data()["lines"]);
        let long = &lines[lines.len() - 2];
        assert!(
            long.len() < 70 * 1024,
            "the line is cut: {} bytes",
            long.len()
        );
        assert!(
            long.starts_with("yyyy")
                && long.ends_with(&format!(
                    " [stoat: line cut, {} more bytes]",
                    (40 << 20) - 65536
                )),
            "{}",
            &long[long.len() - 60..]
        );
        assert_eq!(lines.last().unwrap(), "after");
    }
    // --json keeps the guest's bytes; a human sees them as text, tab kept.
    let json = env.json(&["logs", "w", "-n", "0"]);
    assert_eq!(
        strings(&json.data()["lines"])[0],
        "\u{1b}]0;pwned\u{7}title \u{1b}[2Jcleared\tkept"
    );
    let human = String::from_utf8(env.run(&["logs", "w", "-n", "3"]).stdout).unwrap();
    assert!(
        human.starts_with("\\x1b]0;pwned\\x07title \\x1b[2Jcleared\tkept\n"),
        "{}",
        &human[..80]
    );
    assert!(!human.contains('\u{1b}') && !human.contains('\u{7}'));
    let follow = String::from_utf8(env.run(&["logs", "w", "-f", "-n", "3"]).stdout).unwrap();
    assert!(follow.starts_with("\\x1b]0;pwned") && !follow.contains('\u{1b}'));
    assert!(follow.ends_with(" more bytes]\nafter\n"));
    env
}

/// A serial console ends its lines with CR LF (at times CR CR LF): a person sees the lines,
/// no `\x0d` for the carriage returns before a newline; one inside a line, which could hide
/// what came before it, is still shown. --json keeps what the core read.
#[test]
fn console_line_ends_read_as_line_ends_to_a_person() {
    let env = TestEnv::new();
    env.write_basic_vm("w", 2256);
    std::fs::write(
        env.root().join("w/console.log"),
        b"one\r\n\r\r\nsecret\rcover\r\n",
    )
    .unwrap();
    let human = env.run(&["logs", "w"]);
    assert!(human.status.success());
    assert_eq!(
        String::from_utf8_lossy(&human.stdout),
        "one\n\nsecret\\x0dcover\n"
    );
    let follow = env.run(&["logs", "w", "-f"]);
    assert_eq!(
        String::from_utf8_lossy(&follow.stdout),
        "one\n\nsecret\\x0dcover\n"
    );
    let json = env.json(&["logs", "w"]);
    let lines = json.data()["lines"].as_array().unwrap().len();
    assert_eq!(lines, 3, "{}", json.data());
}

/// What killed commands leave is prune's to list and remove (docs/decisions/vmops.md): a
/// clone killed with its copy staged leaves `.staging/<name>.<pid>.<random>`, and a
/// `shared/<name>` whose VM is gone is an orphan. Live VMs' shares stay.
#[test]
fn prune_lists_and_removes_staging_leftovers_and_orphaned_shares() {
    let env = TestEnv::new();
    crate::common::create_disk(&env, "src");
    let killed = env
        .cmd(&["clone", "src", "copy", "--json"])
        .env("STOAT_FAULT", "filled")
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "the clone was killed");
    let staged: Vec<_> = std::fs::read_dir(env.root().join(".staging"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(staged.len(), 1, "{staged:?}");
    let ghost = env.root().join("shared/ghost");
    std::fs::create_dir_all(&ghost).unwrap();
    std::fs::write(ghost.join("left.txt"), "x").unwrap();

    // The killed clone had made its share already.
    let copy_share = env.root().join("shared/copy");
    let expect = json!([
        {"class": "orphaned_share", "path": copy_share.display().to_string()},
        {"class": "orphaned_share", "path": ghost.display().to_string()},
        {"class": "staging_leftover", "path": staged[0].display().to_string()},
    ]);
    let dry = env.json(&["prune"]);
    assert_eq!(dry.data()["items"], expect);
    assert!(staged[0].exists() && ghost.exists());
    let human = String::from_utf8(env.run(&["prune"]).stdout).unwrap();
    assert!(human.contains("staging leftover: "), "{human}");
    assert!(human.contains("orphaned share: "), "{human}");

    let applied = env.json(&["prune", "--apply"]);
    assert_eq!(applied.data()["items"], expect);
    assert!(!staged[0].exists() && !ghost.exists() && !copy_share.exists());
    assert!(
        env.root().join("shared/src").is_dir(),
        "a live VM's share stays"
    );
    env.json(&["get", "src"]).data();
    assert_eq!(env.json(&["prune"]).data()["items"], json!([]));
}
