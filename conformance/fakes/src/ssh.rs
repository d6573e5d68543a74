//! Owns the fake `ssh` and `scp`: parse the OpenSSH argv, log it, then answer with scripted
//! bytes and exit status, or (ssh, `run_locally`) hand the remote command to `/bin/sh -c`
//! exactly as sshd hands it to the login shell (with `path_map`, guest paths moved to local
//! ones in the command and its stdin). Default: exit 0, no output. With
//! `STOAT_FAKE_SSH_CONNECT=1`, like the real clients, both first reach the server: nothing
//! answering an SSH banner on the named port is exit 255 with ssh's own words, so a guest that
//! never booted is never reachable. The remote
//! command `true` (a login check) is answered by a rule only when the rule names a condition.

use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;

use super::script::{FakeCall, FakeScript, Rule};
use super::{emit, log};

/// ssh options that take a value (`-p 2200`, `-o X=Y`...).
const SSH_VALUE_OPTIONS: &str = "BbcDEeFIiJLlmOoPpQRSWw";

/// Splits an ssh argv into (destination, remote command words).
pub fn split_ssh_args(args: &[String]) -> (Option<String>, Vec<String>) {
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        if arg == "--" {
            index += 1;
            break;
        }
        if !arg.starts_with('-') || arg.len() < 2 {
            break;
        }
        // A cluster like -tt or -p2200: the first value option consumes the rest or the next arg.
        let flags: Vec<char> = arg[1..].chars().collect();
        let mut consumed_next = false;
        for (position, flag) in flags.iter().enumerate() {
            if SSH_VALUE_OPTIONS.contains(*flag) {
                if position + 1 == flags.len() {
                    consumed_next = true;
                }
                break;
            }
        }
        index += if consumed_next { 2 } else { 1 };
    }
    let destination = args.get(index).cloned();
    let command = args.iter().skip(index + 1).cloned().collect();
    (destination, command)
}

pub fn run_ssh(args: &[String]) -> i32 {
    let caller = std::os::unix::process::parent_id();
    let script = FakeScript::load();
    let (_destination, command) = split_ssh_args(args);
    let remote_command = command.join(" ");
    // `true` is how a client checks it can log in before its work; a rule that names no
    // condition scripts the guest's commands, not that check, which answers as any shell.
    let rule = script
        .find("ssh", args)
        .filter(|rule| !(command == ["true"] && rule.when == Default::default()))
        .cloned()
        .unwrap_or_default();
    let stdin = read_stdin_if(&rule);
    log::append(&FakeCall {
        tool: "ssh".into(),
        argv: args.to_vec(),
        stdin: stdin.clone().map(crate::bytes::Bytes),
        remote_command: Some(remote_command.clone()),
        ..Default::default()
    });
    if let Err(refused) = connect(args, 'p') {
        eprintln!("ssh: {refused}");
        return 255;
    }
    if !delay(&rule, caller) {
        return 255;
    }
    if rule.run_locally {
        // Like sshd: the words are joined with spaces and parsed again by the shell.
        let mut shell = std::process::Command::new("/bin/sh");
        shell
            .arg("-c")
            .arg(std::ffi::OsStr::from_bytes(&map_paths(
                remote_command.as_bytes(),
                &rule,
            )))
            .env("PATH", "/usr/local/bin:/usr/bin:/bin");
        if rule.path_map.is_empty() {
            let error = shell.exec();
            eprintln!("stoat-fake ssh: cannot run /bin/sh: {error}");
            return 255;
        }
        return run_mapped(shell, stdin, &rule);
    }
    answer(&rule)
}

/// Every guest path of `rule.path_map` in `bytes` replaced by its local path.
fn map_paths(bytes: &[u8], rule: &Rule) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (guest, local) in &rule.path_map {
        let (from, to) = (guest.as_bytes(), local.as_bytes());
        if from.is_empty() {
            continue;
        }
        let mut mapped = Vec::with_capacity(out.len());
        let mut rest = out.as_slice();
        while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
            mapped.extend_from_slice(&rest[..at]);
            mapped.extend_from_slice(to);
            rest = &rest[at + from.len()..];
        }
        mapped.extend_from_slice(rest);
        out = mapped;
    }
    out
}

/// Runs `shell` with stdin (already read, or read now) passed through [`map_paths`]; its
/// exit status, 128 + the signal that stopped it, or 255 when it cannot run.
fn run_mapped(mut shell: std::process::Command, stdin: Option<Vec<u8>>, rule: &Rule) -> i32 {
    use std::io::Write as _;
    use std::os::unix::process::ExitStatusExt as _;
    let input = stdin.unwrap_or_else(|| {
        let mut buffer = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut buffer);
        buffer
    });
    let mut child = match shell.stdin(std::process::Stdio::piped()).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("stoat-fake ssh: cannot run /bin/sh: {error}");
            return 255;
        }
    };
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(&map_paths(&input, rule));
    }
    match child.wait() {
        Ok(status) => status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        Err(_) => 255,
    }
}

