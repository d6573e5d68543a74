//! Mistakes caught at `create` and `update`, through the real binary: each is refused with one
//! line that names the fix (or, for units people type, understood), and changes nothing.

use crate::common::{make_qcow2, TestEnv, ALPINE_VIRT, DEBIAN_CLOUD};

/// The data root as a list of its VM names and each vm.toml, to show nothing changed.
fn state(env: &TestEnv) -> Vec<(String, String)> {
    let mut vms: Vec<(String, String)> = env.json(&["ls"]).data()["vms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|vm| {
            let name = vm["name"].as_str().unwrap().to_owned();
            let toml = env.vm_toml(&name);
            (name, toml)
        })
        .collect();
    vms.sort();
    vms
}

/// A data root with one stopped VM, `work`, made from a planted Alpine image.
fn with_work() -> TestEnv {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    env.json(&["create", "work", "--image", "alpine-virt"])
        .data();
    env
}

/// Refused under --json with `code`, and as one `stoat: …` line for a person (a `hint:` line
/// may follow), exit 1; the data root is as it was.
fn refused(env: &TestEnv, args: &[&str], code: &str, names: &[&str]) {
    let before = state(env);
    let message = env.json(args).error(code);
    for name in names {
        assert!(message.contains(name), "{args:?}: {message}");
    }
    let human = env.run(args);
    assert_eq!(human.status.code(), Some(1), "{args:?}");
    let stderr = String::from_utf8_lossy(&human.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("hint: "))
        .collect();
    assert_eq!(said.len(), 1, "{args:?}: {stderr}");
    assert!(said[0].starts_with("stoat: "), "{args:?}: {stderr}");
    assert_eq!(state(env), before, "{args:?} changed the data root");
}

#[test]
fn zero_or_impossible_cpus_and_ram_are_refused_with_an_example() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let create = |extra: &[&'static str]| {
        let mut args = vec!["create", "w", "--image", "alpine-virt"];
        args.extend_from_slice(extra);
        args
    };
    refused(
        &env,
        &create(&["--cpus", "0"]),
        "invalid_spec",
        &["--cpus 2"],
    );
    refused(
        &env,
        &create(&["--cpus", "999"]),
        "invalid_spec",
        &["at most 255"],
    );
    refused(
        &env,
        &create(&["--ram", "0"]),
        "invalid_spec",
        &["--ram 2G"],
    );
    env.json(&create(&[])).data();
    refused(
        &env,
        &["update", "w", "--cpus", "0"],
        "invalid_spec",
        &["--cpus 2"],
    );
    refused(
        &env,
        &["update", "w", "--ram", "0"],
        "invalid_spec",
        &["--ram 2G"],
    );
}

#[test]
fn ram_takes_the_units_people_type_and_refuses_others_naming_them() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let run = env.json(&["create", "w", "--image", "alpine-virt", "--ram", "2G"]);
    assert_eq!(run.data()["vm"]["ram_mb"], 2048);
    let run = env.json(&["update", "w", "--ram", "3072M"]);
    assert_eq!(run.data()["vm"]["ram_mb"], 3072);
    // A unit stoat does not take is a usage error naming the forms it does.
    let message = env.json(&["update", "w", "--ram", "2.5G"]).error("usage");
    assert!(message.contains("e.g. 2048, 2048M or 2G"), "{message}");
    assert_eq!(env.json(&["get", "w"]).data()["vm"]["ram_mb"], 3072);
}

#[test]
fn a_disk_smaller_than_the_cloud_image_is_refused_naming_both_sizes() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    make_qcow2(&env.root().join("isos").join(DEBIAN_CLOUD), "128M");
    refused(
        &env,
        &["create", "w", "--image", "debian-13", "--disk", "64M"],
        "invalid_spec",
        &["64M", "128 MiB", "--disk 128M"],
    );
    let run = env.json(&["create", "w", "--image", "debian-13", "--disk", "128M"]);
    assert_eq!(run.data()["vm"]["disk"], "128M");
}

