//! Owns the fake `passt`, a guest network a QEMU reaches through a unix socket (`-netdev
//! stream,...,addr.path=SOCK`). Parses `-s`/`--socket`, `-P`/`--pid`, `-t`/`--tcp-ports`,
//! `-1`/`--one-off` and `-f`/`--foreground`; everything else is accepted and ignored. Like the
//! real one it daemonizes once it listens (its socket and the `-t` ports on 127.0.0.1) and its
//! pidfile is written, and with `--one-off` it exits when its one client (the fake QEMU)
//! disconnects. Ports forwarded to guest port 22 are bound once a client whose guest boots
//! connects (the fake QEMU's first line says so), and while it is connected each connection
//! there gets an SSH banner, as the fake QEMU does for a `hostfwd` (never when the script's
//! `qemu.no_ssh` or `STOAT_FAKE_QEMU_NO_SSH=1` says the guest never boots); other connections
//! are closed. It never forwards a byte anywhere.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::log;
use super::script::{FakeCall, FakeScript};

/// What the fake reads from a passt argv.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PasstArgs {
    pub socket: Option<PathBuf>,
    pub pidfile: Option<PathBuf>,
    /// (host port, guest port) of each `-t` rule: `PORT`, `HOST:GUEST`, `ADDR/HOST:GUEST`.
    pub tcp: Vec<(u16, u16)>,
    pub one_off: bool,
    pub foreground: bool,
}

/// One `-t` value: a comma-separated list of `[ADDR/]HOST[:GUEST]` (ranges are not modelled).
fn tcp_rules(spec: &str) -> Vec<(u16, u16)> {
    spec.split(',')
        .filter_map(|rule| {
            let rule = rule.rsplit('/').next()?;
            let (host, guest) = rule.split_once(':').unwrap_or((rule, rule));
            Some((host.parse().ok()?, guest.parse().ok()?))
        })
        .collect()
}

pub fn parse_args(args: &[String]) -> PasstArgs {
    let mut parsed = PasstArgs::default();
    let mut index = 0;
    while index < args.len() {
        let value = args.get(index + 1);
        match args[index].as_str() {
            "-s" | "--socket" => parsed.socket = value.map(PathBuf::from),
            "-P" | "--pid" => parsed.pidfile = value.map(PathBuf::from),
            "-t" | "--tcp-ports" => parsed
                .tcp
                .extend(value.map(|v| tcp_rules(v)).unwrap_or_default()),
            // Options that take a value: skip it.
            "-d" | "-l" | "--log-file" | "--log-size" | "--runas" | "-F" | "--fd" | "-p"
            | "--pcap" | "-m" | "--mtu" | "-a" | "--address" | "-n" | "--netmask" | "-M"
            | "--mac-addr" | "-g" | "--gateway" | "-i" | "--interface" | "-o" | "--outbound"
            | "--outbound-if4" | "--outbound-if6" | "-D" | "--dns" | "-S" | "--search"
            | "--dns-forward" | "-u" | "--udp-ports" | "-T" | "-U" => {}
            "-1" | "--one-off" => {
                parsed.one_off = true;
                index += 1;
                continue;
            }
            "-f" | "--foreground" => {
                parsed.foreground = true;
                index += 1;
                continue;
            }
            _ => {
                index += 1;
                continue;
            }
        }
        index += 2;
    }
    parsed
}

