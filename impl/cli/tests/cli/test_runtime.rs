//! The runtime through the real binary: up, down, wait, exec, cp, screenshot.
//!
//! FAKE tier: `qemu-system-x86_64` is stoat-fake's ([`fake_qemu`]: it records its argv and
//! opens no monitor; [`fake_booted_qemu`] also answers ssh on the forwarded port while it runs); `ssh` and `scp` are
//! stoat-fake or inline scripts in the test's bin directory. The fake QEMU's daemon keeps a
//! command line naming the VM directory (so stoat sees the VM running); every test stops it by
//! PID on drop.
//! REAL tier (`real_guest_lifecycle`, ignored unless asked for): boots the conformance test
//! guest STOAT_REAL_GUEST names.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;

use crate::common::{
    fake_booted_qemu, fake_qemu, free_port, real_guest, stub, timed, RealGuard, Reaper, TestEnv,
    PLANTED_PASSWORD,
};

/// A live VM whose ISO the fake QEMU never reads (its kernel is already "extracted").
pub(crate) fn write_live_vm(env: &TestEnv, name: &str, port: u16, extra: &str) {
    env.seed_boot_files(name);
    env.write_vm(
        name,
        &format!(
            "name = \"{name}\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/nonexistent/x.iso\"\nram = 256\ncpus = 1\nsshport = {port}\nsshuser = \"root\"\nconsole_password = \"{PLANTED_PASSWORD}\"\n{extra}"
        ),
    );
}

/// An environment with a running fake VM `name` whose ssh port answers with a banner (a
/// booted guest), and that port.
pub(crate) fn running_vm(name: &str) -> (TestEnv, Reaper, u16) {
    let env = TestEnv::new();
    let port = free_port();
    fake_booted_qemu(&env);
    write_live_vm(&env, name, port, "");
    let reaper = Reaper::watch(&env, &[name]);
    let up = env.json(&["up", name]);
    assert_eq!(up.data()["vm"]["state"], "running", "{}", up.stdout);
    (env, reaper, port)
}

/// An environment with a fake VM `name` that runs but whose ssh never answers (a guest
/// still booting, or one that never will), started with `up --no-wait`.
fn booting_vm(name: &str) -> (TestEnv, Reaper, u16) {
    let port = free_port();
    let env = TestEnv::new();
    fake_qemu(&env);
    write_live_vm(&env, name, port, "");
    let reaper = Reaper::watch(&env, &[name]);
    let up = env.json(&["up", name, "--no-wait"]);
    assert_eq!(up.data()["vm"]["state"], "running", "{}", up.stdout);
    (env, reaper, port)
}

/// ssh is stoat-fake's, printing non-UTF-8 bytes on both streams and exiting 3; it logs
/// each call's argv ([`last_argv`]).
fn fake_ssh(env: &mut TestEnv) {
    env.fake_tool("ssh");
    env.fake_script(&serde_json::json!({"tools": {"ssh": [{
        "stdout": {"hex": "6f7574fffe"}, "stderr": {"hex": "657272fffe"}, "exit": 3
    }]}}));
}

/// The argv of the last call the fakes logged for `tool`.
fn last_argv(env: &TestEnv, tool: &str) -> Vec<String> {
    env.fake_argvs(tool)
        .pop()
        .unwrap_or_else(|| panic!("no {tool} call in {:?}", env.fake_calls()))
}

#[test]
fn up_refuses_what_it_cannot_start() {
    let mut env = TestEnv::new();
    assert_eq!(env.json(&["up"]).error("usage"), "up needs a VM name");
    env.json(&["up", "ghost"]).error("not_found");
    env.write_broken_vm("bad");
    env.json(&["up", "bad"]).error("broken");
    write_live_vm(&env, "withshare", 29301, "share = \"/nonexistent/dir\"\n");
    env.json(&["up", "withshare"]).error("share_invalid");
    let file = env.tmp().join("a-file");
    std::fs::write(&file, "x").unwrap();
    write_live_vm(
        &env,
        "fileshare",
        29302,
        &format!("share = \"{}\"\n", file.display()),
    );
    env.json(&["up", "fileshare"]).error("share_invalid");

    write_live_vm(&env, "w", 29303, "");
    env.fake_tool("qemu-system-x86_64");
    env.fake_script(&serde_json::json!({"qemu": {"refuse": {
        "stderr": {"text": "qemu: could not load PC BIOS boom\n"}
    }}}));
    let message = env.json(&["up", "w"]).error("qemu_start_failed");
    assert!(message.contains("boom"), "{message}");

    env.set_env("STOAT_ACCEL", "warp");
    env.json(&["up", "w"]).error("invalid_spec");
}

#[test]
fn up_without_qemu_is_qemu_missing() {
    let mut env = TestEnv::new();
    write_live_vm(&env, "w", 29304, "");
    env.set_env("PATH", &env.bin().display().to_string());
    let message = env.json(&["up", "w"]).error("qemu_missing");
    assert!(message.contains("qemu-system-x86_64"), "{message}");
}

#[test]
fn up_on_a_work_share_without_user_xattrs_is_no_xattr() {
    let env = TestEnv::new();
    fake_qemu(&env);
    write_live_vm(&env, "w", 29319, "");
    // sysfs refuses user.* xattrs; the work share is reached through a symlink to it.
    std::fs::create_dir_all(env.root().join("shared")).unwrap();
    std::os::unix::fs::symlink("/sys/kernel", env.root().join("shared/w")).unwrap();
    let message = env.json(&["up", "w"]).error("no_xattr");
    assert!(message.contains("extended attributes"), "{message}");
    // The directory is named by its VM, never by a host path.
    assert!(message.contains("share directory for w"), "{message}");
    assert!(
        !message.contains(&*env.root().to_string_lossy()),
        "{message}"
    );
    assert!(!env.root().join("w/qemu.pid").exists());
}

#[test]
fn up_with_kvm_unusable_is_kvm_unusable() {
    let mut env = TestEnv::new();
    fake_qemu(&env);
    write_live_vm(&env, "w", 29305, "");
    env.set_env("STOAT_ACCEL", "kvm");
    env.set_env("STOAT_KVM_DEVICE", "/nonexistent/kvm");
    let message = env.json(&["up", "w"]).error("kvm_unusable");
    assert!(message.contains("STOAT_ACCEL=tcg"), "{message}");
    assert!(!env.root().join("w/qemu.pid").exists());
}

#[test]
fn up_refuses_a_kvm_that_opens_but_cannot_boot_guests_at_once_naming_tcg() {
    let mut env = TestEnv::new();
    fake_booted_qemu(&env);
    write_live_vm(&env, "w", free_port(), "");
    let _reaper = Reaper::watch(&env, &["w"]);
    // A /dev/kvm that opens read-write on a CPU without vmx or svm (a paravirtual KVM).
    let kvm = env.tmp().join("kvm");
    std::fs::write(&kvm, "").unwrap();
    let cpuinfo = env.tmp().join("cpuinfo");
    std::fs::write(&cpuinfo, "processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n").unwrap();
    env.set_env("STOAT_ACCEL", "kvm");
    env.set_env("STOAT_KVM_DEVICE", &kvm.display().to_string());
    env.set_env("STOAT_CPUINFO", &cpuinfo.display().to_string());
    let started = Instant::now();
    let message = env.json(&["up", "w"]).error("kvm_unusable");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once"
    );
    assert!(!message.contains('\n'), "{message}");
    assert!(
        message.contains("no hardware virtualization") && message.contains("STOAT_ACCEL=tcg"),
        "{message}"
    );
    assert!(!env.root().join("w/qemu.pid").exists(), "QEMU was started");
    // A person gets the one line alone: nothing said as if the VM were starting.
    let human = env.run(&["up", "w"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.starts_with("stoat: up: ") && stderr.contains("STOAT_ACCEL=tcg"),
        "{stderr}"
    );
    assert!(!stderr.contains("starting w"), "{stderr}");
    assert!(human.stdout.is_empty());
    // doctor carries the same fix, and capabilities does not call kvm usable.
    let doctor = env.json_raw(&["--json", "doctor"]);
    let kvm_check = doctor.data()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "/dev/kvm")
        .cloned()
        .unwrap();
    assert_eq!(kvm_check["ok"], false, "{kvm_check}");
    assert_eq!(
        kvm_check["fix"],
        serde_json::json!(["export", "STOAT_ACCEL=tcg"])
    );
    let caps = env.json(&["capabilities"]);
    let kvm_runtime = caps.data()["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "runtime.qemu-kvm")
        .cloned()
        .unwrap();
    assert_ne!(kvm_runtime["status"], "supported", "{kvm_runtime}");
    // Software emulation starts it.
    env.set_env("STOAT_ACCEL", "tcg");
    assert_eq!(env.json(&["up", "w"]).data()["vm"]["state"], "running");
    env.json(&["down", "w"]).data();
}

