//! create, update, rm, clone and forward through the real binary, in both modes: every
//! success path and every error code these commands can reach without a booted guest.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::{
    create_disk, create_live, make_qcow2, qemu_info, FakeRunningVm, Spawned, TestEnv, ALPINE_VIRT,
    DEBIAN_CLOUD, PLANTED_PASSWORD,
};

/// Starts stoat with `args` in the background, its stdin piped too.
fn spawn_piped(env: &TestEnv, args: &[&str]) -> Spawned {
    Spawned::start(env.std_cmd(args).stdin(Stdio::piped()))
}

fn vm_dir(env: &TestEnv, name: &str) -> std::path::PathBuf {
    env.root().join(name)
}

// ---------------------------------------------------------------- create

#[test]
fn create_from_a_catalog_id_uses_the_catalog_and_defaults() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let run = env.json(&["create", "work", "--image", "alpine-virt"]);
    let vm = &run.data()["vm"];
    assert_eq!(vm["name"], "work");
    assert_eq!(vm["os"], "alpine");
    assert_eq!(vm["backend"], "apkovl");
    assert_eq!(vm["mode"], "live");
    assert_eq!(vm["disk"], "");
    assert_eq!(vm["ram_mb"], 4096);
    assert_eq!(vm["cpus"], 4);
    let port = vm["ssh_port"].as_u64().unwrap();
    assert!((2200..=2299).contains(&port), "{port}");
    assert_eq!(vm["ssh_user"], "root");
    assert_eq!(vm["state"], "stopped");
    assert_eq!(vm["allow_exec"], true);
    assert_eq!(vm["agent_access"], "exec");
    assert_eq!(vm["forwards"], json!([]));
    let toml = env.vm_toml("work");
    // The VM names the image store's copy of the file, which no later pull replaces.
    let iso_line =
        regex::Regex::new(&format!(r#"iso = "\.images/[0-9a-f]{{64}}/{ALPINE_VIRT}""#)).unwrap();
    assert!(iso_line.is_match(&toml), "{toml}");
    assert!(toml.contains("console_password = \"\""), "{toml}");
    let shared = env.root().join("shared").join("work");
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    run.assert_absent(&env.root().display().to_string());
}

#[test]
fn create_human_prints_a_short_summary() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let out = env.run(&["create", "work", "--image", "alpine-virt", "--ram", "512"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Another process on this host may hold 2200, so the port is masked.
    let mut settings = env.snapshot_settings();
    settings.add_filter(r"port 22\d\d", "port 22NN");
    let _masked = settings.bind_to_scope();
    insta::assert_snapshot!(text, @r"
    created work: alpine live (apkovl), 4 cpus, 512 MB, ssh port 22NN
    start it with: stoat up work
    ");
    let one = env.run(&["create", "solo", "--image", "alpine-virt", "--cpus", "1"]);
    let text = String::from_utf8(one.stdout).unwrap();
    assert!(text.contains("), 1 cpu, "), "{text}");
}

#[test]
fn create_cloud_image_records_the_base_user_and_password_but_never_shows_it() {
    let env = TestEnv::new();
    env.plant_image(DEBIAN_CLOUD);
    let run = env.json(&[
        "create",
        "c",
        "--image",
        "debian-13",
        "--console-password",
        PLANTED_PASSWORD,
    ]);
    let vm = &run.data()["vm"];
    assert_eq!(vm["mode"], "cloud");
    assert_eq!(vm["backend"], "cloudinit");
    assert_eq!(vm["ssh_user"], "stoat");
    assert_eq!(vm["disk"], "8G");
    let toml = env.vm_toml("c");
    assert!(toml.contains(&format!("console_password = \"{PLANTED_PASSWORD}\"")));
    let base = format!(
        r#"base = "{}/[0-9a-f]{{64}}/{DEBIAN_CLOUD}""#,
        regex::escape(&env.root().join(".images").display().to_string())
    );
    assert!(regex::Regex::new(&base).unwrap().is_match(&toml), "{toml}");
    assert!(toml.contains("iso = \"\""));
    let log = std::fs::read_to_string(env.root().join("logs/stoat.log")).unwrap();
    assert!(!log.contains(PLANTED_PASSWORD));
    // The default and the random password.
    env.json(&["create", "d", "--image", "debian-13"]).data();
    assert!(env.vm_toml("d").contains("console_password = \"stoat\""));
    env.json(&[
        "create",
        "r",
        "--image",
        "debian-13",
        "--console-password",
        "random",
    ])
    .data();
    let random = regex::Regex::new(r#"console_password = "([0-9a-f]{32})""#).unwrap();
    assert!(random.is_match(&env.vm_toml("r")), "{}", env.vm_toml("r"));
}

#[test]
fn create_from_an_absolute_byo_path_infers_and_accepts_overrides() {
    let env = TestEnv::new();
    let image = env.tmp().join("my-fedora-server.iso");
    std::fs::write(&image, crate::common::iso9660_placeholder()).unwrap();
    let image_arg = image.display().to_string();
    let vm = env
        .json(&["create", "f", "--image", &image_arg, "--disk", "32M"])
        .data()["vm"]
        .clone();
    assert_eq!(
        (vm["os"].as_str(), vm["backend"].as_str()),
        (Some("fedora"), Some("ssh"))
    );
    assert_eq!(vm["mode"], "disk");
    assert_eq!(
        vm["ssh_user"], "root",
        "a BYO ssh image has no recorded user"
    );
    assert!(env.vm_toml("f").contains(&format!("iso = \"{image_arg}\"")));
    let disk = qemu_info(&vm_dir(&env, "f").join("disk.qcow2"));
    assert_eq!(disk["virtual-size"], 32 << 20);
    let vm = env
        .json(&[
            "create",
            "g",
            "--image",
            &image_arg,
            "--os",
            "alpine",
            "--backend",
            "apkovl",
        ])
        .data()["vm"]
        .clone();
    assert_eq!(
        (vm["os"].as_str(), vm["mode"].as_str()),
        (Some("alpine"), Some("live"))
    );
}

#[test]
fn create_uses_the_catalog_that_stoat_catalog_names() {
    let mut env = TestEnv::new();
    let catalog = env.tmp().join("catalog.toml");
    std::fs::write(
        &catalog,
        "[[image]]\nid = \"tiny\"\nos = \"debian\"\nbackend = \"cloudinit\"\nurl = \"http://127.0.0.1:1/tiny-guest.qcow2\"\nssh_user = \"stoat\"\n",
    )
    .unwrap();
    env.set_env("STOAT_CATALOG", catalog.to_str().unwrap());
    env.json(&["create", "t", "--image", "tiny"])
        .error("image_not_downloaded");
    env.json(&["create", "t", "--image", "alpine-virt"])
        .error("not_found");
    env.plant_image("tiny-guest.qcow2");
    let vm = env.json(&["create", "t", "--image", "tiny"]).data()["vm"].clone();
    assert_eq!(
        (vm["os"].as_str(), vm["mode"].as_str()),
        (Some("debian"), Some("cloud"))
    );
}

#[test]
fn create_from_a_bare_filename_in_isos() {
    let env = TestEnv::new();
    env.plant_image("custom-ubuntu-cloudimg.img");
    // A cloud image must really be a qcow2, whatever its name.
    let planted = env.root().join("isos/custom-ubuntu-cloudimg.img");
    std::fs::remove_file(&planted).unwrap();
    make_qcow2(&planted, "16M");
    let vm = env
        .json(&["create", "u", "--image", "custom-ubuntu-cloudimg.img"])
        .data()["vm"]
        .clone();
    assert_eq!(
        (vm["os"].as_str(), vm["mode"].as_str()),
        (Some("ubuntu"), Some("cloud"))
    );
    assert_eq!(vm["ssh_user"], "stoat");
}

#[test]
fn create_records_share_recipes_params_access_and_display() {
    let mut env = TestEnv::new();
    env.set_env("STOAT_GRAPHICAL", "1");
    env.plant_image(ALPINE_VIRT);
    env.write_recipe("docker", "name = \"docker\"\nos = [\"alpine\"]\n", "");
    let vm = env
        .json(&[
            "create",
            "w",
            "--image",
            "alpine-virt",
            "--share",
            "~/src",
            "--recipes",
            "docker",
            "--param",
            "user=me",
            "--allow-exec=false",
            "--agent-access",
            "observe",
            "--display",
            "vnc",
            "--cpus",
            "2",
        ])
        .data()["vm"]
        .clone();
    assert_eq!(vm["share"], env.home().join("src").display().to_string());
    assert_eq!(vm["recipes"], json!(["docker"]));
    assert_eq!(vm["allow_exec"], false);
    assert_eq!(vm["agent_access"], "observe");
    assert_eq!(vm["display"], "vnc");
    assert_eq!(vm["cpus"], 2);
    assert!(env.vm_toml("w").contains("user = \"me\""));
    let plain = env.json(&[
        "create",
        "p",
        "--image",
        "alpine-virt",
        "--allow-exec=false",
    ]);
    assert_eq!(plain.data()["vm"]["agent_access"], "manage");
    assert_eq!(plain.data()["vm"]["display"], "window");
}

#[test]
fn create_errors_carry_their_codes() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let dir_image = env.tmp().display().to_string();
    let missing = env.tmp().join("nope.iso").display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["create", "a", "--image", "ubuntu-24.04"],
            "image_not_downloaded",
        ),
        (&["create", "a", "--image", "ghost"], "not_found"),
        (&["create", "a", "--image", ""], "not_found"),
        (&["create", "a", "--image", &missing], "not_found"),
        (&["create", "a", "--image", &dir_image], "invalid_spec"),
        (&["create", "a b", "--image", "alpine-virt"], "invalid_spec"),
        (&["create", "a/b", "--image", "alpine-virt"], "invalid_spec"),
        (&["create", "", "--image", "alpine-virt"], "invalid_spec"),
        (
            &["create", "a", "--image", "alpine-virt", "--ram", "100"],
            "invalid_spec",
        ),
        (
            &[
                "create",
                "a",
                "--image",
                "alpine-virt",
                "--mode",
                "disk",
                "--disk",
                "8GB",
            ],
            "invalid_spec",
        ),
        (
            &["create", "a", "--image", "alpine-virt", "--mode", "cloud"],
            "invalid_spec",
        ),
        (
            &["create", "a", "--image", "alpine-virt", "--disk", "8G"],
            "invalid_spec",
        ),
        (
            &[
                "create",
                "a",
                "--image",
                "alpine-virt",
                "--agent-access",
                "root",
            ],
            "invalid_spec",
        ),
        (
            &["create", "a", "--image", "alpine-virt", "--display", "hdmi"],
            "invalid_spec",
        ),
        (
            &[
                "create",
                "a",
                "--image",
                "alpine-virt",
                "--console-password",
                "x",
            ],
            "invalid_spec",
        ),
        (
            &["create", "a", "--image", "alpine-virt", "--os", "debian"],
            "invalid_spec",
        ),
        (
            &["create", "a", "--image", ALPINE_VIRT, "--backend", "floppy"],
            "invalid_spec",
        ),
        (
            &[
                "create",
                "a",
                "--image",
                "alpine-virt",
                "--recipes",
                "ghost",
            ],
            "recipe_not_applicable",
        ),
        (
            &["create", "a", "--image", "alpine-virt", "--param", "x=y"],
            "invalid_spec",
        ),
        (&["create", "a"], "usage"),
        (
            &["create", "a", "--image", "alpine-virt", "--ram", "lots"],
            "usage",
        ),
    ];
    for (args, code) in cases {
        let run = env.json(args);
        run.error(code);
    }
    assert!(
        !env.root().join("a").exists(),
        "a failed create leaves nothing"
    );
    let listed = env.json(&["ls"]);
    assert_eq!(listed.data()["vms"], json!([]));
}

#[test]
fn create_refuses_a_recipe_offered_to_another_os() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    write_recipe(&env, "debtool", "os = [\"debian\"]\n");
    let message = env
        .json(&[
            "create",
            "a",
            "--image",
            "alpine-virt",
            "--recipes",
            "debtool",
        ])
        .error("recipe_not_applicable");
    assert!(message.contains("alpine"), "{message}");
}

