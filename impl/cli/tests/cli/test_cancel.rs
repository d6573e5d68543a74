//! Cancellation that tells the truth, through the real binary: a SIGINT or SIGTERM reaches
//! the tools stoat runs, stoat waits for them to end and answers `canceled` only when
//! nothing changed; what a tool finished before it stopped is reported as done. A slow fake
//! `qemu-img` (it says when it has started, then sleeps before doing the real work) makes
//! the moment of the signal exact.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{create_disk_args, JsonRun, TestEnv, ALPINE_VIRT};

/// The real qemu-img, outside the test's bin directory.
fn real_qemu_img() -> PathBuf {
    ["/usr/bin/qemu-img", "/usr/local/bin/qemu-img"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("qemu-img is installed (apt install qemu-utils)")
}

/// A qemu-img that, for `subcommand`, writes its PID to `<tmp>/qemu-img.pid`, then sleeps
/// (in its own child, so a signal to its group stops both) before running the real one.
/// `on_term` is the shell's reaction to SIGTERM ("" for the default: die). An inline wrapper,
/// not `stoat-fake`: every other subcommand must reach the real qemu-img.
fn slow_qemu_img(env: &TestEnv, subcommand: &str, on_term: &str) -> PathBuf {
    let pid_file = env.tmp().join("qemu-img.pid");
    let real = real_qemu_img();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = {subcommand} ]; then\n{on_term}\necho $$ > '{pid}.new' && mv '{pid}.new' '{pid}'\nsleep 60 &\nwait $!\nfi\nexec '{real}' \"$@\"\n",
        pid = pid_file.display(),
        real = real.display(),
    );
    let path = env.bin().join("qemu-img");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    pid_file
}

/// A running `stoat --json <args>`, in its own process group (as a shell job is).
struct Running {
    child: std::process::Child,
}

impl Running {
    fn start(env: &TestEnv, args: &[&str]) -> Running {
        Running::start_with(env, args, &[])
    }