#[test]
fn a_stray_image_of_another_release_does_not_stand_in_for_a_catalog_id() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    make_qcow2(
        &env.root()
            .join("isos")
            .join("debian-12-genericcloud-amd64.qcow2"),
        "64M",
    );
    refused(
        &env,
        &["create", "w", "--image", "debian-13"],
        "image_not_downloaded",
        &["debian-13"],
    );
}

#[test]
fn the_verbs_lima_and_vagrant_users_type_do_what_they_mean() {
    let env = with_work();
    // `list` is `ls`, and its answer says so under --json.
    let listed = env.json(&["list"]);
    assert_eq!(listed.result["cmd"], "ls");
    assert_eq!(listed.data()["vms"][0]["name"], "work");
    // `stop` of a stopped VM converges like `down`; `shell` is `ssh` (refused: not running).
    let stop = env.run(&["stop", "work"]);
    assert!(stop.status.success(), "{stop:?}");
    assert_eq!(
        String::from_utf8_lossy(&stop.stdout),
        "work is already stopped\n"
    );
    assert_eq!(env.json(&["stop", "work"]).result["cmd"], "down");
    let shell = env.run(&["shell", "work"]);
    assert!(
        String::from_utf8_lossy(&shell.stderr).contains("not running"),
        "{shell:?}"
    );
    // `start` is `up` (the VM's QEMU is missing here: the answer is up's own error).
    assert_eq!(env.json(&["start", "work"]).result["cmd"], "up");
    // Vagrant's `halt` is `down`, Lima's `copy` is `cp`; a usage error of an alias names the
    // command it stands for.
    let halt = env.run(&["halt", "work"]);
    assert_eq!(
        String::from_utf8_lossy(&halt.stdout),
        "work is already stopped\n"
    );
    assert_eq!(env.json(&["halt", "work"]).result["cmd"], "down");
    let copy = env.json(&["copy", "a", "b"]);
    assert_eq!(copy.result["cmd"], "cp");
    copy.error("usage");
    assert_eq!(env.json(&["stop", "--bogus"]).result["cmd"], "down");
    // `delete` and Vagrant's `destroy` are `rm`.
    let deleted = env.json(&["delete", "work", "-y"]);
    assert_eq!(deleted.result["cmd"], "rm");
    assert_eq!(env.json(&["ls"]).data()["vms"], serde_json::json!([]));
    env.json(&["create", "work", "--image", "alpine-virt"])
        .data();
    assert_eq!(env.json(&["destroy", "work", "-y"]).result["cmd"], "rm");
    assert_eq!(env.json(&["ls"]).data()["vms"], serde_json::json!([]));
}

/// Other tools' verbs that stoat has no alias for are a usage error naming stoat's way, not
/// clap's guess at a command spelled alike (`suspend` was "did you mean up", `console`
/// "clone"), and change nothing.
#[test]
fn other_tools_verbs_are_answered_with_stoats_way() {
    let env = with_work();
    let before = state(&env);
    for (verb, way) in [
        ("restart", "`stoat down VM && stoat up VM`"),
        ("suspend", "`stoat down VM`"),
        ("resume", "`stoat up VM`"),
        ("show", "`stoat get VM`"),
        ("info", "`stoat get VM`"),
        ("run", "`stoat exec VM -- CMD`"),
        ("console", "`stoat logs VM --which console`"),
        ("ports", "`stoat forward VM`"),
        ("edit", "`stoat update VM"),
    ] {
        let args = [verb, "work"];
        let message = env.json(&args).error("usage");
        assert!(
            message.starts_with(&format!("{verb} is not a stoat command; "))
                && message.contains(way),
            "{verb}: {message}"
        );
        let human = env.run(&args);
        assert_eq!(human.status.code(), Some(2), "{verb}");
        let stderr = String::from_utf8_lossy(&human.stderr);
        assert!(stderr.contains(way) && !stderr.contains("tip:"), "{stderr}");
    }
    assert_eq!(state(&env), before);
    // A word no tool uses keeps clap's answer.
    let message = env.json(&["frobnicate"]).error("usage");
    assert!(!message.contains("is not a stoat command"), "{message}");
}

