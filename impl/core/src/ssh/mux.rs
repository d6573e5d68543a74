//! Owns the reuse of one ssh connection per running VM: an OpenSSH ControlMaster whose socket
//! lives in the VM's directory. Every exec, cp and apply call asks [`Mux::route`] how to reach
//! the guest: through a live master (a few milliseconds instead of a TCP and ssh handshake),
//! by becoming the master itself (the first call, which then stays in the background for
//! [`PERSIST_SECS`] of idleness), or directly, as before, when another call is becoming the
//! master at that moment. `down` and an online snapshot restore end the master ([`close`]);
//! when QEMU stops any other way the master's TCP connection closes and it exits by itself.
//!
//! The socket path is relative (`ssh-<hash>.sock`) and ssh runs with the VM's directory as
//! its working directory, so it fits the 108-byte `sun_path` limit whatever the length of the
//! data root. Its name hashes the port, user and key, so a changed vm.toml never reuses a
//! connection made for other settings. ssh makes the socket 0600.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::argv as ssh_argv;
use super::relay;
use crate::lock::{self, LockGuard};
use crate::vm::{StoredVm, VmDir};
use crate::Env;

/// How long an idle master stays up after its last call.
pub const PERSIST_SECS: u32 = 600;

/// One VM's master: where its socket is and what it is called.
#[derive(Debug, Clone)]
pub struct Mux {
    vm_dir: PathBuf,
    socket: String,
}

/// How one ssh or scp call reaches the guest. Hold it until the call has ended: the call that
/// becomes the master keeps the master lock meanwhile.
#[derive(Debug)]
pub struct Route {
    options: Vec<String>,
    cwd: Option<PathBuf>,
    _becoming_master: Option<LockGuard>,
}

impl Mux {
    /// The master for `vm` reached with `key`.
    pub fn for_vm(key: &Path, vm: &StoredVm) -> Mux {
        let mut hash = Sha256::new();
        hash.update(vm.config.sshport.to_string());
        hash.update([0]);
        hash.update(vm.config.ssh_user());
        hash.update([0]);
        hash.update(key.as_os_str().as_encoded_bytes());
        let digest = hash.finalize();
        Mux {
            vm_dir: vm.dir.clone(),
            socket: VmDir::ssh_control_name(&hex::encode(&digest[..8])),
        }
    }

    /// The socket's path (for tests and messages; ssh is given the relative name).
    pub fn socket_path(&self) -> PathBuf {
        self.vm_dir.join(&self.socket)
    }

    /// True when a master answers on this VM's socket now.
    pub fn answers(&self) -> bool {
        live(&self.vm_dir, &self.socket)
    }

    /// Decides how the next call goes: through the live master, as the new master, or direct.
    pub fn route(&self) -> Route {
        if live(&self.vm_dir, &self.socket) {
            return self.client();
        }
        // Held (non-blocking) by the one call that is becoming the master.
        let master_lock = VmDir::at(&self.vm_dir).ssh_mux_lock();
        let Ok(Some(guard)) = lock::try_exclusive(&master_lock) else {
            // Someone is becoming the master right now (or the lock cannot be had): go direct
            // rather than wait for them or race them for the socket.
            return Route::direct();
        };
        if live(&self.vm_dir, &self.socket) {
            return self.client();
        }
        // A socket nobody answers on is left by a master that was killed: ssh would refuse to
        // bind over it.
        let _ = std::fs::remove_file(self.socket_path());
        let mut master = vec![
            "ControlMaster=auto".to_owned(),
            format!("ControlPath={}", self.socket),
            format!("ControlPersist={PERSIST_SECS}"),
            // A master whose guest stopped answering (a reset guest) ends instead of hanging.
            "ServerAliveInterval=15".to_owned(),
            "ServerAliveCountMax=4".to_owned(),
        ];
        // The master's connection goes through stoat's relay (relay.rs says why).
        if let Ok(program) = std::env::current_exe() {
            master.push(relay::proxy_command(&program));
        }
        Route {
            options: options(&master),
            cwd: Some(self.vm_dir.clone()),
            _becoming_master: Some(guard),
        }
    }

    /// A route through the master when one answers now, else `None`: for a call that must
    /// not become the master itself (the caller then goes direct).
    pub fn live_client(&self) -> Option<Route> {
        live(&self.vm_dir, &self.socket).then(|| self.client())
    }

    fn client(&self) -> Route {
        Route {
            options: options(&["ControlMaster=no", &format!("ControlPath={}", self.socket)]),
            cwd: Some(self.vm_dir.clone()),
            _becoming_master: None,
        }
    }
}

impl Route {
    /// A route that uses no master.
    pub fn direct() -> Route {
        Route {
            options: Vec::new(),
            cwd: None,
            _becoming_master: None,
        }
    }

    /// The `-o` options to put before the destination (ssh) or the endpoints (scp).
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// True when the call goes through a master (existing or new).
    #[cfg(test)]
    pub fn multiplexed(&self) -> bool {
        self.cwd.is_some()
    }

    /// Sets the working directory the relative socket path needs.
    pub fn configure(&self, command: &mut Command) {
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
    }
}

fn options(pairs: &[impl AsRef<str>]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|pair| ["-o".to_owned(), pair.as_ref().to_owned()])
        .collect()
}

