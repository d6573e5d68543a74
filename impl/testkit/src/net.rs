//! Loopback servers for tests: an SSH banner (a booted guest's sshd, as far as "is it
//! reachable" goes; always, or only while a fake QEMU runs) and the accept loop of the tests'
//! HTTP servers.

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
pub fn banner_port_while_running(vm_dir: &std::path::Path) -> u16 {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let port = free_port();
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
fn wait_for_live_qemu(vm_dir: &std::path::Path) -> Option<i32> {
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

/// A loopback port that was free a moment ago (bound, read, released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
