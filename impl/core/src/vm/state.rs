//! Whether a VM is running: its pidfile names a live process whose command line contains
//! `<vm dir>/` (so `work` never matches `work2`). A stale pidfile is removed.

use std::path::Path;

/// Returns the QEMU pid when the VM in `vm_dir` is running; removes a stale pidfile.
pub fn running_pid(vm_dir: &Path) -> Option<i32> {
    let pidfile = vm_dir.join("qemu.pid");
    let text = std::fs::read_to_string(&pidfile).ok()?;
    match pid_if_running(vm_dir, &text) {
        Some(pid) => Some(pid),
        None => {
            let _ = std::fs::remove_file(&pidfile);
            None
        }
    }
}

/// Returns the pid in `pidfile_text` when that process runs and names `vm_dir/` in its argv.
pub fn pid_if_running(vm_dir: &Path, pidfile_text: &str) -> Option<i32> {
    let pid: i32 = pidfile_text.trim().parse().ok().filter(|p| *p > 0)?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut needle = vm_dir.as_os_str().as_encoded_bytes().to_vec();
    needle.push(b'/');
    cmdline
        .windows(needle.len())
        .any(|w| w == needle.as_slice())
        .then_some(pid)
}
