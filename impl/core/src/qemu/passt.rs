//! The guest's network: one `passt` process per running VM, which QEMU reaches through a unix
//! socket (`-netdev stream`). passt gives the guest the addresses QEMU's user network gave
//! (10.0.2.15/24, gateway 10.0.2.2, DNS 10.0.2.3), carries its traffic out through ordinary
//! host sockets, and listens on 127.0.0.1 for the VM's ssh port and forwards (`-t`).
//!
//! Why not `-netdev user`: there every guest reaches every service on the host's loopback
//! through 10.0.2.2 (other VMs' ssh ports included), and this QEMU offers no switch against it.
//! passt's `--no-map-gw` keeps the gateway a plain gateway; `host_loopback` (the opt-in) leaves
//! it mapped to the host's 127.0.0.1, as before. docs/decisions/runtime.md "Guest network".
//!
//! It owns passt's argv, its start (passt daemonizes once its socket listens and writes a
//! pidfile beside QEMU's), finding it again by pidfile plus `/proc/<pid>/cmdline`, and stopping
//! it by PID. `--one-off` ends passt by itself when its QEMU goes, however QEMU went.

use rustix::process::Signal;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use super::argv::{LaunchSpec, VmPaths};
use super::error::QemuError;

/// The binary looked up on PATH.
pub const PASST_BINARY: &str = "passt";

/// The guest's side of the network, the addresses QEMU's user network used (guest images and
/// the test guest configure these statically).
pub const GUEST_ADDRESS: &str = "10.0.2.15";
pub const GATEWAY_ADDRESS: &str = "10.0.2.2";
pub const DNS_ADDRESS: &str = "10.0.2.3";

/// The longest socket path passt binds as given: it cuts a longer one to this many bytes
/// without a word (measured with Debian 12's passt), and QEMU then knocks on a name nobody
/// listens at, so the guest boots with no network.
const PASST_MAX_SOCKET_PATH: usize = 98;

