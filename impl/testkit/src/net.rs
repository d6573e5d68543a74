//! Loopback servers for tests: an SSH banner (a booted guest's sshd, as far as "is it
//! reachable" goes; stoat-fake's QEMU answers one itself while it runs) and the accept loop of
//! the tests' HTTP servers.

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

/// Where [`free_port`] draws from: below the kernel's ephemeral range (32768 and up on
/// Linux), so no `bind` to port 0 and no outgoing connection of any process takes the port
/// between the test's choice and stoat's use of it; above stoat's own ssh range (2200-2299).
const TEST_PORTS: std::ops::Range<u16> = 20000..32000;

/// A loopback port for a test to hand to stoat: free now, never handed out before in this
/// process, and claimed against every other test process until this one exits (an abstract
/// unix socket named after the port, which the kernel releases with the process). A port
/// from a plain `bind` to port 0 is released at once, and the kernel gives the same one to
/// the next caller, often another test's.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    use std::os::linux::net::SocketAddrExt;
    static CLAIMS: std::sync::Mutex<Vec<std::os::unix::net::UnixListener>> =
        std::sync::Mutex::new(Vec::new());
    let mut claims = CLAIMS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let span = TEST_PORTS.end - TEST_PORTS.start;
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let start = (hasher.finish() % u64::from(span)) as u16;
    for step in 0..span {
        let port = TEST_PORTS.start + (start + step) % span;
        let name = format!("stoat-test-port-{port}");
        let Ok(addr) = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()) else {
            continue;
        };
        let Ok(claim) = std::os::unix::net::UnixListener::bind_addr(&addr) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            claims.push(claim);
            return port;
        }
    }
    panic!("no free loopback port in {TEST_PORTS:?}");
}

/// `N` distinct loopback ports, each as [`free_port`] hands them out.
pub fn free_ports<const N: usize>() -> [u16; N] {
    std::array::from_fn(|_| free_port())
}
