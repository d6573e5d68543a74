//! Starting QEMU and knowing whether it runs: start the boot's helpers (the console logger,
//! qemu/console.rs, and the network guard, qemu/netguard.rs) when the spec names a program,
//! spawn `qemu-system-x86_64 <argv>` (it daemonizes), keep its stderr for the error, read the
//! pidfile;
//! state detection from the pidfile plus `/proc/<pid>/cmdline` (behaviour#data-root
//! in docs/contract.md); signals by PID to a process proven to be this VM's QEMU. It must not
//! build the argv (argv.rs) nor talk to the monitor (qmp.rs), and it never
//! signals a process by name or a PID it has not checked.

use rustix::process::{Pid, Signal};
use std::ffi::OsStr;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::argv::{build_argv, LaunchSpec, VmPaths};
use super::error::QemuError;
use super::helper::Helper;

/// The binary looked up on PATH.
pub const QEMU_BINARY: &str = "qemu-system-x86_64";

/// How long to keep reading QEMU's stderr after the launching process exited:
/// the daemon child holds the pipe until it has set itself up.
const STDERR_GRACE: Duration = Duration::from_secs(5);

/// Builds the argv for `spec`, starts the VM's network (passt, qemu/passt.rs), then QEMU
/// with it. Returns the PID of the daemonized QEMU, read from its pidfile. When QEMU does not
/// start, the network it would have used is stopped again.
pub fn start(
    qemu_binary: &OsStr,
    passt_binary: &OsStr,
    spec: &LaunchSpec,
) -> Result<u32, QemuError> {
    let argv = build_argv(spec)?;
    super::passt::passt_argv(spec, 0, 0)?;
    mark_boot(&spec.paths.console_log)?;
    super::passt::start(passt_binary, spec)?;
    let helpers = match start_helpers(spec) {
        Ok(helpers) => helpers,
        Err(error) => {
            super::passt::stop(&spec.paths);
            return Err(error);
        }
    };
    match start_with_argv(qemu_binary, &argv, &spec.paths.pidfile) {
        Ok(pid) => {
            helpers.into_iter().for_each(Helper::detach);
            Ok(pid)
        }
        Err(error) => {
            helpers.into_iter().for_each(Helper::stop);
            super::passt::stop(&spec.paths);
            Err(error)
        }
    }
}

/// The boot's helpers, each listening before QEMU starts: the console logger, and the
/// network guard unless the VM opted into the host's loopback. None without a helper program.
fn start_helpers(spec: &LaunchSpec) -> Result<Vec<Helper>, QemuError> {
    let paths = &spec.paths;
    // An earlier boot's note would hold this boot's logins back; without a guard there is
    // no note and logins knock at once.
    let _ = std::fs::remove_file(&paths.net_state);
    let Some(program) = &spec.helper_program else {
        return Ok(Vec::new());
    };
    let logger = super::console::spawn(program, &paths.console_socket, &paths.console_log)?;
    if !spec.guarded() {
        return Ok(vec![logger]);
    }
    match super::netguard::spawn(
        program,
        &spec.netdev_socket(),
        &paths.passt_socket,
        &paths.net_state,
    ) {
        Ok(guard) => Ok(vec![logger, guard]),
        Err(error) => {
            logger.stop();
            Err(error)
        }
    }
}

/// The line that opens each boot in console.log (QEMU appends the serial output after it),
/// so a boot that hangs is never read as the previous boot's login prompt.
pub fn boot_separator(at: &str) -> String {
    format!("===== stoat: boot at {at} =====")
}

/// The most of a boot's console output kept once the next boot starts, in bytes: the last
/// this many of it, in console.log.1 (docs/decisions/runtime.md "Guest-fed buffers").
pub const PREVIOUS_BOOT_CAP: u64 = 4 << 20;

/// Starts this boot's console log: the previous boot's log becomes console.log.1 (only
/// its last [`PREVIOUS_BOOT_CAP`] bytes; an older one is dropped), and console.log opens
/// anew with [`boot_separator`], so the logs of many boots never add up.
fn mark_boot(console_log: &Path) -> Result<(), QemuError> {
    use std::io::Write;
    keep_previous_boot(console_log)
        .map_err(|error| QemuError::io("keep the previous boot's console log", error))?;
    let line = format!(
        "{}\n",
        boot_separator(
            &humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
        )
    );
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(console_log)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|error| QemuError::io("write the console log", error))
}

