//! Nothing lost, nothing exposed: clones that share nothing writable, kills at any point that
//! leave a command done or not done, owner-only files, untrusted images refused, listings
//! that survive unreadable entries, and bad input refused at the door. Through the real
//! binary; fault points (`STOAT_FAULT`, debug builds) put the kills at exact moments.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{create_disk, create_disk_args, qemu_info, TestEnv, ALPINE_VIRT};
use crate::test_sweeps::HOST_SECRET;

fn disk(env: &TestEnv, name: &str) -> PathBuf {
    env.root().join(name).join("disk.qcow2")
}

/// Runs one qemu-io command on a disk; returns whether it succeeded (a failed pattern
/// check is a failure).
fn qemu_io(disk: &Path, command: &str) -> bool {
    let out = std::process::Command::new("qemu-io")
        .args(["-f", "qcow2", "-c", command])
        .arg(disk)
        .output()
        .expect("qemu-io runs (apt install qemu-utils)");
    out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("failed")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

// ---------------------------------------------------------------- clone

#[test]
fn a_clone_shares_nothing_writable_with_its_source() {
    let env = TestEnv::new();
    create_disk(&env, "src");
    assert!(qemu_io(&disk(&env, "src"), "write -P 0x11 0 1M"));
    env.json(&["clone", "src", "copy"]).data();
    // The source boots and writes over the block the clone was made with.
    assert!(qemu_io(&disk(&env, "src"), "write -P 0x22 0 1M"));
    assert!(
        qemu_io(&disk(&env, "copy"), "read -P 0x11 0 1M"),
        "the clone still holds what the source had when it was cloned"
    );
    assert!(qemu_io(&disk(&env, "copy"), "write -P 0x33 1M 1M"));
    assert!(
        qemu_io(&disk(&env, "src"), "read -P 0 1M 1M"),
        "a write to the clone never reaches the source"
    );
    env.json(&["rm", "src", "-y"]).data();
    let copy = env.json(&["get", "copy"]).data().clone();
    assert_eq!(copy["vm"]["state"], "stopped", "{copy}");
    let info = qemu_info(&disk(&env, "copy"));
    assert!(info.get("backing-filename").is_none(), "{info}");
    assert!(qemu_io(&disk(&env, "copy"), "read -P 0x11 0 1M"));
    assert_eq!(mode(&disk(&env, "copy")), 0o600);
}

// ---------------------------------------------------------------- secrets and permissions

/// Runs stoat (with `--json`) under `umask`, as the test's own user; checks the contract.
fn json_with_umask(env: &TestEnv, args: &[&str], umask: u32) -> crate::common::JsonRun {
    use std::os::unix::process::CommandExt;
    let mut child = env.std_cmd(args);
    child.arg("--json");
    // SAFETY: umask is async-signal-safe.
    unsafe {
        child.pre_exec(move || {
            libc::umask(umask as libc::mode_t);
            Ok(())
        });
    }
    crate::common::JsonRun::check(child.output().unwrap())
}

/// A second, unprivileged local user, made on first use when the tests run as root.
fn other_user() -> Option<&'static str> {
    const NAME: &str = "stoat-other";
    if !rustix::process::getuid().is_root() {
        return None;
    }
    let exists = std::process::Command::new("id")
        .arg(NAME)
        .output()
        .ok()?
        .status
        .success();
    if !exists {
        let made = std::process::Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                NAME,
            ])
            .status()
            .expect("useradd runs");
        // A parallel test may have made it first.
        assert!(
            made.success()
                || std::process::Command::new("id")
                    .arg(NAME)
                    .status()
                    .unwrap()
                    .success()
        );
    }
    Some(NAME)
}

/// Whether `user` can read `path` (a file: its bytes; a directory: its listing).
fn readable_by(user: &str, path: &Path) -> bool {
    let tool = if path.is_dir() { "ls" } else { "cat" };
    std::process::Command::new("runuser")
        .args(["-u", user, "--", tool])
        .arg(path)
        .output()
        .expect("runuser runs")
        .status
        .success()
}

