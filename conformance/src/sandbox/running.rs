//! Owns [`RunningVm`]: a long-lived child that makes a VM count as running (its
//! `/proc/<pid>/cmdline` holds `<root>/<name>/`), with the pidfile written only after that
//! is true, and killed and reaped on drop (a zombie's cmdline is empty).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::HarnessError;

pub struct RunningVm {
    child: Child,
    vm_dir: PathBuf,
}

impl RunningVm {
    /// Starts `stoat-fake --hold <vm_dir>/` and publishes `<vm_dir>/qemu.pid`. Like a booted
    /// guest, it answers an SSH banner on the VM's `sshport` (from its vm.toml).
    pub fn start(fake_binary: &Path, vm_dir: &Path) -> Result<Self, HarnessError> {
        let marker = format!("{}/", vm_dir.display());
        let mut command = Command::new(fake_binary);
        command.arg("--hold").arg(&marker);
        if let Some(port) = ssh_port(vm_dir) {
            command.arg("--ssh-port").arg(port.to_string());
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| HarnessError::Spawn {
                program: fake_binary.display().to_string(),
                source,
            })?;
        let vm = RunningVm {
            child,
            vm_dir: vm_dir.to_path_buf(),
        };
        let pid = vm.pid();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&marker) {
                break;
            }
            if Instant::now() > deadline {
                return Err(HarnessError::Other(format!(
                    "fake running VM {pid} never showed {marker} in its cmdline"
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let pidfile = vm_dir.join("qemu.pid");
        std::fs::write(&pidfile, format!("{pid}\n")).map_err(|e| HarnessError::io(&pidfile, e))?;
        Ok(vm)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn vm_dir(&self) -> &Path {
        &self.vm_dir
    }
}

impl Drop for RunningVm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `sshport` of `<vm_dir>/vm.toml`, when it has one.
fn ssh_port(vm_dir: &Path) -> Option<u16> {
    let text = std::fs::read_to_string(vm_dir.join("vm.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    u16::try_from(table.get("sshport")?.as_integer()?).ok()
}
