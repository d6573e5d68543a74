//! Owns the fake `qemu-system-x86_64`: parses `-pidfile`, `-qmp unix:...`, `-monitor
//! unix:...` and `-daemonize`; refuses when scripted (stderr + exit 1, no daemon); otherwise
//! runs a daemon that keeps the full argv (so `<vm>/` stays in its cmdline), closes stdio,
//! serves QMP and the human monitor ([`super::qmp`]), writes the pidfile once listening, and
//! exits on `system_powerdown`/`quit`, removing its pidfile and sockets. Like a booted guest,
//! the daemon answers an SSH banner on the host port forwarded to guest port 22 (unless the
//! script says `"no_ssh": true`), so "reachable" comes at once. A `-netdev stream` client on a
//! unix socket (passt's) is connected at start, as QEMU does (nobody listening: the start
//! fails), and held until the daemon exits; the fake `passt` ([`super::passt`]) then answers
//! the forwarded ports. A `-chardev socket,server=off` (the serial console's reader) is
//! connected the same way and held. A scripted `start_gate` holds the launching parent after its daemon
//! is ready, until the suite opens the gate (a QEMU slow to start). Two switches in the
//! environment serve impl tests: `STOAT_FAKE_QEMU_ARGV` records the argv to a file, and
//! `STOAT_FAKE_QEMU_NO_MONITOR=1` opens no monitor socket, so only signals stop it
//! (`STOAT_FAKE_QEMU_NO_SSH=1` is the script's `no_ssh`, for a test that scripts other tools;
//! `STOAT_FAKE_QEMU_CONSOLE_BYTES=N` writes about N bytes of console lines).

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::qmp::{self, Control};
use super::script::{FakeCall, FakeScript};
use super::{log, ssh};

/// What the fake reads from a qemu argv.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QemuArgs {
    pub pidfile: Option<PathBuf>,
    pub qmp: Option<PathBuf>,
    pub monitor: Option<PathBuf>,
    pub daemonize: bool,
    /// Host ports forwarded to guest port 22 (`-netdev user,...,hostfwd=tcp:ADDR:PORT-:22`).
    pub ssh_ports: Vec<u16>,
    /// The first `-drive file=...,format=qcow2` (its snapshots are the monitor's).
    pub qcow2: Option<PathBuf>,
    /// The unix socket of a `-netdev stream,server=off,addr.type=unix,addr.path=PATH` (a
    /// network process such as passt listens there; the daemon connects and stays connected).
    pub stream_socket: Option<PathBuf>,
    /// The unix socket of a `-chardev socket,...,path=PATH,server=off` (the serial console's
    /// reader listens there; the daemon connects and stays connected).
    pub console_socket: Option<PathBuf>,
}

/// The `path` of a client `socket` chardev.
fn console_socket(chardev: &str) -> Option<PathBuf> {
    let rest = chardev.strip_prefix("socket,")?;
    let parts: Vec<&str> = rest.split(',').collect();
    if !parts.contains(&"server=off") {
        return None;
    }
    parts
        .iter()
        .find_map(|p| p.strip_prefix("path="))
        .map(PathBuf::from)
}

/// The `addr.path` of a client `stream` netdev on a unix socket.
fn stream_socket(netdev: &str) -> Option<PathBuf> {
    let rest = netdev.strip_prefix("stream,")?;
    if rest.split(',').any(|part| part == "server=on") {
        return None;
    }
    // A path's commas are doubled in QEMU's option syntax.
    let at = rest.find("addr.path=")? + "addr.path=".len();
    let mut path = String::new();
    let mut chars = rest[at..].chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' {
            if chars.peek() == Some(&',') {
                chars.next();
            } else {
                break;
            }
        }
        path.push(c);
    }
    Some(PathBuf::from(path))
}

/// The host ports of every `hostfwd=tcp:[ADDR]:PORT-[ADDR]:22` in a netdev value.
fn ssh_forwards(netdev: &str) -> Vec<u16> {
    netdev
        .split(',')
        .filter_map(|part| part.strip_prefix("hostfwd=tcp:"))
        .filter_map(|fwd| {
            let (host, guest) = fwd.split_once('-')?;
            if guest.rsplit(':').next()? != "22" {
                return None;
            }
            host.rsplit(':').next()?.parse().ok()
        })
        .collect()
}

/// Reads the unix socket path out of `unix:PATH,server,nowait` (or `unix:PATH,server=on,...`).
fn unix_path(spec: &str) -> Option<PathBuf> {
    let rest = spec.strip_prefix("unix:")?;
    Some(PathBuf::from(rest.split(',').next().unwrap_or(rest)))
}

/// The file of a `-drive` value that names `format=qcow2`.
fn qcow2_file(drive: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = drive.split(',').collect();
    if !parts.contains(&"format=qcow2") {
        return None;
    }
    parts
        .iter()
        .find_map(|p| p.strip_prefix("file="))
        .map(PathBuf::from)
}

