//! Stand-ins for what a test does not run for real: the suite's multi-call fake host tools
//! (`stoat-fake`, and its QEMU set up as the CLI tests want it), and a process that makes a VM
//! directory look running.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::TestEnv;

/// The suite's fake host tools, `stoat-fake` (one binary answering as ssh, scp, qemu-img,
/// qemu-system-x86_64, ...; the `stoat-fakes` crate), built on first use by the cargo that
/// runs the tests into the same target directory, so `cargo test -p stoat-cli` needs no
/// binary built beforehand (and never runs a stale one). Panics naming the failure when it
/// cannot be built.
pub fn stoat_fake() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_stoat_fake).clone()
}

/// `cargo build -p stoat-conformance --bin stoat-fake` in the profile of the running test
/// (its executable sits in `<target>/<profile>/deps/`); the binary lands beside `stoat`.
fn build_stoat_fake() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable under <target>/<profile>/deps");
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut build = std::process::Command::new(cargo);
    build.args([
        "build",
        "--quiet",
        "-p",
        "stoat-conformance",
        "--bin",
        "stoat-fake",
    ]);
    match profile {
        "debug" => {}
        "release" => {
            build.arg("--release");
        }
        other => {
            build.args(["--profile", other]);
        }
    }
    let status = build.status().expect("running cargo to build stoat-fake");
    assert!(
        status.success(),
        "`cargo build -p stoat-conformance --bin stoat-fake` failed ({status})"
    );
    let path = profile_dir.join("stoat-fake");
    assert!(path.exists(), "cargo built no {}", path.display());
    path
}

/// A process that makes a VM directory look running: its argv names `<vm dir>/marker`, and
/// `<vm dir>/qemu.pid` is written only once its cmdline shows that. Killed and reaped on drop.
pub struct FakeRunningVm {
    child: std::process::Child,
    pidfile: PathBuf,
}

impl FakeRunningVm {
    pub fn start(vm_dir: &Path) -> FakeRunningVm {
        let marker = vm_dir.join("marker");
        // sh itself stays the process (keeping `marker` as its $0) and waits in a builtin on
        // a pipe only this test holds: killing it leaves no child behind, and it ends by
        // itself if the test dies.
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg("read _; :")
            .arg(&marker)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut needle = vm_dir.as_os_str().as_encoded_bytes().to_vec();
        needle.push(b'/');
        crate::eventually(std::time::Duration::from_secs(10), || {
            let cmdline =
                std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap_or_default();
            cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
        });
        let pidfile = vm_dir.join("qemu.pid");
        std::fs::write(&pidfile, child.id().to_string()).unwrap();
        FakeRunningVm { child, pidfile }
    }
}

impl Drop for FakeRunningVm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.pidfile);
    }
}

/// Writes an executable script into the test's bin directory.
pub fn stub(env: &TestEnv, name: &str, body: &str) -> PathBuf {
    if name == "qemu-system-x86_64" {
        fake_network(env);
    }
    let path = env.bin().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Makes `bin/qemu-system-x86_64` stoat-fake's QEMU, as these tests want it: it records its
/// argv next to its pidfile (`<vm>/qemu.argv`, one argument a line), opens no monitor socket,
/// so `down` takes stoat's signal fallback, and leaves the ssh port alone (a guest that has
/// not booted: parallel tests share create's ports). Its daemon keeps the whole argv on its
/// command line, as QEMU does. Stop it with a [`Reaper`].
pub fn fake_qemu(env: &TestEnv) {
    write_fake_qemu(env, true);
}

/// [`fake_qemu`] whose guest boots: while it runs, it answers an SSH banner on the host port
/// forwarded to guest port 22 (give the VM a [`crate::free_port`]), and stoat can log in to
/// it: stoat-fake's `ssh` goes on PATH unless the test put an ssh there already (stoat learns
/// a guest is up by logging in, so a banner alone is not a booted guest).
pub fn fake_booted_qemu(env: &TestEnv) {
    write_fake_qemu(env, false);
    if !env.bin().join("ssh").exists() {
        env.fake_tool("ssh");
    }
}

fn write_fake_qemu(env: &TestEnv, no_ssh: bool) {
    let mut switches = vec![
        (stoat_fakes::QEMU_ARGV_ENV, "qemu.argv"),
        (stoat_fakes::QEMU_NO_MONITOR_ENV, "1"),
    ];
    if no_ssh {
        switches.push((stoat_fakes::QEMU_NO_SSH_ENV, "1"));
    }
    env.fake_tool_with_env("qemu-system-x86_64", &switches);
    fake_network(env);
}

/// Puts stoat-fake's `passt` on PATH unless the test put one there: a fake or stub QEMU never
/// talks to the host's real passt, which would hold real ports for a guest that is not there.
fn fake_network(env: &TestEnv) {
    if !env.bin().join("passt").exists() {
        env.fake_tool("passt");
    }
}

/// Stops every fake QEMU of this test environment by the PID in its pidfile.
pub struct Reaper(pub Vec<PathBuf>);

impl Reaper {
    pub fn watch(env: &TestEnv, vms: &[&str]) -> Reaper {
        Reaper(
            vms.iter()
                .map(|vm| env.root().join(vm).join("qemu.pid"))
                .collect(),
        )
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Each VM's network process (passt.pid beside qemu.pid) goes with it.
        let networks: Vec<PathBuf> = self
            .0
            .iter()
            .map(|pidfile| pidfile.with_file_name("passt.pid"))
            .collect();
        for pidfile in self.0.iter().chain(&networks) {
            if let Some(pid) = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
                .filter(|pid| *pid > 1)
            {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if String::from_utf8_lossy(&cmdline).contains(&pidfile.display().to_string()) {
                    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                    }
                }
            }
        }
    }
}
