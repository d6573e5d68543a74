//! Owns the fake host tools: ONE multi-call binary (`stoat-fake`) answering as `ssh`, `scp`,
//! `ssh-keygen`, `qemu-img`, `qemu-system-x86_64` and `xorriso`, dispatching on the name it
//! was called by. Scripted by data (`STOAT_FAKE_SCRIPT`, see [`script`]) and logging every
//! call as a JSON line (`STOAT_FAKE_LOG`, see [`log`]). The script format is documented in
//! docs/conformance-fakes.md and is stable: impl tests reuse these fakes.
//!
//! Never reads the network; never touches anything outside the paths it is given.

pub mod keygen;
pub mod log;
pub mod qemu;
pub mod qemu_img;
pub mod qmp;
pub mod script;
pub mod ssh;
pub mod xorriso;

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

/// The environment variable naming the script file.
pub const SCRIPT_ENV: &str = "STOAT_FAKE_SCRIPT";
/// The environment variable naming the JSON-lines call log.
pub const LOG_ENV: &str = "STOAT_FAKE_LOG";
/// The environment variable naming the file daemons append their pid to (for cleanup).
pub const PIDS_ENV: &str = "STOAT_FAKE_PIDS";
/// The environment variable naming the file the fake qemu writes its argv to, one argument a
/// line (relative: beside its `-pidfile`). Unset: no file.
pub const QEMU_ARGV_ENV: &str = "STOAT_FAKE_QEMU_ARGV";
/// The environment variable that, set to `1`, makes the fake qemu open neither its QMP nor its
/// human-monitor socket (a QEMU only signals reach).
pub const QEMU_NO_MONITOR_ENV: &str = "STOAT_FAKE_QEMU_NO_MONITOR";
/// The environment variable that, set to `1`, does what the script's `qemu.no_ssh` does.
pub const QEMU_NO_SSH_ENV: &str = "STOAT_FAKE_QEMU_NO_SSH";

/// Entry point of `stoat-fake`: dispatch on argv[0]'s file name.
pub fn main() -> ! {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let name = argv
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    let args: Vec<String> = argv.iter().skip(1).cloned().collect();
    let code = dispatch(&name, &args);
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// Runs the fake called `name` with `args`; returns its exit status.
pub fn dispatch(name: &str, args: &[String]) -> i32 {
    match name {
        "ssh" => ssh::run_ssh(args),
        "scp" => ssh::run_scp(args),
        "ssh-keygen" => keygen::run(args),
        "qemu-img" => qemu_img::run(args),
        "qemu-system-x86_64" => qemu::run(args),
        "xorriso" => xorriso::run(args),
        _ if args.first().map(String::as_str) == Some("--hold") => hold(&args[1..]),
        _ if args.first().map(String::as_str) == Some("--qemu-daemon") => qemu::daemon(&args[1..]),
        _ if args.first().map(String::as_str) == Some("--as") && args.len() >= 2 => {
            dispatch(&args[1], &args[2..])
        }
        _ => {
            eprintln!("stoat-fake: called as {name:?}; link me as one of ssh, scp, ssh-keygen, qemu-img, qemu-system-x86_64, xorriso (or use --as TOOL, --hold PATH)");
            64
        }
    }
}

/// `stoat-fake --hold <vm-dir>/ [--ssh-port N]`: a stand-in for a running qemu. Lives until
/// killed, at most `STOAT_FAKE_MAX_SECS` (default 600) so a dead harness leaves nothing behind
/// for long. With `--ssh-port`, it answers an SSH banner there, like a booted guest.
fn hold(args: &[String]) -> i32 {
    let port = args
        .iter()
        .position(|a| a == "--ssh-port")
        .and_then(|at| args.get(at + 1))
        .and_then(|p| p.parse::<u16>().ok());
    if let Some(port) = port {
        qemu::serve_banners(port);
    }
    let limit = max_lifetime();
    std::thread::sleep(limit);
    0
}

pub(crate) fn max_lifetime() -> Duration {
    let secs = std::env::var("STOAT_FAKE_MAX_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// Writes bytes to stdout and stderr as scripted.
pub(crate) fn emit(stdout: &[u8], stderr: &[u8]) {
    let _ = std::io::stdout().write_all(stdout);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(stderr);
    let _ = std::io::stderr().flush();
}
