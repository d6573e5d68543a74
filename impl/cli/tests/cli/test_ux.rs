//! What a person meets, through the real binary in the fake tier: `up` refuses a host port
//! something else holds before QEMU runs (moving an ssh port stoat picked instead, also when
//! the network could not bind it after the check); `forward` edits the list (`--add`/`--remove`) and
//! says what is live in the running QEMU; `doctor` shows every check, the accelerator, QEMU's
//! version and the way to software emulation (insta snapshots, this machine's paths masked).

use std::net::TcpListener;

use serde_json::json;

use crate::common::{
    fake_booted_qemu, fake_qemu, free_port, stoat_fake, stub, Reaper, TestEnv, PLANTED_PASSWORD,
};

/// A live VM `name` with ssh port `port` and `extra` vm.toml lines; its kernel is already
/// "extracted", so the fake QEMU is all `up` needs.
fn live_vm(env: &TestEnv, name: &str, port: u16, extra: &str) {
    env.seed_boot_files(name);
    env.write_vm(
        name,
        &format!(
            "name = \"{name}\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/nonexistent/x.iso\"\nram = 256\ncpus = 1\nsshport = {port}\nsshuser = \"root\"\nconsole_password = \"{PLANTED_PASSWORD}\"\n{extra}"
        ),
    );
}

