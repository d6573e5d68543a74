//! Test helpers: a hermetic environment for the real `stoat` binary, and a JSON run that
//! applies the contract's rules to every invocation (lines, one result last, schemas, no
//! planted console password, exit status).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;
use stoat_schemas::validate::Validator;

/// The catalog's alpine-virt ISO file name, as `pull` stores it.
pub const ALPINE_VIRT: &str = "alpine-virt-3.24.1-x86_64.iso";

/// A console password planted in fixtures; it must never appear in any output.
pub const PLANTED_PASSWORD: &str = "planted-hunter2-c0ffee";

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(Validator::new)
}

/// A temporary HOME, STOAT_HOME and bin directory; removed on drop, even when a test fails.
pub struct TestEnv {
    temp: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
}

impl TestEnv {
    /// Puts a placeholder image file into the data root's isos/ (enough for `create`).
    pub fn plant_image(&self, file: &str) {
        std::fs::create_dir_all(self.root().join("isos")).unwrap();
        std::fs::write(self.root().join("isos").join(file), b"image").unwrap();
    }

    pub fn new() -> TestEnv {
        let temp = tempfile::Builder::new()
            .prefix("stoat-test-")
            .tempdir()
            .unwrap();
        for dir in ["home", "stoat", "bin", "tmp"] {
            std::fs::create_dir_all(temp.path().join(dir)).unwrap();
        }
        TestEnv {
            temp,
            extra_env: Vec::new(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.temp.path().join("home")
    }
    pub fn root(&self) -> PathBuf {
        self.temp.path().join("stoat")
    }
    pub fn bin(&self) -> PathBuf {
        self.temp.path().join("bin")
    }
    pub fn tmp(&self) -> PathBuf {
        self.temp.path().join("tmp")
    }

    /// Sets an extra environment variable for every later run.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.extra_env.push((key.to_owned(), value.to_owned()));
    }

    /// Returns the stoat command with a cleared, pinned environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        Command::from_std(self.std_cmd(args))
    }

