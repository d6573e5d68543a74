//! The reused ssh connection (one OpenSSH ControlMaster per running VM) on the REAL guest:
//! later execs and copies ride the first one's connection, a killed master is replaced, `down`
//! ends it; all in a VM directory too long for an absolute socket path next to it (QEMU's own
//! sockets still fit). `#[ignore]`d like every real-tier test: run with `--include-ignored`.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{eventually, pids_with_cmdline, TestEnv};
use crate::common::{free_port, real_guest, RealGuard};

/// The `ssh-*.sock` sockets in a VM directory.
fn sockets(vm_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(vm_dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("ssh-") && name.ends_with(".sock")
        })
        .collect()
}

/// Waits until process `pid` is gone (the test fails if it is still there after `limit`).
fn wait_gone(pid: u32, limit: Duration) {
    eventually(limit, || !Path::new(&format!("/proc/{pid}")).exists());
}

/// The guest-side PID of the connection's server process, as the guest command sees it.
fn server_pid(env: &TestEnv) -> String {
    // The command's parent is the shell exec's remote command runs in (one per exec); its
    // parent is the guest's ssh server process of the connection.
    let run = env.json_raw(&[
        "--json",
        "exec",
        "t1",
        "sh",
        "-c",
        "read -r _ _ _ pp _ </proc/$PPID/stat; echo $pp",
    ]);
    assert_eq!(run.data()["exit_code"], 0, "{}", run.stdout);
    run.data()["stdout"].as_str().unwrap().trim().to_owned()
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_exec_and_cp_reuse_one_connection_per_vm() {
    let guest = real_guest();
    let mut env = TestEnv::new();
    // A 90-byte VM directory: `monitor.sock` fits in sun_path (108 bytes), an absolute
    // `<dir>/ssh-<hash>.sock` plus the random suffix ssh binds first would not.
    let base = env.tmp().display().to_string().len() + "/data-".len() + "/t1".len();
    let root = env.tmp().join(format!("data-{}", "r".repeat(90 - base)));
    env.set_env("STOAT_HOME", root.to_str().unwrap());
    let vm_dir = root.join("t1");
    assert_eq!(vm_dir.as_os_str().len(), 90);
    std::fs::create_dir_all(&vm_dir).unwrap();
    std::fs::write(
        vm_dir.join("vm.toml"),
        format!(
            "name = \"t1\"\nmode = \"cloud\"\nos = \"\"\nbackend = \"cloudinit\"\nram = 256\ncpus = 1\ndisk = \"256M\"\nsshport = {}\nsshuser = \"stoat\"\nbase = \"{}\"\n",
            free_port(),
            guest.image.display()
        ),
    )
    .unwrap();
    let _guard = RealGuard(vm_dir.clone());
    env.json(&["up", "t1"]);
    env.json(&["wait", "t1", "--until", "reachable", "--timeout", "120s"]);

    let first = server_pid(&env);
    let socket = match sockets(&vm_dir).as_slice() {
        [socket] => socket.clone(),
        other => panic!("one master socket expected, found {other:?}"),
    };
    let meta = std::fs::metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        server_pid(&env),
        first,
        "the second exec reuses the connection"
    );

    // cp both ways over the same connection.
    let local = env.tmp().join("in.bin");
    std::fs::write(&local, b"\x00\x01\xff over the master\n").unwrap();
    env.json(&["cp", local.to_str().unwrap(), "t1:/tmp/in.bin"]);
    let back = env.tmp().join("back.bin");
    env.json(&["cp", "t1:/tmp/in.bin", back.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&local).unwrap()
    );
    assert_eq!(server_pid(&env), first);

    // A killed master leaves its socket behind; the next exec replaces it.
    let socket_name = socket.file_name().unwrap().to_string_lossy().into_owned();
    let masters = pids_with_cmdline(&socket_name);
    assert_eq!(masters.len(), 1, "one master process: {masters:?}");
    // The master this test's stoat started.
    let master = rustix::process::Pid::from_raw(masters[0] as i32).unwrap();
    let _ = rustix::process::kill_process(master, rustix::process::Signal::KILL);
    wait_gone(masters[0], Duration::from_secs(10));
    assert!(socket.exists(), "a killed master leaves its socket");
    let replaced = server_pid(&env);
    assert_ne!(replaced, first, "a new connection after the master died");
    assert_eq!(server_pid(&env), replaced);
    let master = pids_with_cmdline(&socket_name);
    assert_eq!(master.len(), 1, "a new master: {master:?}");

    // down ends the master and removes its socket.
    let down = env.json(&["down", "t1"]);
    assert_eq!(down.data()["vm"]["state"], "stopped");
    assert!(sockets(&vm_dir).is_empty(), "{:?}", sockets(&vm_dir));
    wait_gone(master[0], Duration::from_secs(10));
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_a_session_of_fifty_mixed_commands_all_succeed() {
    // The distro tier runs the same session on the Debian image and reads its sshd journal.
    let guest = crate::common::real_guest();
    crate::test_distro::mixed_session(&guest.image, false);
}