/// A loopback listener on a port the kernel chose, held for the test: "another program".
fn held_port() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[test]
fn up_refuses_a_busy_pinned_ssh_port_or_forward_naming_it_and_starts_nothing() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let _reaper = Reaper::watch(&env, &["s", "f"]);
    let (_ssh_holder, ssh_port) = held_port();
    // A port the user chose (`update --ssh-port`) is never moved.
    live_vm(&env, "s", ssh_port, "sshport_pinned = true\n");
    let message = env
        .json(&["up", "s", "--no-wait"])
        .error("qemu_start_failed");
    assert!(
        message.contains(&format!("host port {ssh_port} (its ssh port) is in use")),
        "{message}"
    );
    assert!(message.contains("stoat update s --ssh-port"), "{message}");
    assert!(!env.root().join("s/qemu.argv").exists(), "QEMU was run");
    assert!(!env.root().join("s/qemu.pid").exists());
    // A human reads the same sentence as stderr's one error line, and the exit status is 1.
    let human = env.run(&["up", "s", "--no-wait"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8(human.stderr).unwrap();
    let error = stderr.lines().last().unwrap_or_default();
    assert!(
        error.starts_with("stoat: up: cannot start s: ")
            && error.contains(&format!("host port {ssh_port}")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("stoat: ").count(), 1, "{stderr}");

    let (_forward_holder, forward_port) = held_port();
    live_vm(
        &env,
        "f",
        free_port(),
        &format!("[[forwards]]\nhostport = {forward_port}\nguestport = 80\n"),
    );
    let message = env
        .json(&["up", "f", "--no-wait"])
        .error("qemu_start_failed");
    assert!(
        message.contains(&format!("host port {forward_port} (a forward) is in use")),
        "{message}"
    );
    assert!(
        message.contains(&format!("stoat forward f --remove {forward_port}")),
        "{message}"
    );
    assert!(!env.root().join("f/qemu.argv").exists(), "QEMU was run");
    assert_eq!(env.json(&["get", "f"]).data()["vm"]["state"], "stopped");
}

#[test]
fn up_moves_a_picked_ssh_port_another_program_holds_and_says_so() {
    let env = TestEnv::new();
    fake_booted_qemu(&env);
    let _reaper = Reaper::watch(&env, &["s"]);
    let (_holder, held) = held_port();
    live_vm(&env, "s", held, "");
    let before = std::fs::read_to_string(env.root().join("s/vm.toml")).unwrap();
    let human = env.run(&["up", "s"]);
    assert!(human.status.success(), "{human:?}");
    let stderr = String::from_utf8_lossy(&human.stderr);
    let vm = env.json(&["get", "s"]).data()["vm"].clone();
    let moved = vm["ssh_port"].as_u64().unwrap() as u16;
    assert_ne!(moved, held);
    assert!(
        stderr.contains(&format!(
            "ssh port {held} is in use by another program; it now uses {moved}"
        )),
        "{stderr}"
    );
    assert_eq!(vm["state"], "running");
    // The move is saved, and it is the port ssh-command and exec use.
    let after = std::fs::read_to_string(env.root().join("s/vm.toml")).unwrap();
    assert_ne!(before, after);
    assert!(after.contains(&format!("sshport = {moved}")), "{after}");
    let argv = env.json(&["ssh-command", "s"]).data()["argv"].clone();
    assert!(
        argv.as_array()
            .unwrap()
            .iter()
            .any(|a| a == &json!(moved.to_string())),
        "{argv}"
    );
    env.json(&["--json", "exec", "s", "true"]).data();
    env.json(&["down", "s"]).data();
}

/// Two data roots, each with a VM `w` on `port` (both picked the same free port when they
/// were created) under a fake booted QEMU; reaped when the reapers drop.
fn two_roots_sharing(port: u16) -> (TestEnv, TestEnv, [Reaper; 2]) {
    let (first, second) = (TestEnv::new(), TestEnv::new());
    let reapers = [
        Reaper::watch(&first, &["w"]),
        Reaper::watch(&second, &["w"]),
    ];
    for env in [&first, &second] {
        fake_booted_qemu(env);
        live_vm(env, "w", port, "");
    }
    (first, second, reapers)
}

/// `exec w true` succeeds in every root, then `down w`.
fn exec_then_down(roots: [&TestEnv; 2]) {
    for env in roots {
        let exec = env.json(&["--json", "exec", "w", "true"]);
        assert_eq!(exec.data()["exit_code"], 0);
        env.json(&["down", "w"]).data();
    }
}

#[test]
fn two_data_roots_whose_vms_have_one_ssh_port_both_start_and_exec() {
    let (first, second, _reapers) = two_roots_sharing(free_port());
    for env in [&first, &second] {
        assert_eq!(env.json(&["up", "w"]).data()["vm"]["state"], "running");
    }
    let ports: Vec<_> = [&first, &second]
        .iter()
        .map(|env| env.json(&["get", "w"]).data()["vm"]["ssh_port"].clone())
        .collect();
    assert_ne!(ports[0], ports[1], "each root's VM has a port of its own");
    exec_then_down([&first, &second]);
}

/// While one data root's `up` starts a VM on a port (claimed, not yet bound by its network),
/// another root's `up` of a VM stoat gave the same port moves off it instead of racing for it.
#[test]
fn a_port_another_root_is_starting_on_is_taken_for_this_up() {
    let port = free_port();
    let (first, second, _reapers) = two_roots_sharing(port);
    let starting = crate::test_integrity::Paused::start(&first, &["up", "w"], "up-claimed");
    let moved = second.json(&["up", "w"]);
    assert_eq!(moved.data()["vm"]["state"], "running");
    assert_ne!(
        second.json(&["get", "w"]).data()["vm"]["ssh_port"],
        port,
        "the second root's VM kept a port the first was starting on"
    );
    let started = starting.resume();
    assert_eq!(started.data()["vm"]["ssh_port"], port, "{}", started.stdout);
    exec_then_down([&first, &second]);
}

/// A second `up` of a VM another `up` is starting (its port claimed, its QEMU not started
/// yet) never moves that port: the VM would run on a port its record no longer names. It waits
/// for the VM's lock instead (here bounded, so it gives up while the first is held).
#[test]
fn a_second_up_of_a_starting_vm_leaves_its_port() {
    let env = TestEnv::new();
    let _reaper = Reaper::watch(&env, &["w"]);
    fake_booted_qemu(&env);
    let port = free_port();
    live_vm(&env, "w", port, "");
    let starting = crate::test_integrity::Paused::start(&env, &["up", "w"], "up-claimed");
    let second = env
        .cmd(&["up", "w", "--json"])
        .env("STOAT_LOCK_WAIT_SECS", "0.5")
        .output()
        .unwrap();
    crate::common::JsonRun::check(second).error("timeout");
    let record = env.vm_toml("w");
    assert!(
        record.contains(&format!("sshport = {port}\n")),
        "the second up moved the port of a VM being started:\n{record}"
    );
    let started = starting.resume();
    assert_eq!(started.data()["vm"]["ssh_port"], port, "{}", started.stdout);
    env.json(&["up", "w"]).error("already_running");
    let exec = env.json(&["--json", "exec", "w", "true"]);
    assert_eq!(exec.data()["exit_code"], 0);
    env.json(&["down", "w"]).data();
}

/// A sandbox whose QEMU boots (fake) and whose `passt` loses its ssh port on its first
/// `failures` runs ([`passt_losing_its_port`]), with VM `s`'s processes reaped at the end.
fn losing_its_port(failures: u32) -> (TestEnv, Reaper) {
    let env = TestEnv::new();
    passt_losing_its_port(&env, failures);
    fake_booted_qemu(&env);
    let reaper = Reaper::watch(&env, &["s"]);
    (env, reaper)
}

/// Makes `passt` fail its first `failures` runs as Debian 12's passt does when another program
/// holds the ssh port of its `-t` rule (a syslog complaint, then the rule it could not bind);
/// later runs are stoat-fake's passt. Each refused rule is appended to `<tmp>/passt-refused`.
fn passt_losing_its_port(env: &TestEnv, failures: u32) {
    let tmp = env.tmp();
    let fake = stoat_fake();
    stub(
        env,
        "passt",
        &format!(
            r#"runs=$(cat '{count}' 2>/dev/null || echo 0)
echo $((runs + 1)) > '{count}'
if [ "$runs" -lt {failures} ]; then
  rule= previous=
  for arg in "$@"; do
    if [ "$previous" = -t ]; then case "$arg" in *:22) rule=$arg ;; esac; fi
    previous=$arg
  done
  echo "$rule" >> '{refused}'
  echo "Failed to send 62 bytes to syslog" >&2
  echo "Failed to bind any port for '-t $rule', exiting" >&2
  exit 1
fi
exec '{fake}' --as passt "$@"
"#,
            count = tmp.join("passt-runs").display(),
            refused = tmp.join("passt-refused").display(),
            fake = fake.display(),
        ),
    );
}

/// The host ports passt refused to listen on, oldest first, and how often passt ran.
fn passt_refused(env: &TestEnv) -> (Vec<u16>, u32) {
    let refused = std::fs::read_to_string(env.tmp().join("passt-refused"))
        .unwrap_or_default()
        .lines()
        .map(|rule| {
            let host = rule.split('/').nth(1).unwrap().split(':').next().unwrap();
            host.parse().unwrap()
        })
        .collect();
    let runs = std::fs::read_to_string(env.tmp().join("passt-runs"))
        .map(|text| text.trim().parse().unwrap())
        .unwrap_or(0);
    (refused, runs)
}

/// The ports every `ssh` call stoat made went to (`-p PORT`).
fn ssh_ports_used(env: &TestEnv) -> Vec<u16> {
    env.fake_argvs("ssh")
        .iter()
        .filter_map(|argv| {
            let at = argv.iter().position(|arg| arg == "-p")?;
            argv.get(at + 1)?.parse().ok()
        })
        .collect()
}

/// Another program takes the ssh port after up's check and before passt binds it, and has let
/// it go again by the time up looks: the port stoat picked moves anyway, never back onto the
/// lost one, and the wait for ssh goes to the new port.
#[test]
fn a_port_lost_to_another_program_after_the_check_moves_even_when_free_again() {
    let (env, _reaper) = losing_its_port(1);
    let lost = free_port();
    live_vm(&env, "s", lost, "");
    let up = env.json(&["up", "s"]);
    assert_eq!(up.data()["vm"]["state"], "running", "{}", up.stderr);
    assert_eq!(passt_refused(&env), (vec![lost], 2));
    let now = env.json(&["get", "s"]).data()["vm"]["ssh_port"]
        .as_u64()
        .unwrap() as u16;
    assert_ne!(now, lost, "the VM stayed on the port passt could not bind");
    assert_eq!(up.data()["vm"]["ssh_port"], now);
    // The wait logged in on the new port, never on the old one.
    let used = ssh_ports_used(&env);
    assert!(!used.is_empty(), "up did not wait for ssh");
    assert!(used.iter().all(|port| *port == now), "{used:?}, now {now}");
    assert!(env.vm_toml("s").contains(&format!("sshport = {now}")));
    env.json(&["down", "s"]).data();
}

/// A port that is held when up checks is moved, and the port it moved to is then lost to
/// another program before passt binds it: up moves once more, onto neither, and says it went
/// from the first port to the last.
#[test]
fn two_moves_in_one_up_are_told_as_one_from_the_first_port_to_the_last() {
    let (env, _reaper) = losing_its_port(1);
    let (_holder, held) = held_port();
    live_vm(&env, "s", held, "");
    let human = env.run(&["up", "s"]);
    assert!(human.status.success(), "{human:?}");
    let stderr = String::from_utf8_lossy(&human.stderr);
    let (refused, runs) = passt_refused(&env);
    assert_eq!(runs, 2);
    let [between] = refused[..] else {
        panic!("{refused:?}")
    };
    let now = env.json(&["get", "s"]).data()["vm"]["ssh_port"]
        .as_u64()
        .unwrap() as u16;
    assert!(now != held && now != between, "{held} {between} {now}");
    assert!(
        stderr.contains(&format!(
            "ssh port {held} is in use by another program; it now uses {now}"
        )),
        "{stderr}"
    );
    assert!(ssh_ports_used(&env).iter().all(|port| *port == now));
    env.json(&["down", "s"]).data();
}

/// A port the user pinned is never moved: passt that cannot bind it gets one more start on it,
/// then up fails naming the port and the VM stays stopped on it.
#[test]
fn a_pinned_port_passt_cannot_bind_fails_naming_it_and_stays() {
    let (env, _reaper) = losing_its_port(u32::MAX);
    live_vm(&env, "s", free_port(), "");
    let pinned = free_port();
    env.json(&["update", "s", "--ssh-port", &pinned.to_string()])
        .data();
    let message = env.json(&["up", "s"]).error("qemu_start_failed");
    assert!(
        message.contains(&format!("127.0.0.1/{pinned}:22")),
        "{message}"
    );
    assert_eq!(passt_refused(&env), (vec![pinned, pinned], 2));
    let vm = env.json(&["get", "s"]).data()["vm"].clone();
    assert_eq!(vm["state"], "stopped");
    assert_eq!(vm["ssh_port"], pinned);
    assert!(ssh_ports_used(&env).is_empty(), "up waited for ssh");
}

#[test]
fn forward_add_and_remove_edit_the_list_and_keep_the_rest() {
    let env = TestEnv::new();
    live_vm(&env, "w", 2250, "");
    env.json(&["forward", "w", "8080:80"]).data();
    let run = env.json(&["forward", "w", "--add", "9090:90", "--add", "5432:5432"]);
    assert_eq!(
        run.data(),
        &json!({"vm": "w", "forwards": [{"host_port": 8080, "guest_port": 80},
            {"host_port": 9090, "guest_port": 90}, {"host_port": 5432, "guest_port": 5432}],
            "active": true, "applies_at": "now"})
    );
    // By host port, or exactly HOST:GUEST; a remove and an add in one call remap a port.
    let run = env.json(&["forward", "w", "--remove", "9090", "--remove", "5432:5432"]);
    assert_eq!(
        run.data()["forwards"],
        json!([{"host_port": 8080, "guest_port": 80}])
    );
    let run = env.json(&["forward", "w", "--remove", "8080", "--add", "8080:81"]);
    assert_eq!(
        run.data()["forwards"],
        json!([{"host_port": 8080, "guest_port": 81}])
    );

    // What cannot be done says what and changes nothing.
    let before = env.vm_toml("w");
    let refusals: [(&[&str], &str, &str); 7] = [
        (
            &["--remove", "7000"],
            "invalid_spec",
            "no forward from host port 7000",
        ),
        (
            &["--remove", "8080:80"],
            "invalid_spec",
            "no forward 8080:80",
        ),
        (
            &["--add", "8080:82"],
            "invalid_spec",
            "host port 8080 already forwards to guest port 81",
        ),
        (&["--add", "80:80"], "invalid_spec", "below 1024"),
        (&["--add", "2250:22"], "invalid_spec", "own ssh port"),
        (&["--add", "x:1"], "usage", "HOST:GUEST"),
        (&["--remove", "x"], "usage", "HOST or HOST:GUEST"),
    ];
    for (flags, code, words) in refusals {
        let mut args = vec!["forward", "w"];
        args.extend_from_slice(flags);
        let message = env.json(&args).error(code);
        assert!(message.contains(words), "{flags:?}: {message}");
        assert_eq!(env.vm_toml("w"), before, "{flags:?} changed vm.toml");
    }
    for mixed in [
        &["forward", "w", "1234:1", "--add", "1235:2"][..],
        &["forward", "w", "--clear", "--remove", "8080"],
    ] {
        let message = env.json(mixed).error("usage");
        assert!(message.contains("one or the other"), "{message}");
    }
    let human = env.run(&["forward", "w", "--add", "9000:90"]);
    assert_eq!(
        String::from_utf8(human.stdout).unwrap(),
        "8080:81\n9000:90\n"
    );
}

#[test]
fn forward_is_active_only_for_what_the_running_qemu_has() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let _reaper = Reaper::watch(&env, &["w"]);
    let [ssh, web, db] = stoat_testkit::free_ports::<3>();
    live_vm(
        &env,
        "w",
        ssh,
        &format!("[[forwards]]\nhostport = {web}\nguestport = 80\n"),
    );
    // Stopped: saved, nothing live.
    assert_eq!(env.json(&["forward", "w"]).data()["active"], false);
    env.json(&["up", "w", "--no-wait"]).data();
    let show = env.json(&["forward", "w"]);
    assert_eq!(
        show.data(),
        &json!({"vm": "w", "forwards": [{"host_port": web, "guest_port": 80}], "active": true})
    );
    let human = String::from_utf8(env.run(&["forward", "w"]).stdout).unwrap();
    assert_eq!(human, format!("{web}:80  live\n"));

    // Added while running: saved, not live, and show says so from then on.
    let add = env.json(&["forward", "w", "--add", &format!("{db}:5432")]);
    assert_eq!(add.data()["active"], false);
    assert_eq!(add.data()["applies_at"], "next_start");
    assert_eq!(env.json(&["forward", "w"]).data()["active"], false);
    let human = String::from_utf8(env.run(&["forward", "w"]).stdout).unwrap();
    assert_eq!(
        human,
        format!("{web}:80  live\n{db}:5432  saved; live from the next start\n")
    );
    // Removed while running: still live in QEMU until it stops.
    env.json(&["forward", "w", "--remove", &web.to_string()])
        .data();
    let human = String::from_utf8(env.run(&["forward", "w"]).stdout).unwrap();
    assert_eq!(
        human,
        format!(
            "{db}:5432  saved; live from the next start\n{web}:80  live until the VM stops; removed\n"
        )
    );
    // Back to exactly what QEMU has: in force now, active again.
    let back = env.json(&["forward", "w", &format!("{web}:80")]);
    assert_eq!(back.data()["active"], true);
    assert_eq!(back.data()["applies_at"], "now");
    assert_eq!(env.json(&["forward", "w"]).data()["active"], true);
}

