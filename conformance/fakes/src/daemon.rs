//! Owns starting a fake's daemon half: the same binary again with `--<tool>-daemon`, in a
//! session of its own, with no stdio, as `qemu -daemonize` and `passt` leave their callers.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};

/// Spawns `stoat-fake <flag> <args...>` detached; on failure says why on stderr, as `tool`,
/// and gives the exit status the caller returns.
#[allow(unsafe_code)]
pub(crate) fn spawn(tool: &str, flag: &str, args: &[String]) -> Result<Child, i32> {
    let Ok(exe) = std::env::current_exe() else {
        super::emit(
            &[],
            format!("stoat-fake {tool}: cannot find myself\n").as_bytes(),
        );
        return Err(1);
    };
    let mut command = Command::new(exe);
    command
        .arg(flag)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; the daemon leaves the caller's session and group.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command.spawn().map_err(|error| {
        super::emit(
            &[],
            format!("stoat-fake {tool}: cannot daemonize: {error}\n").as_bytes(),
        );
        1
    })
}