#[test]
fn a_person_s_up_and_down_converge_while_json_keeps_the_contract_s_codes() {
    let (env, _reaper, port) = running_vm("w");
    // `stoat up w && stoat exec w -- uname -a`, twice in a row.
    for _ in 0..2 {
        let up = env.run(&["up", "w"]);
        assert!(up.status.success(), "{up:?}");
        let exec = env.run(&["exec", "w", "--", "uname", "-a"]);
        assert!(exec.status.success(), "{exec:?}");
    }
    let again = env.run(&["up", "w"]);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        format!("w is already running (ssh :{port})\n")
    );
    assert!(
        again.stderr.is_empty(),
        "nothing said as if it were starting: {again:?}"
    );
    env.json(&["up", "w"]).error("already_running");
    for expected in ["w stopped\n", "w is already stopped\n"] {
        let down = env.run(&["down", "w"]);
        assert!(down.status.success(), "{down:?}");
        assert_eq!(String::from_utf8_lossy(&down.stdout), expected);
    }
    env.json(&["down", "w"]).error("not_running");
    // A VM that is not there is still an error for a person.
    assert_eq!(env.run(&["down", "ghost"]).status.code(), Some(1));
    assert_eq!(env.run(&["up", "ghost"]).status.code(), Some(1));
}

#[test]
fn up_then_down_reports_authoritative_state() {
    let (mut env, _reaper, port) = running_vm("w");
    let argv = std::fs::read_to_string(env.root().join("w/qemu.argv")).unwrap();
    assert!(argv.contains("-accel\ntcg\n"), "{argv}");
    // The ssh port is the VM's network process's (passt), on 127.0.0.1.
    let network = env.fake_argvs("passt").pop().expect("passt ran");
    assert!(
        network
            .windows(2)
            .any(|pair| pair[0] == "-t" && pair[1] == format!("127.0.0.1/{port}:22")),
        "{network:?}"
    );
    assert!(env.root().join("shared/w").is_dir());
    // up's login waits past passt's own 10 s handshake timeout: ssh keeps the first value of
    // an option, and the common options carry a 5 s bound.
    let login = env.fake_argvs("ssh").pop().expect("up logged in");
    let bound = login.iter().find(|a| a.starts_with("ConnectTimeout="));
    assert_eq!(
        bound.map(String::as_str),
        Some("ConnectTimeout=12"),
        "{login:?}"
    );
    assert!(env
        .json(&["up", "w"])
        .error("already_running")
        .contains("w"));

    env.set_env("STOAT_DOWN_TIMEOUT_SECS", "1");
    let down = env.json(&["down", "w"]);
    assert_eq!(down.data()["vm"]["state"], "stopped", "{}", down.stdout);
    env.json(&["down", "w"]).error("not_running");
    env.json(&["down", "ghost"]).error("not_found");
    env.write_broken_vm("bad");
    env.json(&["down", "bad"]).error("broken");

    let human = env.run(&["up", "w"]);
    assert!(human.status.success());
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(
        stdout.starts_with(&format!("w is up (ssh :{port})\n")),
        "{stdout}"
    );
    assert!(stdout.contains("\ndisplay: vnc on "), "{stdout}");
    let human = env.run(&["down", "w"]);
    assert_eq!(String::from_utf8_lossy(&human.stdout), "w stopped\n");
}

#[test]
fn each_up_opens_a_fresh_console_log_and_keeps_the_previous_boot_capped() {
    let (mut env, _reaper, _port) = running_vm("w");
    let console = env.root().join("w/console.log");
    let previous = env.root().join("w/console.log.1");
    env.set_env("STOAT_DOWN_TIMEOUT_SECS", "1");
    // The first boot writes more than the 4 MiB kept of it.
    let line = format!("{}\n", "g".repeat(1023));
    let mut first = std::fs::read_to_string(&console).unwrap();
    assert!(first.starts_with("===== stoat: boot at "), "{first}");
    first.push_str(&line.repeat(5 * 1024));
    first.push_str("first boot's last line\n");
    std::fs::write(&console, &first).unwrap();
    env.json(&["down", "w"]);
    env.json(&["up", "w"]);
    let now = std::fs::read_to_string(&console).unwrap();
    assert!(
        now.starts_with("===== stoat: boot at ") && !now.contains("first boot"),
        "{now}"
    );
    let kept = std::fs::read_to_string(&previous).unwrap();
    assert!(kept.len() <= (4 << 20) + 200, "{} bytes kept", kept.len());
    assert!(
        kept.starts_with("===== stoat: the first "),
        "{}",
        &kept[..80]
    );
    assert!(kept.ends_with("first boot's last line\n"));
    // A third boot keeps only the second one.
    env.json(&["down", "w"]);
    env.json(&["up", "w"]);
    let kept = std::fs::read_to_string(&previous).unwrap();
    assert!(!kept.contains("first boot") && kept.starts_with("===== stoat: boot at "));
    assert!(!env.root().join("w/console.log.1.1").exists());
}

/// The PIDs of the console loggers writing `<vm_dir>/console.log`.
fn console_loggers(vm_dir: &Path) -> Vec<u32> {
    crate::common::pids_with_cmdline(&format!("__console-log\0{}/console.log", vm_dir.display()))
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_running_boot_s_console_log_never_passes_its_cap() -> TestEnv {
    let mut env = TestEnv::new();
    let port = free_port();
    fake_booted_qemu(&env);
    // 10 MiB of console: the cap (4 MiB) is passed twice within the one boot.
    env.set_env("STOAT_FAKE_QEMU_CONSOLE_BYTES", &(10u64 << 20).to_string());
    write_live_vm(&env, "w", port, "");
    let _reaper = Reaper::watch(&env, &["w"]);
    let vm_dir = env.root().join("w");
    assert_eq!(env.json(&["up", "w"]).data()["vm"]["state"], "running");
    assert_eq!(console_loggers(&vm_dir).len(), 1, "one logger for the boot");
    crate::common::eventually(Duration::from_secs(60), || {
        env.json(&["logs", "w", "-n", "1"]).data()["lines"]
            == serde_json::json!(["stoat-fake: console done"])
    });
    let cap = 4u64 << 20;
    let now = std::fs::read_to_string(vm_dir.join("console.log")).unwrap();
    let kept = std::fs::metadata(vm_dir.join("console.log.1"))
        .unwrap()
        .len();
    assert!(now.len() as u64 <= cap, "{} bytes", now.len());
    assert_eq!(kept, cap, "the rotated part is exactly the cap");
    assert!(
        now.starts_with("===== stoat: this boot's console output goes on; what came before is in console.log.1 =====\n"),
        "{}",
        &now[..200.min(now.len())]
    );
    assert!(
        !vm_dir.join("con.sock").exists(),
        "the socket's name goes once QEMU is in"
    );
    let tail = env.json(&["logs", "w", "-n", "2"]);
    let lines = tail.data()["lines"].as_array().unwrap().clone();
    assert!(
        lines[0].as_str().unwrap().starts_with("fake console line "),
        "{lines:?}"
    );
    // QEMU's end closes the socket: the logger ends with it.
    env.set_env("STOAT_DOWN_TIMEOUT_SECS", "1");
    env.json(&["down", "w"]);
    crate::common::eventually(Duration::from_secs(10), || {
        console_loggers(&vm_dir).is_empty()
    });
    env
}

#[test]
fn cloud_up_makes_overlay_and_seed() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let base = env.tmp().join("base.qcow2");
    crate::common::make_qcow2(&base, "64M");
    env.write_vm(
        "c",
        &format!(
            "name = \"c\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"128M\"\nsshport = 29307\nsshuser = \"stoat\"\nconsole_password = \"{PLANTED_PASSWORD}\"\nbase = \"{}\"\n",
            base.display()
        ),
    );
    let _reaper = Reaper::watch(&env, &["c"]);
    let up = env.json(&["up", "c", "--no-wait"]);
    assert_eq!(up.data()["vm"]["state"], "running");
    let dir = env.root().join("c");
    let info = crate::common::qemu_info(&dir.join("disk.qcow2"));
    assert_eq!(info["virtual-size"], 128 * 1024 * 1024);
    assert_eq!(info["backing-filename"], base.display().to_string());
    assert!(dir.join("ovl/seed.iso").is_file());
    let user_data = std::fs::read_to_string(dir.join("ovl/seed/user-data")).unwrap();
    let pubkey = std::fs::read_to_string(env.root().join("id_stoat.pub")).unwrap();
    assert!(user_data.starts_with("#cloud-config-archive\n"));
    assert!(user_data.contains(pubkey.trim()));
    assert!(user_data.contains(PLANTED_PASSWORD));
    assert!(user_data.contains("/mnt/work"));
    let meta = std::fs::read_to_string(dir.join("ovl/seed/meta-data")).unwrap();
    assert!(meta.contains("instance-id: \"stoat-c\""));
    let argv = std::fs::read_to_string(dir.join("qemu.argv")).unwrap();
    assert!(argv.contains("seed.iso"), "{argv}");
}

