//! Cancellation that tells the truth, through the real binary: a SIGINT or SIGTERM reaches
//! the tools stoat runs, stoat waits for them to end and answers `canceled` only when
//! nothing changed; what a tool finished before it stopped is reported as done. A slow fake
//! `qemu-img` (it says when it has started, then sleeps before doing the real work) makes
//! the moment of the signal exact.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{create_disk_args, eventually, JsonRun, Spawned, TestEnv, ALPINE_VIRT};

/// The real qemu-img, outside the test's bin directory.
fn real_qemu_img() -> PathBuf {
    ["/usr/bin/qemu-img", "/usr/local/bin/qemu-img"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("qemu-img is installed (apt install qemu-utils)")
}

/// A qemu-img that, for `subcommand`, writes its PID to `<tmp>/qemu-img.pid`, then sleeps
/// before running the real one. `on_term` is the shell's reaction to SIGTERM ("" for the
/// default: die). The sleep is a loop of short foreground sleeps, not one long one: a shell
/// runs its trap only once its foreground child ends, and a signal to the group that lands
/// before a long sleep has forked would leave the trap waiting for it. An inline wrapper,
/// not `stoat-fake`: every other subcommand must reach the real qemu-img.
fn slow_qemu_img(env: &TestEnv, subcommand: &str, on_term: &str) -> PathBuf {
    slow_qemu_img_when(env, &format!("[ \"$1\" = {subcommand} ]"), on_term)
}

/// [`slow_qemu_img`] for the runs for which the shell test `when` holds.
pub(crate) fn slow_qemu_img_when(env: &TestEnv, when: &str, on_term: &str) -> PathBuf {
    let pid_file = env.tmp().join("qemu-img.pid");
    let _ = std::fs::remove_file(&pid_file);
    let real = real_qemu_img();
    let script = format!(
        "#!/bin/sh\nif {when}; then\n{on_term}\necho $$ > '{pid}.new' && mv '{pid}.new' '{pid}'\nwhile :; do sleep 0.1; done\nfi\nexec '{real}' \"$@\"\n",
        pid = pid_file.display(),
        real = real.display(),
    );
    let path = env.bin().join("qemu-img");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    pid_file
}

/// How long a signalled stoat gets to answer and end: generous, it is only ever waited out
/// when something is wrong.
pub(crate) const ANSWER: Duration = Duration::from_secs(60);

/// Starts `stoat --json <args>` in its own process group (as a shell job is).
pub(crate) fn spawn_json(env: &TestEnv, args: &[&str]) -> Spawned {
    spawn_json_with(env, args, &[])
}

fn spawn_json_with(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Spawned {
    // First, so that after exec's VM name everything stays the guest's.
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    Spawned::start_group(env.std_cmd(&all).envs(vars.iter().copied()))
}

/// Waits until the fake tool has written its PID to `pid_file`; fails at once if stoat ends
/// without it.
pub(crate) fn wait_for_tool(run: &mut Spawned, pid_file: &Path) -> i32 {
    eventually(Duration::from_secs(60), || {
        let pid = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        if pid.is_none() {
            if let Some(status) = run.try_status() {
                panic!("stoat ended ({status}) before its tool started");
            }
        }
        pid
    })
}

/// Whether a process is still there (a zombie, already dead, counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Canceled means nothing changed: no VM, no leftover, and the name is free.
fn assert_no_vm(env: &TestEnv) {
    let listed = env.json(&["ls"]).data()["vms"].clone();
    assert_eq!(listed, Value::Array(vec![]), "{listed}");
    env.json(&["get", "n"]).error("not_found");
    let staged: Vec<_> = std::fs::read_dir(env.root().join(".staging"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(staged.is_empty(), "left behind: {staged:?}");
}

#[test]
fn sigterm_during_qemu_img_stops_it_and_answers_canceled_with_nothing_made() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let pid_file = slow_qemu_img(&env, "create", "");
    let mut run = spawn_json(&env, &create_disk_args("n"));
    let tool = wait_for_tool(&mut run, &pid_file);
    run.signal(libc::SIGTERM);
    run.json(ANSWER).error("canceled");
    assert!(!alive(tool), "qemu-img still runs after stoat answered");
    assert_no_vm(&env);
}

#[test]
fn ctrl_c_to_the_whole_group_during_qemu_img_answers_canceled() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let pid_file = slow_qemu_img(&env, "create", "");
    let mut run = spawn_json(&env, &create_disk_args("n"));
    let tool = wait_for_tool(&mut run, &pid_file);
    run.signal_group(libc::SIGINT);
    let done = run.json(ANSWER);
    let why = done.error("canceled");
    assert!(!why.contains("qemu-img"), "{why}");
    assert!(!alive(tool), "qemu-img still runs after stoat answered");
    assert_no_vm(&env);
}

/// The qcow2's virtual size, from the real qemu-img.
fn virtual_size(disk: &Path) -> u64 {
    let out = std::process::Command::new(real_qemu_img())
        .args(["info", "--output=json", "-U"])
        .arg(disk)
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    info["virtual-size"].as_u64().unwrap()
}

#[test]
fn a_canceled_resize_changes_nothing_and_a_finished_one_is_reported_done() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    env.json(&create_disk_args("n")).data();
    let disk = env.root().join("n/disk.qcow2");

    // Stopped before it resized: canceled, and disk and vm.toml both keep 64M.
    let pid_file = slow_qemu_img(&env, "resize", "");
    let mut run = spawn_json(&env, &["update", "n", "--disk", "128M"]);
    let tool = wait_for_tool(&mut run, &pid_file);
    run.signal(libc::SIGTERM);
    run.json(ANSWER).error("canceled");
    assert!(!alive(tool));
    assert_eq!(virtual_size(&disk), 64 << 20);
    assert_eq!(env.json(&["get", "n"]).data()["vm"]["disk"], "64M");

    // A qemu-img that finishes its resize when told to stop: the resize is done, so the
    // answer is the update's, not `canceled`, and vm.toml agrees with the disk.
    std::fs::remove_file(&pid_file).unwrap();
    let finish_on_term = format!("trap 'exec \"{}\" \"$@\"' TERM", real_qemu_img().display());
    let pid_file = slow_qemu_img(&env, "resize", &finish_on_term);
    let mut run = spawn_json(&env, &["update", "n", "--disk", "128M"]);
    wait_for_tool(&mut run, &pid_file);
    run.signal(libc::SIGTERM);
    let done = run.json(ANSWER);
    assert_eq!(done.data()["changed"], serde_json::json!(["disk"]));
    assert_eq!(virtual_size(&disk), 128 << 20);
    assert_eq!(env.json(&["get", "n"]).data()["vm"]["disk"], "128M");
}

/// A row of `kill_sweep` (test_sweeps.rs).
pub(crate) fn a_signal_at_any_moment_from_the_first_instruction_still_yields_one_result_line() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    // The pause point stops stoat at the first instruction of its own (before it the kernel
    // is still loading the program, and no process can answer for itself). A signal while
    // it is stopped there, then a sweep of moments through its first milliseconds.
    for step in 0..41u64 {
        let create = create_disk_args("n");
        let args: &[&str] = if step % 2 == 0 { &["ls"] } else { &create };
        let mut run = spawn_json_with(&env, args, &[("STOAT_FAULT", "first-instruction")]);
        eventually(Duration::from_secs(20), || {
            assert!(run.running(), "stoat never paused at its first instruction");
            run.proc_state() == Some('T')
        });
        let signal = if step % 3 == 0 {
            libc::SIGINT
        } else {
            libc::SIGTERM
        };
        if step == 0 {
            run.signal(signal);
        }
        run.signal(libc::SIGCONT);
        if step > 0 {
            let offset = Instant::now() + Duration::from_micros(step * 50);
            while Instant::now() < offset {
                std::hint::spin_loop();
            }
            run.signal(signal);
        }
        // JsonRun::check asserts exactly one result line, last, and the exit status.
        let done = run.json(ANSWER);
        if !done.ok() {
            done.error("canceled");
            env.json(&["get", "n"]).error("not_found");
        }
        let _ = env.json(&["rm", "n", "-y"]);
    }
}

