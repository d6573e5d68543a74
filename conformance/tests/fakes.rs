//! The fake host tools through the real `stoat-fake` binary: scripted bytes, logging, the
//! qemu daemon with QMP and its cleanup, keygen, qemu-img snapshots.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

use stoat_conformance::fakes::script::{FakeScript, QemuScript, Rule, ScriptBytes};
use stoat_conformance::sandbox::{Sandbox, SandboxOptions};

#[path = "support/wait.rs"]
mod wait;
use wait::eventually;

fn sandbox() -> Sandbox {
    Sandbox::new(SandboxOptions {
        fakes: Some(env!("CARGO_BIN_EXE_stoat-fake").into()),
        only_tools: None,
        seed_keys: true,
        ..Default::default()
    })
    .expect("sandbox")
}

fn tool(sandbox: &Sandbox, name: &str) -> Command {
    let mut command = Command::new(sandbox.bin.join(name));
    command
        .env_clear()
        .envs(sandbox.env())
        .current_dir(&sandbox.work);
    command
}

#[test]
fn ssh_answers_scripted_bytes_and_logs_the_remote_command() {
    let sandbox = sandbox();
    let bytes = vec![0xff, 0x00, b'\n'];
    sandbox
        .write_script(&FakeScript::default().rule(
            "ssh",
            Rule {
                stdout: Some(ScriptBytes::bytes(&bytes)),
                stderr: Some(ScriptBytes::text("e")),
                exit: Some(7),
                ..Default::default()
            },
        ))
        .expect("script");
    let output = tool(&sandbox, "ssh")
        .args([
            "-p",
            "2200",
            "-o",
            "BatchMode=yes",
            "root@127.0.0.1",
            "'ls' '-la'",
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(output.stdout, bytes);
    assert_eq!(output.stderr, b"e");
    let calls = sandbox.fake_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].remote_command.as_deref(), Some("'ls' '-la'"));
}