#[test]
fn cloud_up_without_xorriso_says_so_and_makes_nothing() {
    let mut env = TestEnv::new();
    fake_qemu(&env);
    for tool in ["qemu-img", "ssh-keygen"] {
        std::os::unix::fs::symlink(format!("/usr/bin/{tool}"), env.bin().join(tool)).unwrap();
    }
    env.set_env("PATH", &env.bin().display().to_string());
    env.write_vm(
        "c",
        "name = \"c\"\nmode = \"cloud\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\nsshport = 29308\nbase = \"/nonexistent/base.qcow2\"\n",
    );
    let message = env.json(&["up", "c"]).error("internal");
    assert!(message.contains("xorriso"), "{message}");
    assert!(!env.root().join("c/disk.qcow2").exists());
    assert!(!env.root().join("c/qemu.pid").exists());
}

#[test]
fn wait_answers_at_once_when_it_can_and_times_out_otherwise() {
    let env = TestEnv::new();
    write_live_vm(&env, "w", 29309, "");
    env.json(&["wait", "w", "--until", "reachable"])
        .error("cannot_reach");
    env.json(&["wait", "w", "--until", "applied"])
        .error("cannot_reach");
    let stopped = env.json(&["wait", "w", "--until", "stopped"]);
    assert_eq!(stopped.data()["reached"], true);
    assert_eq!(stopped.data()["until"], "stopped");
    let human = env.run(&["wait", "w", "--until", "stopped"]);
    let text = String::from_utf8(human.stdout).unwrap();
    insta::with_settings!({filters => [(r"after \d+\.\d+s", "after N.Ns")]}, {
        insta::assert_snapshot!(text, @"w is stopped (after N.Ns)");
    });
    env.json(&["wait", "ghost"]).error("not_found");
    assert_eq!(env.json(&["wait"]).error("usage"), "wait needs a VM name");

    let (env, _reaper, _) = booting_vm("r");
    let started = Instant::now();
    env.json(&["wait", "r", "--until", "reachable", "--timeout", "1s"])
        .error("timeout");
    assert!(started.elapsed().as_secs() < 10);
}

/// A boot that never lets stoat log in: the timeout says how far the console got, quoting its
/// last line, in both modes.
#[test]
fn a_boot_timeout_quotes_the_consoles_last_line() {
    let mut env = TestEnv::new();
    let port = free_port();
    fake_qemu(&env);
    env.set_env("STOAT_FAKE_QEMU_CONSOLE_BYTES", "1");
    write_live_vm(&env, "w", port, "");
    let _reaper = Reaper::watch(&env, &["w"]);
    assert_eq!(
        env.json(&["up", "w", "--no-wait"]).data()["vm"]["state"],
        "running"
    );
    crate::common::eventually(Duration::from_secs(60), || {
        env.json(&["logs", "w", "-n", "1"]).data()["lines"]
            == serde_json::json!(["stoat-fake: console done"])
    });
    let message = env
        .json(&["wait", "w", "--until", "reachable", "--timeout", "1s"])
        .error("timeout");
    assert!(
        message.contains("the console's last line: \"stoat-fake: console done\""),
        "{message}"
    );
    env.json(&["down", "w"]).data();
    let human = env.run(&["up", "w", "--timeout", "1s"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(stderr.contains("the console's last line: "), "{stderr}");
    env.json(&["down", "w"]).data();
}

#[test]
fn up_waits_for_ssh_and_a_guest_that_never_answers_is_an_error() {
    // Never reachable: `timeout`, one line naming what to do, and the VM left running.
    let (env, _reaper, port) = booting_vm("w");
    env.json(&["down", "w"]).data();
    let started = Instant::now();
    let message = env.json(&["up", "w", "--timeout", "1s"]).error("timeout");
    assert!(started.elapsed().as_secs() < 30);
    assert!(!message.contains('\n'), "{message}");
    assert!(
        message.contains(&format!("port {port}")) && message.contains("stoat logs w"),
        "{message}"
    );
    assert_eq!(env.json(&["get", "w"]).data()["vm"]["state"], "running");
    env.json(&["down", "w"]).data();
    let human = env.run(&["up", "w", "--timeout", "1s"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains(&format!("then waiting for ssh on port {port}...")),
        "{stderr}"
    );
    assert!(
        stderr.contains("could not log in over ssh") && stderr.contains("within 1s"),
        "{stderr}"
    );
    env.json(&["down", "w"]).data();
    // --no-wait answers at start, in both modes.
    let human = env.run(&["up", "w", "--no-wait"]);
    assert!(human.status.success());
    assert!(
        String::from_utf8_lossy(&human.stdout).starts_with(&format!("w started (ssh :{port})\n"))
    );
    env.json(&["up", "w", "--timeout", "0s"]).error("usage");

    // A guest that dies while booting: qemu_start_failed at once, not a timeout.
    // stoat-fake's QEMU with a lifetime of one second: its pidfile names a process that
    // exits by itself.
    let mut env = TestEnv::new();
    fake_qemu(&env);
    env.set_env("STOAT_FAKE_MAX_SECS", "1");
    write_live_vm(&env, "d", free_port(), "");
    let _reaper = Reaper::watch(&env, &["d"]);
    let message = env
        .json(&["up", "d", "--timeout", "60s"])
        .error("qemu_start_failed");
    assert!(message.contains("stopped while booting"), "{message}");
}

#[test]
fn a_long_up_says_it_is_still_waiting_and_where_the_console_is() {
    let (env, _reaper, _port) = booting_vm("w");
    env.json(&["down", "w"]).data();
    let human = env.run(&["up", "w", "--timeout", "22s"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains(
            "still waiting for w to take ssh logins (20s; `stoat logs w -f` shows its console)"
        ),
        "{stderr}"
    );
    env.json(&["down", "w"]).data();
}

#[test]
fn exec_waits_for_a_booting_vm_and_a_connection_that_never_comes_is_an_error() {
    let (mut env, _reaper, port) = booting_vm("w");
    fake_ssh(&mut env);
    let message = env
        .json_raw(&["--json", "exec", "--timeout", "1s", "w", "true"])
        .error("timeout");
    assert!(
        message.contains("could not log in over ssh") && message.contains("within 1s"),
        "{message}"
    );
    let human = env.run(&["exec", "--timeout", "1s", "w", "true"]);
    assert_eq!(human.status.code(), Some(1), "not a guest status");
    env.json(&["cp", "--timeout", "1s", "w:/etc/hostname", "x"])
        .error("timeout");

    // Started before the guest answers: exec says it waits, then runs once ssh answers.
    let mut exec = env.spawn(&["exec", "w", "ls"]);
    let first = exec.stderr.line(Duration::from_secs(30));
    assert_eq!(first.as_deref(), Some("waiting for ssh on w..."));
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        use std::io::Write;
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"SSH-2.0-late\r\n");
        }
    });
    let output = exec.wait(Duration::from_secs(60));
    let rest = output
        .stderr
        .strip_prefix(b"waiting for ssh on w...\n".as_slice())
        .expect("the first line said it waits");
    assert_eq!(output.status.code(), Some(3), "the guest's status");
    assert_eq!(output.stdout, b"out\xff\xfe");
    assert_eq!(rest, b"err\xff\xfe");
}

/// An ssh that fails before any session for its first `failures` calls, saying `said` as
/// OpenSSH does while a guest's sshd restarts, then runs the remote command with `sh` as
/// sshd would; each call adds a line to the returned file. Inline: its answer changes from
/// one call to the next.
fn ssh_failing_first(env: &TestEnv, failures: u32, said: &str) -> PathBuf {
    let calls = env.tmp().join("ssh.calls");
    stub(
        env,
        "ssh",
        &format!(
            "echo call >> '{calls}'\nif [ \"$(wc -l < '{calls}')\" -le {failures} ]; then echo '{said}' >&2; exit 255; fi\nfor a in \"$@\"; do last=\"$a\"; done\nexec sh -c \"$last\"\n",
            calls = calls.display()
        ),
    );
    calls
}