/// VMs made every way that writes a secret (create, up, down, clone), all under umask 0, in
/// a sandbox whose own directories are opened up: only stoat's modes guard them. Returns the
/// secret files.
fn secrets_made_under_umask_0() -> (TestEnv, crate::common::Reaper, Vec<PathBuf>) {
    let env = TestEnv::new();
    // Only stoat's own modes may stand between another user and the data root.
    for dir in [env.root().parent().unwrap(), &env.home()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::remove_dir(env.root()).unwrap();
    crate::common::fake_qemu(&env);
    let reaper = crate::common::Reaper::watch(&env, &["c"]);
    let base = env.tmp().join("base.qcow2");
    crate::common::make_qcow2(&base, "32M");
    let base_arg = base.display().to_string();
    json_with_umask(
        &env,
        &[
            "create",
            "c",
            "--image",
            &base_arg,
            "--console-password",
            crate::common::PLANTED_PASSWORD,
        ],
        0,
    )
    .data();
    json_with_umask(&env, &["up", "c", "--no-wait"], 0).data();
    json_with_umask(&env, &["down", "c"], 0).data();
    env.plant_image(ALPINE_VIRT);
    json_with_umask(&env, &create_disk_args("d"), 0).data();
    json_with_umask(&env, &["clone", "d", "d2"], 0).data();
    json_with_umask(&env, &["clone", "c", "c2"], 0).data();
    let root = env.root();
    let secrets = vec![
        root.join("c/vm.toml"),
        root.join("c/disk.qcow2"),
        root.join("c/ovl/seed.iso"),
        root.join("c2/disk.qcow2"),
        root.join("d/vm.toml"),
        root.join("d/disk.qcow2"),
        root.join("d2/disk.qcow2"),
        root.join("id_stoat"),
    ];
    (env, reaper, secrets)
}

#[test]
fn secrets_are_owner_only_whatever_the_umask() {
    let (env, _reaper, secrets) = secrets_made_under_umask_0();
    let root = env.root();
    assert_eq!(mode(&root), 0o700, "the data root");
    for file in &secrets {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    for dir in ["c", "c/ovl", "d", "d2"] {
        assert_eq!(mode(&root.join(dir)) & 0o077, 0, "{dir}/");
    }
}

#[test]
#[ignore = "needs root to add a second user (make test runs as root)"]
fn another_user_reads_no_secret_whatever_the_umask() {
    let user = other_user()
        .expect("needs root: a second local user is made with useradd (run the tests as root)");
    let (env, _reaper, secrets) = secrets_made_under_umask_0();
    let root = env.root();
    assert!(
        !readable_by(user, &root),
        "another user lists the data root"
    );
    // Even with the root opened up, each file keeps its own guard.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in ["c", "c/ovl", "d", "d2", "c2"] {
        std::fs::set_permissions(root.join(dir), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for file in &secrets {
        assert!(!readable_by(user, file), "{user} reads {}", file.display());
    }
}

#[test]
fn a_mistyped_console_password_is_never_echoed() {
    let env = TestEnv::new();
    env.write_vm(
        "w",
        "name = \"w\"\nmode = \"cloud\"\nconsole_password = 8675309\nsshport = 2222\n",
    );
    for args in [&["ls"][..], &["get", "w"][..]] {
        let run = env.json(args);
        assert!(!run.stdout.contains("8675309"), "{}", run.stdout);
        assert!(run.stdout.contains("broken"), "{}", run.stdout);
    }
    let human = env.run(&["ls"]);
    assert!(!String::from_utf8_lossy(&human.stdout).contains("8675309"));
    assert!(!String::from_utf8_lossy(&human.stderr).contains("8675309"));
}

// ---------------------------------------------------------------- untrusted images

fn qemu_img(args: &[&str]) {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    crate::common::qemu_img(&args);
}

/// `create` of each image must fail with `invalid_spec` and write nothing.
fn refused(env: &TestEnv, image: &Path, why: &str) {
    let image_arg = image.display().to_string();
    let run = env.json(&["create", "u", "--image", &image_arg]);
    let message = run.error("invalid_spec");
    assert!(!message.contains('\n'), "{message}");
    assert!(!env.root().join("u").exists(), "{why}: nothing written");
    assert!(
        !env.root().join("shared/u").exists(),
        "{why}: nothing written"
    );
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn an_untrusted_image_cannot_reach_host_files() -> TestEnv {
    let env = TestEnv::new();
    let dir = env.tmp().join("byo");
    let elsewhere = env.tmp().join("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let host_file = elsewhere.join("secret.txt");
    std::fs::write(&host_file, HOST_SECRET).unwrap();
    let s = |p: &Path| p.display().to_string();

    // A qcow2 whose backing file is a host file, read raw.
    let evil = dir.join("evil-cloudimg.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        &s(&host_file),
        "-F",
        "raw",
        &s(&evil),
        "1M",
    ]);
    refused(&env, &evil, "raw host file as backing");
    // A qcow2 backed by a qcow2 in another directory.
    let other_base = elsewhere.join("base.qcow2");
    qemu_img(&["create", "-q", "-f", "qcow2", &s(&other_base), "16M"]);
    let outside = dir.join("outside-cloudimg.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        &s(&other_base),
        "-F",
        "qcow2",
        &s(&outside),
    ]);
    refused(&env, &outside, "backing outside the image's directory");
    // A qcow2 backed by a raw file in its own directory.
    let raw_base = dir.join("raw-base.img");
    std::fs::write(&raw_base, vec![0u8; 1 << 20]).unwrap();
    let raw_backed = dir.join("rawbacked-cloudimg.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        &s(&raw_base),
        "-F",
        "raw",
        &s(&raw_backed),
    ]);
    refused(&env, &raw_backed, "non-qcow2 backing");
    // A raw disk image can never boot as a cloud image (its overlay is qcow2 over qcow2).
    refused(&env, &raw_base, "raw cloud image");
    // A qcow2 named like an ISO, which QEMU would have probed as qcow2.
    let fake_iso = dir.join("alpine-virt-evil.iso");
    std::fs::copy(&evil, &fake_iso).unwrap();
    refused(&env, &fake_iso, "qcow2 posing as an ISO");

    // A chain that stays in its own directory, all qcow2, is fine.
    let base = dir.join("base.qcow2");
    qemu_img(&["create", "-q", "-f", "qcow2", &s(&base), "16M"]);
    let good = dir.join("good-cloudimg.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        &s(&base),
        "-F",
        "qcow2",
        &s(&good),
    ]);
    let good_arg = s(&good);
    env.json(&["create", "ok", "--image", &good_arg]).data();
    env
}

#[test]
fn qemu_is_always_told_each_drive_format() {
    let env = TestEnv::new();
    crate::common::fake_qemu(&env);
    let _reaper = crate::common::Reaper::watch(&env, &["c", "d"]);
    let base = env.tmp().join("base.qcow2");
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        &base.display().to_string(),
        "16M",
    ]);
    let base_arg = base.display().to_string();
    env.json(&["create", "c", "--image", &base_arg]).data();
    create_disk(&env, "d");
    env.seed_boot_files("d");
    for vm in ["c", "d"] {
        env.json(&["up", vm, "--no-wait"]).data();
        let argv = std::fs::read_to_string(env.root().join(vm).join("qemu.argv")).unwrap();
        let argv: Vec<&str> = argv.lines().collect();
        assert!(
            !argv.contains(&"-cdrom") && !argv.contains(&"-hda"),
            "{argv:?}"
        );
        let drives: Vec<&str> = argv
            .windows(2)
            .filter(|w| w[0] == "-drive")
            .map(|w| w[1])
            .collect();
        assert!(drives.len() >= 2, "{vm}: {drives:?}");
        for drive in drives {
            assert!(drive.contains(",format="), "{vm}: probed format: {drive}");
        }
        env.json(&["down", vm]).data();
    }
}

