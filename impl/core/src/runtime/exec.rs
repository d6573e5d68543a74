//! `exec`: run a command in the guest over the system `ssh` (docs/contract.md behaviour#ssh). The guest
//! argv travels as ONE remote-command argument, each word single-quoted, so it survives the
//! guest's shell unchanged. stdout and stderr are captured separately and byte-exact.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use super::{load_running, tool};
use crate::host::ssh_argv::{quote_remote_command, ssh_args};
use crate::{keys, Env, Error, Result, Root};

/// What the guest command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub vm: String,
    /// ssh's status: the guest's, or 255 for ssh's own failures; 128+N for a signal.
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs `command` in `name`. `pass_stdin` hands stoat's stdin to the guest (human mode);
/// otherwise the guest reads an empty stdin.
pub fn exec(
    root: &Root,
    env: &Env,
    name: &str,
    command: &[String],
    pass_stdin: bool,
) -> Result<ExecOutput> {
    if command.is_empty() {
        return Err(Error::InvalidSpec("exec needs a command to run".into()));
    }
    let (stored, _pid) = load_running(root, name)?;
    let key = keys::ensure(root, env)?;
    let ssh = tool(env, "ssh", "openssh-client")?;
    let output = Command::new(ssh)
        .args(ssh_args(&key, &stored))
        .arg(quote_remote_command(command))
        .env("PATH", env.path_var())
        .stdin(if pass_stdin {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::io(format!("{}: ssh", stored.name), e))?;
    let exit_code = output
        .status
        .code()
        .or_else(|| output.status.signal().map(|signal| 128 + signal))
        .unwrap_or(255);
    Ok(ExecOutput {
        vm: stored.name,
        exit_code,
        stdout: output.stdout,
        stderr: output.stderr,
    })
}