/// True when a master answers on `dir/socket`. The path goes through `/proc/self/fd`, so its
/// length never matters.
fn live(dir: &Path, socket: &str) -> bool {
    let Ok(dir_file) = File::open(dir) else {
        return false;
    };
    let short = format!("/proc/self/fd/{}/{socket}", dir_file.as_raw_fd());
    UnixStream::connect(short).is_ok()
}

/// Ends every master of the VM in `vm_dir` (`ssh -O exit`) and removes their sockets. Nothing
/// to do, and no process run, when there is none.
pub fn close(env: &Env, vm: &StoredVm) {
    let Ok(entries) = std::fs::read_dir(&vm.dir) else {
        return;
    };
    let sockets: Vec<String> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| VmDir::is_ssh_control_name(name))
        .collect();
    let ssh = env.which("ssh");
    for socket in sockets {
        if let (Some(ssh), true) = (&ssh, live(&vm.dir, &socket)) {
            let _ = Command::new(ssh)
                .args(options(&[&format!("ControlPath={socket}")]))
                .args(["-O", "exit", &ssh_argv::login(vm)])
                .current_dir(&vm.dir)
                .env("PATH", env.path_var())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_file(vm.dir.join(&socket));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::VmConfig;
    use std::os::unix::net::UnixListener;

    fn vm(dir: &Path, user: &str, port: u16) -> StoredVm {
        let config = VmConfig::parse(&format!(
            "name = \"w\"\nmode = \"cloud\"\nsshport = {port}\nsshuser = \"{user}\"\n"
        ))
        .unwrap();
        StoredVm {
            name: "w".into(),
            dir: dir.to_path_buf(),
            config,
        }
    }

    #[test]
    fn the_socket_name_is_short_and_follows_port_user_and_key() {
        let dir = Path::new("/r/w");
        let key = Path::new("/r/id_stoat");
        let a = Mux::for_vm(key, &vm(dir, "stoat", 2200));
        assert!(a.socket.len() < 40, "{}", a.socket);
        assert_eq!(a.socket, Mux::for_vm(key, &vm(dir, "stoat", 2200)).socket);
        assert_ne!(a.socket, Mux::for_vm(key, &vm(dir, "stoat", 2201)).socket);
        assert_ne!(a.socket, Mux::for_vm(key, &vm(dir, "root", 2200)).socket);
        assert_ne!(
            a.socket,
            Mux::for_vm(Path::new("/k"), &vm(dir, "stoat", 2200)).socket
        );
    }

    #[test]
    fn the_first_call_becomes_the_master_and_a_second_meanwhile_goes_direct() {
        let temp = tempfile::tempdir().unwrap();
        let mux = Mux::for_vm(Path::new("/k"), &vm(temp.path(), "stoat", 2200));
        let first = mux.route();
        assert!(first.options().iter().any(|o| o == "ControlMaster=auto"));
        assert_eq!(first.cwd.as_deref(), Some(temp.path()));
        let second = mux.route();
        assert!(second.options().is_empty() && !second.multiplexed());
        drop(first);
        assert!(mux
            .route()
            .options()
            .iter()
            .any(|o| o == "ControlMaster=auto"));
    }

    #[test]
    fn a_live_socket_makes_clients_and_a_dead_one_is_replaced() {
        // A data root longer than sun_path allows still works.
        let temp = tempfile::tempdir().unwrap();
        let long = temp.path().join("d".repeat(120));
        std::fs::create_dir(&long).unwrap();
        let mux = Mux::for_vm(Path::new("/k"), &vm(&long, "stoat", 2200));
        let dir_file = File::open(&long).unwrap();
        let short = format!("/proc/self/fd/{}/{}", dir_file.as_raw_fd(), mux.socket);
        let listener = UnixListener::bind(&short).unwrap();
        let route = mux.route();
        assert!(route.options().iter().any(|o| o == "ControlMaster=no"));
        assert!(route
            .options()
            .contains(&format!("ControlPath={}", mux.socket)));
        // A stale master: the file stays and nobody answers. Shutting the listener down
        // refuses connections at once even while a child forked by a concurrent test still
        // holds a copy of its descriptor (which merely dropping it would not).
        rustix::net::shutdown(&listener, rustix::net::Shutdown::Both).unwrap();
        assert!(mux.socket_path().exists());
        let route = mux.route();
        assert!(route.options().iter().any(|o| o == "ControlMaster=auto"));
        assert!(!mux.socket_path().exists(), "the stale socket is removed");
        drop(listener);
    }

    #[test]
    fn close_removes_dead_sockets_and_runs_nothing_without_them() {
        let temp = tempfile::tempdir().unwrap();
        let stored = vm(temp.path(), "stoat", 2200);
        let mux = Mux::for_vm(Path::new("/k"), &stored);
        drop(UnixListener::bind(mux.socket_path()).unwrap());
        std::fs::write(temp.path().join("vm.toml"), "").unwrap();
        // An empty PATH: close must not need ssh for a socket nobody answers on.
        close(&Env::from_pairs([("PATH", "")]), &stored);
        assert!(!mux.socket_path().exists());
        assert!(temp.path().join("vm.toml").exists());
    }
}