#[test]
fn ssh_runs_locally_like_sshd() {
    let sandbox = sandbox();
    sandbox
        .write_script(&FakeScript::default().rule(
            "ssh",
            Rule {
                run_locally: true,
                ..Default::default()
            },
        ))
        .expect("script");
    let output = tool(&sandbox, "ssh")
        .args(["root@127.0.0.1", "printf", "'[%s]'", "'a b'"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "[a b]");
}

#[test]
fn a_held_ssh_ends_when_its_caller_is_gone() {
    let sandbox = sandbox();
    sandbox
        .write_script(&FakeScript::default().rule(
            "ssh",
            Rule {
                delay_ms: Some(60_000),
                ..Default::default()
            },
        ))
        .expect("script");
    // A caller that starts the held ssh and ends once told, as a SUT killed mid-exec would.
    let mut caller = Command::new("/bin/sh")
        .arg("-c")
        .arg(r#""$0" root@127.0.0.1 echo held </dev/null >/dev/null 2>&1 & echo $!; read _"#)
        .arg(sandbox.bin.join("ssh"))
        .env_clear()
        .envs(sandbox.env())
        .current_dir(&sandbox.work)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let mut pid = String::new();
    BufReader::new(caller.stdout.take().expect("stdout"))
        .read_line(&mut pid)
        .expect("the caller's pid");
    let pid = pid.trim().to_string();
    eventually(Duration::from_secs(10), || sandbox.fake_calls().len() == 1);
    assert!(
        running(&pid),
        "the held ssh ended while its caller was still there"
    );
    drop(caller.stdin.take());
    caller.wait().expect("the caller ends");
    eventually(Duration::from_secs(10), || !running(&pid));
}

#[test]
fn ssh_run_locally_moves_mapped_guest_paths_in_the_command_and_its_stdin() {
    let sandbox = sandbox();
    let local = sandbox.data.join("guest-state");
    std::fs::create_dir_all(&local).expect("dir");
    sandbox
        .write_script(
            &FakeScript::default().rule(
                "ssh",
                Rule {
                    run_locally: true,
                    path_map: [("/var/lib/stoat".to_string(), local.display().to_string())]
                        .into_iter()
                        .collect(),
                    ..Default::default()
                },
            ),
        )
        .expect("script");
    let mut child = tool(&sandbox, "ssh")
        .args(["root@127.0.0.1", "sh -s; cat /var/lib/stoat/mark; exit 4"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"echo seen > /var/lib/stoat/mark\n")
        .expect("write");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(4), "the command's own status");
    assert_eq!(output.stdout, b"seen\n");
    assert_eq!(
        std::fs::read_to_string(local.join("mark")).expect("mark"),
        "seen\n"
    );
}

#[test]
fn keygen_writes_both_files() {
    let sandbox = sandbox();
    let key = sandbox.data.join("k");
    let status = tool(&sandbox, "ssh-keygen")
        .args(["-t", "ed25519", "-N", "", "-C", "stoat", "-f"])
        .arg(&key)
        .status()
        .expect("run");
    assert!(status.success());
    assert!(key.exists() && sandbox.data.join("k.pub").exists());
}

#[test]
fn qemu_img_snapshot_cycle() {
    let sandbox = sandbox();
    let disk = sandbox.work.join("d.qcow2");
    let run = |args: &[&str]| {
        tool(&sandbox, "qemu-img")
            .args(args)
            .arg(&disk)
            .output()
            .expect("run")
    };
    assert!(tool(&sandbox, "qemu-img")
        .args(["create", "-f", "qcow2"])
        .arg(&disk)
        .arg("8G")
        .status()
        .expect("run")
        .success());
    assert!(run(&["snapshot", "-l"]).stdout.is_empty());
    assert!(run(&["snapshot", "-c", "clean"]).status.success());
    let listed = String::from_utf8_lossy(&run(&["snapshot", "-l"]).stdout).into_owned();
    assert!(
        listed.contains("clean") && listed.contains("2026-08-04"),
        "{listed}"
    );
    assert!(run(&["snapshot", "-a", "clean"]).status.success());
    assert!(!run(&["snapshot", "-a", "missing"]).status.success());
    assert!(run(&["snapshot", "-d", "clean"]).status.success());
    // Two snapshots of one tag: like qemu-img, `-d` removes one, the oldest.
    assert!(run(&["snapshot", "-c", "twice"]).status.success());
    assert!(run(&["snapshot", "-c", "twice"]).status.success());
    assert!(run(&["snapshot", "-d", "twice"]).status.success());
    let listed = String::from_utf8_lossy(&run(&["snapshot", "-l"]).stdout).into_owned();
    assert_eq!(listed.matches("twice").count(), 1, "{listed}");
    assert!(run(&["snapshot", "-d", "twice"]).status.success());
    assert!(!run(&["snapshot", "-d", "twice"]).status.success());
}

#[test]
fn qemu_daemonizes_speaks_qmp_and_exits_on_powerdown() {
    let sandbox = sandbox();
    let vm = sandbox.vm_dir("work");
    std::fs::create_dir_all(&vm).expect("vm dir");
    let pidfile = vm.join("qemu.pid");
    let qmp = vm.join("qmp.sock");
    let status = tool(&sandbox, "qemu-system-x86_64")
        .args(["-daemonize", "-pidfile"])
        .arg(&pidfile)
        .arg("-qmp")
        .arg(format!("unix:{},server,nowait", qmp.display()))
        .status()
        .expect("run");
    assert!(status.success());
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    assert!(
        String::from_utf8_lossy(&cmdline).contains(&format!("{}/", vm.display())),
        "the daemon's argv keeps the VM dir"
    );

    let stream = UnixStream::connect(&qmp).expect("qmp");
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("greeting");
    assert!(line.contains("\"QMP\""), "{line}");
    for (command, expect) in [
        ("{\"execute\":\"qmp_capabilities\"}", "\"return\""),
        ("{\"execute\":\"query-status\"}", "running"),
        ("{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"savevm clean\"}}", "\"return\""),
        ("{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"info snapshots\"}}", "clean"),
        ("{\"execute\":\"system_powerdown\"}", "\"return\""),
    ] {
        writeln!(writer, "{command}").expect("send");
        line.clear();
        reader.read_line(&mut line).expect("reply");
        assert!(line.contains(expect), "{command} -> {line}");
    }
    // The fake qemu exits after system_powerdown.
    eventually(Duration::from_secs(5), || !running(pid));
    assert!(!pidfile.exists(), "the pidfile is removed on exit");
}

#[test]
fn the_monitors_snapshots_are_the_qcow2_drives_as_qemu_img_lists_them() {
    let sandbox = sandbox();
    let vm = sandbox.vm_dir("work");
    std::fs::create_dir_all(&vm).expect("vm dir");
    let disk = vm.join("disk.qcow2");
    let img = |args: &[&str]| {
        tool(&sandbox, "qemu-img")
            .args(args)
            .arg(&disk)
            .output()
            .expect("qemu-img")
    };
    assert!(tool(&sandbox, "qemu-img")
        .args(["create", "-f", "qcow2"])
        .arg(&disk)
        .arg("8G")
        .status()
        .expect("run")
        .success());
    assert!(img(&["snapshot", "-c", "cold"]).status.success());
    let pidfile = vm.join("qemu.pid");
    let qmp = vm.join("qmp.sock");
    let status = tool(&sandbox, "qemu-system-x86_64")
        .args(["-daemonize", "-pidfile"])
        .arg(&pidfile)
        .arg("-qmp")
        .arg(format!("unix:{},server,nowait", qmp.display()))
        .arg("-drive")
        .arg(format!("file={},format=qcow2,if=virtio", disk.display()))
        .status()
        .expect("run");
    assert!(status.success());
    let hmp = |line: &str| {
        qmp_once(
            &qmp,
            &format!("{{\"execute\":\"human-monitor-command\",\"arguments\":{{\"command-line\":\"{line}\"}}}}"),
        )
        .unwrap_or_default()
    };
    // Saved while stopped, listed while running; saved and deleted while running, as
    // qemu-img lists them after.
    assert!(
        hmp("info snapshots").contains("cold"),
        "{}",
        hmp("info snapshots")
    );
    hmp("savevm warm");
    hmp("delvm cold");
    let _ = qmp_once(&qmp, "{\"execute\":\"quit\"}");
    let listed = String::from_utf8_lossy(&img(&["snapshot", "-l"]).stdout).into_owned();
    assert!(
        listed.contains("warm") && !listed.contains("cold"),
        "{listed}"
    );
}

#[test]
fn qemu_refuses_when_scripted() {
    let sandbox = sandbox();
    let refuse = Rule {
        stderr: Some(ScriptBytes::text("no kvm\n")),
        ..Default::default()
    };
    sandbox
        .write_script(&FakeScript {
            qemu: QemuScript {
                refuse: Some(refuse),
                ..Default::default()
            },
            ..Default::default()
        })
        .expect("script");
    let output = tool(&sandbox, "qemu-system-x86_64")
        .args(["-daemonize"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stderr, b"no kvm\n");
}

#[test]
fn a_fake_running_vm_counts_and_is_reaped_when_the_sandbox_drops() {
    let mut sandbox = sandbox();
    std::fs::create_dir_all(sandbox.vm_dir("work")).expect("vm dir");
    let pid = sandbox.start_running("work").expect("start");
    let pidfile =
        std::fs::read_to_string(sandbox.vm_dir("work").join("qemu.pid")).expect("pidfile");
    assert_eq!(pidfile.trim(), pid.to_string());
    drop(sandbox);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the running VM was killed and reaped"
    );
}

/// Sends one QMP command on a fresh connection and returns its reply line (`None` when the
/// connection broke: the caller decides whether that is a failure).
fn qmp_once(socket: &std::path::Path, command: &str) -> Option<String> {
    let stream = UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut writer = stream.try_clone().ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    writeln!(writer, "{{\"execute\":\"qmp_capabilities\"}}").ok()?;
    line.clear();
    reader.read_line(&mut line).ok()?;
    writeln!(writer, "{command}").ok()?;
    line.clear();
    reader.read_line(&mut line).ok()?;
    Some(line)
}

#[test]
fn the_pidfile_is_complete_once_it_exists_and_the_monitor_runs_a_command_sent_before_close() {
    let sandbox = sandbox();
    let vm = sandbox.vm_dir("work");
    std::fs::create_dir_all(&vm).expect("vm dir");
    let pidfile = vm.join("qemu.pid");
    let qmp = vm.join("qmp.sock");
    let monitor = vm.join("monitor.sock");
    // Without -daemonize the fake runs in the foreground: watch its pidfile appear.
    let mut child = tool(&sandbox, "qemu-system-x86_64")
        .arg("-pidfile")
        .arg(&pidfile)
        .arg("-qmp")
        .arg(format!("unix:{},server,nowait", qmp.display()))
        .arg("-monitor")
        .arg(format!("unix:{},server,nowait", monitor.display()))
        .spawn()
        .expect("spawn");
    let pid = eventually(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&pidfile).ok()?;
        // Atomic: a pidfile that exists holds the whole PID and its newline.
        assert!(
            text.ends_with('\n'),
            "a partial pidfile was visible: {text:?}"
        );
        Some(text.trim().parse::<u32>().expect("pid"))
    });
    assert_eq!(pid, child.id());

    // A client that writes a command and hangs up without reading anything.
    let mut client = UnixStream::connect(&monitor).expect("monitor");
    client.write_all(b"savevm quick\n").expect("write");
    drop(client);
    // The command written before the close was not dropped.
    eventually(Duration::from_secs(10), || {
        let reply = qmp_once(
            &qmp,
            "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"info snapshots\"}}",
        )
        .unwrap_or_default();
        if reply.contains("quick") {
            Ok(())
        } else {
            Err(format!("info snapshots: {reply}"))
        }
    });
    // quit: the fake may exit before its reply is read.
    let _ = qmp_once(&qmp, "{\"execute\":\"quit\"}");
    let status = child.wait().expect("wait");
    assert!(status.code().is_some(), "the fake exits on quit");
}

