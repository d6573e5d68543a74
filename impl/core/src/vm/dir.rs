//! The layout of one VM directory, `<root>/<name>/`: every file stoat, QEMU, passt and ssh
//! keep there is named here and nowhere else, so a rename is one visible change and every
//! room agrees on where a VM's record, disk, sockets and logs are. The QEMU room cannot look
//! up here (it sits below `vm`), so [`VmDir::qemu`] hands it its files as plain paths.

use std::path::{Path, PathBuf};

use crate::qemu::VmPaths;
use crate::Root;

/// The working files of cloud-init and the apkovl backend.
const OVERLAY_DIR: &str = "ovl";
/// ssh's control sockets are `ssh-<id>.sock`, named relative to the VM directory (ssh runs
/// there) so a deep data root never makes them too long for a unix socket.
const SSH_CONTROL_PREFIX: &str = "ssh-";
const SSH_CONTROL_SUFFIX: &str = ".sock";

/// One VM's directory and the names of the files in it. Only paths: nothing here touches
/// the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmDir {
    path: PathBuf,
}

impl VmDir {
    /// VM `name`'s directory under the data root.
    pub fn new(root: &Root, name: &str) -> Self {
        VmDir::at(root.vm_dir(name))
    }

    /// The VM directory at `path` (a loaded VM's, a staging directory, a broken VM's).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        VmDir { path: path.into() }
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The VM's record; a directory without one is not a VM.
    pub fn record(&self) -> PathBuf {
        self.path.join("vm.toml")
    }

    /// The VM's own lock (lock.rs).
    pub fn lock(&self) -> PathBuf {
        self.path.join(".lock")
    }

    /// The qcow2 disk (disk and cloud mode).
    pub fn disk(&self) -> PathBuf {
        self.path.join("disk.qcow2")
    }

    /// A cloud disk being made, renamed over [`VmDir::disk`] once whole.
    pub fn disk_partial(&self) -> PathBuf {
        self.path.join(".disk.qcow2.partial")
    }

    /// The size an interrupted disk grow was asked for (vm/resize_note.rs).
    pub fn resize_note(&self) -> PathBuf {
        self.path.join(".disk-resize")
    }

    /// The display notice last shown (vm/display_notice.rs).
    pub fn display_notice(&self) -> PathBuf {
        self.path.join("display-notice")
    }

    pub fn pidfile(&self) -> PathBuf {
        self.path.join("qemu.pid")
    }

    pub fn qmp(&self) -> PathBuf {
        self.path.join("qmp.sock")
    }

    pub fn monitor(&self) -> PathBuf {
        self.path.join("monitor.sock")
    }

    /// The headless screen (never a TCP port).
    pub fn vnc(&self) -> PathBuf {
        self.path.join("vnc.sock")
    }

    /// The serial console's log, capped per boot by the console logger.
    pub fn console_log(&self) -> PathBuf {
        self.path.join("console.log")
    }

    /// Where the console logger takes QEMU's serial console (qemu/console.rs).
    pub fn console_socket(&self) -> PathBuf {
        self.path.join("con.sock")
    }

    pub fn passt_pidfile(&self) -> PathBuf {
        self.path.join("passt.pid")
    }

    /// Short: passt keeps only 98 bytes of a socket path (qemu/passt.rs).
    pub fn passt_socket(&self) -> PathBuf {
        self.path.join("n.sock")
    }

    /// The network guard's socket, between QEMU and passt (qemu/netguard.rs).
    pub fn guard_socket(&self) -> PathBuf {
        self.path.join("g.sock")
    }

    /// The guard's note of how far the guest's network has come (qemu/netguard.rs).
    pub fn net_state(&self) -> PathBuf {
        self.path.join("net-state")
    }

    /// The backends' working directory: the apkovl overlay, the cloud-init seed.
    pub fn overlay_dir(&self) -> PathBuf {
        self.path.join(OVERLAY_DIR)
    }

    /// The apkovl overlay Alpine's init finds on its FAT disk (it looks for `*.apkovl.tar.gz`).
    pub fn apkovl(&self) -> PathBuf {
        self.overlay_dir().join("stoat.apkovl.tar.gz")
    }

    /// The overlay being written, renamed over [`VmDir::apkovl`] once whole.
    pub fn apkovl_partial(&self) -> PathBuf {
        self.overlay_dir().join(".stoat-ovl.tmp")
    }

    /// The cloud-init documents packed into [`VmDir::seed_iso`].
    pub fn seed_dir(&self) -> PathBuf {
        self.overlay_dir().join("seed")
    }

    /// The NoCloud seed ISO.
    pub fn seed_iso(&self) -> PathBuf {
        self.overlay_dir().join("seed.iso")
    }