// ---------------------------------------------------------------- robust listing

#[test]
fn one_unreadable_entry_lists_as_broken_and_the_rest_still_lists() {
    let env = TestEnv::new();
    create_disk(&env, "good");
    // vm.toml is a directory.
    std::fs::create_dir_all(env.root().join("dirvm/vm.toml")).unwrap();
    // vm.toml is endless.
    std::fs::create_dir_all(env.root().join("zero")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.root().join("zero/vm.toml")).unwrap();
    let run = env.json(&["ls"]);
    let vms = run.data()["vms"].as_array().unwrap().clone();
    let state = |name: &str| {
        vms.iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {vms:?}"))
            .clone()
    };
    assert_eq!(state("good")["state"], "stopped");
    for name in ["dirvm", "zero"] {
        let vm = state(name);
        assert_eq!(vm["state"], "broken", "{vm}");
        assert!(vm["error"].as_str().unwrap().contains("vm.toml"), "{vm}");
    }
    let prune = env.json(&["prune", "--broken"]);
    let items = prune.data()["items"].to_string();
    assert!(items.contains("dirvm") && items.contains("zero"), "{items}");
    assert!(!items.contains("good"), "{items}");
    let answers = crate::test_mcp::calls(&env, &[], &[("list_vms", serde_json::json!({}))]);
    let listed = crate::test_mcp::ok(&answers[0]).to_string();
    assert!(
        listed.contains("good") && listed.contains("dirvm"),
        "{listed}"
    );
}

#[test]
fn a_data_root_that_cannot_be_made_lists_nothing_and_doctor_still_answers() {
    let mut env = TestEnv::new();
    // sysfs refuses a new directory to every user, root included.
    env.set_env("STOAT_HOME", "/sys/kernel/stoat-test-absent-root");
    assert_eq!(env.json(&["ls"]).data()["vms"], serde_json::json!([]));
    let prune = env.json(&["prune", "--broken", "--images"]);
    assert_eq!(prune.data()["items"], serde_json::json!([]));
    let doctor = env.json(&["doctor"]);
    assert_eq!(doctor.data()["healthy"], false, "{}", doctor.stdout);
    assert!(!std::path::Path::new("/sys/kernel/stoat-test-absent-root").exists());
}

// ---------------------------------------------------------------- kills at any point