/// A snapshot spelled with the action as a word, as Vagrant and Lima spell it, is a usage
/// error naming stoat's form with the user's own VM and tag; the VM first is a hint.
#[test]
fn snapshot_actions_spelled_as_words_name_the_flag() {
    let env = with_work();
    let before = state(&env);
    for (args, form) in [
        (
            &["snapshot", "work", "save", "s1"][..],
            "`stoat snapshot work s1`",
        ),
        (
            &["snapshot", "save", "work", "s1"],
            "`stoat snapshot work s1`",
        ),
        (
            &["snapshot", "create", "work", "s1"],
            "`stoat snapshot work s1`",
        ),
        (
            &["snapshot", "work", "restore", "s1"],
            "`stoat snapshot work s1 --restore`",
        ),
        (
            &["snapshot", "apply", "work", "s1"],
            "`stoat snapshot work s1 --restore`",
        ),
        (
            &["snapshot", "delete", "work", "s1"],
            "`stoat snapshot work s1 --delete`",
        ),
        (&["snapshot", "work", "a", "b"], "at most one tag"),
    ] {
        let message = env.json(args).error("usage");
        assert!(message.contains(form), "{args:?}: {message}");
        let human = env.run(args);
        assert_eq!(human.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&human.stderr).contains(form));
    }
    let listed = env.run(&["snapshot", "list", "work"]);
    assert_eq!(listed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains("not found: list")
            && stderr.contains("hint: stoat snapshot takes the VM first"),
        "{stderr}"
    );
    assert_eq!(state(&env), before);
}

/// `forward work add 8080:80`, as other tools spell it, is a usage error naming the flag it
/// means, with the user's own pair, and changes nothing.
#[test]
fn forward_verbs_other_tools_use_are_answered_with_the_flag_they_mean() {
    let env = with_work();
    let before = state(&env);
    for (args, said) in [
        (
            &["forward", "work", "add", "8080:80"][..],
            "to add forwards, use the flag: forward VM --add 8080:80",
        ),
        (
            &["forward", "work", "rm", "8080"],
            "to remove forwards, use the flag: forward VM --remove 8080",
        ),
        (
            &["forward", "work", "clear"],
            "to clear forwards, use the flag: forward VM --clear",
        ),
    ] {
        let message = env.json(args).error("usage");
        assert!(message.contains(said), "{args:?}: {message}");
        let human = env.run(args);
        assert_eq!(human.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&human.stderr);
        assert!(
            stderr.starts_with("stoat: forward: ") && stderr.contains(said),
            "{stderr}"
        );
    }
    assert_eq!(state(&env), before);
}