/// A bin directory holding every tool doctor looks for (a QEMU that prints a fixed version),
/// a /dev/kvm stand-in that opens read-write, and a cpuinfo without vmx or svm: a host whose
/// KVM cannot boot guests, whatever this machine is.
fn doctor_host(env: &mut TestEnv) {
    for tool in [
        "qemu-img",
        "ssh",
        "scp",
        "ssh-keygen",
        "xorriso",
        "passt",
        "git",
    ] {
        stub(env, tool, "exit 0\n");
    }
    stub(
        env,
        "qemu-system-x86_64",
        "echo 'QEMU emulator version 10.0.2 (test stub)'\necho 'Copyright (c) the QEMU Project developers'\n",
    );
    let kvm = env.tmp().join("kvm");
    std::fs::write(&kvm, "").unwrap();
    let cpuinfo = env.tmp().join("cpuinfo");
    std::fs::write(
        &cpuinfo,
        "processor\t: 0\nflags\t\t: fpu vme sse sse2 hypervisor\n",
    )
    .unwrap();
    // Only these tools: what doctor finds is the test's choice.
    env.set_env("PATH", &env.bin().display().to_string());
    env.set_env("STOAT_KVM_DEVICE", &kvm.display().to_string());
    env.set_env("STOAT_CPUINFO", &cpuinfo.display().to_string());
}