/// Runs stoat with `STOAT_FAULT=point`; asserts it died there (SIGKILL, no exit status).
pub(crate) fn killed_at(env: &TestEnv, point: &str, args: &[&str]) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = env.cmd(&all).env("STOAT_FAULT", point).output().unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "{args:?} never reached fault point {point}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Leftover temporary files and staging entries anywhere under the root.
pub(crate) fn leftovers(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with(".vm.toml.") || dir.ends_with(".staging") {
                found.push(path.clone());
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found
}

/// After a kill: the name is either a complete, healthy VM or not there at all, everywhere.
fn done_or_not_done(env: &TestEnv, name: &str, has_disk: bool) -> bool {
    let listed = env.json(&["ls"]).data()["vms"].clone();
    for vm in listed.as_array().unwrap() {
        assert_ne!(vm["state"], "broken", "a kill left a broken VM: {vm}");
    }
    let in_list = listed.as_array().unwrap().iter().any(|v| v["name"] == name);
    let get = env.json(&["get", name]);
    if in_list {
        get.data();
        if has_disk {
            assert!(
                qemu_io(&disk(env, name), "read 0 64k"),
                "{name}'s disk is whole"
            );
        }
    } else {
        get.error("not_found");
    }
    in_list
}

#[test]
fn a_kill_at_any_point_leaves_each_command_done_or_not_done() {
    let creates: &[&str] = &create_disk_args("n");
    let clones: &[&str] = &["clone", "src", "n"];
    let cases: &[(&[&str], &str)] = &[
        (creates, "staged"),
        (creates, "filled"),
        (creates, "commit"),
        (creates, "temp-written"),
        (clones, "staged"),
        (clones, "filled"),
        (clones, "commit"),
        (clones, "temp-written"),
    ];
    for (args, point) in cases {
        let env = TestEnv::new();
        create_disk(&env, "src");
        killed_at(&env, point, args);
        let done = done_or_not_done(&env, "n", true);
        assert!(!done, "{args:?} killed at {point} is not done");
        assert!(done_or_not_done(&env, "src", true));
        // The next command cleans up and the name is free.
        env.json(args).data();
        assert!(
            leftovers(&env.root()).is_empty(),
            "{:?}",
            leftovers(&env.root())
        );
        assert!(done_or_not_done(&env, "n", true));
    }
    // rm: killed once the VM has left its name, it is gone; the leftover goes next time.
    let env = TestEnv::new();
    create_disk(&env, "src");
    create_disk(&env, "other");
    killed_at(&env, "removed", &["rm", "src", "-y"]);
    assert!(!done_or_not_done(&env, "src", true));
    assert!(done_or_not_done(&env, "other", true));
    env.json(&["rm", "other", "-y"]).data();
    assert!(
        leftovers(&env.root()).is_empty(),
        "{:?}",
        leftovers(&env.root())
    );
    create_disk(&env, "src");
    assert!(
        std::fs::read_dir(env.root().join("shared/src"))
            .unwrap()
            .next()
            .is_none(),
        "a new VM never inherits an old share"
    );
    // update: killed before its vm.toml lands, the old record stands whole.
    let env = TestEnv::new();
    create_disk(&env, "src");
    killed_at(&env, "temp-written", &["update", "src", "--ram", "512"]);
    assert!(done_or_not_done(&env, "src", true));
    assert_eq!(env.json(&["get", "src"]).data()["vm"]["ram_mb"], 4096);
    env.json(&["update", "src", "--cpus", "2"]).data();
    assert!(
        leftovers(&env.root()).is_empty(),
        "{:?}",
        leftovers(&env.root())
    );
}

// ---------------------------------------------------------------- validate at the door

#[test]
fn bad_input_is_refused_at_create_with_one_line_and_nothing_written() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let long = "x".repeat(300);
    let cases: Vec<Vec<&str>> = vec![
        vec!["create", "a,b", "--image", "alpine-virt"],
        vec!["create", "a=b", "--image", "alpine-virt"],
        vec!["create", &long, "--image", "alpine-virt"],
        vec![
            "create",
            "n",
            "--image",
            "alpine-virt",
            "--ram",
            "4294967295",
        ],
        vec![
            "create",
            "n",
            "--image",
            "alpine-virt",
            "--mode",
            "disk",
            "--disk",
            "1",
        ],
        vec![
            "create",
            "n",
            "--image",
            "alpine-virt",
            "--mode",
            "disk",
            "--disk",
            "100000T",
        ],
    ];
    for args in cases {
        let run = env.json(&args);
        let message = run.error("invalid_spec");
        assert!(!message.contains('\n'), "{message}");
        let entries: Vec<_> = std::fs::read_dir(env.root())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                !n.starts_with('.') && !["isos", "recipes", "logs", "shared"].contains(&n.as_str())
            })
            .collect();
        assert!(entries.is_empty(), "{args:?} wrote {entries:?}");
    }
    env.json(&["get", &long]).error("not_found");
    env.json(&["rm", &long, "-y"]).error("not_found");
    create_disk(&env, "d");
    env.json(&["update", "d", "--ram", "4294967295"])
        .error("invalid_spec");
}

// ---------------------------------------------------------------- a killed disk grow

/// The qcow2's virtual size, as qemu-img reports it.
fn virtual_size(env: &TestEnv, name: &str) -> u64 {
    qemu_info(&disk(env, name))["virtual-size"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_killed_disk_grow_leaves_disk_and_record_agreeing() {
    // Killed after the resize, before vm.toml records it: the qcow2 is the truth.
    let env = TestEnv::new();
    create_disk(&env, "d");
    killed_at(&env, "resized", &["update", "d", "--disk", "128M"]);
    assert_eq!(virtual_size(&env, "d"), 128 << 20);
    assert_eq!(env.json(&["get", "d"]).data()["vm"]["disk"], "128M");
    let listed = env.json(&["ls"]).data()["vms"].clone();
    assert_eq!(listed[0]["disk"], "128M", "{listed}");
    // The next change records it for good, and growing again still works.
    env.json(&["update", "d", "--cpus", "2"]).data();
    let record = std::fs::read_to_string(env.root().join("d/vm.toml")).unwrap();
    assert!(record.contains("\"128M\""), "{record}");
    assert!(!env.root().join("d/.disk-resize").exists());
    env.json(&["update", "d", "--disk", "192M"]).data();
    assert_eq!(virtual_size(&env, "d"), 192 << 20);
    assert_eq!(env.json(&["get", "d"]).data()["vm"]["disk"], "192M");

    // Killed before the resize started: nothing changed, and the record says so.
    let env = TestEnv::new();
    create_disk(&env, "d");
    killed_at(&env, "resize-noted", &["update", "d", "--disk", "128M"]);
    assert_eq!(virtual_size(&env, "d"), 64 << 20);
    assert_eq!(env.json(&["get", "d"]).data()["vm"]["disk"], "64M");
    // Growing from the recorded size works as before.
    env.json(&["update", "d", "--disk", "96M"]).data();
    assert_eq!(virtual_size(&env, "d"), 96 << 20);
    assert_eq!(env.json(&["get", "d"]).data()["vm"]["disk"], "96M");
    assert!(leftovers(&env.root()).is_empty());
}

/// Runs `stoat --json` with raw (possibly non-UTF-8) arguments.
fn json_os(env: &TestEnv, args: &[&std::ffi::OsStr], home: bool) -> crate::common::JsonRun {
    let mut command = env.std_cmd(&["--json"]);
    command.args(args);
    if !home {
        command.env_remove("HOME");
    }
    crate::common::JsonRun::check(command.output().unwrap())
}

/// The VM directories in the root (nothing else stoat keeps there).
fn vm_dirs(env: &TestEnv) -> Vec<String> {
    std::fs::read_dir(env.root())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            !n.starts_with('.') && !["isos", "recipes", "logs", "shared"].contains(&n.as_str())
        })
        .collect()
}