fn calls(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn exec_tries_again_when_ssh_fails_before_a_session() {
    let (env, _reaper, _port) = running_vm("w");
    let log = ssh_failing_first(
        &env,
        2,
        "kex_exchange_identification: Connection closed by remote host",
    );
    let run = env.json_raw(&[
        "--json",
        "exec",
        "w",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2",
    ]);
    let data = run.data();
    assert_eq!(data["exit_code"], 0, "{}", run.stdout);
    assert_eq!(data["stdout"], "out\n");
    assert_eq!(data["stderr"], "err\n", "the session mark is cut out");
    assert_eq!(calls(&log), 3, "two refusals, then the command once");

    // In a terminal the same: the guest's bytes only, on their own streams.
    std::fs::remove_file(&log).unwrap();
    let human = env.run(&[
        "exec",
        "w",
        "--",
        "sh",
        "-c",
        "printf a >&2; printf b; exit 4",
    ]);
    assert_eq!(human.status.code(), Some(4));
    assert_eq!(human.stdout, b"b");
    assert_eq!(
        human.stderr, b"waiting for ssh on w...\na",
        "stoat's one note, then the guest's bytes: neither ssh's refusals nor the mark"
    );
    assert_eq!(calls(&log), 3);
}

#[test]
fn exec_that_never_gets_a_session_is_a_timeout_not_a_guest_status() {
    let (env, _reaper, _port) = running_vm("w");
    let marker = env.tmp().join("ran");
    let log = ssh_failing_first(
        &env,
        u32::MAX,
        "ssh: connect to host 127.0.0.1 port 22: Connection refused",
    );
    let touch = format!("touch {}", marker.display());
    let message = env
        .json_raw(&[
            "--json",
            "exec",
            "--timeout",
            "2s",
            "w",
            "--",
            "sh",
            "-c",
            &touch,
        ])
        .error("timeout");
    assert!(
        message.contains("could not log in over ssh") && message.contains("within 2s"),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    assert!(calls(&log) >= 2, "tried again within the bound");
    let human = env.run(&["exec", "--timeout", "1s", "w", "--", "sh", "-c", &touch]);
    assert_eq!(
        human.status.code(),
        Some(1),
        "stoat's failure, not ssh's 255"
    );
    assert!(!marker.exists(), "the command never ran");
}

#[test]
fn a_guest_command_that_exits_255_is_its_status_and_runs_once() {
    let (env, _reaper, _port) = running_vm("w");
    let log = ssh_failing_first(&env, 0, "unused");
    // A guest command that is itself an ssh refused by another host: its words, its 255.
    let run = env.json_raw(&[
        "--json",
        "exec",
        "w",
        "--",
        "sh",
        "-c",
        "echo 'Permission denied (publickey).' >&2; exit 255",
    ]);
    assert_eq!(run.data()["exit_code"], 255);
    assert_eq!(run.data()["stderr"], "Permission denied (publickey).\n");
    assert_eq!(calls(&log), 1, "a command that ran is never run again");
}

#[test]
fn exec_checks_the_vm_first() {
    let mut env = TestEnv::new();
    fake_ssh(&mut env);
    write_live_vm(&env, "w", 29311, "");
    env.json_raw(&["--json", "exec", "w", "true"])
        .error("not_running");
    env.json_raw(&["--json", "exec", "ghost", "true"])
        .error("not_found");
    env.write_broken_vm("bad");
    env.json_raw(&["--json", "exec", "bad", "true"])
        .error("broken");
}

#[test]
fn exec_passes_bytes_and_status_by_the_contract() {
    let (mut env, _reaper, port) = running_vm("w");
    fake_ssh(&mut env);

    let run = env.json_raw(&["-q", "--json", "exec", "w", "echo", "it's", "--json"]);
    assert_eq!(run.exit, 0);
    let data = run.data();
    assert_eq!(data["exit_code"], 3);
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(
        b64.decode(data["stdout_base64"].as_str().unwrap()).unwrap(),
        b"out\xff\xfe"
    );
    assert_eq!(data["stdout_encoding"], "base64");
    assert_eq!(
        b64.decode(data["stderr_base64"].as_str().unwrap()).unwrap(),
        b"err\xff\xfe"
    );
    assert!(data.get("stdout").is_none());
    let argv = last_argv(&env, "ssh");
    assert!(
        argv.last()
            .is_some_and(|remote| remote.contains(" 'echo' 'it'\\''s' '--json' 2>&4 ")),
        "{argv:?}"
    );
    assert!(argv.iter().any(|a| a == "root@127.0.0.1"), "{argv:?}");
    assert!(argv.contains(&port.to_string()), "{argv:?}");

    let human = env.run(&["exec", "w", "ls"]);
    assert_eq!(human.status.code(), Some(3));
    assert_eq!(human.stdout, b"out\xff\xfe");
    assert_eq!(human.stderr, b"err\xff\xfe");
}

#[test]
fn exec_without_ssh_is_a_clear_error() {
    let (mut env, _reaper, _) = running_vm("w");
    // The booted guest's fake ssh goes too: no ssh on PATH at all.
    std::fs::remove_file(env.bin().join("ssh")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/ssh-keygen", env.bin().join("ssh-keygen")).unwrap();
    env.set_env("PATH", &env.bin().display().to_string());
    let message = env
        .json_raw(&["--json", "exec", "w", "true"])
        .error("internal");
    assert!(message.contains("ssh"), "{message}");
}

#[test]
fn cp_grammar_and_errors() {
    let env = TestEnv::new();
    write_live_vm(&env, "w", 29314, "");
    for args in [
        vec!["cp"],
        vec!["cp", "a"],
        vec!["cp", "a", "b"],
        vec!["cp", "w:a", "w:b"],
        vec!["cp", ":a", "b"],
        vec!["cp", "a", "w:b", "--vm", "w"],
        vec!["cp", "--vm", "w", "--direction", "to"],
    ] {
        env.json(&args).error("usage");
    }
    env.json(&["cp", "w:", "local"]).error("invalid_spec");
    env.json(&[
        "cp",
        "--vm",
        "w",
        "--direction",
        "to",
        "--local",
        "",
        "--remote",
        "/r",
    ])
    .error("invalid_spec");
    env.json(&["cp", "ghost:/r", "local"]).error("not_found");
    env.json(&["cp", "w:/r", "local"]).error("not_running");
    env.write_broken_vm("bad");
    env.json(&["cp", "bad:/r", "local"]).error("broken");
}

#[test]
fn cp_runs_scp_with_an_absolute_local_path() {
    let (mut env, _reaper, _) = running_vm("w");
    env.fake_tool("scp");
    std::fs::create_dir_all(env.home().join("notes")).unwrap();
    std::fs::write(env.home().join("notes/a.txt"), b"a\n").unwrap();
    let to = env.json(&["cp", "notes/a.txt", "w:/tmp/x y"]);
    let local = env.home().join("notes/a.txt").display().to_string();
    assert_eq!(to.data()["direction"], "to_guest");
    assert_eq!(to.data()["local"], local.as_str());
    assert_eq!(to.data()["remote"], "/tmp/x y");
    let argv = last_argv(&env, "scp");
    assert!(
        argv.ends_with(&[local.clone(), "root@127.0.0.1:/tmp/x y".to_string()]),
        "{argv:?}"
    );

    let from = env.json(&[
        "cp",
        "--vm",
        "w",
        "--direction",
        "from",
        "--local",
        "~/out",
        "--remote",
        "/etc/hostname",
    ]);
    assert_eq!(from.data()["direction"], "from_guest");
    assert_eq!(
        from.data()["local"],
        env.home().join("out").display().to_string().as_str()
    );

    env.fake_script(&serde_json::json!({"tools": {"scp": [{
        "stderr": {"text": "scp: /nope: No such file\n"}, "exit": 1
    }]}}));
    let message = env.json(&["cp", "w:/nope", "x"]).error("internal");
    assert!(message.contains("No such file"), "{message}");
    let human = env.run(&["cp", "w:/etc/a", "b"]);
    assert!(!human.status.success());
}

#[test]
fn screenshot_needs_a_running_vm_and_its_monitor() {
    let env = TestEnv::new();
    write_live_vm(&env, "w", 29316, "");
    env.json(&["screenshot", "w"]).error("not_running");
    env.json(&["screenshot", "ghost"]).error("not_found");
    let (env, _reaper, _) = running_vm("r");
    env.json(&["screenshot", "r"]).error("monitor_unreachable");
}

const GREETING: &str = r#"{"QMP": {"version": {"qemu": {"micro": 2, "minor": 0, "major": 10}, "package": ""}, "capabilities": []}}"#;

/// A fake QMP monitor on `<vm>/qmp.sock` serving one client: capabilities, then one
/// `screendump` that writes a 2x3 PNG (or, with `refuse`, answers QEMU's error).
fn fake_qmp_screendump(vm_dir: &Path, refuse: bool) -> std::thread::JoinHandle<()> {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::os::unix::net::UnixListener::bind(vm_dir.join("qmp.sock")).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        writeln!(writer, "{GREETING}").unwrap();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            let request: serde_json::Value = serde_json::from_str(&line).unwrap();
            line.clear();
            let reply = match request["execute"].as_str() {
                Some("screendump") if refuse => {
                    r#"{"error": {"class": "GenericError", "desc": "no surface to dump"}}"#
                        .to_owned()
                }
                Some("screendump") => {
                    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
                    png.extend_from_slice(&2u32.to_be_bytes());
                    png.extend_from_slice(&3u32.to_be_bytes());
                    png.extend_from_slice(b"rest");
                    std::fs::write(request["arguments"]["filename"].as_str().unwrap(), png)
                        .unwrap();
                    assert_eq!(request["arguments"]["format"], "png");
                    r#"{"return": {}}"#.to_owned()
                }
                _ => r#"{"return": {}}"#.to_owned(),
            };
            writeln!(writer, "{reply}").unwrap();
        }
    })
}