/// A row of `kill_sweep` (test_sweeps.rs).
pub(crate) fn canceling_exec_stops_ssh_then_the_guest_command_and_answers_canceled_in_both_modes() {
    let (env, _reaper, _) = crate::test_runtime::running_vm("w");
    // A fake ssh: the exec's command writes its PID and sleeps; the stopping command (the
    // one that kills what the exec's shell recorded) says so, slowly.
    let started = env.tmp().join("ssh.pid");
    let stopped = env.tmp().join("stopped");
    crate::common::stub(
        &env,
        "ssh",
        &format!(
            "for last; do :; done\ncase \"$last\" in\n'm=STOAT_EXEC='*) sleep 1; echo \"$last\" > '{stopped}'; exit 0;;\nesac\necho $$ > '{started}.new' && mv '{started}.new' '{started}'\nwhile :; do sleep 0.1; done\n",
            stopped = stopped.display(),
            started = started.display()
        ),
    );
    for json in [true, false] {
        let _ = std::fs::remove_file(&started);
        let _ = std::fs::remove_file(&stopped);
        let mut run = if json {
            spawn_json(&env, &["exec", "w", "sleep", "300"])
        } else {
            Spawned::start_group(&mut env.std_cmd(&["exec", "w", "sleep", "300"]))
        };
        let ssh = wait_for_tool(&mut run, &started);
        // Ctrl-C at the terminal: the whole group.
        run.signal_group(libc::SIGINT);
        if json {
            let done = run.json(ANSWER);
            let why = done.error("canceled");
            assert!(!why.contains("left done or not done"), "{why}");
        } else {
            let out = run.wait(ANSWER);
            assert_eq!(
                out.status.code(),
                Some(130),
                "a shell's Ctrl-C status: {out:?}"
            );
        }
        assert!(
            !alive(ssh),
            "json={json}: ssh still runs after stoat answered"
        );
        let stop = std::fs::read_to_string(&stopped).expect("the guest command was stopped");
        assert!(stop.contains("STOAT_EXEC="), "json={json}: {stop}");
    }
}