#[test]
fn non_utf8_bytes_and_a_homeless_tilde_are_refused_at_the_door() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    create_disk(&env, "d");
    let before = std::fs::read(env.root().join("d/vm.toml")).unwrap();
    let bad = |bytes: &'static [u8]| OsStr::from_bytes(bytes);
    let s = |text: &'static str| OsStr::new(text);
    let image = [s("--image"), s("alpine-virt")];
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (
            [&[s("create"), bad(b"a\xffb")][..], &image].concat(),
            "argument",
        ),
        (
            [
                &[s("create"), s("n"), s("--share"), bad(b"/tmp/\xff")][..],
                &image,
            ]
            .concat(),
            "--share",
        ),
        (
            [
                &[s("create"), s("n"), bad(b"--console-password=p\xffw")][..],
                &image,
            ]
            .concat(),
            "--console-password",
        ),
        (
            vec![s("update"), s("d"), s("--share"), bad(b"/srv/\xfe")],
            "--share",
        ),
    ];
    for (args, names) in cases {
        let run = json_os(&env, &args, true);
        let message = run.error("invalid_spec");
        assert!(message.contains(names), "{message}");
        assert!(
            message.contains("UTF-8") && !message.contains('\n'),
            "{message}"
        );
        assert!(
            !message.contains('\u{fffd}'),
            "nothing mangled is echoed: {message}"
        );
    }
    assert_eq!(vm_dirs(&env), ["d"]);
    assert_eq!(std::fs::read(env.root().join("d/vm.toml")).unwrap(), before);

    // Without HOME, `~` cannot be expanded: refused, never a directory named `~`.
    for args in [
        vec![
            s("create"),
            s("n"),
            s("--share"),
            s("~/x"),
            s("--image"),
            s("alpine-virt"),
        ],
        vec![s("update"), s("d"), s("--share"), s("~")],
        vec![s("create"), s("n"), s("--image"), s("~/x.qcow2")],
    ] {
        let run = json_os(&env, &args, false);
        let message = run.error("invalid_spec");
        assert!(message.contains("HOME"), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }
    assert_eq!(vm_dirs(&env), ["d"]);
    assert_eq!(std::fs::read(env.root().join("d/vm.toml")).unwrap(), before);
}

// ---------------------------------------------------------------- bounded reads

/// A sparse file of `bytes` (no disk used): far bigger than any file stoat writes.
fn huge(path: &Path, bytes: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::File::create(path).unwrap().set_len(bytes).unwrap();
}

/// Runs with a bound on the wait: an unbounded read of an endless file never answers.
fn json_within(env: &TestEnv, dir: &Path, args: &[&str]) -> crate::common::JsonRun {
    let mut all = args.to_vec();
    all.push("--json");
    let out = env
        .cmd(&all)
        .current_dir(dir)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    crate::common::JsonRun::check(out)
}

#[test]
fn every_file_stoat_parses_is_read_with_a_bound() {
    let mut env = TestEnv::new();
    let home = env.home();
    let big = 64 << 20;
    // The catalog: an endless device, then a huge file.
    env.set_env("STOAT_CATALOG", "/dev/zero");
    let message = json_within(&env, &home, &["images"]).error("invalid_spec");
    assert!(message.contains("larger than"), "{message}");
    let catalog = env.tmp().join("catalog.toml");
    huge(&catalog, big);
    env.set_env("STOAT_CATALOG", catalog.to_str().unwrap());
    let message = json_within(&env, &home, &["images"]).error("invalid_spec");
    assert!(
        message.contains("larger than") && !message.contains('\n'),
        "{message}"
    );

    // A project's stoat.toml.
    let env = TestEnv::new();
    let project = env.home().join("proj");
    huge(&project.join("stoat.toml"), big);
    let message = json_within(&env, &project, &["status"]).error("invalid_spec");
    assert!(
        message.contains("stoat.toml") && message.contains("larger than"),
        "{message}"
    );

    // A recipe's manifest.
    let recipe = env.root().join("recipes/big");
    huge(&recipe.join("recipe.toml"), big);
    std::fs::write(recipe.join("install.sh"), "#!/bin/sh\n").unwrap();
    let message = json_within(&env, &env.home(), &["recipe", "show", "big"]).error("broken");
    assert!(
        message.contains("larger than") && !message.contains('\n'),
        "{message}"
    );

    // A vm.toml: listed as broken with the reason, the rest still lists.
    env.write_basic_vm("good", 2250);
    huge(&env.root().join("bad/vm.toml"), big);
    let listed = json_within(&env, &env.home(), &["ls"]).data()["vms"].clone();
    assert_eq!(listed[0]["name"], "bad");
    assert_eq!(listed[0]["state"], "broken");
    assert_eq!(listed[1]["name"], "good");
}

// ---------------------------------------------------------------- lock waits

/// A stoat run that stops itself (SIGSTOP) at a fault point; killed on drop if still there.
pub(crate) struct Paused(crate::common::Spawned);

impl Paused {
    /// Starts `stoat <args> --json` and waits until it has stopped at `point`.
    pub(crate) fn start(env: &TestEnv, args: &[&str], point: &str) -> Paused {
        let mut all = args.to_vec();
        all.push("--json");
        let run = crate::common::Spawned::start(
            env.std_cmd(&all)
                .env("STOAT_FAULT", point)
                .env("STOAT_DOWN_TIMEOUT_SECS", "1"),
        );
        crate::common::eventually(std::time::Duration::from_secs(30), || {
            let state = run.proc_state();
            assert!(
                state.is_some_and(|state| state != 'Z'),
                "ended before reaching {point}"
            );
            state == Some('T')
        });
        Paused(run)
    }