/// How long passt gets to go after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The arguments after `passt` for `spec`, running as `uid:gid` (passt refuses to stay root
/// and would otherwise drop to `nobody`, who cannot write into a 0700 VM directory).
pub fn passt_argv(spec: &LaunchSpec, uid: u32, gid: u32) -> Result<Vec<String>, QemuError> {
    let paths = &spec.paths;
    let socket = path_text("the network socket", &paths.passt_socket)?;
    if socket.len() > PASST_MAX_SOCKET_PATH {
        return Err(QemuError::InvalidOptionValue {
            what: "the network socket",
            value: socket,
            reason:
                "is longer than the 98 bytes passt keeps of a socket path (use a shorter STOAT_HOME)",
        });
    }
    let mut argv: Vec<String> = [
        "--one-off",
        "--quiet",
        "--socket",
        &socket,
        "--pid",
        &path_text("the network pidfile", &paths.passt_pidfile)?,
        "--runas",
        &format!("{uid}:{gid}"),
        "--address",
        GUEST_ADDRESS,
        "--netmask",
        "24",
        "--gateway",
        GATEWAY_ADDRESS,
        "--dns-forward",
        DNS_ADDRESS,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if !spec.host_loopback {
        argv.push("--no-map-gw".to_owned());
    }
    for (host_port, guest_port) in
        std::iter::once((spec.ssh_port, 22)).chain(spec.forwards.iter().copied())
    {
        argv.push("-t".to_owned());
        argv.push(format!("127.0.0.1/{host_port}:{guest_port}"));
    }
    Ok(argv)
}

fn path_text(what: &'static str, path: &Path) -> Result<String, QemuError> {
    match path.to_str() {
        Some(text) if path.is_absolute() => Ok(text.to_owned()),
        _ => Err(QemuError::InvalidOptionValue {
            what,
            value: path.to_string_lossy().into_owned(),
            reason: "is not an absolute UTF-8 path",
        }),
    }
}

/// Starts passt for `spec` and returns its PID once its socket listens. A passt left by an
/// earlier boot of this VM is stopped first, and a stale socket or pidfile removed.
pub fn start(passt_binary: &OsStr, spec: &LaunchSpec) -> Result<u32, QemuError> {
    let paths = &spec.paths;
    stop(paths);
    let _ = std::fs::remove_file(&paths.passt_socket);
    let _ = std::fs::remove_file(&paths.passt_pidfile);
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    let argv = passt_argv(spec, uid, gid)?;
    let pid = super::launch::start_with_argv(passt_binary, &argv, &paths.passt_pidfile).map_err(
        |error| match error {
            QemuError::QemuStartFailed { stderr, hint } => match port_not_bound(&stderr) {
                Some(port) => QemuError::HostPortTaken {
                    port,
                    detail: quiet(&stderr),
                },
                None => QemuError::QemuStartFailed {
                    stderr: format!("the network (passt) did not start: {}", quiet(&stderr)),
                    hint,
                },
            },
            other => other,
        },
    )?;
    if !super::launch::is_qemu_of(pid, &paths.dir) {
        return Err(QemuError::QemuStartFailed {
            stderr: "the network (passt) exited right after it started".to_owned(),
            hint: None,
        });
    }
    Ok(pid)
}

/// The host port passt says it could not listen on, from its stderr: Debian 12's passt says
/// `Failed to bind any port for '-t 127.0.0.1/P:22', exiting` (the rule as given) when
/// something else holds every port of a `-t` rule, and some versions `Failed to bind port P
/// (Address already in use) for option '-t ...'`. The first such rule's host port; None for
/// any other failure.
fn port_not_bound(stderr: &str) -> Option<u16> {
    stderr.lines().find_map(|line| {
        let taken = line.contains("Failed to bind any port for '-t ")
            || (line.contains("Failed to bind port ") && line.contains("Address already in use"));
        let rule = line.split_once("'-t ").filter(|_| taken)?.1;
        let rule = &rule[..rule.find('\'')?];
        let host = rule.rsplit('/').next()?.split(':').next()?;
        host.parse().ok()
    })
}

/// passt's own words without its complaints about a missing syslog.
fn quiet(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("Failed to send"))
        .collect();
    lines.join("; ")
}

/// The PID of this VM's passt, or None (no pidfile, or its process is not this VM's).
pub fn running(paths: &VmPaths) -> Option<u32> {
    let text = std::fs::read_to_string(&paths.passt_pidfile).ok()?;
    let pid = text.trim().parse::<u32>().ok().filter(|pid| *pid > 1)?;
    super::launch::is_qemu_of(pid, &paths.dir).then_some(pid)
}