/// A row of `kill_sweep` (test_sweeps.rs).
pub(crate) fn canceling_up_while_it_waits_stops_the_qemu_it_started_in_both_modes() {
    for json in [true, false] {
        let env = TestEnv::new();
        // A guest that never answers ssh: `up` starts QEMU, then waits.
        crate::common::fake_qemu(&env);
        crate::test_runtime::write_live_vm(&env, "w", crate::common::free_port(), "");
        let _reaper = crate::common::Reaper::watch(&env, &["w"]);
        let args: &[&str] = if json {
            &["--json", "up", "w"]
        } else {
            &["up", "w"]
        };
        let mut up = Spawned::start_group(&mut env.std_cmd(args));
        let pid_file = env.root().join("w/qemu.pid");
        let qemu = wait_for_tool(&mut up, &pid_file);
        // Ctrl-C at the terminal: the whole group.
        up.signal_group(libc::SIGINT);
        let out = up.wait(ANSWER);
        assert!(!out.status.success(), "json={json}: {out:?}");
        if json {
            JsonRun::check(out).error("canceled");
        } else {
            assert_eq!(
                out.status.code(),
                Some(130),
                "a shell's Ctrl-C status: {out:?}"
            );
        }
        assert!(!alive(qemu), "json={json}: the QEMU up started still runs");
        assert_eq!(env.json(&["get", "w"]).data()["vm"]["state"], "stopped");
    }
}

// ---- REAL tier ----------------------------------------------------------------------------

