//! Owns the entry point of `stoat-fake`: which fake answers, from the name it was called by
//! (or `--as TOOL`), and the `--hold` stand-in for a running qemu.

use std::io::Write as _;
use std::path::Path;

use super::{keygen, max_lifetime, passt, qemu, qemu_img, ssh, xorriso};

/// Entry point of `stoat-fake`: dispatch on the file name of `argv[0]`.
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
        "passt" => passt::run(args),
        _ if args.first().map(String::as_str) == Some("--hold") => hold(&args[1..]),
        _ if args.first().map(String::as_str) == Some("--qemu-daemon") => qemu::daemon(&args[1..]),
        _ if args.first().map(String::as_str) == Some("--passt-daemon") => {
            passt::daemon(&args[1..])
        }
        _ if args.first().map(String::as_str) == Some("--as") && args.len() >= 2 => {
            dispatch(&args[1], &args[2..])
        }
        _ => {
            eprintln!("stoat-fake: called as {name:?}; link me as one of ssh, scp, ssh-keygen, qemu-img, qemu-system-x86_64, xorriso, passt (or use --as TOOL, --hold PATH)");
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
