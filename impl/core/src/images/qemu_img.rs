//! The host's `qemu-img`, the one way core runs it: found on PATH or a `tool_missing` naming
//! its package, with the C locale so its messages read the same on every host.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use crate::{Env, Error, Result};

/// `qemu-img` with stoat's PATH, the C locale and no stdin; the caller adds the arguments.
pub fn command(env: &Env) -> Result<Command> {
    let mut command = Command::new(env.require_tool("qemu-img", "qemu-utils")?);
    command
        .env("PATH", env.path_var())
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    Ok(command)
}

/// Runs `qemu-img` with `args`; its stderr becomes the error message.
pub fn run(env: &Env, args: &[&OsStr]) -> Result<()> {
    let mut command = command(env)?;
    command.args(args);
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error("run qemu-img"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let message = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    Err(Error::Tool {
        tool: "qemu-img".into(),
        message: message.trim().to_owned(),
    })
}