/// The guest's process list, through exec.
fn guest_ps(env: &TestEnv, vm: &str) -> String {
    let ps = env.json_raw(&["--json", "exec", vm, "ps", "-o", "args"]);
    ps.data()["stdout"].as_str().unwrap_or_default().to_owned()
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_canceling_exec_stops_the_guest_command_and_answers_canceled() {
    use crate::common::{real_guest, RealGuard};
    let guest = real_guest();
    let env = TestEnv::new();
    let port = crate::common::free_port();
    env.write_vm(
        "x",
        &format!(
            "name = \"x\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {port}\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            guest.image.display()
        ),
    );
    let _guard = RealGuard(env.root().join("x"));
    env.json(&["up", "x"]).data();
    let bystander = env.json_raw(&[
        "--json",
        "exec",
        "x",
        "sh",
        "-c",
        "(sleep 309 >/dev/null 2>&1 &); true",
    ]);
    assert_eq!(bystander.data()["exit_code"], 0, "{}", bystander.stdout);
    let mut run = spawn_json(&env, &["exec", "x", "sh", "-c", "sleep 307; echo never"]);
    eventually(Duration::from_secs(60), || {
        guest_ps(&env, "x").contains("sleep 307")
    });
    run.signal_group(libc::SIGINT);
    let done = run.json(ANSWER);
    let why = done.error("canceled");
    assert!(!why.contains("left done or not done"), "{why}");
    assert!(!done.stdout.contains("never"), "{}", done.stdout);
    let ps = guest_ps(&env, "x");
    assert!(
        !ps.contains("sleep 307"),
        "the guest command still runs: {ps}"
    );
    // The cancel found the command by its own exec's mark: what an earlier exec left running
    // in the guest is not its to stop.
    assert!(ps.contains("sleep 309"), "a bystander was stopped: {ps}");
    env.json(&["down", "x"]).data();
}

/// An `ssh-keygen` that records its PID and waits a minute (dying on any signal).
fn slow_keygen(env: &TestEnv) -> PathBuf {
    let pid_file = env.tmp().join("ssh-keygen.pid");
    let script = format!(
        "#!/bin/sh\necho $$ > '{pid}.new' && mv '{pid}.new' '{pid}'\nsleep 60 &\nwait $!\n",
        pid = pid_file.display(),
    );
    let path = env.bin().join("ssh-keygen");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    pid_file
}

#[test]
fn ctrl_c_during_key_generation_answers_canceled_and_leaves_no_half_key() {
    let env = TestEnv::new();
    let pid_file = slow_keygen(&env);
    env.write_basic_vm("w", 2260);
    // The first command that needs the key pair makes it.
    let mut run = spawn_json(&env, &["ssh-command", "w"]);
    let tool = wait_for_tool(&mut run, &pid_file);
    run.signal_group(libc::SIGINT);
    let why = run.json(ANSWER).error("canceled");
    assert!(!why.contains("ssh-keygen"), "{why}");
    // Stoat stopped the tool and answered itself, not the last-resort answer of a command
    // that never stopped.
    assert!(!why.contains("before the command had stopped"), "{why}");
    assert!(!alive(tool), "ssh-keygen still runs after stoat answered");
    assert!(!env.root().join("id_stoat").exists());
    assert!(!env.root().join("id_stoat.pub").exists());
    // With the real tool, the next command makes the pair.
    std::fs::remove_file(env.bin().join("ssh-keygen")).unwrap();
    env.json(&["ssh-command", "w"]).data();
    assert!(env.root().join("id_stoat").is_file() && env.root().join("id_stoat.pub").is_file());
}

/// A command blocked in stoat itself (here: reading a recipe index from a server that took
/// the request and never answers) answers a SIGTERM with `canceled` within 2 s, not after
/// the 30 s the signal handling allows an operation that is still undoing what it started.
/// A row of `kill_sweep` (test_sweeps.rs).
pub(crate) fn sigterm_of_a_command_blocked_on_a_read_answers_within_two_seconds() {
    use std::io::Read as _;
    let env = TestEnv::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let index = format!("http://127.0.0.1:{port}/index.toml");
    let mut run = spawn_json_with(
        &env,
        &["recipe", "search"],
        &[("STOAT_RECIPE_INDEX", index.as_str())],
    );
    let (mut conn, _) = listener.accept().unwrap();
    // The whole request has arrived: stoat now waits for an answer that never comes.
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") {
        assert_eq!(conn.read(&mut byte).unwrap(), 1, "the request ended early");
        request.push(byte[0]);
    }
    assert!(run.running());
    let signalled = Instant::now();
    run.signal(libc::SIGTERM);
    let answer = run.json(ANSWER);
    let took = signalled.elapsed();
    answer.error("canceled");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    drop(conn);
}

/// A qemu-img reaction to SIGTERM that does the work anyway and then dies of the signal: the
/// change is on disk although the tool's status says it was killed.
pub(crate) fn finish_then_die() -> String {
    format!(
        "trap '\"{}\" \"$@\"; exit 143' TERM",
        real_qemu_img().display()
    )
}