    fn pid(&self) -> i32 {
        self.0.pid()
    }

    /// Lets it go on and returns its result.
    pub(crate) fn resume(mut self) -> crate::common::JsonRun {
        self.0.signal(libc::SIGCONT);
        self.0.json(std::time::Duration::from_secs(60))
    }
}

/// A live VM `name` the fake QEMU boots, on a free ssh port.
fn write_bootable_live_vm(env: &TestEnv, name: &str) {
    env.seed_boot_files(name);
    env.write_vm(
        name,
        &format!(
            "name = \"{name}\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/nonexistent/x.iso\"\nram = 256\ncpus = 1\nsshport = {}\nsshuser = \"root\"\n",
            crate::common::free_port()
        ),
    );
}

#[test]
fn lock_waits_are_bounded_and_down_waits_for_an_up_in_flight() {
    use crate::common::{fake_qemu, Reaper};
    let env = TestEnv::new();
    fake_qemu(&env);
    write_bootable_live_vm(&env, "w");
    let _reaper = Reaper::watch(&env, &["w"]);

    // An `up` holds w's lock. A bounded wait for it gives up, naming the holder.
    let up = Paused::start(&env, &["up", "w", "--no-wait"], "up-locked");
    let out = env
        .cmd(&["down", "w", "--json"])
        .env("STOAT_LOCK_WAIT_SECS", "0.3")
        .output()
        .unwrap();
    let message = crate::common::JsonRun::check(out).error("timeout");
    assert!(
        message.contains("`stoat up`") && message.contains(&format!("pid {}", up.pid())),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");

    // A `down` during that `up` waits for it to settle, then stops the VM it started.
    let down = Paused::start(&env, &["down", "w"], "lock-busy");
    let started = up.resume();
    assert_eq!(
        started.data()["vm"]["state"],
        "running",
        "{}",
        started.stdout
    );
    let stopped = down.resume();
    assert_eq!(
        stopped.data()["vm"]["state"],
        "stopped",
        "{}",
        stopped.stdout
    );
    assert_eq!(env.json(&["get", "w"]).data()["vm"]["state"], "stopped");

    // The data-root lock: a create waiting behind an update gives up the same way.
    create_disk(&env, "d");
    let update = Paused::start(&env, &["update", "d", "--cpus", "2"], "update-locked");
    let out = env
        .cmd(&["create", "n", "--image", ALPINE_VIRT, "--json"])
        .env("STOAT_LOCK_WAIT_SECS", "0.3")
        .output()
        .unwrap();
    let message = crate::common::JsonRun::check(out).error("timeout");
    assert!(message.contains("`stoat update`"), "{message}");
    update.resume().data();
    assert!(
        !env.root().join("n").exists(),
        "the create that gave up wrote nothing"
    );
}

#[test]
fn rm_and_forward_during_an_up_wait_for_it_without_holding_the_data_root() {
    use crate::common::{fake_qemu, free_port, Reaper};
    let env = TestEnv::new();
    fake_qemu(&env);
    env.plant_image(ALPINE_VIRT);
    write_bootable_live_vm(&env, "w");
    let _reaper = Reaper::watch(&env, &["w"]);
    let port = free_port();

    // An `up` holds w's lock; an rm and a forward change of w each stop where they find it
    // held, having let go of the data-root lock.
    let up = Paused::start(&env, &["up", "w", "--no-wait"], "up-locked");
    let rm = Paused::start(&env, &["rm", "w", "-y"], "lock-busy");
    let forward = Paused::start(
        &env,
        &["forward", "w", "--add", &format!("{port}:80")],
        "lock-busy",
    );
    // Meanwhile another VM is made: the data-root lock is free.
    let out = env
        .cmd(&["create", "other", "--image", ALPINE_VIRT, "--json"])
        .env("STOAT_LOCK_WAIT_SECS", "10")
        .output()
        .unwrap();
    crate::common::JsonRun::check(out).data();

    let started = up.resume();
    assert_eq!(
        started.data()["vm"]["state"],
        "running",
        "{}",
        started.stdout
    );
    // Both went after the start: the rm meets a running VM, the forward waits for the next.
    rm.resume().error("already_running");
    let changed = forward.resume();
    assert_eq!(changed.data()["active"], false, "{}", changed.stdout);
    assert_eq!(
        changed.data()["applies_at"],
        "next_start",
        "{}",
        changed.stdout
    );
    let get = env.json(&["get", "w"]);
    assert_eq!(get.data()["vm"]["state"], "running");
    assert_eq!(get.data()["vm"]["forwards"][0]["host_port"], port);
}

// ---------------------------------------------------------------- one-line messages

#[test]
fn a_tool_failure_is_one_line_and_says_its_prefix_once() {
    let mut env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    // stoat-fake's qemu-img, failing every call with three lines, one ending in CRLF.
    env.fake_tool("qemu-img");
    env.fake_script(&serde_json::json!({"tools": {"qemu-img": [{
        "stderr": {"text": "qemu-img: Could not create 'disk.qcow2':\nNo space left on device\nthird\r\n"},
        "exit": 1
    }]}}));
    let args = create_disk_args("n");
    let run = env.json(&args);
    // The tool's words say the disk is full: a named error (docs/decisions/host.md).
    let message = run.error("invalid_spec");
    assert!(
        message.starts_with("no space left on the host's filesystem: "),
        "{message}"
    );
    assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{message:?}"
    );
    assert!(!message.contains("qemu-img: qemu-img"), "{message}");
    assert!(
        message.contains("Could not create") && message.contains("No space left on device; third"),
        "{message}"
    );
    // The human renderer shows the same one line.
    let human = env.run(&args);
    let stderr = String::from_utf8_lossy(&human.stderr).into_owned();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&message), "{stderr}");
    assert!(!env.root().join("n").exists());
}