/// stdout, then stderr, of a human run.
fn both(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn doctor_says_each_check_the_accelerator_qemu_and_how_to_switch_to_tcg() {
    let mut env = TestEnv::new();
    let _masked = env.snapshot_settings().bind_to_scope();
    doctor_host(&mut env);
    // KVM opens but cannot boot guests: not healthy, and the way out is named.
    env.set_env("STOAT_ACCEL", "kvm");
    let out = env.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(both(&out), @r"
    STATUS  CHECK               DETAIL
    ok      qemu-system-x86_64  [BIN]
    ok      qemu-img            [BIN]
    ok      ssh                 [BIN]
    ok      scp                 [BIN]
    ok      ssh-keygen          [BIN]
    ok      xorriso             [BIN]
    ok      passt               [BIN]
    FAIL    /dev/kvm            opens, but this CPU has no hardware virtualization (no vmx or svm flag): a nested or paravirtual KVM, which cannot boot stock guest kernels; or run with STOAT_ACCEL=tcg (software emulation, much slower)
    ok      git                 [BIN]
    ok      xattr               user.* xattrs work on [ROOT]/shared

    to fix:
      /dev/kvm: export STOAT_ACCEL=tcg

    accelerator: kvm (STOAT_ACCEL=tcg selects software emulation)
    qemu: QEMU emulator version 10.0.2 (test stub)
    hint: KVM cannot run guests on this host; `export STOAT_ACCEL=tcg` makes stoat use software emulation (slower, works everywhere)
    not healthy: /dev/kvm failed
    ");
    let run = env.json(&["doctor"]);
    assert_eq!(run.exit, 0);
    assert_eq!(run.data()["healthy"], false);
    let kvm = &run.data()["checks"][7];
    assert_eq!(
        (kvm["name"].clone(), kvm["ok"].clone()),
        (json!("/dev/kvm"), json!(false))
    );

    // With TCG the same host is healthy, and doctor says which accelerator `up` will use.
    env.set_env("STOAT_ACCEL", "tcg");
    let out = env.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(both(&out), @r"
    STATUS  CHECK               DETAIL
    ok      qemu-system-x86_64  [BIN]
    ok      qemu-img            [BIN]
    ok      ssh                 [BIN]
    ok      scp                 [BIN]
    ok      ssh-keygen          [BIN]
    ok      xorriso             [BIN]
    ok      passt               [BIN]
    no      /dev/kvm            optional: STOAT_ACCEL=tcg selects software emulation (opens, but this CPU has no hardware virtualization (no vmx or svm flag): a nested or paravirtual KVM, which cannot boot stock guest kernels)
    ok      git                 [BIN]
    ok      xattr               user.* xattrs work on [ROOT]/shared

    accelerator: tcg (software emulation; STOAT_ACCEL=tcg)
    qemu: QEMU emulator version 10.0.2 (test stub)
    healthy: this host can run VMs
    ");
    assert_eq!(env.json(&["doctor"]).data()["healthy"], true);

    // A CPU with vmx: KVM passes.
    std::fs::write(env.tmp().join("cpuinfo"), "flags\t\t: fpu vmx sse\n").unwrap();
    env.set_env("STOAT_ACCEL", "kvm");
    let out = env.run(&["doctor"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ok      /dev/kvm            read/write; accelerator kvm"),
        "{text}"
    );
    assert!(text.contains("accelerator: kvm"), "{text}");
    assert!(!text.contains("hint:"), "{text}");
}

#[test]
fn get_shows_image_health_and_pending_values_and_ls_has_disk_and_image() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let _reaper = Reaper::watch(&env, &["w"]);
    let (ssh, web) = (free_port(), free_port());
    live_vm(
        &env,
        "w",
        ssh,
        &format!("[[forwards]]\nhostport = {web}\nguestport = 80\n"),
    );
    env.write_basic_vm("c", 2250);
    let mut settings = env.snapshot_settings();
    settings.add_filter(&ssh.to_string(), "[SSH]");
    settings.add_filter(&web.to_string(), "[WEB]");
    let _masked = settings.bind_to_scope();
    let ls = env.run(&["ls"]);
    insta::assert_snapshot!(String::from_utf8(ls.stdout).unwrap(), @r"
    NAME  MODE   STATE    CPUS  RAM    DISK  IMAGE       SSH
    c     cloud  stopped  1     1024M  8G    base.qcow2  :2250
    w     live   stopped  1     256M   -     x.iso       :[SSH]
    ");
    env.json(&["up", "w", "--no-wait"]).data();
    // Saved while running: the new values wait for the next start, and get says so.
    env.json(&["update", "w", "--ram", "512", "--cpus", "2"])
        .data();
    env.json(&["forward", "w", "--add", "9000:90"]).data();
    let get = env.run(&["get", "w"]);
    let text = String::from_utf8(get.stdout).unwrap();
    let fields: String = text
        .lines()
        .take_while(|line| !line.starts_with("display:") && !line.starts_with("no usable"))
        .map(|line| format!("{line}\n"))
        .collect();
    insta::assert_snapshot!(fields, @r"
    name: w
    os: alpine
    image: x.iso
    mode: live
    backend: apkovl
    state: running
    health: unknown
    cpus: 2 (pending: running with 1 until the next start)
    ram: 512 MB (pending: running with 256 MB until the next start)
    disk: none
    share: none
    ssh port: [SSH]
    ssh user: root
    recipes: none
    forwards: [WEB]:80, 9000:90 (pending: running with [WEB]:80 until the next start)
    agent access: manage
    ");
    let get = String::from_utf8(env.run(&["get", "c"]).stdout).unwrap();
    assert!(get.contains("\nimage: base.qcow2\n"), "{get}");
    assert!(get.contains("\nhealth: unknown\n"), "{get}");
    assert!(!get.contains("pending"), "{get}");
}

#[test]
fn quiet_silences_the_display_notice_of_up_and_get() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let _reaper = Reaper::watch(&env, &["w"]);
    let ssh = free_port();
    live_vm(&env, "w", ssh, "display = \"vnc\"\n");
    let up = env.run(&["up", "w", "--no-wait", "-q"]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    assert_eq!(
        String::from_utf8(up.stdout).unwrap(),
        format!("w started (ssh :{ssh})\n")
    );
    assert_eq!(String::from_utf8(up.stderr).unwrap(), "");
    let get = String::from_utf8(env.run(&["get", "w", "-q"]).stdout).unwrap();
    assert!(get.ends_with("agent access: manage\n"), "{get}");
    // Without -q get says where the screen is.
    let get = String::from_utf8(env.run(&["get", "w"]).stdout).unwrap();
    assert!(get.contains("\ndisplay: vnc on "), "{get}");
}
