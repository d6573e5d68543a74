//! The VM's master connection reaches the guest's ssh port through a small stoat process
//! (run by ssh as its `ProxyCommand`: `stoat __ssh-relay <host> <port>`) that acknowledges
//! every byte from the guest as soon as it has read it.
//!
//! Why: passt, which carries the host's connection to the guest, writes to its host socket
//! with Nagle's algorithm on, so a second small write waits until the first is acknowledged,
//! and the host's TCP delays its acknowledgement (up to 40 ms) while the connection is
//! request and answer. A command whose stdin is still open when it ends (a terminal exec's,
//! which is the user's) gets its status in a second small write, and measured on the Debian
//! image `ssh … true` through the master took 56-64 ms with the stdin held open against
//! 35 ms with it ended; through this relay both take 34-35 ms (docs/decisions/performance.md). The relay turns Nagle off on its own side
//! too, and its stderr goes to /dev/null once it has connected: it lives as long as the
//! master, which must not hold the first caller's stderr pipe open.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;

use socket2::SockRef;

/// The first argument that makes the stoat binary the relay (hidden: not a command).
pub const RELAY_ARG: &str = "__ssh-relay";

/// How much is copied per step, each way.
const CHUNK: usize = 256 * 1024;

/// The `ProxyCommand` value that runs `program` as the relay. ssh expands `%` tokens in it
/// (`%h`, `%p`; a `%` of the path written `%%`) and hands the rest to a shell.
pub fn proxy_command(program: &Path) -> String {
    let program = crate::shell::quote(&program.to_string_lossy()).replace('%', "%%");
    format!("ProxyCommand={program} {RELAY_ARG} %h %p")
}

/// The relay's body: connects to `host`:`port`, then copies stdin to the connection and the
/// connection to stdout until the connection ends.
pub fn serve(host: &str, port: &str) -> std::io::Result<()> {
    let port: u16 = port.parse().map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("port {port:?}"))
    })?;
    let guest = TcpStream::connect((host, port)).inspect_err(|error| {
        eprintln!("stoat: cannot connect to {host} port {port}: {error}");
    })?;
    guest.set_nodelay(true)?;
    quiet_stderr();
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let mut to_guest = guest.try_clone()?;
    // Ends with the process once the guest side has ended.
    std::thread::spawn(move || {
        let _ = pump(stdin, &mut to_guest, || ());
        let _ = to_guest.shutdown(Shutdown::Write);
    });
    pump(&guest, stdout, || {
        // Acknowledges what was just read now, not after the delayed-ack timer: the kernel
        // leaves quick-ack mode again by itself, so it is asked after every read.
        let _ = SockRef::from(&guest).set_tcp_quickack(true);
    })
}

/// Copies `from` to `to` until `from` ends, calling `after_read` after each read.
fn pump(
    mut from: impl Read,
    mut to: impl Write,
    mut after_read: impl FnMut(),
) -> std::io::Result<()> {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        after_read();
        to.write_all(&buffer[..n])?;
    }
}

/// Points stderr at /dev/null.
fn quiet_stderr() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stderr(&null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_command_quotes_the_program_and_escapes_percent() {
        assert_eq!(
            proxy_command(Path::new("/opt/my stoat/100%/stoat")),
            "ProxyCommand='/opt/my stoat/100%%/stoat' __ssh-relay %h %p"
        );
    }

    #[test]
    fn pump_copies_everything_and_calls_after_each_read() {
        let data: Vec<u8> = (0..CHUNK * 2 + 7).map(|i| i as u8).collect();
        let mut out = Vec::new();
        let mut reads = 0;
        pump(&data[..], &mut out, || reads += 1).unwrap();
        assert_eq!(out, data);
        assert_eq!(reads, 3);
    }
}