/// `create` was refused and left nothing: no VM, no share, no kept copy of the image.
fn refused_with_nothing_left(env: &TestEnv, run: &crate::common::JsonRun, why: &str) -> String {
    let message = run.error("invalid_spec");
    assert!(!message.contains('\n'), "{message}");
    assert!(!env.root().join("u").exists(), "{why}: no VM");
    assert!(!env.root().join("shared/u").exists(), "{why}: no share");
    let kept: Vec<_> = std::fs::read_dir(env.root().join(".images"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    assert!(kept.is_empty(), "{why}: no kept copy: {kept:?}");
    message
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_qcow2_whose_data_file_is_a_host_file_is_refused() -> TestEnv {
    let env = TestEnv::new();
    let dir = env.tmp().join("byo");
    let elsewhere = env.tmp().join("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let host_file = elsewhere.join("secret.raw");
    let evil = dir.join("evil-cloudimg.qcow2");
    let s = |p: &Path| p.display().to_string();
    // qemu-img makes the data file; the "secret" is written into it afterwards.
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-o",
        &format!("data_file={}", s(&host_file)),
        &s(&evil),
        "1M",
    ]);
    std::fs::write(&host_file, HOST_SECRET).unwrap();
    let run = env.json(&["create", "u", "--image", &s(&evil)]);
    let message = refused_with_nothing_left(&env, &run, "external data file");
    assert!(message.contains("external data file"), "{message}");
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), HOST_SECRET);
    env
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn an_unverified_catalog_image_backed_by_a_host_file_is_refused() -> TestEnv {
    let mut env = TestEnv::new();
    let elsewhere = env.tmp().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let host_file = elsewhere.join("secret.txt");
    std::fs::write(&host_file, HOST_SECRET).unwrap();
    let evil = env.tmp().join("evil.qcow2");
    let s = |p: &Path| p.display().to_string();
    qemu_img(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        &s(&host_file),
        "-F",
        "raw",
        &s(&evil),
        "1M",
    ]);
    // A mirror entry with no published checksum serves it.
    let server = crate::common::http::Server::start();
    server.route(
        "/evil.qcow2",
        std::fs::read(&evil).unwrap(),
        crate::common::http::Behaviour::Normal,
    );
    let catalog = env.tmp().join("catalog.toml");
    std::fs::write(
        &catalog,
        format!(
            "[[image]]\nid = \"evil\"\nos = \"debian\"\nvariant = \"x\"\nbackend = \"cloudinit\"\nurl = \"{}/evil.qcow2\"\nbytes = 1\n",
            server.base()
        ),
    )
    .unwrap();
    env.set_env("STOAT_CATALOG", &s(&catalog));
    assert_eq!(env.json(&["pull", "evil"]).data()["verified"], false);
    let run = env.json(&["create", "u", "--image", "evil"]);
    let message = refused_with_nothing_left(&env, &run, "unverified catalog image");
    assert!(message.contains("backing file"), "{message}");
    env
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_host_file_that_is_not_an_iso_is_never_attached_as_one() -> TestEnv {
    let env = TestEnv::new();
    let secret = env.tmp().join("notes-alpine-virt.iso");
    std::fs::write(&secret, HOST_SECRET).unwrap();
    let arg = secret.display().to_string();
    for extra in [&["--mode", "live"][..], &["--mode", "disk"][..]] {
        let mut args = vec!["create", "u", "--image", &arg];
        args.extend_from_slice(extra);
        let run = env.json(&args);
        let message = refused_with_nothing_left(&env, &run, "not an ISO");
        assert!(message.contains("ISO 9660"), "{message}");
    }
    // The same path holding an ISO is taken.
    env.fake_alpine_iso(&secret);
    env.json(&["create", "u", "--image", &arg]).data();
    env
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_share_given_as_a_symlink_is_recorded_as_the_directory_it_names() -> TestEnv {
    let env = TestEnv::new();
    crate::common::create_disk(&env, "d");
    let real = env.tmp().join("project");
    std::fs::create_dir_all(&real).unwrap();
    let link = env.tmp().join("current");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let link_arg = link.display().to_string();
    let real_text = real.canonicalize().unwrap().display().to_string();
    let updated = env.json(&["update", "d", "--share", &link_arg]);
    assert_eq!(updated.data()["vm"]["share"], real_text.as_str());
    assert!(env
        .vm_toml("d")
        .contains(&format!("share = \"{real_text}\"")));
    // Re-pointing the link later changes nothing the VM exports.
    let elsewhere = env.tmp().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    assert!(env
        .vm_toml("d")
        .contains(&format!("share = \"{real_text}\"")));

    // A link that leads nowhere is refused, and nothing is made.
    let dangling = env.tmp().join("dangling");
    std::os::unix::fs::symlink(env.tmp().join("gone"), &dangling).unwrap();
    let dangling_arg = dangling.display().to_string();
    let run = env.json(&[
        "create",
        "u",
        "--image",
        "alpine-virt",
        "--share",
        &dangling_arg,
    ]);
    run.error("share_invalid");
    assert!(!env.root().join("u").exists());
    assert!(!env.root().join("shared/u").exists());
    let before = env.vm_toml("d");
    env.json(&["update", "d", "--share", &dangling_arg])
        .error("share_invalid");
    assert_eq!(env.vm_toml("d"), before, "update changed nothing");
    env
}

/// A FIFO at `path` (no writer ever comes).
fn fifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    use rustix::fs::{mkfifoat, Mode, CWD};
    mkfifoat(CWD, path, Mode::RUSR | Mode::WUSR).unwrap();
}

/// A FIFO where stoat expects a file it parses never hangs a command: the open does not wait
/// for a writer, and the file type is refused with a clear reason (a VM lists as broken).
/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_fifo_in_place_of_a_parsed_file_never_hangs_a_command() -> TestEnv {
    let mut env = TestEnv::new();
    let home = env.home();
    create_disk(&env, "good");

    // vm.toml: the VM lists as broken, the others still list, create and prune answer.
    fifo(&env.root().join("piped/vm.toml"));
    let vms = json_within(&env, &home, &["ls"]).data()["vms"].clone();
    let piped = vms
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "piped")
        .unwrap_or_else(|| panic!("{vms}"))
        .clone();
    assert_eq!(piped["state"], "broken", "{piped}");
    assert!(piped["error"].as_str().unwrap().contains("FIFO"), "{piped}");
    let get = json_within(&env, &home, &["get", "piped"]).data()["vm"].clone();
    assert_eq!(get["state"], "broken", "{get}");
    assert!(get["error"].as_str().unwrap().contains("FIFO"), "{get}");
    json_within(&env, &home, &crate::common::create_disk_args("other")).data();
    let prune = json_within(&env, &home, &["prune", "--broken"]).data()["items"].to_string();
    assert!(prune.contains("piped"), "{prune}");

    // A recipe manifest that is a FIFO is not a recipe: the listing and `show` answer.
    fifo(&env.root().join("recipes/piped/recipe.toml"));
    json_within(&env, &home, &["recipe", "show", "piped"]).error("not_found");
    let listed = json_within(&env, &home, &["recipes"]).stdout;
    assert!(!listed.contains("\"piped\""), "{listed}");
    // A recipe script that is a FIFO: refused when the recipe is checked, never read.
    let dir = env.write_recipe(
        "pscript",
        "schema = 3\nname = \"pscript\"\nscript = \"install.sh\"\n",
        "",
    );
    std::fs::remove_file(dir.join("install.sh")).unwrap();
    fifo(&dir.join("install.sh"));
    json_within(&env, &home, &["recipe", "show", "pscript"]);
    json_within(&env, &home, &["recipes"]).data();

    // The image catalog: `images` and `create` refuse it as bad input.
    let catalog = env.tmp().join("catalog.toml");
    fifo(&catalog);
    env.set_env("STOAT_CATALOG", catalog.to_str().unwrap());
    for args in [
        &["images"][..],
        &["create", "third", "--image", "alpine-virt"][..],
    ] {
        let message = json_within(&env, &home, args).error("invalid_spec");
        assert!(message.contains("FIFO"), "{args:?}: {message}");
    }
    env
}

