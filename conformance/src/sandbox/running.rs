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
    /// Starts `stoat-fake --hold <vm_dir>/` and publishes `<vm_dir>/qemu.pid`.
    pub fn start(fake_binary: &Path, vm_dir: &Path) -> Result<Self, HarnessError> {
        let marker = format!("{}/", vm_dir.display());
        let child = Command::new(fake_binary)
            .arg("--hold")
            .arg(&marker)
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