pub(crate) fn qemu_io(disk: &Path, command: &str) -> bool {
    let out = std::process::Command::new("qemu-io")
        .args(["-f", "qcow2", "-c", command])
        .arg(disk)
        .output()
        .expect("qemu-io runs (apt install qemu-utils)");
    out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("failed")
}

fn tags(env: &TestEnv) -> Vec<String> {
    env.json(&["snapshot", "n"]).data()["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tag"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs `stoat --json <args>`, SIGTERMs it once the slow qemu-img for `when` has started,
/// and returns the answer.
fn cancel_during(env: &TestEnv, args: &[&str], when: &str, on_term: &str) -> JsonRun {
    let pid_file = slow_qemu_img_when(env, when, on_term);
    let mut run = spawn_json(env, args);
    let tool = wait_for_tool(&mut run, &pid_file);
    run.signal(libc::SIGTERM);
    let answer = run.json(ANSWER);
    assert!(!alive(tool), "qemu-img still runs after stoat answered");
    answer
}

/// `canceled` is true of every stopped-VM snapshot step: after a qemu-img stopped by the
/// cancel, stoat reads the disk. Not written: `canceled`, and the disk is as before. Written
/// (the tool did its work and then died of the signal): the command's own answer.
#[test]
fn a_canceled_cold_snapshot_answers_what_the_disk_says() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    env.json(&create_disk_args("n")).data();
    let disk = env.root().join("n/disk.qcow2");
    let save = r#"[ "$2" = -c ]"#;
    let delete = r#"[ "$2" = -d ]"#;
    let restore = r#"[ "$2" = -a ]"#;

    // save
    cancel_during(&env, &["snapshot", "n", "clean"], save, "").error("canceled");
    assert!(tags(&env).is_empty());
    let done = cancel_during(&env, &["snapshot", "n", "clean"], save, &finish_then_die());
    assert_eq!(done.data()["action"], "save");
    assert_eq!(tags(&env), ["clean"]);

    // restore: data written after the snapshot stays unless the restore took
    assert!(qemu_io(&disk, "write -P 0x55 0 64k"));
    cancel_during(&env, &["snapshot", "n", "clean", "--restore"], restore, "").error("canceled");
    assert!(
        qemu_io(&disk, "read -P 0x55 0 64k"),
        "the disk is as before"
    );
    let done = cancel_during(
        &env,
        &["snapshot", "n", "clean", "--restore"],
        restore,
        &finish_then_die(),
    );
    assert_eq!(done.data()["action"], "restore");
    assert!(
        qemu_io(&disk, "read -P 0 0 64k"),
        "the disk is the snapshot's"
    );

    // a forced save over the tag: the new one is written, so the old one goes too
    let done = cancel_during(
        &env,
        &["snapshot", "n", "clean", "--force"],
        save,
        &finish_then_die(),
    );
    assert_eq!(done.data()["action"], "save");
    assert_eq!(tags(&env), ["clean"]);

    // delete
    cancel_during(&env, &["snapshot", "n", "clean", "--delete"], delete, "").error("canceled");
    assert_eq!(tags(&env), ["clean"]);
    let done = cancel_during(
        &env,
        &["snapshot", "n", "clean", "--delete"],
        delete,
        &finish_then_die(),
    );
    assert_eq!(done.data()["action"], "delete");
    assert!(tags(&env).is_empty());
}

/// `update --disk` whose qemu-img resized the disk and then died of the cancel: the resize
/// took, so the answer is the update's and vm.toml records the new size.
#[test]
fn a_resize_that_took_before_its_tool_died_is_reported_done() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    env.json(&create_disk_args("n")).data();
    let disk = env.root().join("n/disk.qcow2");
    let done = cancel_during(
        &env,
        &["update", "n", "--disk", "128M"],
        r#"[ "$1" = resize ]"#,
        &finish_then_die(),
    );
    assert_eq!(done.data()["changed"], serde_json::json!(["disk"]));
    assert_eq!(virtual_size(&disk), 128 << 20);
    assert_eq!(env.json(&["get", "n"]).data()["vm"]["disk"], "128M");
}