#[test]
fn screenshot_writes_a_png_and_reports_its_size() {
    let (env, _reaper, _) = running_vm("r");
    let dir = env.root().join("r");
    let server = fake_qmp_screendump(&dir, false);
    let shot = env.json(&["screenshot", "r"]);
    let data = shot.data();
    assert_eq!(data["width"], 2);
    assert_eq!(data["height"], 3);
    assert_eq!(data["bytes"], 28);
    let path = data["path"].as_str().unwrap();
    assert!(
        path.starts_with(&format!("{}/screenshots/", dir.display())),
        "{path}"
    );
    assert!(path.ends_with("Z.png"), "{path}");
    assert_eq!(std::fs::metadata(path).unwrap().len(), 28);
    server.join().unwrap();

    std::fs::remove_file(dir.join("qmp.sock")).unwrap();
    let server = fake_qmp_screendump(&dir, true);
    let message = env.json(&["screenshot", "r"]).error("screenshot_failed");
    assert!(message.contains("no surface"), "{message}");
    server.join().unwrap();
}

#[test]
fn screenshot_o_writes_the_png_where_it_is_told() {
    let (env, _reaper, _) = running_vm("r");
    let dir = env.root().join("r");
    let out = env.tmp().join("shots");
    std::fs::create_dir_all(&out).unwrap();
    // A file path, then a directory, then a parent that does not exist.
    let file = out.join("screen.png");
    let server = fake_qmp_screendump(&dir, false);
    let shot = env.json(&["screenshot", "r", "-o", &file.display().to_string()]);
    assert_eq!(shot.data()["path"], file.display().to_string());
    assert_eq!(shot.data()["bytes"], 28);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 28);
    server.join().unwrap();
    std::fs::remove_file(dir.join("qmp.sock")).unwrap();

    let server = fake_qmp_screendump(&dir, false);
    let shot = env.json(&["screenshot", "r", "--output", &out.display().to_string()]);
    let path = shot.data()["path"].as_str().unwrap().to_owned();
    assert!(path.starts_with(&format!("{}/r-", out.display())), "{path}");
    assert!(path.ends_with("Z.png"), "{path}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 28);
    server.join().unwrap();
    // Nothing stays behind in the VM's own directory, nor beside the output.
    let kept = std::fs::read_dir(dir.join("screenshots")).unwrap().count();
    assert_eq!(kept, 0);
    let beside: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside.len(), 2, "{beside:?}");

    let missing = out.join("no/such/dir/x.png");
    let message = env
        .json(&["screenshot", "r", "-o", &missing.display().to_string()])
        .error("invalid_spec");
    assert!(message.contains("no such directory"), "{message}");

    // A trailing slash names a directory: one that does not exist is refused, never a file.
    let slashed = format!("{}/", out.join("later").display());
    let message = env
        .json(&["screenshot", "r", "-o", &slashed])
        .error("invalid_spec");
    assert!(message.contains("mkdir -p"), "{message}");
    assert!(!out.join("later").exists(), "nothing written");
}

// ---- REAL tier ----------------------------------------------------------------------------

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_guest_lifecycle() {
    let guest = real_guest();
    let image = &guest.image;
    let env = TestEnv::new();
    let port = free_port();
    let host_share = env.tmp().join("host-share");
    std::fs::create_dir_all(&host_share).unwrap();
    env.write_vm(
        "t1",
        &format!(
            "name = \"t1\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {port}\nsshuser = \"stoat\"\nconsole_password = \"{PLANTED_PASSWORD}\"\nbase = \"{}\"\nshare = \"{}\"\n",
            image.display(),
            host_share.display()
        ),
    );
    let _guard = RealGuard(env.root().join("t1"));
    // The README's first lines, verbatim: `up` returns once ssh answers, so exec just works.
    let up = timed("up (waits for ssh)", || env.run(&["up", "t1"]));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let uname = env.run(&["exec", "t1", "--", "uname", "-a"]);
    assert_eq!(
        uname.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&uname.stderr)
    );
    assert!(
        uname.stdout.starts_with(b"Linux "),
        "{}",
        String::from_utf8_lossy(&uname.stdout)
    );
    let wait = env.json(&["wait", "t1", "--until", "reachable", "--timeout", "5s"]);
    assert_eq!(wait.data()["reached"], true);
    // A word that is not UTF-8 reaches the guest byte for byte.
    let raw = env
        .cmd(&["--json", "exec", "t1", "printf", "%s"])
        .arg(std::ffi::OsStr::from_bytes(b"\xff\xfeok"))
        .output()
        .unwrap();
    let raw = crate::common::JsonRun::check(raw);
    assert_eq!(raw.data()["stdout_base64"], "//5vaw==");

    let echo = timed("exec echo", || {
        env.json_raw(&["--json", "exec", "t1", "echo", "hello world"])
    });
    assert_eq!(echo.data()["stdout"], "hello world\n");
    assert_eq!(echo.data()["exit_code"], 0);
    let bin = env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sh",
        "-c",
        "printf '\\377\\376'; exit 7",
    ]);
    assert_eq!(bin.data()["stdout_base64"], "//4=");
    assert_eq!(bin.data()["exit_code"], 7);
    let human = env.run(&["exec", "t1", "sh", "-c", "printf '\\377\\376' >&2; exit 7"]);
    assert_eq!(human.status.code(), Some(7));
    assert_eq!(human.stderr, b"\xff\xfe");

    let local = env.tmp().join("in.bin");
    std::fs::write(&local, b"\x00\x01\xff stoat\n").unwrap();
    let local_s = local.display().to_string();
    timed("cp to", || {
        env.json(&["cp", &local_s, "t1:/tmp/in.bin"]).data().clone()
    });
    let back = env.tmp().join("back.bin");
    let back_s = back.display().to_string();
    timed("cp from", || {
        env.json(&["cp", "t1:/tmp/in.bin", &back_s]).data().clone()
    });
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&local).unwrap()
    );

    let shot = timed("screenshot", || env.json(&["screenshot", "t1"]));
    let data = shot.data();
    assert!(data["width"].as_u64().unwrap() > 0 && data["height"].as_u64().unwrap() > 0);
    let png = std::fs::read(data["path"].as_str().unwrap()).unwrap();
    assert_eq!(png.len() as u64, data["bytes"].as_u64().unwrap());
    assert!(png.starts_with(b"\x89PNG"));

    // Online snapshots with both 9p shares mounted: stoat unmounts them around the save and
    // mounts them again. A share kept busy by a guest process is refused, saying so.
    let mounted = |env: &TestEnv| {
        let run = env.json_raw(&[
            "--json",
            "exec",
            "t1",
            "awk",
            "$3 == \"9p\" {print $2}",
            "/proc/mounts",
        ]);
        let mut points: Vec<String> = run.data()["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        points.sort();
        points
    };
    let both = vec!["/mnt/host".to_owned(), "/mnt/work".to_owned()];
    assert_eq!(mounted(&env), both);
    let holder = env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sudo",
        "sh",
        "-c",
        "cd /mnt/work && (sleep 600 </dev/null >/dev/null 2>&1 & echo $! > /tmp/holder)",
    ]);
    assert_eq!(holder.data()["exit_code"], 0, "{}", holder.stdout);
    let refused = env
        .json(&["snapshot", "t1", "s1"])
        .error("monitor_rejected");
    assert!(
        refused.contains("/mnt/work")
            && refused.to_lowercase().contains("busy")
            && refused.contains("stop what uses it"),
        "{refused}"
    );
    assert!(
        !refused.contains(&*env.tmp().to_string_lossy()),
        "no host path: {refused}"
    );
    assert_eq!(mounted(&env), both, "what was unmounted is mounted again");
    let stop = env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sudo",
        "sh",
        "-c",
        "p=$(cat /tmp/holder) && kill $p && while kill -0 $p 2>/dev/null; do :; done",
    ]);
    assert_eq!(stop.data()["exit_code"], 0, "{}", stop.stdout);
    env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sh",
        "-c",
        "echo before > /tmp/mark",
    ]);
    timed("snapshot save (shares unmounted around it)", || {
        env.json(&["snapshot", "t1", "s1"]).data().clone()
    });
    assert_eq!(mounted(&env), both);
    let list = env.json(&["snapshot", "t1"]);
    assert_eq!(list.data()["snapshots"][0]["tag"], "s1");
    assert_eq!(list.data()["snapshots"][0]["vm_state"], true);
    env.json_raw(&["--json", "exec", "t1", "sh", "-c", "echo after > /tmp/mark"]);
    timed("snapshot restore", || {
        env.json(&["snapshot", "t1", "s1", "--restore"])
            .data()
            .clone()
    });
    env.json(&["wait", "t1", "--until", "reachable", "--timeout", "60s"]);
    let mark = env.json_raw(&["--json", "exec", "t1", "cat", "/tmp/mark"]);
    assert_eq!(mark.data()["stdout"], "before\n", "the guest state reverts");
    assert_eq!(
        mounted(&env),
        both,
        "the restored guest has its shares again"
    );
    let write = env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sudo",
        "sh",
        "-c",
        "echo restored > /mnt/work/after-restore.txt",
    ]);
    assert_eq!(write.data()["exit_code"], 0, "{}", write.stdout);
    assert_eq!(
        std::fs::read_to_string(env.root().join("shared/t1/after-restore.txt")).unwrap(),
        "restored\n"
    );
    env.json(&["snapshot", "t1", "nope", "--delete"])
        .error("invalid_spec");
    env.json(&["snapshot", "t1", "s1", "--delete"]);
    assert_eq!(
        env.json(&["snapshot", "t1"]).data()["snapshots"],
        serde_json::json!([])
    );

    // The guest floods its serial console past the running boot's cap (4 MiB): console.log
    // rotates into console.log.1 and stays under the cap; `logs` reads the newest lines.
    let vm_dir = env.root().join("t1");
    let boot = std::fs::read_to_string(vm_dir.join("console.log")).unwrap();
    assert!(
        boot.starts_with("===== stoat: boot at "),
        "{}",
        &boot[..80.min(boot.len())]
    );
    assert_eq!(console_loggers(&vm_dir).len(), 1, "one logger for the boot");
    let flood = timed("5 MB to the serial console", || {
        env.json_raw(&[
            "--json",
            "exec",
            "t1",
            "sh",
            "-c",
            "(yes 'guest flood line 0123456789abcdef' | head -c 5000000; echo; echo guest flood done) | sudo -n tee /dev/ttyS0 >/dev/null",
        ])
    });
    assert_eq!(flood.data()["exit_code"], 0, "{}", flood.stdout);
    crate::common::eventually(Duration::from_secs(300), || {
        env.json(&["logs", "t1", "-n", "5"]).data()["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("guest flood done"))
    });
    let now = std::fs::metadata(vm_dir.join("console.log")).unwrap().len();
    let kept = std::fs::metadata(vm_dir.join("console.log.1"))
        .unwrap()
        .len();
    eprintln!("console.log {now} bytes, console.log.1 {kept} bytes");
    assert!(now <= 4 << 20 && kept == 4 << 20, "{now} {kept}");

    let down = timed("down", || env.json(&["down", "t1"]));
    assert_eq!(down.data()["vm"]["state"], "stopped");
    env.json(&["wait", "t1", "--until", "stopped", "--timeout", "5s"]);
    crate::common::eventually(Duration::from_secs(10), || {
        console_loggers(&vm_dir).is_empty()
    });
}

