//! `exec`: run a command in the guest over the system `ssh` (docs/contract.md behaviour#ssh). The guest
//! argv travels as ONE remote-command argument, each word single-quoted byte for byte, so it
//! survives the guest's shell unchanged (non-UTF-8 bytes included). Before connecting, exec
//! waits (bounded) for a VM that is running but whose ssh does not answer yet, so a command
//! right after `up --no-wait` runs instead of failing on the connection. The call goes
//! through the VM's reused connection when it can (`host::ssh_mux`).

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{load_running, tool, wait};
use crate::child::{self, Group};
use crate::host::ssh_argv::{quote_remote_argv, ssh_args_with};
use crate::host::ssh_mux::{Mux, Route};
use crate::vm::StoredVm;
use crate::{keys, Cancel, Env, Error, Result, Root};

/// How long exec (unless told otherwise) and cp wait for a running VM's ssh to answer before they give up.
pub const REACH_WAIT: Duration = Duration::from_secs(120);

/// How long stopping a cancelled command in the guest may take.
const STOP_LIMIT: Duration = Duration::from_secs(10);

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
    let mux = Mux::for_vm(&key, &stored);
    // A master that answers holds a live login to the guest: no need to probe its sshd.
    if !mux.answers() {
        wait::until_reachable(&stored, reach_wait, cancel)?;
    }
    let route = mux.route();
    let pid_file = guest_pid_file();
    let ssh_to = |route: &Route, remote: OsString| {
        let mut command = Command::new(&ssh);
        route.configure(&mut command);
        command
            .args(ssh_args_with(&key, &stored, route.options()))
            .arg(remote)
            .env("PATH", env.path_var());
        command
    };
    let mut ssh_cmd = ssh_to(
        &route,
        recording_pid(&pid_file, &quote_remote_argv(command)),
    );
    let ran = match streams {
        // The terminal stays stoat's: ssh shares its process group to read it.
        Streams::Inherit => child::status(&mut ssh_cmd, Group::Shared)
            .map(|status| (status, Vec::new(), Vec::new())),
        Streams::Capture => {
            ssh_cmd.stdin(Stdio::null());
            child::output(&mut ssh_cmd, Group::Own)
                .map(|output| (output.status, output.stdout, output.stderr))
        }
    };
    let ran = match ran {
        Ok(_) if cancel.is_cancelled() => Err(child::RunError::Canceled),
        other => other,
    };
    let (status, stdout, stderr) = match ran {
        Ok(ran) => ran,
        Err(child::RunError::Canceled) => {
            // Stopping ssh does not stop the command in the guest (no pty tells it).
            // Directly: the stopped ssh may have been the connection's master.
            let mut stop = ssh_to(&Route::direct(), stop_recorded(&pid_file));
            let _ = child::cleanup_output(stop.stdin(Stdio::null()), STOP_LIMIT);
            return Err(Error::Canceled);
        }
        Err(e) => return Err(e.into_error(&format!("{}: ssh", stored.name))),
    };
    drop(route);
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

/// True when `stored`'s ssh answers now: its reused connection's master, else a banner on
/// its port. The master is asked first: that costs the guest nothing.
pub fn answers_now(root: &Root, env: &Env, stored: &StoredVm) -> bool {
    let master = keys::ensure(root, env).is_ok_and(|key| Mux::for_vm(&key, stored).answers());
    master || wait::ssh_banner(stored.config.sshport)
}

/// Where the guest shell running this exec's command records its PID.
fn guest_pid_file() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("/tmp/.stoat-exec.{}.{nanos}", std::process::id())
}

/// The remote command: the guest's shell records its PID (so a cancel can stop what it
/// runs), runs the quoted argv, forgets the PID and passes the status on.
fn recording_pid(pid_file: &str, quoted: &std::ffi::OsStr) -> OsString {
    // Quietly: a guest without a writable /tmp still runs the command, just uncancellable.
    let mut remote = OsString::from(format!("echo $$ 2>/dev/null >{pid_file}; "));
    remote.push(quoted);
    remote.push(format!("; s=$?; rm -f {pid_file}; exit $s"));
    remote
}

/// The remote command that stops a cancelled exec: the recorded shell and everything below
/// it (listed first: once the shell dies they are orphans).
fn stop_recorded(pid_file: &str) -> OsString {
    OsString::from(format!(
        "p=$(cat {pid_file} 2>/dev/null) || exit 0; rm -f {pid_file}; \
kids() {{ pgrep -P \"$1\" 2>/dev/null || for s in /proc/[0-9]*/stat; do read -r c _ _ pp _ < \"$s\" && [ \"$pp\" = \"$1\" ] && echo \"$c\"; done 2>/dev/null; }}; \
all=$p; todo=$p; while [ -n \"$todo\" ]; do next=; for q in $todo; do next=\"$next $(kids $q)\"; done; todo=$(echo $next); all=\"$all $todo\"; done; \
kill -TERM $all 2>/dev/null; exit 0"
    ))
}
