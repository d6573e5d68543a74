//! `exec`: run a command in the guest over the system `ssh` (docs/contract.md behaviour#ssh). The guest
//! argv travels as ONE remote-command argument, each word single-quoted byte for byte, so it
//! survives the guest's shell unchanged (non-UTF-8 bytes included). Before connecting, exec
//! waits (bounded) for a VM that is running but whose ssh does not answer yet, so a command
//! right after `up --no-wait` runs instead of failing on the connection, and an ssh that fails
//! before any session (`runtime::session_mark` tells) is tried again within the same bound.
//! The call goes through the VM's reused connection when it can (`host::ssh_mux`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::session_mark::{self, MarkFilter, WRITE_MARK};
use super::{reach, wait, Reached};
use crate::child::{self, Group};
use crate::host::ssh_argv::{quote_remote_argv, ssh_args_with};
use crate::host::ssh_mux::{Mux, Route};
use crate::vm::StoredVm;
use crate::{keys, Cancel, Env, Error, Result, Root};

/// How long exec (unless told otherwise) and cp wait for a running VM's ssh to answer before they give up.
pub const REACH_WAIT: Duration = Duration::from_secs(120);

/// The pause before exec tries again after ssh failed before any session.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

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
    let deadline = Instant::now() + reach_wait;
    let Reached {
        stored,
        key,
        client: ssh,
        mux,
    } = reach(root, env, name, "ssh", reach_wait, cancel)?;
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
    let (status, stdout, stderr) = loop {
        let route = mux.route();
        let mut ssh_cmd = ssh_to(
            &route,
            recording_pid(&pid_file, &quote_remote_argv(command)),
        );
        let ran = match streams {
            // The terminal stays stoat's: ssh shares its process group to read it. The guest's
            // stderr is passed on as it comes; ssh's own talk waits for the session mark.
            Streams::Inherit => {
                child::status_consuming_stderr(&mut ssh_cmd, Group::Shared, pass_guest_stderr).map(
                    |(status, filter)| {
                        let filter = filter.unwrap_or_default();
                        let opened = filter.opened();
                        (status, Vec::new(), (opened, filter.into_held()))
                    },
                )
            }
            Streams::Capture => {
                ssh_cmd.stdin(Stdio::null());
                child::output(&mut ssh_cmd, Group::Own).map(|output| {
                    (
                        output.status,
                        output.stdout,
                        session_mark::split(&output.stderr),
                    )
                })
            }
        };
        drop(route);
        let ran = match ran {
            Ok(_) if cancel.is_cancelled() => Err(child::RunError::Canceled),
            other => other,
        };
        let (status, stdout, (opened, stderr)) = match ran {
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
        if opened || status.code() != Some(255) {
            break (status, stdout, stderr);
        }
        // ssh's own failure before any session: the command never ran, so it is tried
        // again while the reach wait lasts, and is an error after it, never a guest status.
        if Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "{} answers on its ssh port {} but no session opened within {}: {}",
                stored.name,
                stored.config.sshport,
                humantime::format_duration(reach_wait),
                last_line(&stderr)
            )));
        }
        std::thread::sleep(RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now())));
        wait::until_reachable(
            &stored,
            deadline.saturating_duration_since(Instant::now()),
            cancel,
        )?;
    };
    if streams == Streams::Inherit {
        // What ssh said before a session that then opened was passed on with the guest's
        // bytes; what is left is ssh's own closing talk, for the user as before.
        let _ = std::io::stderr().write_all(&stderr);
    }
    let exit_code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(255);
    Ok(ExecOutput {
        vm: stored.name,
        exit_code,
        stdout,
        stderr: match streams {
            Streams::Inherit => Vec::new(),
            Streams::Capture => stderr,
        },
    })
}

/// Copies ssh's stderr to ours as it comes, once the session mark has gone by; returns the
/// filter, which holds what ssh said when no session opened.
fn pass_guest_stderr(mut pipe: std::process::ChildStderr) -> MarkFilter {
    let mut filter = MarkFilter::default();
    let mut chunk = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            break;
        }
        let out = filter.feed(&chunk[..n]);
        if !out.is_empty() {
            let mut stderr = std::io::stderr().lock();
            let _ = stderr.write_all(&out);
            let _ = stderr.flush();
        }
    }
    filter
}

/// The last line ssh wrote, for a message.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("ssh gave no reason")
        .trim()
        .to_owned()
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
    let mut remote = OsString::from(format!("{WRITE_MARK}echo $$ 2>/dev/null >{pid_file}; "));
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