    /// [`TestEnv::cmd`] as a std command, for a test that must read a running stoat's output.
    pub fn std_cmd(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("stoat"));
        cmd.env_clear()
            .env("HOME", self.home())
            .env("STOAT_HOME", self.root())
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()))
            .env("STOAT_ACCEL", "tcg")
            .env("STOAT_GRAPHICAL", "0")
            .env("TMPDIR", self.tmp())
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .current_dir(self.home())
            .args(args);
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs stoat in human mode.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs stoat with `--json` appended and checks the contract on the output.
    pub fn json(&self, args: &[&str]) -> JsonRun {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--json");
        JsonRun::check(self.cmd(&all).output().unwrap())
    }

    /// Runs stoat with exactly `args` (place `--json` yourself) and checks the contract.
    pub fn json_raw(&self, args: &[&str]) -> JsonRun {
        JsonRun::check(self.cmd(args).output().unwrap())
    }

    /// Makes `bin/<tool>` the multi-call fake host tool ([`stoat_fake`]) answering as `tool`
    /// (ssh, scp, ssh-keygen, qemu-img, qemu-system-x86_64, xorriso). A one-line `exec`, not a
    /// symlink: a test that later writes its own `bin/<tool>` must not write through a link
    /// into the shared binary.
    pub fn fake_tool(&self, tool: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin().join(tool);
        let fake = stoat_fake().display().to_string().replace('\'', "'\\''");
        std::fs::write(
            &path,
            format!("#!/bin/sh\nexec '{fake}' --as {tool} \"$@\"\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Writes the fakes' script (docs/conformance-fakes.md) and points every later run at it.
    pub fn fake_script(&mut self, script: &Value) {
        let path = self.tmp().join("fake-script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        self.set_env("STOAT_FAKE_SCRIPT", path.to_str().unwrap());
    }

    /// Writes `<root>/<name>/vm.toml`.
    pub fn write_vm(&self, name: &str, toml: &str) {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vm.toml"), toml).unwrap();
    }

    /// Writes a typical stopped VM with a planted console password.
    pub fn write_basic_vm(&self, name: &str, port: u16) {
        self.write_vm(
            name,
            &format!(
                "name = \"{name}\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = {port}\nsshuser = \"stoat\"\nconsole_password = \"{PLANTED_PASSWORD}\"\nbase = \"{}/isos/base.qcow2\"\n",
                self.root().display()
            ),
        );
    }

    /// Makes a tiny real ISO9660 at `path` (with xorriso) holding `/boot/vmlinuz-virt` and
    /// `/boot/initramfs-virt`: enough for the apkovl backend's kernel extraction.
    pub fn fake_alpine_iso(&self, path: &Path) {
        let src = self.tmp().join(".fake-iso-src");
        std::fs::create_dir_all(src.join("boot")).unwrap();
        std::fs::write(src.join("boot/vmlinuz-virt"), "fake kernel\n").unwrap();
        std::fs::write(src.join("boot/initramfs-virt"), "fake initramfs\n").unwrap();
        let made = std::process::Command::new("xorriso")
            .env("HOME", self.home())
            .args(["-as", "mkisofs", "-r", "-V", "alpine-virt", "-o"])
            .arg(path)
            .arg(&src)
            .output()
            .expect("xorriso runs (apt install xorriso)");
        assert!(
            made.status.success(),
            "xorriso {}: {}{}",
            made.status,
            String::from_utf8_lossy(&made.stdout),
            String::from_utf8_lossy(&made.stderr)
        );
    }

    /// Writes `<vm>/vmlinuz` and `<vm>/initramfs`, so `up` on a live VM skips the extraction
    /// (the conformance suite's trick) and its ISO may be any file.
    pub fn seed_boot_files(&self, name: &str) {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vmlinuz"), "fake kernel\n").unwrap();
        std::fs::write(dir.join("initramfs"), "fake initramfs\n").unwrap();
    }

    /// Moves `vm`'s ssh port to one the kernel just found free: `create` picks from
    /// 2200-2299, which other processes on a shared machine may hold by the time `up` checks.
    pub fn use_free_ssh_port(&self, vm: &str) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        let mut args = vec!["update", vm, "--ssh-port", port.as_str()];
        args.push("--json");
        let out = self.cmd(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    /// Writes a vm.toml that does not parse.
    pub fn write_broken_vm(&self, name: &str) {
        self.write_vm(name, "name = \"x\"\nmode = \"disk\n");
    }

    pub fn vm_toml(&self, name: &str) -> String {
        std::fs::read_to_string(self.root().join(name).join("vm.toml")).unwrap()
    }

    pub fn path_str(&self, path: &Path) -> String {
        path.display().to_string()
    }
}

/// One `--json` invocation, already checked against the contract.
#[derive(Debug)]
pub struct JsonRun {
    pub lines: Vec<Value>,
    pub result: Value,
    pub exit: i32,
    pub stdout: String,
    pub stderr: String,
}

impl JsonRun {
    /// Parses and checks: JSON lines only, exactly one result and it is last, schemas hold,
    /// the exit status follows the result, no planted password anywhere.
    pub fn check(output: Output) -> JsonRun {
        let stdout = String::from_utf8(output.stdout).expect("stdout is UTF-8");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let exit = output.status.code().expect("exited normally");
        assert!(
            !stdout.contains(PLANTED_PASSWORD),
            "console password leaked: {stdout}"
        );
        assert!(
            !stdout.contains('\u{1b}'),
            "ANSI escape on stdout: {stdout}"
        );
        let lines: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect();
        let results = lines.iter().filter(|l| l["type"] == "result").count();
        assert_eq!(
            results, 1,
            "exactly one result line: {stdout}\nstderr: {stderr}"
        );
        let result = lines.last().unwrap().clone();
        assert_eq!(result["type"], "result", "result is last: {stdout}");
        for line in &lines {
            let problems = validator().validate_line(line);
            assert!(problems.is_empty(), "schema: {problems:?}\nline: {line}");
        }
        let expected_exit = if result["ok"] == true {
            0
        } else if result["error"]["code"] == "usage" {
            2
        } else {
            1
        };
        assert_eq!(
            exit, expected_exit,
            "exit status vs result: {stdout}\nstderr: {stderr}"
        );
        JsonRun {
            lines,
            result,
            exit,
            stdout,
            stderr,
        }
    }

    pub fn ok(&self) -> bool {
        self.result["ok"] == true
    }

    pub fn data(&self) -> &Value {
        assert!(
            self.ok(),
            "expected ok: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        &self.result["data"]
    }

    /// Asserts the run failed with `code` and returns the message.
    pub fn error(&self, code: &str) -> String {
        assert_eq!(
            self.result["ok"], false,
            "expected failure: {}",
            self.stdout
        );
        assert_eq!(self.result["error"]["code"], code, "{}", self.stdout);
        self.result["error"]["message"].as_str().unwrap().to_owned()
    }

    /// Asserts that `path` (a host path that must not leak) is absent from stdout.
    pub fn assert_absent(&self, text: &str) {
        assert!(
            !self.stdout.contains(text),
            "{text:?} leaked: {}",
            self.stdout
        );
    }
}

/// The suite's fake host tools, `stoat-fake` (one binary answering as ssh, scp, qemu-img,
/// qemu-system-x86_64, ...), built beside `stoat` by `cargo build --workspace` and
/// `cargo test --workspace`; a test asking for it without it fails, naming the fix.
pub fn stoat_fake() -> PathBuf {
    let path = assert_cmd::cargo::cargo_bin("stoat-fake");
    assert!(
        path.exists(),
        "no {}: build it with `cargo build -p stoat-conformance --bin stoat-fake` (cargo test --workspace does)",
        path.display()
    );
    path
}

/// Answers every connection on a free loopback port with an SSH banner, as a booted guest's
/// sshd would; returns the port. The thread lives as long as the test process.
pub fn banner_port() -> u16 {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"SSH-2.0-fake\r\n");
        }
    });
    port
}

/// A free loopback port that answers with an SSH banner only while the VM in `vm_dir` runs
/// (its `qemu.pid` names a live process whose command line holds the VM directory), as a
/// booted guest's sshd does through QEMU's hostfwd: `up` finds the port free, the fake QEMU
/// it starts makes it answer, and the port is released the moment that process ends (its
/// pidfd, not a poll), so a later `up` finds it free again. The thread lives as long as the
/// test process.
pub fn banner_port_while_running(vm_dir: &Path) -> u16 {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let vm_dir = vm_dir.to_path_buf();
    std::thread::spawn(move || loop {
        let Some(pid) = wait_for_live_qemu(&vm_dir) else {
            return;
        };
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
        if pidfd < 0 {
            continue; // it ended already
        }
        let listener = loop {
            match std::net::TcpListener::bind(("127.0.0.1", port)) {
                Ok(listener) => break listener,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfd entries, no timeout.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if fds[1].revents != 0 {
                break;
            }
            if let Ok((mut stream, _)) = listener.accept() {
                let _ = stream.write_all(b"SSH-2.0-fake\r\n");
            }
        }
        drop(listener);
        // SAFETY: closing the descriptor pidfd_open gave us, once.
        unsafe { libc::close(pidfd) };
    });
    port
}

/// Waits (bounded, 10 minutes) until `<vm_dir>/qemu.pid` names a live process whose command
/// line holds `<vm_dir>/`; returns its pid.
fn wait_for_live_qemu(vm_dir: &Path) -> Option<i32> {
    let mut needle = vm_dir.as_os_str().as_encoded_bytes().to_vec();
    needle.push(b'/');
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while std::time::Instant::now() < deadline {
        let pid = std::fs::read_to_string(vm_dir.join("qemu.pid"))
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
            .filter(|pid| *pid > 1);
        if let Some(pid) = pid {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
            {
                return Some(pid);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
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
        // A compound script, so sh stays the process and keeps `marker` as its $0.
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 100; :")
            .arg(&marker)
            .spawn()
            .unwrap();
        let mut needle = vm_dir.as_os_str().as_encoded_bytes().to_vec();
        needle.push(b'/');
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let cmdline =
                std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap_or_default();
            if cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
            {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "fake VM never showed its argv"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
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

/// The accept loop of the tests' loopback servers (the image mirror, the proxy): each
/// connection handled on a thread of its own until `stopped` says so; [`LoopbackAcceptor::
/// join`] then waits for every handler.
pub struct LoopbackAcceptor(Option<std::thread::JoinHandle<()>>);

impl LoopbackAcceptor {
    /// Accepts on `listener` (made non-blocking here) with `shared` handed to each handler.
    pub fn spawn<S: Send + Sync + 'static>(
        listener: std::net::TcpListener,
        shared: std::sync::Arc<S>,
        stopped: fn(&S) -> bool,
        handle: fn(std::net::TcpStream, &S),
    ) -> LoopbackAcceptor {
        listener.set_nonblocking(true).unwrap();
        LoopbackAcceptor(Some(std::thread::spawn(move || {
            let mut handlers = Vec::new();
            while !stopped(&shared) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let shared = shared.clone();
                        handlers.push(std::thread::spawn(move || handle(stream, &shared)));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
            for handler in handlers {
                let _ = handler.join();
            }
        })))
    }

    /// Waits for the loop and its handlers (after the caller made `stopped` true).
    pub fn join(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}