#[test]
fn create_name_taken_by_a_vm_a_reserved_dir_or_any_file() {
    let env = TestEnv::new();
    create_live(&env, "work");
    std::fs::write(env.root().join("afile"), b"").unwrap();
    for name in ["work", "isos", "shared", "afile"] {
        env.json(&["create", name, "--image", "alpine-virt"])
            .error("name_taken");
    }
    let out = env.run(&["create", "work", "--image", "alpine-virt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("name taken"));
}

#[test]
fn create_human_image_not_downloaded_hints_at_pull() {
    let env = TestEnv::new();
    let out = env.run(&["create", "a", "--image", "alpine-virt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stoat pull alpine-virt"));
}

#[test]
fn eight_parallel_creates_get_eight_distinct_ports() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    // The root exists before the race so every process sees the same isos/.
    env.json(&["ls"]).data();
    let children: Vec<_> = (0..8)
        .map(|i| {
            spawn_piped(
                &env,
                &[
                    "--json",
                    "create",
                    &format!("p{i}"),
                    "--image",
                    "alpine-virt",
                ],
            )
        })
        .collect();
    let mut ports: Vec<u64> = children
        .into_iter()
        .map(|mut child| {
            let run = child.json(Duration::from_secs(60));
            run.data()["vm"]["ssh_port"].as_u64().unwrap()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 8, "{ports:?}");
    let mut on_disk: Vec<String> = (0..8)
        .map(|i| {
            let toml = env.vm_toml(&format!("p{i}"));
            toml.lines()
                .find(|l| l.starts_with("sshport"))
                .unwrap()
                .to_owned()
        })
        .collect();
    on_disk.sort();
    on_disk.dedup();
    assert_eq!(on_disk.len(), 8);
}

// ---------------------------------------------------------------- update

#[test]
fn update_changes_only_given_fields_and_reports_what_changed() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let run = env.json(&["update", "w", "--ram", "1024", "--cpus", "4"]);
    assert_eq!(run.data()["changed"], json!(["ram"]), "cpus 4 is no change");
    assert_eq!(run.data()["applies_at"], "now");
    assert_eq!(run.data()["vm"]["ram_mb"], 1024);
    let run = env.json(&["update", "w", "--ram", "1024"]);
    assert_eq!(run.data()["changed"], json!([]));
    let run = env.json(&[
        "update",
        "w",
        "--share",
        "/srv/x",
        "--ssh-port",
        "2250",
        "--allow-exec=false",
        "--display",
        "vnc",
        "--agent-access",
        "observe",
    ]);
    assert_eq!(
        run.data()["changed"],
        json!(["agent_access", "allow_exec", "display", "share", "ssh_port"])
    );
    assert_eq!(run.data()["vm"]["ssh_port"], 2250);
    let run = env.json(&["update", "w", "--share", ""]);
    assert_eq!(run.data()["changed"], json!(["share"]));
    assert_eq!(run.data()["vm"]["share"], "");
}

#[test]
fn update_recipes_replace_clear_and_are_validated() {
    let env = TestEnv::new();
    create_live(&env, "w");
    for name in ["a", "b"] {
        write_recipe(&env, name, "");
    }
    let run = env.json(&["update", "w", "--recipes", "a,b"]);
    assert_eq!(run.data()["vm"]["recipes"], json!(["a", "b"]));
    assert_eq!(run.data()["changed"], json!(["recipes"]));
    env.json(&["update", "w", "--recipes", "ghost"])
        .error("recipe_not_applicable");
    let run = env.json(&["update", "w", "--recipes", ""]);
    assert_eq!(run.data()["vm"]["recipes"], json!([]));
}

#[test]
fn update_human_says_when_it_applies() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let out = env.run(&["update", "w", "--ram", "2048"]);
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap(), @"updated w: ram");
    let _running = FakeRunningVm::start(&vm_dir(&env, "w"));
    let out = env.run(&["update", "w", "--cpus", "2"]);
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap(), @r"
    updated w: cpus
    w is running; this takes effect at next start
    ");
    let run = env.json(&["update", "w", "--cpus", "3"]);
    assert_eq!(run.data()["applies_at"], "next_start");
    assert_eq!(run.data()["vm"]["state"], "running");
}