/// The launcher: what the SUT runs. Returns once the daemon listens (pidfile written).
pub fn run(args: &[String]) -> i32 {
    log::append(&FakeCall {
        tool: "passt".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    let parsed = parse_args(args);
    if args.iter().any(|a| a == "--version") {
        super::emit(b"passt stoat-fake\n", &[]);
        return 0;
    }
    if parsed.socket.is_none() {
        super::emit(
            &[],
            b"stoat-fake passt: give the socket path with -s (probing /tmp is not modelled)\n",
        );
        return 1;
    }
    if parsed.foreground {
        return serve(&parsed, args);
    }
    let mut child = match super::daemon::spawn("passt", "--passt-daemon", args) {
        Ok(child) => child,
        Err(status) => return status,
    };
    let ready_file = parsed.pidfile.clone().or(parsed.socket.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            super::emit(
                &[],
                format!("stoat-fake passt: daemon exited early ({status})\n").as_bytes(),
            );
            return 1;
        }
        if ready_file.as_ref().is_none_or(|p| p.exists()) || Instant::now() > deadline {
            std::mem::forget(child);
            return 0;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `stoat-fake --passt-daemon <passt argv...>`: the network stand-in.
pub fn daemon(args: &[String]) -> i32 {
    serve(&parse_args(args), args)
}

/// Where the guest line starts in [`guest_frame`]: after the stream's length and the
/// Ethernet header.
const GUEST_LINE_AT: usize = 4 + 14;

/// The frame the fake QEMU sends first on the stream, as a stream netdev carries it (length,
/// then the frame): an ARP-typed broadcast whose body is [`guest_line`].
pub fn guest_frame(ssh: bool) -> Vec<u8> {
    let line = guest_line(ssh);
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&[0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06]);
    frame.extend_from_slice(line.as_bytes());
    frame.push(b'\n');
    let mut stream = (frame.len() as u32).to_be_bytes().to_vec();
    stream.extend_from_slice(&frame);
    stream
}

/// The line inside the fake QEMU's first frame: whether its guest answers ssh.
pub fn guest_line(ssh: bool) -> &'static str {
    if ssh {
        "stoat-fake-guest ssh=1"
    } else {
        "stoat-fake-guest ssh=0"
    }
}

fn serve(parsed: &PasstArgs, args: &[String]) -> i32 {
    let script = FakeScript::load();
    let Some(socket) = parsed.socket.clone() else {
        return 1;
    };
    let _ = std::fs::remove_file(&socket);
    let Ok(listener) = UnixListener::bind(&socket) else {
        return 1;
    };
    let connected = Arc::new(AtomicBool::new(false));
    let ssh =
        !script.qemu.no_ssh && std::env::var_os(super::QEMU_NO_SSH_ENV).is_none_or(|v| v != "1");
    // A port forwarded to guest port 22 is bound once a client connected whose guest answers
    // ssh (as the fake qemu binds its hostfwd ports only then); every other port at once.
    let bind = |host_port: u16, banner: bool, connected: Arc<AtomicBool>| {
        // Like passt, a port something else holds is skipped without a word.
        if let Ok(tcp) = TcpListener::bind(("127.0.0.1", host_port)) {
            std::thread::spawn(move || {
                for mut stream in tcp.incoming().flatten() {
                    if banner && connected.load(Ordering::SeqCst) {
                        let _ = stream.write_all(b"SSH-2.0-stoat-fake\r\n");
                    }
                }
            });
        }
    };
    let ssh_ports: Vec<u16> = parsed
        .tcp
        .iter()
        .filter(|(_, guest)| *guest == 22)
        .map(|(host, _)| *host)
        .collect();
    for (host_port, _) in parsed.tcp.iter().filter(|(_, guest)| *guest != 22) {
        bind(*host_port, false, Arc::clone(&connected));
    }
    let pid = std::process::id();
    if let Some(pidfile) = &parsed.pidfile {
        let temp = pidfile.with_extension(format!("tmp-{pid}"));
        if std::fs::write(&temp, format!("{pid}\n")).is_err()
            || std::fs::rename(&temp, pidfile).is_err()
        {
            return 1;
        }
    }
    log::record_pid(pid);
    log::append(&FakeCall {
        tool: "passt".into(),
        argv: args.to_vec(),
        daemon_pid: Some(pid),
        ..Default::default()
    });
    let cleanup = {
        let socket = socket.clone();
        let pidfile = parsed.pidfile.clone();
        move || {
            let _ = std::fs::remove_file(&socket);
            if let Some(pidfile) = &pidfile {
                let _ = std::fs::remove_file(pidfile);
            }
        }
    };
    // The lifetime bound holds even when no QEMU ever connects.
    {
        let cleanup = cleanup.clone();
        std::thread::spawn(move || {
            std::thread::sleep(super::max_lifetime());
            cleanup();
            std::process::exit(0);
        });
    }
    let mut ssh_bound = false;
    for client in listener.incoming() {
        let Ok(mut client) = client else { continue };
        // The client's frames are read and dropped until it hangs up; a fake QEMU's first
        // line says whether its guest answers ssh at all.
        let mut buffer = [0u8; 4096];
        let mut first = Vec::new();
        while let Ok(n) = client.read(&mut buffer) {
            if n == 0 {
                break;
            }
            if first.len() < 96 {
                first.extend_from_slice(&buffer[..n]);
                let line = first.get(GUEST_LINE_AT..).unwrap_or_default();
                let silent = line.starts_with(guest_line(false).as_bytes());
                connected.store(!silent, Ordering::SeqCst);
                if ssh && !silent && !ssh_bound {
                    ssh_bound = true;
                    for host_port in &ssh_ports {
                        bind(*host_port, true, Arc::clone(&connected));
                    }
                }
            }
        }
        connected.store(false, Ordering::SeqCst);
        if parsed.one_off {
            break;
        }
    }
    cleanup();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_socket_the_pidfile_and_every_tcp_rule() {
        let args: Vec<String> = [
            "--one-off",
            "--quiet",
            "--socket",
            "/r/w/passt.sock",
            "--pid",
            "/r/w/passt.pid",
            "--runas",
            "0:0",
            "-a",
            "10.0.2.15",
            "--no-map-gw",
            "-t",
            "127.0.0.1/2201:22",
            "-t",
            "8080:80,5432",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let parsed = parse_args(&args);
        assert_eq!(parsed.socket, Some(PathBuf::from("/r/w/passt.sock")));
        assert_eq!(parsed.pidfile, Some(PathBuf::from("/r/w/passt.pid")));
        assert_eq!(parsed.tcp, [(2201, 22), (8080, 80), (5432, 5432)]);
        assert!(parsed.one_off && !parsed.foreground);
    }
}
