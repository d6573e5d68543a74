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

/// A loopback port that was free a moment ago (bound, read, released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `N` distinct loopback ports that were free a moment ago: every listener is held until all
/// are bound, so two calls in a row can never hand out the same port.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}