#[test]
fn update_grows_a_disk_with_qemu_img() {
    let env = TestEnv::new();
    create_disk(&env, "d");
    let run = env.json(&["update", "d", "--disk", "128M"]);
    assert_eq!(run.data()["changed"], json!(["disk"]));
    assert_eq!(run.data()["vm"]["disk"], "128M");
    let info = qemu_info(&vm_dir(&env, "d").join("disk.qcow2"));
    assert_eq!(info["virtual-size"], 128 << 20);
    let message = env
        .json(&["update", "d", "--disk", "64M"])
        .error("disk_shrink");
    assert!(message.contains("128M"));
    env.json(&["update", "d", "--disk", "lots"])
        .error("invalid_spec");
    let _running = FakeRunningVm::start(&vm_dir(&env, "d"));
    env.json(&["update", "d", "--disk", "1G"])
        .error("already_running");
    assert!(env.vm_toml("d").contains("disk = \"128M\""));
}

#[test]
fn update_disk_errors_for_live_and_never_started_cloud_vms() {
    let env = TestEnv::new();
    create_live(&env, "live");
    env.json(&["update", "live", "--disk", "10G"])
        .error("invalid_spec");
    env.plant_image(DEBIAN_CLOUD);
    env.json(&["create", "c", "--image", "debian-13"]).data();
    let message = env
        .json(&["update", "c", "--disk", "10G"])
        .error("invalid_spec");
    assert!(message.contains("start it once"), "{message}");
}