pub fn parse_args(args: &[String]) -> QemuArgs {
    let mut parsed = QemuArgs::default();
    let mut index = 0;
    while index < args.len() {
        let value = args.get(index + 1);
        match args[index].as_str() {
            "-pidfile" => parsed.pidfile = value.map(PathBuf::from),
            "-qmp" => parsed.qmp = value.and_then(|v| unix_path(v)),
            "-monitor" => parsed.monitor = value.and_then(|v| unix_path(v)),
            "-drive" if parsed.qcow2.is_none() => parsed.qcow2 = value.and_then(|v| qcow2_file(v)),
            "-netdev" | "-nic" => {
                parsed
                    .ssh_ports
                    .extend(value.map(|v| ssh_forwards(v)).unwrap_or_default());
                if let Some(socket) = value.and_then(|v| stream_socket(v)) {
                    parsed.stream_socket = Some(socket);
                }
            }
            "-chardev" => {
                if let Some(socket) = value.and_then(|v| console_socket(v)) {
                    parsed.console_socket = Some(socket);
                }
            }
            "-daemonize" => {
                parsed.daemonize = true;
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

/// The launcher: what stoat runs.
pub fn run(args: &[String]) -> i32 {
    let script = FakeScript::load();
    log::append(&FakeCall {
        tool: "qemu-system-x86_64".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    let parsed = parse_args(args);
    let is_version = args.iter().any(|a| a == "--version" || a == "-version");
    if !is_version {
        record_argv(&parsed, args);
    }
    if let Some(refusal) = &script.qemu.refuse {
        let mut rule = refusal.clone();
        rule.exit = Some(rule.exit.unwrap_or(1));
        return ssh::answer(&rule);
    }
    if is_version {
        super::emit(b"QEMU emulator version 10.0.0 (stoat-fake)\n", &[]);
        return 0;
    }
    if !parsed.daemonize {
        return serve(&parsed, args);
    }
    let mut child = match super::daemon::spawn("qemu", "--qemu-daemon", args) {
        Ok(child) => child,
        Err(status) => return status,
    };
    // Like qemu -daemonize: the parent returns once the child is ready (pidfile written).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            super::emit(
                &[],
                format!("stoat-fake qemu: daemon exited early ({status})\n").as_bytes(),
            );
            return 1;
        }
        let ready = parsed.pidfile.as_ref().is_none_or(|p| p.exists());
        if ready || Instant::now() > deadline {
            if let Some(gate) = &script.qemu.start_gate {
                hold_at_gate(gate, &mut child);
            }
            // The daemon is reparented once we exit; it is reaped by init.
            std::mem::forget(child);
            return 0;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The longest a scripted start gate holds QEMU's launching parent.
const GATE_LIMIT: Duration = Duration::from_secs(30);

/// Says it is held (`<gate>.held`), then waits until `gate` exists, the daemon ended or
/// [`GATE_LIMIT`] passed.
fn hold_at_gate(gate: &Path, child: &mut std::process::Child) {
    let mut held = gate.as_os_str().to_owned();
    held.push(".held");
    if let Err(error) = std::fs::write(&held, b"") {
        super::emit(
            &[],
            format!("stoat-fake qemu: cannot mark the start gate held: {error}\n").as_bytes(),
        );
        return;
    }
    let deadline = Instant::now() + GATE_LIMIT;
    while !gate.exists() && Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// With `STOAT_FAKE_QEMU_ARGV` set, writes `args` one a line to the file it names (a relative
/// name lives beside the `-pidfile`; without a pidfile it is skipped), before any daemon runs,
/// so the file is there once stoat sees the VM start.
fn record_argv(parsed: &QemuArgs, args: &[String]) {
    let Some(name) = std::env::var_os(super::QEMU_ARGV_ENV).filter(|n| !n.is_empty()) else {
        return;
    };
    let name = PathBuf::from(name);
    let path = if name.is_absolute() {
        name
    } else {
        match parsed.pidfile.as_ref().and_then(|p| p.parent()) {
            Some(dir) => dir.join(name),
            None => return,
        }
    };
    let text: String = args.iter().map(|a| format!("{a}\n")).collect();
    if let Err(error) = std::fs::write(&path, text) {
        super::emit(
            &[],
            format!(
                "stoat-fake qemu: cannot record argv in {}: {error}\n",
                path.display()
            )
            .as_bytes(),
        );
    }
}

/// True when the switch `name` is set to `1`.
fn switched_on(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v == "1")
}

/// `stoat-fake --qemu-daemon <qemu argv...>`: the VM stand-in.
pub fn daemon(args: &[String]) -> i32 {
    let parsed = parse_args(args);
    serve(&parsed, args)
}

/// Writes `bytes` to a temporary sibling, then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let temp = path.with_file_name(name);
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

fn bind(path: &Path) -> Option<UnixListener> {
    let _ = std::fs::remove_file(path);
    UnixListener::bind(path).ok()
}

fn serve(parsed: &QemuArgs, args: &[String]) -> i32 {
    let script = FakeScript::load();
    let pid = std::process::id();
    let mut cleanup: Vec<PathBuf> = Vec::new();
    let monitors = !switched_on(super::QEMU_NO_MONITOR_ENV);
    let qmp_listener = parsed.qmp.as_ref().filter(|_| monitors).and_then(|p| {
        cleanup.push(p.clone());
        bind(p)
    });
    let monitor_listener = parsed.monitor.as_ref().filter(|_| monitors).and_then(|p| {
        cleanup.push(p.clone());
        bind(p)
    });
    // Like QEMU, a stream netdev whose socket nobody listens on fails the start; the
    // connection is held for the daemon's life (its end tells the network process we went).
    // Its first frame says whether this guest has an sshd (stoat-fake's passt reads it; it is
    // an ARP-typed Ethernet frame, so whatever stands between passes it on and a real
    // network process would drop it).
    let guest_ssh = !script.qemu.no_ssh && !switched_on(super::QEMU_NO_SSH_ENV);
    let _network = match &parsed.stream_socket {
        Some(socket) => match std::os::unix::net::UnixStream::connect(socket) {
            Ok(mut stream) => {
                use std::io::Write as _;
                let _ = stream.write_all(&super::passt::guest_frame(guest_ssh));
                Some(stream)
            }
            Err(_) => return 1,
        },
        None => None,
    };
    // Like QEMU, a client socket chardev nobody listens on fails the start.
    let _console = match &parsed.console_socket {
        Some(socket) => match std::os::unix::net::UnixStream::connect(socket) {
            Ok(stream) => Some(write_console(stream)),
            Err(_) => return 1,
        },
        None => None,
    };
    if guest_ssh {
        for port in &parsed.ssh_ports {
            serve_banners(*port);
        }
    }
    if let Some(pidfile) = &parsed.pidfile {
        // The pidfile's existence is the ready signal (to our parent and to the SUT): it
        // appears complete, by rename, never empty or half-written.
        if write_atomically(pidfile, format!("{pid}\n").as_bytes()).is_err() {
            return 1;
        }
        cleanup.push(pidfile.clone());
    }
    log::record_pid(pid);
    log::append(&FakeCall {
        tool: "qemu-system-x86_64".into(),
        argv: args.to_vec(),
        daemon_pid: Some(pid),
        ..Default::default()
    });
    let control = Arc::new(Control {
        script: script.qemu.clone(),
        snapshots: Mutex::new(Vec::new()),
        disk: parsed.qcow2.clone(),
        cleanup,
    });
    for listener in [
        qmp_listener.map(|l| (l, true)),
        monitor_listener.map(|l| (l, false)),
    ]
    .into_iter()
    .flatten()
    {
        let control = Arc::clone(&control);
        std::thread::spawn(move || {
            for stream in listener.0.incoming().flatten() {
                let control = Arc::clone(&control);
                let is_qmp = listener.1;
                std::thread::spawn(move || {
                    if is_qmp {
                        qmp::serve_qmp(stream, &control);
                    } else {
                        qmp::serve_monitor(stream, &control);
                    }
                });
            }
        });
    }
    std::thread::sleep(super::max_lifetime());
    control.exit_now()
}

/// With `STOAT_FAKE_QEMU_CONSOLE_BYTES=N`, a thread writes about N bytes of numbered lines to
/// the console, then `stoat-fake: console done`; the stream is kept (a clone) until the
/// daemon exits either way.
fn write_console(stream: std::os::unix::net::UnixStream) -> std::os::unix::net::UnixStream {
    use std::io::Write as _;
    let total: u64 = std::env::var(super::QEMU_CONSOLE_BYTES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if let Ok(mut writer) = stream.try_clone() {
        if total > 0 {
            std::thread::spawn(move || {
                let mut written = 0u64;
                let mut block = String::new();
                let mut line = 0u64;
                while written < total {
                    block.clear();
                    while block.len() < 64 * 1024 {
                        block.push_str(&format!("fake console line {line:010}\n"));
                        line += 1;
                    }
                    if writer.write_all(block.as_bytes()).is_err() {
                        return;
                    }
                    written += block.len() as u64;
                }
                let _ = writer.write_all(b"stoat-fake: console done\n");
            });
        }
    }
    stream
}

/// Greets every connection on 127.0.0.1:`port` like an sshd, in a thread. While the port is
/// taken (another fake VM of a parallel check with the same fixture port), something else
/// answers there; the thread keeps trying, so the port still answers once that one exits.
pub(crate) fn serve_banners(port: u16) {
    use std::io::Write as _;
    std::thread::spawn(move || {
        let listener = loop {
            match std::net::TcpListener::bind(("127.0.0.1", port)) {
                Ok(listener) => break listener,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        };
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"SSH-2.0-stoat-fake\r\n");
        }
    });
}
