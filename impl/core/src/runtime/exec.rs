//! `exec`: run a command in the guest over the system `ssh` (docs/contract.md behaviour#ssh). The guest
//! argv travels as ONE remote-command argument, each word single-quoted byte for byte, so it
//! survives the guest's shell unchanged (non-UTF-8 bytes included). Before connecting, exec
//! waits (bounded) for a VM that is running but whose ssh does not answer yet, so a command
//! right after `up --no-wait` runs instead of failing on the connection.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{load_running, tool, wait};
use crate::host::ssh_argv::{quote_remote_argv, ssh_args};
use crate::{keys, Cancel, Env, Error, Result, Root};

/// How long exec (unless told otherwise) and cp wait for a running VM's ssh to answer before they give up.
pub const REACH_WAIT: Duration = Duration::from_secs(120);

/// Where the guest's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// Captured byte-exact for the JSON result; the guest reads an empty stdin.
    Capture,
    /// Stoat's own stdin, stdout and stderr, as they come (human mode, like ssh).
    Inherit,
}

/// What the guest command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub vm: String,
    /// ssh's status: the guest's, or 255 for ssh's own failures; 128+N for a signal.
    pub exit_code: i32,
    /// Empty with [`Streams::Inherit`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs `command` in `name`.
pub fn exec(
    root: &Root,
    env: &Env,
    name: &str,
    command: &[OsString],
    streams: Streams,
    reach_wait: Duration,
    cancel: &Cancel,
) -> Result<ExecOutput> {
    if command.is_empty() {
        return Err(Error::InvalidSpec("exec needs a command to run".into()));
    }
    let (stored, _pid) = load_running(root, name)?;
    let key = keys::ensure(root, env)?;
    let ssh = tool(env, "ssh", "openssh-client")?;
    wait::until_reachable(&stored, reach_wait, cancel)?;
    let mut ssh = Command::new(ssh);
    ssh.args(ssh_args(&key, &stored))
        .arg(quote_remote_argv(command))
        .env("PATH", env.path_var());
    let (status, stdout, stderr) = match streams {
        Streams::Inherit => {
            let status = ssh
                .status()
                .map_err(|e| Error::io(format!("{}: ssh", stored.name), e))?;
            (status, Vec::new(), Vec::new())
        }
        Streams::Capture => {
            let output = ssh
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| Error::io(format!("{}: ssh", stored.name), e))?;
            (output.status, output.stdout, output.stderr)
        }
    };
    let exit_code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(255);
    Ok(ExecOutput {
        vm: stored.name,
        exit_code,
        stdout,
        stderr,
    })
}