/// Waits until the guest's process list has none of `words` (a guest command stopped by its
/// guard takes a moment: the guard's own login, or apply's watchdog polling once a second,
/// then SIGTERM, SIGKILL 2 s on).
fn wait_gone(env: &TestEnv, vm: &str, words: &[&str]) {
    eventually(Duration::from_secs(30), || {
        let ps = guest_ps(env, vm);
        if words.iter().all(|w| !ps.contains(w)) {
            Ok(())
        } else {
            Err(format!(
                "still running in the guest after stoat was killed: {ps}"
            ))
        }
    });
}

/// How many of the guest's files match a shell glob.
fn guest_count(env: &TestEnv, vm: &str, glob: &str) -> String {
    let ls = env.json_raw(&[
        "--json",
        "exec",
        vm,
        "sh",
        "-c",
        &format!("ls -d {glob} 2>/dev/null | wc -l"),
    ]);
    ls.data()["stdout"].as_str().unwrap().trim().to_owned()
}

/// A SIGKILLed stoat (no handler runs) still takes the guest command along, and the
/// children it double-forked: exec's guard on the host sees its pipe end, apply's watchdog
/// sees its connection's ssh server go; neither leaves its temporary file in the guest.
#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_sigkilled_exec_and_apply_take_the_guest_command_and_its_children_along() {
    use crate::common::{real_guest, RealGuard};
    let guest = real_guest();
    let env = TestEnv::new();
    env.write_recipe(
        "slow",
        "schema = 3\nname = \"slow\"\nversion = \"1.0\"\nscript = \"install.sh\"\nrun = \"manual\"\n",
        "( sleep 317 & )\necho slow start\nsleep 319\necho slow never\n",
    );
    let image = guest.image.display().to_string();
    env.json(&[
        "create",
        "x",
        "--image",
        &image,
        "--os",
        "debian",
        "--ram",
        "256",
        "--cpus",
        "1",
        "--disk",
        "256M",
        "--recipes",
        "slow",
    ])
    .data();
    let _guard = RealGuard(env.root().join("x"));
    env.json(&["up", "x", "--no-apply"]).data();

    // exec: the command and a grandchild that left it (double fork)
    let mut run = spawn_json(
        &env,
        &[
            "exec",
            "x",
            "sh",
            "-c",
            "( sleep 311 & ); sleep 313; echo never",
        ],
    );
    eventually(Duration::from_secs(60), || {
        let ps = guest_ps(&env, "x");
        ps.contains("sleep 311") && ps.contains("sleep 313")
    });
    run.signal(libc::SIGKILL);
    eventually(ANSWER, || run.try_status());
    wait_gone(&env, "x", &["sleep 311", "sleep 313"]);

    // apply
    let mut run = spawn_json(&env, &["apply", "x", "--only", "slow"]);
    eventually(Duration::from_secs(60), || {
        assert!(run.running(), "apply ended early");
        guest_ps(&env, "x").contains("sleep 319")
    });
    run.signal(libc::SIGKILL);
    eventually(ANSWER, || run.try_status());
    wait_gone(&env, "x", &["sleep 317", "sleep 319"]);
    assert_eq!(guest_count(&env, "x", "/tmp/.stoat-apply.*"), "0");
    env.json(&["down", "x"]).data();
}

/// Whether the guest's process list (`ps -o args`) has `line` as a whole line: `sleep 331`
/// itself, not the shell line of the exec that runs it, which holds the same words.
fn has_line(ps: &str, line: &str) -> bool {
    ps.lines().any(|l| l.trim() == line)
}

/// The host's exec guards (core exec_guard.rs) of `env`'s VMs: processes whose command line
/// holds the guard's argument and `env`'s data root (the guard's ssh names the VM's key).
fn host_guards(env: &TestEnv) -> Vec<String> {
    let root = env.root().display().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|line| line.contains("__exec-guard") && line.contains(&root))
        .collect()
}

/// Fails unless `line` stays in the guest's process list for `stay`, looked at again and
/// again meanwhile.
fn stays(env: &TestEnv, vm: &str, line: &str, stay: Duration) {
    let since = Instant::now();
    loop {
        let ps = guest_ps(env, vm);
        assert!(has_line(&ps, line), "{line} went away: {ps}");
        if since.elapsed() >= stay {
            return;
        }
    }
}