/// The lines of a recorded fake-QEMU argv.
fn recorded_argv(env: &TestEnv, vm: &str) -> Vec<String> {
    std::fs::read_to_string(env.root().join(vm).join("qemu.argv"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn values_after<'a>(argv: &'a [String], flag: &str) -> Vec<&'a str> {
    argv.windows(2)
        .filter(|pair| pair[0] == flag)
        .map(|pair| pair[1].as_str())
        .collect()
}

/// `tar -tvzf` of the overlay, as (mode string, path) pairs.
fn overlay_listing(tarball: &Path) -> Vec<(String, String)> {
    let out = std::process::Command::new("tar")
        .arg("-tvzf")
        .arg(tarball)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields[0].to_owned(), fields[5].to_owned())
        })
        .collect()
}

fn overlay_file(tarball: &Path, member: &str) -> String {
    let out = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(tarball)
        .arg(member)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{member}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn apkovl_live_up_boots_the_isos_kernel_with_the_overlay() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let isos = env.root().join("isos");
    std::fs::create_dir_all(&isos).unwrap();
    let iso = isos.join("alpine-virt-3.20.3-x86_64.iso");
    env.fake_alpine_iso(&iso);
    let share = env.tmp().join("src");
    std::fs::create_dir(&share).unwrap();
    let created = env.json(&[
        "create",
        "a",
        "--image",
        "alpine-virt-3.20.3-x86_64.iso",
        "--share",
        &share.display().to_string(),
    ]);
    assert_eq!(created.data()["vm"]["backend"], "apkovl");
    assert_eq!(created.data()["vm"]["mode"], "live");
    let _reaper = Reaper::watch(&env, &["a"]);
    let up = env.json(&["up", "a", "--no-wait"]);
    assert_eq!(up.data()["vm"]["state"], "running", "{}", up.stdout);

    let dir = env.root().join("a");
    assert_eq!(
        std::fs::read_to_string(dir.join("vmlinuz")).unwrap(),
        "fake kernel\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("initramfs")).unwrap(),
        "fake initramfs\n"
    );
    let tarball = dir.join("ovl/stoat.apkovl.tar.gz");
    let listing = overlay_listing(&tarball);
    let has = |mode: &str, path: &str| listing.iter().any(|(m, p)| m == mode && p == path);
    assert!(
        has("-rw-------", "root/.ssh/authorized_keys"),
        "{listing:?}"
    );
    assert!(
        has("-rw-------", "etc/ssh/ssh_host_ed25519_key"),
        "{listing:?}"
    );
    assert!(
        has("lrwxrwxrwx", "etc/runlevels/default/sshd"),
        "{listing:?}"
    );
    assert!(has("drwxr-xr-x", "mnt/work/") && has("drwxr-xr-x", "mnt/host/"));
    assert!(
        !listing.iter().any(|(_, p)| p == "etc/stoat/answerfile"),
        "live has no installer"
    );
    let pubkey = std::fs::read_to_string(env.root().join("id_stoat.pub")).unwrap();
    assert_eq!(overlay_file(&tarball, "root/.ssh/authorized_keys"), pubkey);
    let host_pub = std::fs::read_to_string(env.root().join("guest_host_ed25519_key.pub")).unwrap();
    assert!(host_pub.trim_end().ends_with(" stoat-guest"), "{host_pub}");
    assert_eq!(
        overlay_file(&tarball, "etc/ssh/ssh_host_ed25519_key.pub"),
        host_pub
    );
    let repos = overlay_file(&tarball, "etc/apk/repositories");
    assert!(repos.lines().all(|l| l.contains("/v3.20/")), "{repos}");
    assert!(overlay_file(&tarball, "etc/fstab").contains("host\t/mnt/host\t9p"));
    assert!(!dir.join("ovl/.stoat-ovl.tmp").exists());

    let argv = recorded_argv(&env, "a");
    assert_eq!(
        values_after(&argv, "-kernel"),
        [dir.join("vmlinuz").display().to_string()]
    );
    assert_eq!(
        values_after(&argv, "-initrd"),
        [dir.join("initramfs").display().to_string()]
    );
    assert_eq!(
        values_after(&argv, "-append"),
        ["modules=loop,squashfs,sd-mod,usb-storage quiet"]
    );
    assert!(values_after(&argv, "-drive").contains(
        &format!(
            "file=fat:rw:{},format=raw,if=virtio",
            dir.join("ovl").display()
        )
        .as_str()
    ));
    // The VM boots the image store's copy of the ISO (the same file while isos/ holds it).
    let cdrom = values_after(&argv, "-drive")
        .into_iter()
        .find(|d| d.ends_with(",media=cdrom,format=raw,readonly=on"))
        .unwrap_or_default();
    let copy = cdrom
        .trim_start_matches("file=")
        .split(",media=")
        .next()
        .unwrap_or("");
    assert!(
        copy.starts_with(&env.root().join(".images").display().to_string()),
        "{cdrom}"
    );
    assert!(
        std::fs::read(copy).unwrap() == std::fs::read(&iso).unwrap(),
        "{cdrom}"
    );
    assert_eq!(values_after(&argv, "-boot"), ["d"]);
    assert!(
        !argv.iter().any(|a| a == "-no-reboot"),
        "live VMs reboot normally"
    );
}