#[test]
fn update_errors_carry_their_codes() {
    let env = TestEnv::new();
    create_live(&env, "w");
    create_live(&env, "other");
    // Out of the way first: create picks ports free on the host at that moment, so `other`
    // may hold 2200 when another process had it while `w` was made.
    env.json(&["update", "other", "--ssh-port", "29552"]).data();
    env.json(&["update", "w", "--ssh-port", "2200"]).data();
    env.json(&["update", "other", "--ssh-port", "2201"]).data();
    env.json(&["forward", "other", "8080:80"]).data();
    env.write_broken_vm("broken");
    std::fs::write(
        env.root().join("broken/vm.toml"),
        "sshport = 2290\nmode = \"disk\n",
    )
    .unwrap();
    env.json(&["forward", "w", "9000:90"]).data();
    let cases: &[(&[&str], &str)] = &[
        (&["update", "w"], "usage"),
        (&["update", "w", "--ram", "100"], "invalid_spec"),
        (&["update", "w", "--cpus", "0"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "80"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "0"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "2201"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "8080"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "2290"], "invalid_spec"),
        (&["update", "w", "--ssh-port", "9000"], "invalid_spec"),
        (&["update", "w", "--agent-access", "root"], "invalid_spec"),
        (&["update", "w", "--os", "debian"], "immutable_field"),
        (&["update", "w", "--mode", "disk"], "immutable_field"),
        (&["update", "w", "--backend", "ssh"], "immutable_field"),
        (
            &["update", "w", "--image", "alpine-virt"],
            "immutable_field",
        ),
        (&["update", "ghost", "--ram", "1024"], "not_found"),
        (&["update", "broken", "--ram", "1024"], "broken"),
    ];
    let before = env.vm_toml("w");
    for (args, code) in cases {
        let message = env.json(args).error(code);
        if args.contains(&"--ssh-port") && *code == "invalid_spec" {
            assert!(message.contains("ssh port"), "{message}");
        }
    }
    assert_eq!(env.vm_toml("w"), before, "refused updates change nothing");
    // Asking for the value it already has is not a change.
    assert_eq!(
        env.json(&["update", "w", "--os", "alpine"]).data()["changed"],
        json!([])
    );
}