/// In a terminal (no `--json`) as under it, a SIGKILLed exec's guard on the host (core
/// exec_guard.rs) stops its command and the child it double-forked, then ends. A command
/// that ends normally leaves the daemon it started running, in a terminal and under `--json`
/// alike: its guard heard `done` and is gone with the exec.
#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_sigkilled_terminal_exec_takes_its_command_along_and_one_that_ends_leaves_its_daemon() {
    use crate::common::{real_guest, RealGuard};
    use std::process::Stdio;
    let guest = real_guest();
    let env = TestEnv::new();
    let image = guest.image.display().to_string();
    env.json(&[
        "create", "x", "--image", &image, "--os", "debian", "--ram", "256", "--cpus", "1",
        "--disk", "256M",
    ])
    .data();
    let _guard = RealGuard(env.root().join("x"));
    env.json(&["up", "x"]).data();
    let human = |args: &[&str]| Spawned::start_group(env.std_cmd(args).stdin(Stdio::null()));

    // SIGKILLed once its command and the child that left it run in the guest.
    let mut run = human(&[
        "exec",
        "x",
        "sh",
        "-c",
        "( sleep 331 & ); sleep 333; echo never",
    ]);
    eventually(Duration::from_secs(60), || {
        if let Some(status) = run.try_status() {
            panic!(
                "exec ended early ({status:?}): {}",
                String::from_utf8_lossy(run.stderr.bytes())
            );
        }
        let ps = guest_ps(&env, "x");
        has_line(&ps, "sleep 331") && has_line(&ps, "sleep 333")
    });
    assert_eq!(host_guards(&env).len(), 1, "{:?}", host_guards(&env));
    run.signal(libc::SIGKILL);
    let killed = Instant::now();
    eventually(ANSWER, || run.try_status());
    wait_gone(&env, "x", &["sleep 331", "sleep 333"]);
    println!(
        "TIMING the SIGKILLed terminal exec's command gone after {:.2?}",
        killed.elapsed()
    );
    // The guard itself ends once its SIGKILL (2 s after the SIGTERM) has gone out.
    eventually(Duration::from_secs(30), || host_guards(&env).is_empty());
    assert!(!run.stdout.bytes().windows(5).any(|w| w == b"never"));

    // A command that starts a daemon and ends (once the test says so): the daemon stays, in
    // both modes.
    for (json, daemon) in [(false, "sleep 337"), (true, "sleep 339")] {
        let go = format!("/tmp/.stoat-test-go-{json}");
        let script = format!(
            "setsid {daemon} </dev/null >/dev/null 2>&1 & while [ ! -e {go} ]; do sleep 0.1; done; echo ok"
        );
        let args = ["exec", "x", "sh", "-c", &script];
        let mut run = if json {
            spawn_json(&env, &args)
        } else {
            human(&args)
        };
        eventually(Duration::from_secs(60), || {
            if let Some(status) = run.try_status() {
                panic!(
                    "exec ended early (json={json}, {status:?}): {}",
                    String::from_utf8_lossy(run.stderr.bytes())
                );
            }
            has_line(&guest_ps(&env, "x"), daemon)
        });
        env.json_raw(&["--json", "exec", "x", "touch", &go]).data();
        if json {
            let done = run.json(ANSWER);
            assert_eq!(done.data()["exit_code"], 0, "{}", done.stdout);
            assert_eq!(done.data()["stdout"], "ok\n");
        } else {
            let out = run.wait(ANSWER);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            assert_eq!(out.stdout, b"ok\n");
        }
        assert_eq!(
            host_guards(&env),
            Vec::<String>::new(),
            "the guard outlived its exec"
        );
        stays(&env, "x", daemon, Duration::from_secs(3));
        let stop = format!(
            "for p in /proc/[0-9]*; do [ \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" = '{daemon} ' ] && kill ${{p#/proc/}}; done; rm -f {go}; true"
        );
        env.json_raw(&["--json", "exec", "x", "sh", "-c", &stop])
            .data();
        wait_gone(&env, "x", &[daemon]);
    }
    env.json(&["down", "x"]).data();
}