#[test]
fn a_mistyped_vm_name_gets_the_nearest_one_as_a_hint_and_json_stays_plain() {
    let env = with_work();
    let human = env.run(&["get", "wrok"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(stderr.contains("hint: did you mean work?"), "{stderr}");
    // Nothing near: no hint.
    let far = env.run(&["get", "database"]);
    assert!(
        !String::from_utf8_lossy(&far.stderr).contains("hint"),
        "{far:?}"
    );
    // The wire message is the contract's, unchanged.
    let message = env.json(&["get", "wrok"]).error("not_found");
    assert!(!message.contains("did you mean"), "{message}");
}

#[test]
fn a_mistyped_image_id_gets_the_nearest_catalog_or_local_id_as_a_hint() {
    let env = TestEnv::new();
    env.plant_image("my-build.qcow2");
    let hint_of = |args: &[&str]| {
        let run = env.run(args);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {run:?}");
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{args:?}: {stderr}");
        assert!(lines[0].starts_with("stoat: "), "{args:?}: {stderr}");
        lines[1].to_owned()
    };
    // create: a catalog id, or a file in isos/.
    let create = ["create", "x", "--image", "debain-13"];
    assert_eq!(hint_of(&create), "hint: did you mean debian-13?");
    assert_eq!(
        hint_of(&["create", "x", "--image", "my-biuld.qcow2"]),
        "hint: did you mean my-build.qcow2?"
    );
    // pull: the catalog alone.
    assert_eq!(
        hint_of(&["pull", "debain-13"]),
        "hint: did you mean debian-13?"
    );
    // Nothing near: the error alone.
    let far = env.run(&["pull", "windows-xp"]);
    assert!(
        !String::from_utf8_lossy(&far.stderr).contains("hint"),
        "{far:?}"
    );
    // The wire keeps the contract's codes and plain messages; nothing was created.
    let message = env.json(&create).error("not_found");
    assert!(!message.contains("did you mean"), "{message}");
    env.json(&["pull", "debain-13"]).error("no_such_image");
    assert_eq!(state(&env), Vec::new());
}

#[test]
fn a_file_that_is_no_image_is_refused_saying_what_image_takes() {
    let env = TestEnv::new();
    std::fs::write(env.home().join("notes.txt"), "my notes\n").unwrap();
    refused(
        &env,
        &["create", "x", "--image", "./notes.txt"],
        "invalid_spec",
        &[
            "notes.txt",
            "not an ISO 9660 image",
            "a catalog id",
            "a qcow2 disk image",
            "an installer or live ISO",
        ],
    );
}

/// `create --ssh-port` keeps the port given (pinned: `up` names it when taken instead of
/// moving the VM), refused like `update --ssh-port` when it is privileged or another VM's.
#[test]
fn create_takes_an_ssh_port_and_keeps_it() {
    let env = TestEnv::new();
    env.plant_image(DEBIAN_CLOUD);
    let made = env.json(&["create", "w", "--image", "debian-13", "--ssh-port", "2290"]);
    assert_eq!(made.data()["vm"]["ssh_port"], 2290);
    assert!(env.vm_toml("w").contains("sshport_pinned = true"));
    refused(
        &env,
        &["create", "v", "--image", "debian-13", "--ssh-port", "2290"],
        "invalid_spec",
        &["2290", "w's ssh port"],
    );
    refused(
        &env,
        &["create", "v", "--image", "debian-13", "--ssh-port", "22"],
        "invalid_spec",
        &["ssh port", "below 1024"],
    );
    // Without the flag a free port is picked, and left free to move at `up`.
    env.json(&["create", "v", "--image", "debian-13"]).data();
    assert!(!env.vm_toml("v").contains("sshport_pinned = true"));
}

/// `create --forward HOST:GUEST` (repeatable) sets the forwards `forward` would, checked the
/// same way, and the ssh port create picks is never one of them.
#[test]
fn create_takes_forwards_checked_as_forward_does() {
    let env = TestEnv::new();
    env.plant_image(DEBIAN_CLOUD);
    let made = env.json(&[
        "create",
        "w",
        "--image",
        "debian-13",
        "--forward",
        "8080:80",
        "--forward",
        "2200:22",
    ]);
    let vm = &made.data()["vm"];
    assert_eq!(
        vm["forwards"],
        serde_json::json!([
            {"host_port": 8080, "guest_port": 80},
            {"host_port": 2200, "guest_port": 22}
        ])
    );
    assert_ne!(vm["ssh_port"], 2200);
    let create = |extra: &[&'static str]| {
        let mut args = vec!["create", "v", "--image", "debian-13"];
        args.extend_from_slice(extra);
        args
    };
    for (extra, names) in [
        (
            &["--forward", "9080:80", "--forward", "9080:81"][..],
            &["9080", "twice"][..],
        ),
        (&["--forward", "80:80"], &["80", "below 1024"]),
        (
            &["--forward", "9080:80", "--ssh-port", "9080"],
            &["9080", "own ssh port"],
        ),
        (&["--forward", "8080:80"], &["8080", "w's declared forward"]),
    ] {
        refused(&env, &create(extra), "invalid_spec", names);
    }
    let before = state(&env);
    let message = env.json(&create(&["--forward", "9080"])).error("usage");
    assert!(
        message.contains("--forward \"9080\" is not HOST:GUEST"),
        "{message}"
    );
    assert_eq!(state(&env), before);
}