/// Stops this VM's passt by PID (SIGTERM, then SIGKILL), if one runs; removes its pidfile and
/// socket. A passt whose QEMU went has usually ended by itself (`--one-off`).
pub fn stop(paths: &VmPaths) {
    if let Some(pid) = running(paths) {
        for signal in [Signal::TERM, Signal::KILL] {
            super::launch::signal_qemu(&paths.dir, pid, signal);
            if super::launch::wait_stopped(&paths.dir, pid, STOP_GRACE) {
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&paths.passt_pidfile);
    let _ = std::fs::remove_file(&paths.passt_socket);
}

/// Waits up to `timeout` for this VM's passt to end by itself (after its QEMU went).
pub fn wait_gone(paths: &VmPaths, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if running(paths).is_none() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The user forwards a passt argv [`passt_argv`] made carries, as (host, guest) pairs in order:
/// every `-t 127.0.0.1/H:G` after the first, which is the ssh port's.
pub fn forwards_of_argv(argv: &[String]) -> Vec<(u16, u16)> {
    let parse = |rule: &str| -> Option<(u16, u16)> {
        let rule = rule.strip_prefix("127.0.0.1/")?;
        let (host, guest) = rule.split_once(':')?;
        Some((host.parse().ok()?, guest.parse().ok()?))
    };
    argv.windows(2)
        .filter(|pair| pair[0] == "-t")
        .skip(1)
        .filter_map(|pair| parse(&pair[1]))
        .collect()
}

/// The user forwards the running passt of the VM in `paths` listens for; `None` when none runs.
pub fn live_forwards(paths: &VmPaths) -> Option<Vec<(u16, u16)>> {
    let pid = running(paths)?;
    Some(forwards_of_argv(&super::launch::cmdline(pid)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu::Accel;

    fn spec() -> LaunchSpec {
        let mut spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new("/r/web")),
            "/r/shared/web",
            Accel::Tcg,
        );
        spec.ssh_port = 2201;
        spec.forwards = vec![(8080, 80), (5432, 5432)];
        spec
    }

    #[test]
    fn the_default_cuts_the_gateway_from_the_host_and_forwards_only_on_loopback() {
        let argv = passt_argv(&spec(), 1000, 1000).unwrap();
        assert!(argv.contains(&"--no-map-gw".to_owned()), "{argv:?}");
        assert!(argv.windows(2).any(|p| p == ["--runas", "1000:1000"]));
        assert!(argv.windows(2).any(|p| p == ["--socket", "/r/web/n.sock"]));
        assert!(argv.windows(2).any(|p| p == ["--pid", "/r/web/passt.pid"]));
        let rules: Vec<&str> = argv
            .windows(2)
            .filter(|p| p[0] == "-t")
            .map(|p| p[1].as_str())
            .collect();
        assert_eq!(
            rules,
            [
                "127.0.0.1/2201:22",
                "127.0.0.1/8080:80",
                "127.0.0.1/5432:5432"
            ]
        );
        assert_eq!(forwards_of_argv(&argv), spec().forwards);
        assert!(forwards_of_argv(&["sleep".into(), "300".into()]).is_empty());
    }

    #[test]
    fn the_opt_in_keeps_the_gateway_mapped_to_the_host() {
        let mut spec = spec();
        spec.host_loopback = true;
        let argv = passt_argv(&spec, 0, 0).unwrap();
        assert!(!argv.contains(&"--no-map-gw".to_owned()), "{argv:?}");
    }

    #[test]
    fn a_socket_path_too_long_for_a_unix_address_is_refused() {
        // 93 bytes of directory: `<dir>/n.sock` is 100, past what passt keeps.
        let long = format!("/{}", "d".repeat(92));
        let spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new(&long)),
            "/r/shared/web",
            Accel::Tcg,
        );
        assert!(matches!(
            passt_argv(&spec, 0, 0),
            Err(QemuError::InvalidOptionValue { .. })
        ));
    }

    #[test]
    fn a_port_passt_could_not_bind_is_read_from_its_words() {
        let stderr = "Failed to send 62 bytes to syslog\n\
            Failed to bind any port for '-t 127.0.0.1/2231:22', exiting\n";
        assert_eq!(port_not_bound(stderr), Some(2231));
        assert_eq!(
            port_not_bound("Failed to bind any port for '-t 127.0.0.1/8080:80'"),
            Some(8080)
        );
        assert_eq!(
            port_not_bound("Failed to bind any port for '-t 2202'"),
            Some(2202)
        );
        for other in [
            "No routable interface",
            "Failed to bind any port for '-t 127.0.0.1/x:22'",
            "Failed to bind any port for '-t 127.0.0.1/2231:22",
            "Failed to bind port 2203 (Permission denied) for option '-t 127.0.0.1/2203:22'",
            "",
        ] {
            assert_eq!(port_not_bound(other), None, "{other:?}");
        }
    }

    #[test]
    fn syslog_complaints_are_dropped_from_passt_s_words() {
        assert_eq!(
            quiet("Failed to send 31 bytes to syslog\nNo routable interface\n\n"),
            "No routable interface"
        );
    }
}