#[test]
fn apkovl_disk_installs_then_boots_from_its_disk() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let iso = env.tmp().join("alpine-virt-3.19.1-x86_64.iso");
    env.fake_alpine_iso(&iso);
    env.json(&[
        "create",
        "d",
        "--image",
        &iso.display().to_string(),
        "--mode",
        "disk",
        "--disk",
        "1G",
    ]);
    let _reaper = Reaper::watch(&env, &["d"]);
    env.json(&["up", "d", "--no-wait"]).data();
    let dir = env.root().join("d");
    let argv = recorded_argv(&env, "d");
    assert!(argv.iter().any(|a| a == "-no-reboot"), "{argv:?}");
    assert_eq!(values_after(&argv, "-kernel").len(), 1);
    let drives = values_after(&argv, "-drive");
    assert!(
        drives[0].starts_with(&format!("file={}", dir.join("disk.qcow2").display())),
        "{drives:?}"
    );
    assert!(
        drives[1].starts_with("file=fat:rw:"),
        "the disk stays /dev/vda: {drives:?}"
    );
    let tarball = dir.join("ovl/stoat.apkovl.tar.gz");
    let answers = overlay_file(&tarball, "etc/stoat/answerfile");
    assert!(answers.contains("HOSTNAMEOPTS='-n d'"), "{answers}");
    assert!(overlay_listing(&tarball)
        .iter()
        .any(|(m, p)| m == "-rwxr-xr-x" && p == "etc/local.d/stoat-install.start"));
    assert!(overlay_file(&tarball, "etc/apk/repositories").contains("/v3.19/main"));
    env.json(&["down", "d"]).data();

    // The installer filled the disk: the next up marks it installed and boots from it.
    let disk = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("disk.qcow2"))
        .unwrap();
    disk.set_len(11 * 1024 * 1024).unwrap();
    let up = env.json(&["up", "d", "--no-wait"]);
    assert_eq!(up.data()["vm"]["installed"], true);
    assert!(env.vm_toml("d").contains("installed = true"));
    let argv = recorded_argv(&env, "d");
    for flag in [
        "-kernel",
        "-initrd",
        "-append",
        "-cdrom",
        "-boot",
        "-no-reboot",
    ] {
        assert!(
            !argv.iter().any(|a| a == flag),
            "{flag} after install: {argv:?}"
        );
    }
    assert!(
        !argv.iter().any(|a| a.contains("media=cdrom")),
        "no installer CD after install: {argv:?}"
    );
    assert_eq!(values_after(&argv, "-drive").len(), 1);
}

#[test]
fn apkovl_up_without_xorriso_or_a_kernel_says_so_and_starts_nothing() {
    let mut env = TestEnv::new();
    fake_qemu(&env);
    std::os::unix::fs::symlink("/usr/bin/ssh-keygen", env.bin().join("ssh-keygen")).unwrap();
    let iso = env.tmp().join("alpine-virt-3.20.3-x86_64.iso");
    env.fake_alpine_iso(&iso);
    env.write_vm(
        "a",
        &format!("name = \"a\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"{}\"\nram = 256\ncpus = 1\nsshport = 29311\n", iso.display()),
    );
    env.set_env("PATH", &env.bin().display().to_string());
    let message = env.json(&["up", "a"]).error("internal");
    assert!(message.contains("xorriso"), "{message}");
    assert!(!env.root().join("a/qemu.pid").exists());

    // An ISO without /boot/vmlinuz-* is refused by name.
    env.set_env("PATH", &format!("{}:/usr/bin:/bin", env.bin().display()));
    let empty = env.tmp().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("README"), "not alpine").unwrap();
    let not_alpine = env.tmp().join("other.iso");
    let made = std::process::Command::new("xorriso")
        .args(["-as", "mkisofs", "-r", "-o"])
        .arg(&not_alpine)
        .arg(&empty)
        .output()
        .unwrap();
    assert!(made.status.success());
    env.write_vm(
        "b",
        &format!("name = \"b\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"{}\"\nram = 256\ncpus = 1\nsshport = 29312\n", not_alpine.display()),
    );
    let message = env.json(&["up", "b"]).error("invalid_spec");
    assert!(message.contains("/boot/vmlinuz-*"), "{message}");
    assert!(!env.root().join("b/qemu.pid").exists() && !env.root().join("b/vmlinuz").exists());
}

/// A VM `w` that starts with the fake QEMU, on a PATH holding only stoat's own tools (so which
/// VNC viewer is "found" is the test's choice), and the environment's VNC socket path.
fn display_vm(display: &str) -> (TestEnv, Reaper) {
    let mut env = TestEnv::new();
    fake_qemu(&env);
    write_live_vm(&env, "w", free_port(), display);
    std::os::unix::fs::symlink("/usr/bin/ssh-keygen", env.bin().join("ssh-keygen")).unwrap();
    env.set_env("PATH", &env.bin().display().to_string());
    env.set_env("STOAT_DOWN_TIMEOUT_SECS", "1");
    let reaper = Reaper::watch(&env, &["w"]);
    (env, reaper)
}

/// stdout of a successful human run, with the data root and the ssh port masked.
fn human_stdout(env: &TestEnv, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let port = regex::Regex::new(r"(ssh :|ssh port: )\d+").unwrap();
    port.replace_all(&text, "${1}[PORT]")
        .replace(&env.root().display().to_string(), "[ROOT]")
}

/// Stops `w` and starts it again; returns what the human `up` printed.
fn restart(env: &TestEnv, up: &[&str]) -> String {
    env.json(&["down", "w"]).data();
    human_stdout(env, up)
}