    fn start_with(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Running {
        // First, so that after exec's VM name everything stays the guest's.
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let mut cmd = env.std_cmd(&all);
        cmd.envs(vars.iter().copied());
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        Running {
            child: cmd.spawn().unwrap(),
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until the fake tool has written its PID (or stoat has ended without it).
    fn wait_for_tool(&mut self, pid_file: &Path) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = std::fs::read_to_string(pid_file) {
                if let Ok(pid) = text.trim().parse() {
                    return pid;
                }
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("stoat ended ({status}) before its tool started");
            }
            assert!(Instant::now() < deadline, "the tool never started");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Ctrl-C at a terminal: the signal to the whole process group.
    fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on the group our child leads.
        assert_eq!(unsafe { libc::kill(-self.pid(), signal) }, 0);
    }

    fn finish(mut self) -> JsonRun {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let status = self.child.wait().unwrap();
        JsonRun::check(std::process::Output {
            status,
            stdout,
            stderr,
        })
    }
}

impl Drop for Running {
    /// A failed test leaves no stoat behind, not even one stopped at a pause point.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
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
    let mut run = Running::start(&env, &create_disk_args("n"));
    let tool = run.wait_for_tool(&pid_file);
    run.signal(libc::SIGTERM);
    run.finish().error("canceled");
    assert!(!alive(tool), "qemu-img still runs after stoat answered");
    assert_no_vm(&env);
}

#[test]
fn ctrl_c_to_the_whole_group_during_qemu_img_answers_canceled() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    let pid_file = slow_qemu_img(&env, "create", "");
    let mut run = Running::start(&env, &create_disk_args("n"));
    let tool = run.wait_for_tool(&pid_file);
    run.signal_group(libc::SIGINT);
    let done = run.finish();
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
    let mut run = Running::start(&env, &["update", "n", "--disk", "128M"]);
    let tool = run.wait_for_tool(&pid_file);
    run.signal(libc::SIGTERM);
    run.finish().error("canceled");
    assert!(!alive(tool));
    assert_eq!(virtual_size(&disk), 64 << 20);
    assert_eq!(env.json(&["get", "n"]).data()["vm"]["disk"], "64M");

    // A qemu-img that finishes its resize when told to stop: the resize is done, so the
    // answer is the update's, not `canceled`, and vm.toml agrees with the disk.
    std::fs::remove_file(&pid_file).unwrap();
    let finish_on_term = format!("trap 'exec \"{}\" \"$@\"' TERM", real_qemu_img().display());
    let pid_file = slow_qemu_img(&env, "resize", &finish_on_term);
    let mut run = Running::start(&env, &["update", "n", "--disk", "128M"]);
    run.wait_for_tool(&pid_file);
    run.signal(libc::SIGTERM);
    let done = run.finish();
    assert_eq!(done.data()["changed"], serde_json::json!(["disk"]));
    assert_eq!(virtual_size(&disk), 128 << 20);
    assert_eq!(env.json(&["get", "n"]).data()["vm"]["disk"], "128M");
}

/// The process's state letter (R, S, T for stopped, Z...).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

#[test]
fn a_signal_at_any_moment_from_the_first_instruction_still_yields_one_result_line() {
    let env = TestEnv::new();
    env.plant_image(ALPINE_VIRT);
    // The pause point stops stoat at the first instruction of its own (before it the kernel
    // is still loading the program, and no process can answer for itself). A signal while
    // it is stopped there, then a sweep of moments through its first milliseconds.
    for step in 0..41u64 {
        let create = create_disk_args("n");
        let args: &[&str] = if step % 2 == 0 { &["ls"] } else { &create };
        let mut run = Running::start_with(&env, args, &[("STOAT_FAULT", "first-instruction")]);
        let deadline = Instant::now() + Duration::from_secs(20);
        while state(run.pid()) != Some('T') {
            assert!(
                run.child.try_wait().unwrap().is_none(),
                "stoat never paused at its first instruction"
            );
            assert!(Instant::now() < deadline, "stoat never paused");
            std::thread::yield_now();
        }
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
        let done = run.finish();
        if !done.ok() {
            done.error("canceled");
            env.json(&["get", "n"]).error("not_found");
        }
        let _ = env.json(&["rm", "n", "-y"]);
    }
}

#[test]
fn canceling_exec_stops_ssh_then_the_guest_command_and_answers_canceled() {
    let (env, _reaper, _) = crate::test_runtime::running_vm("w");
    // A fake ssh: the exec's command writes its PID and sleeps; the stopping command (the
    // one that kills what the exec's shell recorded) says so, slowly.
    let started = env.tmp().join("ssh.pid");
    let stopped = env.tmp().join("stopped");
    crate::common::stub(
        &env,
        "ssh",
        &format!(
            "for last; do :; done\ncase \"$last\" in\n*'kill -TERM'*) sleep 1; echo \"$last\" > '{stopped}'; exit 0;;\nesac\necho $$ > '{started}.new' && mv '{started}.new' '{started}'\nsleep 60 &\nwait $!\n",
            stopped = stopped.display(),
            started = started.display()
        ),
    );
    let mut run = Running::start(&env, &["exec", "w", "sleep", "300"]);
    let ssh = run.wait_for_tool(&started);
    run.signal_group(libc::SIGINT);
    let done = run.finish();
    let why = done.error("canceled");
    assert!(!why.contains("left done or not done"), "{why}");
    assert!(!alive(ssh), "ssh still runs after stoat answered");
    let stop = std::fs::read_to_string(&stopped).expect("the guest command was stopped");
    assert!(stop.contains("/tmp/.stoat-exec."), "{stop}");
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
    let run = Running::start(&env, &["exec", "x", "sh", "-c", "sleep 307; echo never"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !guest_ps(&env, "x").contains("sleep 307") {
        assert!(Instant::now() < deadline, "the guest command never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    run.signal_group(libc::SIGINT);
    let done = run.finish();
    let why = done.error("canceled");
    assert!(!why.contains("left done or not done"), "{why}");
    assert!(!done.stdout.contains("never"), "{}", done.stdout);
    let ps = guest_ps(&env, "x");
    assert!(
        !ps.contains("sleep 307"),
        "the guest command still runs: {ps}"
    );
    // Only the listing exec's own PID file is there: the cancelled one removed its file.
    let left = env.json_raw(&[
        "--json",
        "exec",
        "x",
        "sh",
        "-c",
        "ls -d /tmp/.stoat-exec.* | wc -l",
    ]);
    assert_eq!(left.data()["stdout"], "1\n", "{}", left.stdout);
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
    let mut run = Running::start(&env, &["ssh-command", "w"]);
    let tool = run.wait_for_tool(&pid_file);
    run.signal_group(libc::SIGINT);
    let why = run.finish().error("canceled");
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