#[test]
fn qemu_records_its_argv_and_without_a_monitor_only_a_signal_stops_it() {
    let sandbox = sandbox();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let vm = sandbox.vm_dir("work");
    std::fs::create_dir_all(&vm).expect("vm dir");
    let pidfile = vm.join("qemu.pid");
    let qmp = vm.join("qmp.sock");
    let status = tool(&sandbox, "qemu-system-x86_64")
        .env("STOAT_FAKE_QEMU_ARGV", "qemu.argv")
        .env("STOAT_FAKE_QEMU_NO_MONITOR", "1")
        .env("STOAT_FAKE_QEMU_NO_SSH", "1")
        .args(["-daemonize", "-append", "a b", "-pidfile"])
        .arg(&pidfile)
        .arg("-qmp")
        .arg(format!("unix:{},server,nowait", qmp.display()))
        .arg("-netdev")
        .arg(format!("user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22"))
        .status()
        .expect("run");
    assert!(status.success());
    let argv = std::fs::read_to_string(vm.join("qemu.argv")).expect("argv file");
    assert_eq!(
        argv,
        format!(
            "-daemonize\n-append\na b\n-pidfile\n{}\n-qmp\nunix:{},server,nowait\n-netdev\nuser,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22\n",
            pidfile.display(),
            qmp.display()
        )
    );
    // The forwarded ssh port stays free: it can be bound while the fake runs.
    drop(std::net::TcpListener::bind(("127.0.0.1", port)).expect("the ssh port is free"));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid");
    assert!(!qmp.exists(), "no QMP socket without a monitor");
    let pid = rustix::process::Pid::from_raw(pid).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill");
    // SIGTERM stops the fake.
    eventually(Duration::from_secs(10), || !running(pid));
}

/// Whether process `pid` still runs (a zombie has an empty cmdline).
fn running(pid: impl std::fmt::Display) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}