    /// The kernel taken from the ISO for a direct boot (boot/kernel.rs).
    pub fn kernel(&self) -> PathBuf {
        self.path.join("vmlinuz")
    }

    pub fn initrd(&self) -> PathBuf {
        self.path.join("initramfs")
    }

    /// The last recipe apply's output.
    pub fn apply_log(&self) -> PathBuf {
        self.path.join("last-provision.log")
    }

    /// Why the last recipe apply failed; absent after one that ended well.
    pub fn apply_failure(&self) -> PathBuf {
        self.path.join("last-provision.failed")
    }

    /// Held by the one recipe apply running on the VM.
    pub fn apply_lock(&self) -> PathBuf {
        self.path.join("provision.lock")
    }

    /// Held by the ssh call that is becoming the connection master (ssh/mux.rs).
    pub fn ssh_mux_lock(&self) -> PathBuf {
        self.path.join(".ssh-mux.lock")
    }

    /// The name, relative to this directory, of the ssh control socket `id`.
    pub fn ssh_control_name(id: &str) -> String {
        format!("{SSH_CONTROL_PREFIX}{id}{SSH_CONTROL_SUFFIX}")
    }

    /// Whether a file name in this directory is an ssh control socket.
    pub fn is_ssh_control_name(name: &str) -> bool {
        name.starts_with(SSH_CONTROL_PREFIX) && name.ends_with(SSH_CONTROL_SUFFIX)
    }

    /// Where `stoat screenshot` keeps its pictures.
    pub fn screenshots(&self) -> PathBuf {
        self.path.join("screenshots")
    }

    /// The files QEMU and passt use, for the QEMU room.
    pub fn qemu(&self) -> VmPaths {
        VmPaths {
            dir: self.path.clone(),
            disk: self.disk(),
            pidfile: self.pidfile(),
            qmp_socket: self.qmp(),
            monitor_socket: self.monitor(),
            vnc_socket: self.vnc(),
            console_log: self.console_log(),
            console_socket: self.console_socket(),
            passt_pidfile: self.passt_pidfile(),
            passt_socket: self.passt_socket(),
            guard_socket: self.guard_socket(),
            net_state: self.net_state(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name a VM directory holds: a change here moves files of VMs already made.
    #[test]
    fn every_file_name_is_pinned() {
        let dir = VmDir::at("/r/web");
        let names: Vec<(PathBuf, &str)> = vec![
            (dir.record(), "vm.toml"),
            (dir.lock(), ".lock"),
            (dir.disk(), "disk.qcow2"),
            (dir.disk_partial(), ".disk.qcow2.partial"),
            (dir.resize_note(), ".disk-resize"),
            (dir.display_notice(), "display-notice"),
            (dir.pidfile(), "qemu.pid"),
            (dir.qmp(), "qmp.sock"),
            (dir.monitor(), "monitor.sock"),
            (dir.vnc(), "vnc.sock"),
            (dir.console_log(), "console.log"),
            (dir.console_socket(), "con.sock"),
            (dir.passt_pidfile(), "passt.pid"),
            (dir.passt_socket(), "n.sock"),
            (dir.guard_socket(), "g.sock"),
            (dir.net_state(), "net-state"),
            (dir.overlay_dir(), "ovl"),
            (dir.apkovl(), "ovl/stoat.apkovl.tar.gz"),
            (dir.apkovl_partial(), "ovl/.stoat-ovl.tmp"),
            (dir.seed_dir(), "ovl/seed"),
            (dir.seed_iso(), "ovl/seed.iso"),
            (dir.kernel(), "vmlinuz"),
            (dir.initrd(), "initramfs"),
            (dir.apply_log(), "last-provision.log"),
            (dir.apply_failure(), "last-provision.failed"),
            (dir.apply_lock(), "provision.lock"),
            (dir.ssh_mux_lock(), ".ssh-mux.lock"),
            (dir.screenshots(), "screenshots"),
        ];
        for (path, name) in names {
            assert_eq!(path, Path::new("/r/web").join(name));
        }
        assert_eq!(VmDir::ssh_control_name("ab12"), "ssh-ab12.sock");
        assert!(VmDir::is_ssh_control_name("ssh-ab12.sock"));
        assert!(!VmDir::is_ssh_control_name("qmp.sock"));
    }

    #[test]
    fn a_named_vm_sits_under_the_root() {
        let root = Root::at("/data");
        assert_eq!(VmDir::new(&root, "web"), VmDir::at("/data/web"));
        assert_eq!(VmDir::at("/data/web").path(), Path::new("/data/web"));
    }

    /// QEMU's tests build its files by hand; they must be the ones a VM really has.
    #[test]
    fn qemu_gets_the_same_files() {
        let dir = VmDir::at("/r/web");
        assert_eq!(dir.qemu(), VmPaths::for_tests(Path::new("/r/web")));
    }
}