// ---------------------------------------------------------------- rm

#[test]
fn rm_with_yes_deletes_the_vm_and_its_share() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let run = env.json(&["rm", "w", "-y"]);
    assert_eq!(run.data(), &json!({"name": "w", "deleted": true}));
    assert!(!vm_dir(&env, "w").exists());
    assert!(!env.root().join("shared/w").exists());
    assert!(
        env.root().join("isos").join(ALPINE_VIRT).exists(),
        "isos/ untouched"
    );
    create_live(&env, "h");
    let out = env.run(&["rm", "h", "--yes"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "deleted h\n");
}

#[test]
fn rm_under_json_without_yes_never_reads_stdin() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let mut child = spawn_piped(&env, &["--json", "rm", "w"]);
    // A child that never reads may be gone before the write: a broken pipe is its right.
    let _ = child.stdin().take().unwrap().write_all(b"y\n");
    let run = child.json(Duration::from_secs(60));
    run.error("confirmation_required");
    assert!(vm_dir(&env, "w").join("vm.toml").exists());
}

#[test]
fn rm_in_human_mode_refuses_without_a_terminal() {
    let env = TestEnv::new();
    create_live(&env, "w");
    for args in [&["rm", "w"][..], &["rm", "w", "-q"]] {
        let out = env.cmd(args).write_stdin("y\n").output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("-y"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    assert!(vm_dir(&env, "w").exists());
}

#[test]
fn rm_errors_and_broken_vms() {
    let env = TestEnv::new();
    env.json(&["rm", "ghost", "-y"]).error("not_found");
    env.json(&["rm"]).error("usage");
    create_live(&env, "w");
    {
        let _running = FakeRunningVm::start(&vm_dir(&env, "w"));
        env.json(&["rm", "w"]).error("already_running");
        env.json(&["rm", "w", "-y"]).error("already_running");
    }
    assert!(vm_dir(&env, "w").exists());
    env.write_broken_vm("broken");
    env.json(&["rm", "broken", "-y"]).data();
    assert!(!vm_dir(&env, "broken").exists());
    env.json(&["rm", "isos", "-y"]).error("not_found");
    env.json(&["rm", "..", "-y"]).error("not_found");
}

// ---------------------------------------------------------------- clone

#[test]
fn clone_a_disk_vm_copies_its_disk_and_the_config() {
    let env = TestEnv::new();
    let source_port = create_disk(&env, "src")["ssh_port"].clone();
    env.json(&[
        "update",
        "src",
        "--allow-exec=false",
        "--agent-access",
        "observe",
        "--display",
        "vnc",
    ])
    .data();
    env.json(&["forward", "src", "8080:80"]).data();
    let run = env.json(&["clone", "src", "copy"]);
    let data = run.data();
    assert_eq!(data["source"], "src");
    assert_eq!(data["forwards_copied"], false);
    let vm = &data["vm"];
    assert_eq!(vm["name"], "copy");
    assert_eq!(vm["mode"], "disk");
    assert_eq!(vm["disk"], "64M");
    assert_eq!(vm["allow_exec"], false);
    assert_eq!(vm["agent_access"], "observe");
    assert_eq!(vm["display"], "vnc");
    assert_eq!(vm["forwards"], json!([]));
    assert_ne!(vm["ssh_port"], source_port);
    let info = qemu_info(&vm_dir(&env, "copy").join("disk.qcow2"));
    assert!(
        info.get("backing-filename").is_none(),
        "a clone's disk is its own: {info}"
    );
    assert_eq!(info["virtual-size"], 64 << 20);
    assert!(env.root().join("shared/copy").is_dir());
    run.assert_absent(&env.root().display().to_string());
    let out = env.run(&["clone", "src", "copy2"]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with("cloned src as copy2"));
}

#[test]
fn clone_of_a_cloud_vm_copies_its_disk_only_once_it_has_one() {
    let env = TestEnv::new();
    env.plant_image(DEBIAN_CLOUD);
    env.json(&[
        "create",
        "c",
        "--image",
        "debian-13",
        "--console-password",
        PLANTED_PASSWORD,
    ])
    .data();
    env.json(&["clone", "c", "fresh"]).data();
    assert!(!vm_dir(&env, "fresh").join("disk.qcow2").exists());
    assert!(
        env.vm_toml("fresh").contains(PLANTED_PASSWORD),
        "the console password is copied"
    );
    make_qcow2(&vm_dir(&env, "c").join("disk.qcow2"), "32M");
    env.json(&["clone", "c", "booted"]).data();
    let info = qemu_info(&vm_dir(&env, "booted").join("disk.qcow2"));
    assert!(info.get("backing-filename").is_none(), "{info}");
    assert_eq!(info["virtual-size"], 32 << 20);
}

#[test]
fn clone_errors_carry_their_codes_and_leave_nothing_behind() {
    let env = TestEnv::new();
    create_live(&env, "live");
    env.json(&["clone", "live", "live2"]).data();
    assert!(!vm_dir(&env, "live2").join("disk.qcow2").exists());
    env.write_broken_vm("broken");
    env.json(&["clone", "ghost", "x"]).error("not_found");
    env.json(&["clone", "broken", "x"]).error("broken");
    env.json(&["clone", "live", "live2"]).error("name_taken");
    env.json(&["clone", "live", "isos"]).error("name_taken");
    env.json(&["clone", "live", "a b"]).error("invalid_spec");
    env.json(&["clone", "live"]).error("usage");
    {
        let _running = FakeRunningVm::start(&vm_dir(&env, "live"));
        env.json(&["clone", "live", "x"]).error("already_running");
    }
    create_disk(&env, "d");
    std::fs::remove_file(vm_dir(&env, "d").join("disk.qcow2")).unwrap();
    env.json(&["clone", "d", "x"]).error("internal");
    assert!(!vm_dir(&env, "x").exists());
    assert!(!env.root().join("shared/x").exists());
}

// ---------------------------------------------------------------- forward

#[test]
fn forward_show_set_and_clear() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let run = env.json(&["forward", "w"]);
    assert_eq!(
        run.data(),
        &json!({"vm": "w", "forwards": [], "active": false})
    );
    let out = env.run(&["forward", "w"]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "w has no port forwards\n"
    );
    let run = env.json(&["forward", "w", "8080:80", " 9090 : 90 "]);
    assert_eq!(
        run.data(),
        &json!({"vm": "w", "forwards": [{"host_port": 8080, "guest_port": 80},
            {"host_port": 9090, "guest_port": 90}], "active": true, "applies_at": "now"})
    );
    let out = env.run(&["forward", "w"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "8080:80\n9090:90\n");
    let run = env.json(&["forward", "w", "--clear"]);
    assert_eq!(run.data()["forwards"], json!([]));
    assert_eq!(run.data()["applies_at"], "now");
    let out = env.run(&["forward", "w", "--clear"]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "cleared w's port forwards\n"
    );
}

#[test]
fn forward_on_a_running_vm_applies_at_next_start() {
    let env = TestEnv::new();
    create_live(&env, "w");
    let _running = FakeRunningVm::start(&vm_dir(&env, "w"));
    let run = env.json(&["forward", "w", "8080:80"]);
    assert_eq!(run.data()["active"], false);
    assert_eq!(run.data()["applies_at"], "next_start");
    // Saved after start: not live in the running process, so not active.
    let show = env.json(&["forward", "w"]);
    assert_eq!(show.data()["active"], false);
    assert!(show.data().get("applies_at").is_none());
    let out = env.run(&["forward", "w", "8081:81"]);
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap(), @r"
    8081:81
    w is running; this takes effect at next start
    ");
}

#[test]
fn forward_on_a_broken_vm_shows_nothing_and_cannot_set() {
    let env = TestEnv::new();
    env.write_broken_vm("broken");
    let run = env.json(&["forward", "broken"]);
    assert_eq!(
        run.data(),
        &json!({"vm": "broken", "forwards": [], "active": false})
    );
    env.json(&["forward", "broken", "8080:80"]).error("broken");
}

#[test]
fn forward_validation_refuses_every_clash() {
    let env = TestEnv::new();
    create_live(&env, "w");
    create_live(&env, "other");
    // Pinned: the allocator skips ports another process on this host holds.
    env.json(&["update", "w", "--ssh-port", "2200"]).data();
    env.json(&["update", "other", "--ssh-port", "2201"]).data();
    env.json(&["forward", "other", "7000:70"]).data();
    env.write_vm("broken", "sshport = 2290\nmode = \"disk\n");
    let cases: &[(&[&str], &str)] = &[
        (&["forward", "w", "0:80"], "invalid_spec"),
        (&["forward", "w", "8080:0"], "invalid_spec"),
        (&["forward", "w", "70000:80"], "invalid_spec"),
        (&["forward", "w", "8080:70000"], "invalid_spec"),
        (&["forward", "w", "80:80"], "invalid_spec"),
        (&["forward", "w", "8080:80", "8080:81"], "invalid_spec"),
        (&["forward", "w", "2200:22"], "invalid_spec"),
        (&["forward", "w", "2201:22"], "invalid_spec"),
        (&["forward", "w", "7000:70"], "invalid_spec"),
        (&["forward", "w", "2290:22"], "invalid_spec"),
        (&["forward", "w", "8080"], "usage"),
        (&["forward", "w", "a:80"], "usage"),
        (&["forward", "w", "--clear", "8080:80"], "usage"),
        (&["forward", "ghost"], "not_found"),
        (&["forward", "ghost", "8080:80"], "not_found"),
    ];
    for (args, code) in cases {
        let message = env.json(args).error(code);
        if args.contains(&"7000:70") {
            assert!(
                message.contains("other") && message.contains("forward"),
                "{message}"
            );
        }
        if args.contains(&"2290:22") {
            assert!(
                message.contains("broken") && message.contains("ssh port"),
                "{message}"
            );
        }
    }
    assert_eq!(env.json(&["forward", "w"]).data()["forwards"], json!([]));
    let out = env.run(&["forward", "w", "x:1"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Writes a valid local recipe `<root>/recipes/<name>` with extra manifest lines.
fn write_recipe(env: &TestEnv, name: &str, extra: &str) {
    env.write_recipe(
        name,
        &format!("name = \"{name}\"\nscript = \"install.sh\"\n{extra}"),
        "#!/bin/sh\ntrue\n",
    );
}