/// A small tmpfs mounted over a test's data root, unmounted when dropped; `None` where this
/// process may not mount (not root).
struct SmallFs(PathBuf);

impl SmallFs {
    fn over(dir: &Path, size: &str) -> Option<SmallFs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| SmallFs(dir.to_path_buf()))
    }

    /// Fills the filesystem: one file grows until the first write that does not fit.
    fn fill(&self) {
        use std::io::Write as _;
        let mut filler = std::fs::File::create(self.0.join(".filler")).unwrap();
        let chunk = vec![0x5a_u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
        let _ = filler.flush();
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A data root whose filesystem is full: a command that must write there answers a named
/// error (not `internal`), and what it would have changed is as before.
#[test]
#[ignore = "needs root to mount a tmpfs (make test runs as root)"]
fn a_full_filesystem_is_a_named_error_and_changes_nothing() {
    let env = TestEnv::new();
    let fs = SmallFs::over(&env.root(), "2M")
        .expect("mount a 2 MiB tmpfs over the data root: this test needs root");
    create_disk(&env, "n");
    fs.fill();
    for args in [
        &["update", "n", "--ram", "768"][..],
        &["clone", "n", "m"][..],
        &["snapshot", "n", "clean"][..],
    ] {
        let message = env.json(args).error("invalid_spec");
        assert!(
            message.starts_with("no space left on the host's filesystem: "),
            "{args:?}: {message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }
    let vm = env.json(&["get", "n"]).data()["vm"].clone();
    assert_ne!(vm["ram"], 768, "{vm}");
    env.json(&["get", "m"]).error("not_found");
    drop(fs);
}

#[test]
fn a_snapshot_beside_an_rm_answers_as_one_order_would_never_internal() {
    let env = TestEnv::new();
    // Each round: a disk VM, then `snapshot` and `rm -y` of it at once. Either order is an
    // answer (saved then removed, or removed then not_found); a half-deleted disk is not.
    for round in 0..12 {
        let name = format!("r{round}");
        create_disk(&env, &name);
        let mut snapshot = env.spawn(&["--json", "snapshot", &name, "t1"]);
        let rm = env.json(&["rm", &name, "-y"]);
        assert!(rm.ok(), "{}", rm.stdout);
        let out = snapshot.json(std::time::Duration::from_secs(60));
        if !out.ok() {
            let code = out.result["error"]["code"].clone();
            assert_eq!(code, "not_found", "round {round}: {}", out.stdout);
        }
        assert!(!env.root().join(&name).exists());
    }
}