/// The path the previous boot's console log is kept under.
pub fn previous_boot_log(console_log: &Path) -> PathBuf {
    let mut name = console_log.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// Moves console.log to console.log.1, cut to its last [`PREVIOUS_BOOT_CAP`] bytes (from a
/// line's start). No QEMU writes the file now: this runs before the boot's QEMU starts.
fn keep_previous_boot(console_log: &Path) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = match std::fs::File::open(console_log) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let kept = previous_boot_log(console_log);
    if len <= PREVIOUS_BOOT_CAP {
        return std::fs::rename(console_log, &kept);
    }
    file.seek(SeekFrom::Start(len - PREVIOUS_BOOT_CAP))?;
    let mut tail = Vec::with_capacity(PREVIOUS_BOOT_CAP as usize);
    file.take(PREVIOUS_BOOT_CAP).read_to_end(&mut tail)?;
    let from = tail.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    let partial = previous_boot_log(&kept);
    let mut out = std::fs::File::create(&partial)?;
    writeln!(
        out,
        "===== stoat: the first {} bytes of this boot's console output were dropped =====",
        len - PREVIOUS_BOOT_CAP + from as u64
    )?;
    out.write_all(&tail[from..])?;
    drop(out);
    std::fs::rename(&partial, &kept)?;
    std::fs::remove_file(console_log)
}

/// Runs `qemu_binary argv...`, which must daemonize and write `pidfile`.
pub fn start_with_argv(
    qemu_binary: &OsStr,
    argv: &[String],
    pidfile: &Path,
) -> Result<u32, QemuError> {
    let binary_name = qemu_binary.to_string_lossy().into_owned();
    let mut child = Command::new(qemu_binary)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| QemuError::QemuMissing {
            binary: binary_name.clone(),
            reason: error.to_string(),
        })?;

    // Read stderr on a thread: the daemon may keep the pipe open after the
    // parent exits, so the read is bounded by STDERR_GRACE, never a hang.
    let (sender, receiver) = mpsc::channel();
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        });
    }
    let status = child
        .wait()
        .map_err(|error| QemuError::io(format!("waiting for {binary_name}"), error))?;
    let stderr_bytes = receiver.recv_timeout(STDERR_GRACE).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr_bytes).trim().to_string();

    if !status.success() {
        let stderr = if stderr.is_empty() {
            format!("{binary_name} exited with {status}")
        } else {
            stderr
        };
        return Err(QemuError::QemuStartFailed {
            hint: start_failure_hint(&stderr),
            stderr,
        });
    }
    // Names, not paths: this text reaches the wire, where no host path may.
    let program = Path::new(&binary_name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    read_pid(pidfile)?.ok_or_else(|| QemuError::QemuStartFailed {
        stderr: format!("{program} exited 0 but wrote no PID to its pidfile"),
        hint: None,
    })
}

/// Upstream's advice when the GTK window cannot open.
fn start_failure_hint(stderr: &str) -> Option<&'static str> {
    let lower = stderr.to_ascii_lowercase();
    (lower.contains("gtk") || lower.contains("opengl"))
        .then_some("no usable graphical display: set STOAT_GRAPHICAL=0 to run headless with VNC")
}

/// The PID of this VM's QEMU, or None. A pidfile whose process is gone or is
/// not this VM's QEMU is stale and is removed, as upstream does.
pub fn running(paths: &VmPaths) -> Option<u32> {
    let pidfile = &paths.pidfile;
    let text = match std::fs::read_to_string(pidfile) {
        Ok(text) => text,
        // A stopped VM, the common case: nothing stale to remove, so no second look at the
        // file (`ls` asks this of every VM).
        Err(error) if error.kind() == ErrorKind::NotFound => return None,
        Err(_) => String::new(),
    };
    match parse_pid(&text) {
        Some(pid) if is_qemu_of(pid, &paths.dir) => Some(pid),
        _ => {
            if pidfile.exists() {
                let _ = std::fs::remove_file(pidfile);
            }
            None
        }
    }
}

/// True when `/proc/<pid>/cmdline` holds `<vm_dir>/` (with the slash, so
/// `work` never matches `work2`). A zombie's cmdline is empty: not running.
pub fn is_qemu_of(pid: u32, vm_dir: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let needle = dir_with_slash(vm_dir);
    cmdline
        .windows(needle.len())
        .any(|window| window == needle.as_slice())
}

/// The user forwards the running VM (QEMU `pid` in `paths.dir`) was started with, read from the
/// command line of its network process, passt (what is live, whatever vm.toml says now), or
/// of a QEMU with a user netdev (started before the network moved to passt); `None` when
/// neither is readable.
pub fn live_forwards(paths: &VmPaths, pid: u32) -> Option<Vec<(u16, u16)>> {
    let argv = cmdline(pid)?;
    if has_user_netdev(&argv) {
        return Some(super::argv::forwards_of_argv(&argv));
    }
    super::passt::live_forwards(paths)
}

