//! Stand-ins for what a test does not run for real: the suite's multi-call fake host tools
//! (`stoat-fake`) and a process that makes a VM directory look running.

use std::path::{Path, PathBuf};

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