pub fn run_scp(args: &[String]) -> i32 {
    let caller = std::os::unix::process::parent_id();
    let script = FakeScript::load();
    let rule = script.find("scp", args).cloned().unwrap_or_default();
    log::append(&FakeCall {
        tool: "scp".into(),
        argv: args.to_vec(),
        ..Default::default()
    });
    if let Err(refused) = connect(args, 'P') {
        eprintln!("ssh: {refused}\r\nscp: Connection closed");
        return 255;
    }
    if !delay(&rule, caller) {
        return 255;
    }
    // From the guest: write the scripted stdout bytes to the local destination.
    let operands: Vec<&String> = operands_after_options(args, "cFiJloPSX");
    if let (Some(source), Some(destination)) = (operands.first(), operands.last()) {
        if source.contains(":") && !destination.contains(':') && rule.exit.unwrap_or(0) == 0 {
            let bytes = rule.stdout.as_ref().map(|b| b.decode()).unwrap_or_default();
            let _ = std::fs::write(destination, bytes);
            emit(
                &[],
                &rule.stderr.as_ref().map(|b| b.decode()).unwrap_or_default(),
            );
            return 0;
        }
    }
    answer(&rule)
}

/// With `STOAT_FAKE_SSH_CONNECT=1`, like the real client, reaches the server before anything
/// else: the port given by
/// `-p`/`-P` (`port_flag`) or `-o Port=` must answer on 127.0.0.1 with an SSH banner (the
/// fake QEMU serves one on its forwarded ssh port, as a booted guest does). A control
/// command (`-O`) talks to a master, not to the server; no port named, nothing to check.
fn connect(args: &[String], port_flag: char) -> Result<(), String> {
    use std::io::Read as _;
    let asked = std::env::var_os(crate::SSH_CONNECT_ENV).is_some_and(|v| v == "1");
    if !asked || args.iter().any(|arg| arg == "-O" || arg.starts_with("-O")) {
        return Ok(());
    }
    let Some(port) = named_port(args, port_flag) else {
        return Ok(());
    };
    let refused = || format!("connect to host 127.0.0.1 port {port}: Connection refused");
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1))
            .map_err(|_| refused())?;
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
    let mut banner = [0u8; 4];
    match stream.read_exact(&mut banner) {
        Ok(()) if &banner == b"SSH-" => Ok(()),
        _ => Err("kex_exchange_identification: Connection closed by remote host".into()),
    }
}

/// The port an ssh or scp argv names (`-p 2200`, `-p2200`, `-o Port=2200`, `-oPort=2200`).
fn named_port(args: &[String], port_flag: char) -> Option<u16> {
    let flag = format!("-{port_flag}");
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        let value = if *arg == flag {
            words.next().cloned()
        } else if let Some(attached) = arg.strip_prefix(&flag) {
            Some(attached.to_owned())
        } else if arg == "-o" {
            words
                .next()
                .and_then(|option| option.strip_prefix("Port=").map(str::to_owned))
        } else {
            arg.strip_prefix("-oPort=").map(str::to_owned)
        };
        if let Some(port) = value.and_then(|text| text.trim().parse().ok()) {
            return Some(port);
        }
    }
    None
}

fn operands_after_options<'a>(args: &'a [String], value_options: &str) -> Vec<&'a String> {
    let mut out = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        if arg.starts_with('-') && arg.len() >= 2 {
            let last = arg.chars().last().unwrap_or('-');
            index += if arg.len() == 2 && value_options.contains(last) {
                2
            } else {
                1
            };
            continue;
        }
        out.push(arg);
        index += 1;
    }
    out
}

pub(crate) fn read_stdin_if(rule: &Rule) -> Option<Vec<u8>> {
    if !rule.read_stdin {
        return None;
    }
    let mut buffer = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut buffer);
    Some(buffer)
}

/// Waits out a rule's delay. Returns false when `caller` (the parent the fake started under)
/// went away meanwhile: nobody would read the answer, so the fake then ends as a dropped
/// connection instead of outliving the test that started it (a held ssh waits up to a minute).
pub(crate) fn delay(rule: &Rule, caller: u32) -> bool {
    let Some(ms) = rule.delay_ms else {
        return true;
    };
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        if std::os::unix::process::parent_id() != caller {
            return false;
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
    }
}

/// Emits a rule's scripted output and returns its exit status.
pub(crate) fn answer(rule: &Rule) -> i32 {
    let stdout = rule.stdout.as_ref().map(|b| b.decode()).unwrap_or_default();
    let stderr = rule.stderr.as_ref().map(|b| b.decode()).unwrap_or_default();
    emit(&stdout, &stderr);
    rule.exit.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_upstream_exec_argv() {
        let args = strings(&[
            "-p",
            "2200",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "BatchMode=yes",
            "-i",
            "/r/id_stoat",
            "root@127.0.0.1",
            "'ls' '-la'",
        ]);
        let (destination, command) = split_ssh_args(&args);
        assert_eq!(destination.as_deref(), Some("root@127.0.0.1"));
        assert_eq!(command, vec!["'ls' '-la'"]);
    }

    #[test]
    fn splits_clusters_and_attached_values() {
        let args = strings(&["-tt", "-p2200", "-q", "u@h", "echo", "hi"]);
        let (destination, command) = split_ssh_args(&args);
        assert_eq!(destination.as_deref(), Some("u@h"));
        assert_eq!(command, vec!["echo", "hi"]);
    }
}