#[test]
fn up_shows_the_display_notice_once_and_again_only_when_it_changes() {
    let (mut env, _reaper) = display_vm("");
    // The first start on a headless host: where the screen is, in two lines (nobody asked for
    // a window, so nothing explains why there is none).
    insta::assert_snapshot!(human_stdout(&env, &["up", "w", "--no-wait"]), @r"
    w started (ssh :[PORT])
    display: vnc on [ROOT]/w/vnc.sock
    attach: no VNC viewer found (install gvncviewer or socat)
    ");
    // The next start with the same surface and advice says nothing about the display.
    insta::assert_snapshot!(restart(&env, &["up", "w", "--no-wait"]), @"w started (ssh :[PORT])");
    // get always says where the screen is and how to attach, in two fields.
    insta::assert_snapshot!(human_stdout(&env, &["get", "w"]), @r"
    name: w
    os: alpine
    image: x.iso
    mode: live
    backend: apkovl
    state: running
    health: unknown
    cpus: 1
    ram: 256 MB
    disk: none
    share: none
    ssh port: [PORT]
    ssh user: root
    recipes: none
    forwards: none
    agent access: manage
    display: vnc on [ROOT]/w/vnc.sock
    attach: no VNC viewer found (install gvncviewer or socat)
    ");

    // A viewer installed changes the advice: shown once more, then not.
    stub(&env, "gvncviewer", "exit 0\n");
    let up = restart(&env, &["up", "w", "--no-wait"]);
    assert!(
        up.contains("\nattach: gvncviewer [ROOT]/w/vnc.sock\n"),
        "{up}"
    );
    assert!(!restart(&env, &["up", "w", "--no-wait"]).contains("display"));
    // A window instead of VNC is news too.
    env.set_env("STOAT_GRAPHICAL", "1");
    assert_eq!(
        restart(&env, &["up", "w", "--no-wait"]),
        "w started (ssh :[PORT])\ndisplay: a qemu window\n"
    );
    assert!(!restart(&env, &["up", "w", "--no-wait"]).contains("display"));

    // Back to VNC: neither -q nor --json shows the notice, so neither marks it shown.
    env.set_env("STOAT_GRAPHICAL", "0");
    assert_eq!(
        restart(&env, &["up", "w", "--no-wait", "-q"]),
        "w started (ssh :[PORT])\n"
    );
    env.json(&["down", "w"]).data();
    let json = env.json(&["up", "w", "--no-wait"]);
    assert!(!json.stdout.contains("vnc.sock"), "{}", json.stdout);
    let up = restart(&env, &["up", "w", "--no-wait"]);
    assert!(up.contains("display: vnc on"), "{up}");
    let remembered = std::fs::read_to_string(env.root().join("w/display-notice")).unwrap();
    assert!(remembered.starts_with("display: vnc on"), "{remembered}");
    // Asking for a window on a headless host is the one case that explains why there is none.
    env.json(&["down", "w"]).data();
    env.json(&["update", "w", "--display", "window"]).data();
    let up = human_stdout(&env, &["up", "w", "--no-wait"]);
    assert!(
        up.contains("no usable graphical session on this host"),
        "{up}"
    );
    env.json(&["down", "w"]).data();
}

#[test]
fn get_shows_where_the_screen_is_and_json_never_the_socket() {
    let (mut env, _reaper) = display_vm("display = \"vnc\"\n");
    let get = human_stdout(&env, &["get", "w"]);
    assert!(
        get.ends_with(
            "display: vnc on [ROOT]/w/vnc.sock\nattach: no VNC viewer found (install gvncviewer or socat)\n"
        ),
        "{get}"
    );
    stub(&env, "gvncviewer", "exit 0\n");
    let get = human_stdout(&env, &["get", "w"]);
    assert!(
        get.ends_with("display: vnc on [ROOT]/w/vnc.sock\nattach: gvncviewer [ROOT]/w/vnc.sock\n"),
        "{get}"
    );
    // get shows the fields every time: it remembers nothing.
    assert_eq!(human_stdout(&env, &["get", "w"]), get);
    assert!(!env.root().join("w/display-notice").exists());
    for args in [&["get", "w"][..], &["ls"]] {
        let run = env.json(args);
        assert!(!run.stdout.contains("vnc.sock"), "{}", run.stdout);
    }
    assert_eq!(env.json(&["get", "w"]).data()["vm"]["display"], "vnc");

    env.set_env("STOAT_GRAPHICAL", "1");
    let get = human_stdout(&env, &["get", "w"]);
    assert!(get.contains("display: vnc on "), "vnc asked: {get}");
    env.write_vm(
        "x",
        "name = \"x\"\nmode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/n/x.iso\"\nram = 256\ncpus = 1\nsshport = 29314\n",
    );
    let get = human_stdout(&env, &["get", "x"]);
    assert!(get.ends_with("display: a qemu window\n"), "{get}");
    env.write_broken_vm("bad");
    let get = String::from_utf8(env.run(&["get", "bad"]).stdout).unwrap();
    assert!(
        !get.contains("display:"),
        "no display line for a broken VM: {get}"
    );
}

/// Peak RSS in KiB of `stoat ARGS` (and what it waited for) run in `env`'s sandbox with
/// `stdin` fed to it; its stdout is returned.
fn peak_rss(env: &TestEnv, argv: &str, stdin: &str) -> (u64, Vec<u8>) {
    let rss = env.tmp().join("rss");
    let input = env.tmp().join("stdin");
    std::fs::write(&input, stdin).unwrap();
    let out = env
        .shell(&format!(
            "/usr/bin/time -f %M -o '{}' stoat {argv} < '{}'",
            rss.display(),
            input.display()
        ))
        .output()
        .unwrap();
    let kib = std::fs::read_to_string(&rss)
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no RSS figure: {}", String::from_utf8_lossy(&out.stderr)));
    (kib, out.stdout)
}

/// The guest command that prints 100 MiB of text.
const HUNDRED_MIB: &str = "yes 0123456789abcdef | head -c 104857600";

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn exec_capture_of_100_mib_is_cut_at_8_mib_with_a_flag_in_bounded_memory() -> TestEnv {
    let (mut env, _reaper, _port) = running_vm("w");
    env.fake_tool("ssh");
    env.fake_script(&serde_json::json!({"tools": {"ssh": [{"run_locally": true}]}}));
    let toml = env.root().join("w/vm.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("agent_access = \"exec\"\n");
    std::fs::write(&toml, text).unwrap();

    let (kib, stdout) = peak_rss(&env, &format!("--json exec w sh -c '{HUNDRED_MIB}'"), "");
    eprintln!("--json exec of 100 MiB: peak RSS {kib} KiB");
    let result: serde_json::Value = serde_json::from_slice(
        stdout
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    let data = &result["data"];
    assert_eq!(data["exit_code"], 0, "{}", &result.to_string()[..200]);
    let out = data["stdout"].as_str().unwrap();
    assert_eq!(out.len(), 8 << 20);
    assert!(out.starts_with("0123456789abcdef\n0123456789abcdef\n"));
    assert_eq!(data["stdout_truncated"], true);
    assert!(data.get("stderr_truncated").is_none(), "stderr was not cut");
    assert!(kib < 64 * 1024, "peak RSS {kib} KiB");

    // A short answer carries no flag at all.
    let small = env.json_raw(&["--json", "exec", "w", "echo", "hi"]);
    assert_eq!(small.data()["stdout"], "hi\n");
    assert!(small.data().get("stdout_truncated").is_none());

    // MCP exec: the same cut, in a bounded response.
    let lines = [
        serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"stoat-tests","version":"1"}}}),
        serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
            "name":"exec","arguments":{"vm":"w","command":["sh","-c",HUNDRED_MIB]}}}),
    ]
    .map(|l| l.to_string() + "\n")
    .concat();
    let (kib, stdout) = peak_rss(&env, "mcp", &lines);
    eprintln!(
        "MCP exec of 100 MiB: peak RSS {kib} KiB, response {} bytes",
        stdout.len()
    );
    let answer: serde_json::Value = serde_json::from_slice(
        stdout
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    let content = &answer["result"]["structuredContent"];
    assert_eq!(answer["id"], 1);
    assert_eq!(
        content["stdout"].as_str().unwrap().len(),
        8 << 20,
        "{}",
        &answer.to_string()[..300]
    );
    assert_eq!(content["stdout_truncated"], true);
    assert!(
        stdout.len() < 40 << 20,
        "response of {} bytes",
        stdout.len()
    );
    assert!(kib < 100 * 1024, "peak RSS {kib} KiB");
    env
}

/// The ssh calls that ran a guest script (`... sh -s`, the 9p unmount around a live
/// snapshot), each call's argv.
fn script_calls(env: &TestEnv) -> Vec<Vec<String>> {
    env.fake_argvs("ssh")
        .into_iter()
        .filter(|argv| argv.ends_with(&["sh".to_owned(), "-s".to_owned()]))
        .collect()
}

#[test]
fn a_live_snapshot_unmounts_the_shares_through_the_vms_master_when_one_answers() {
    let env = TestEnv::new();
    let port = free_port();
    env.write_vm(
        "d",
        &format!(
            "name = \"d\"\nmode = \"disk\"\ninstalled = true\nos = \"debian\"\nbackend = \"ssh\"\niso = \"/nonexistent/x.iso\"\nram = 256\ncpus = 1\nsshport = {port}\nsshuser = \"stoat\"\n"
        ),
    );
    crate::common::make_qcow2(&env.root().join("d/disk.qcow2"), "16M");
    // stoat-fake's QEMU with its monitor (savevm) and an ssh banner; its ssh logs each argv.
    for tool in ["qemu-system-x86_64", "passt", "ssh"] {
        env.fake_tool(tool);
    }
    let _reaper = Reaper::watch(&env, &["d"]);
    env.json(&["up", "d", "--no-wait"]).data();
    // The first exec would become the master: its argv names the VM's socket.
    env.json_raw(&["--json", "exec", "--timeout", "20s", "d", "true"])
        .data();
    let socket = env
        .fake_argvs("ssh")
        .concat()
        .into_iter()
        .find_map(|word| word.strip_prefix("ControlPath=").map(str::to_owned))
        .expect("exec names the master's socket");
    // The fake ssh makes no socket: a listener stands in for a live master.
    let master =
        std::os::unix::net::UnixListener::bind(env.root().join("d").join(&socket)).unwrap();
    env.clear_fake_calls();
    env.json(&["snapshot", "d", "s1"]).data();
    let calls = script_calls(&env);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0].contains(&"ControlMaster=no".to_owned())
            && calls[0].contains(&format!("ControlPath={socket}")),
        "the unmount goes through the master: {:?}",
        calls[0]
    );
    // No master answering: the unmount connects directly, and never becomes the master.
    drop(master);
    std::fs::remove_file(env.root().join("d").join(&socket)).unwrap();
    env.clear_fake_calls();
    env.json(&["snapshot", "d", "s2"]).data();
    let calls = script_calls(&env);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        !calls[0].iter().any(|word| word.starts_with("Control")),
        "{:?}",
        calls[0]
    );
    let tags: Vec<String> = env.json(&["snapshot", "d"]).data()["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tag"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tags, ["s1", "s2"]);
}