/// True for a QEMU argv whose network is QEMU's own user netdev.
pub fn has_user_netdev(argv: &[String]) -> bool {
    argv.windows(2)
        .any(|pair| pair[0] == "-netdev" && pair[1].starts_with("user,"))
}

/// The argv of process `pid` (`/proc/<pid>/cmdline`), `None` when it is not readable.
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        cmdline
            .split(|byte| *byte == 0)
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect(),
    )
}

/// Polls until this VM's QEMU `pid` is gone; false when `timeout` passed first.
pub fn wait_stopped(vm_dir: &Path, pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !is_qemu_of(pid, vm_dir) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `signal` to `pid` only if it is this VM's QEMU. True when sent.
pub fn signal_qemu(vm_dir: &Path, pid: u32, signal: Signal) -> bool {
    // pid 0 or 1 would mean "my process group" or init: never.
    let Some(raw_pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    if raw_pid.is_init() || !is_qemu_of(pid, vm_dir) {
        return false;
    }
    rustix::process::kill_process(raw_pid, signal).is_ok()
}

/// SIGTERM to this VM's QEMU (the last step of `down`).
pub fn terminate(vm_dir: &Path, pid: u32) -> bool {
    signal_qemu(vm_dir, pid, Signal::TERM)
}

/// Kills a VM's QEMU when dropped, unless disarmed: the real-tier tests' guard, so a failed
/// check leaves no QEMU behind.
#[cfg(test)]
#[derive(Debug)]
pub struct KillOnDrop {
    vm_dir: PathBuf,
    pid: u32,
    armed: bool,
}

#[cfg(test)]
impl KillOnDrop {
    pub fn new(vm_dir: &Path, pid: u32) -> Self {
        KillOnDrop {
            vm_dir: vm_dir.to_path_buf(),
            pid,
            armed: true,
        }
    }

    /// The QEMU stopped or is handed over: do nothing on drop.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

#[cfg(test)]
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !self.armed || !is_qemu_of(self.pid, &self.vm_dir) {
            return;
        }
        signal_qemu(&self.vm_dir, self.pid, Signal::TERM);
        if !wait_stopped(&self.vm_dir, self.pid, Duration::from_secs(5)) {
            signal_qemu(&self.vm_dir, self.pid, Signal::KILL);
            wait_stopped(&self.vm_dir, self.pid, Duration::from_secs(5));
        }
    }
}

/// The PID in a pidfile: None when the file is missing or holds no PID > 1.
fn read_pid(pidfile: &Path) -> Result<Option<u32>, QemuError> {
    match std::fs::read_to_string(pidfile) {
        Ok(text) => Ok(parse_pid(&text)),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(error) => Err(QemuError::io(
            format!("reading {}", pidfile.display()),
            error,
        )),
    }
}

/// The pid a pidfile holds; None for anything else (and for 0 or 1, never QEMU).
fn parse_pid(text: &str) -> Option<u32> {
    text.trim().parse::<u32>().ok().filter(|pid| *pid > 1)
}

fn dir_with_slash(vm_dir: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = vm_dir.as_os_str().as_bytes().to_vec();
    while bytes.len() > 1 && bytes.ends_with(b"/") {
        bytes.pop();
    }
    bytes.push(b'/');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in QEMU: a shell script that behaves like one outcome of a start.
    fn fake_qemu(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("fake-qemu");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write fake");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn each_boot_opens_a_fresh_log_and_keeps_only_the_previous_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("console.log");
        let append = |bytes: &[u8]| {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
                .expect("append")
        };
        mark_boot(&log).expect("first boot");
        append(b"first boot: login: ");
        mark_boot(&log).expect("second boot");
        let text = std::fs::read_to_string(&log).expect("read");
        assert!(text.starts_with("===== stoat: boot at ") && text.lines().count() == 1);
        let previous = std::fs::read_to_string(previous_boot_log(&log)).expect("read .1");
        assert!(previous.ends_with("\nfirst boot: login: "), "{previous:?}");
        // A boot that wrote more than the cap is kept cut, from a line's start.
        let line = [vec![b'x'; 999], b"\n".to_vec()].concat();
        for _ in 0..(PREVIOUS_BOOT_CAP / 1000 + 10) {
            append(&line);
        }
        append(b"last line\n");
        mark_boot(&log).expect("third boot");
        let kept = std::fs::read(previous_boot_log(&log)).expect("read .1");
        assert!(kept.len() as u64 <= PREVIOUS_BOOT_CAP + 200);
        assert!(kept.starts_with(b"===== stoat: the first "));
        assert!(kept.ends_with(b"xx\nlast line\n"));
        assert!(!previous_boot_log(&previous_boot_log(&log)).exists());
    }

    #[test]
    fn a_missing_binary_is_qemu_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = start_with_argv(
            OsStr::new("/nonexistent/qemu-system-x86_64"),
            &[],
            &dir.path().join("qemu.pid"),
        );
        assert!(
            matches!(result, Err(QemuError::QemuMissing { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_failing_qemu_reports_its_own_stderr() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = fake_qemu(
            dir.path(),
            "echo 'qemu-system-x86_64: -accel kvm: Could not access KVM kernel module' >&2; exit 1",
        );
        match start_with_argv(fake.as_os_str(), &[], &dir.path().join("qemu.pid")) {
            Err(QemuError::QemuStartFailed { stderr, hint }) => {
                assert_eq!(
                    stderr,
                    "qemu-system-x86_64: -accel kvm: Could not access KVM kernel module"
                );
                assert_eq!(hint, None);
            }
            other => panic!("expected QemuStartFailed, got {other:?}"),
        }
    }

    #[test]
    fn a_gtk_failure_carries_the_headless_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = fake_qemu(dir.path(), "echo 'gtk initialization failed' >&2; exit 1");
        match start_with_argv(fake.as_os_str(), &[], &dir.path().join("qemu.pid")) {
            Err(QemuError::QemuStartFailed {
                hint: Some(hint), ..
            }) => assert!(hint.contains("STOAT_GRAPHICAL=0")),
            other => panic!("expected a hint, got {other:?}"),
        }
    }

    #[test]
    fn success_returns_the_pid_from_the_pidfile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("qemu.pid");
        let fake = fake_qemu(dir.path(), &format!("echo 4242 > '{}'", pidfile.display()));
        assert_eq!(
            start_with_argv(fake.as_os_str(), &[], &pidfile).expect("start"),
            4242
        );
    }

    #[test]
    fn success_without_a_pidfile_is_a_start_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = fake_qemu(dir.path(), "exit 0");
        let result = start_with_argv(fake.as_os_str(), &[], &dir.path().join("qemu.pid"));
        assert!(
            matches!(result, Err(QemuError::QemuStartFailed { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_stale_pidfile_is_removed_and_reads_as_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("qemu.pid");
        // Our own PID: alive, but its cmdline does not name the VM directory.
        std::fs::write(&pidfile, format!("{}\n", std::process::id())).expect("write");
        assert_eq!(running(&VmPaths::for_tests(dir.path())), None);
        assert!(!pidfile.exists());
        std::fs::write(&pidfile, "garbage").expect("write");
        assert_eq!(running(&VmPaths::for_tests(dir.path())), None);
        assert!(!pidfile.exists());
    }

    #[test]
    fn a_process_whose_cmdline_names_the_vm_dir_is_running() {
        let dir = tempfile::tempdir().expect("tempdir");
        let vm_dir = dir.path().join("web");
        std::fs::create_dir(&vm_dir).expect("mkdir");
        let marker = format!("{}/qemu.pid", vm_dir.display());
        // sh waits in a builtin on a pipe only this test holds, so stopping it leaves no
        // child behind (a `sleep` it forked would outlive it).
        let mut sleeper = Command::new("sh")
            .args(["-c", "read _; :", &marker])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let pid = sleeper.id();
        std::fs::write(vm_dir.join("qemu.pid"), pid.to_string()).expect("write");
        // Until the child has exec'd, its cmdline is still the test binary's.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !is_qemu_of(pid, &vm_dir) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(running(&VmPaths::for_tests(&vm_dir)), Some(pid));
        // "web" must not match a sibling "we".
        assert!(!is_qemu_of(pid, &dir.path().join("we")));
        assert!(terminate(&vm_dir, pid));
        let _ = sleeper.wait();
        assert!(wait_stopped(&vm_dir, pid, Duration::from_secs(2)));
    }

    #[test]
    fn signals_are_never_sent_to_pids_that_are_not_this_vms_qemu() {
        let dir = tempfile::tempdir().expect("tempdir");
        // SIGCONT: harmless should the guard ever let one through.
        assert!(!signal_qemu(dir.path(), 0, Signal::CONT));
        assert!(!signal_qemu(dir.path(), 1, Signal::CONT));
        assert!(!signal_qemu(dir.path(), std::process::id(), Signal::CONT));
    }

    #[test]
    fn trailing_slashes_do_not_change_the_needle() {
        assert_eq!(dir_with_slash(Path::new("/r/web/")), b"/r/web/");
        assert_eq!(dir_with_slash(Path::new("/r/web")), b"/r/web/");
    }
}
