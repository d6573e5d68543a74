//! `exec`: run a command in the guest over the system `ssh` (docs/contract.md behaviour#ssh). The guest
//! argv travels as ONE remote-command argument, each word single-quoted byte for byte, so it
//! survives the guest's shell unchanged (non-UTF-8 bytes included). exec's own login is how it
//! learns the guest is ready (no separate probe, see `ssh::login`): an ssh that fails
//! before any session (`ssh::session_mark` tells) is tried again within a bound, so a
//! command right after `up --no-wait` runs instead of failing on the connection. The call
//! goes through the VM's reused connection when it can, and becomes it when there is none
//! (`ssh::mux`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::exec_guard::{stop_script, Guard};
use crate::child::{self, Group};
use crate::ssh::argv::{quote_remote_argv, ssh_args_with};
use crate::ssh::login::last_line;
use crate::ssh::mux::Route;
use crate::ssh::reach::{reach, FirstContact, Reached};
use crate::ssh::session_mark::{self, MarkFilter, WRITE_MARK};
use crate::vm::StoredVm;
use crate::{Cancel, Env, Error, Result, Root};

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

/// Runs `command` in `name`; `waiting` is called once, when the guest did not take the first
/// login and exec starts waiting for it (a note for a person watching).
#[allow(clippy::too_many_arguments)]
pub fn exec(
    root: &Root,
    env: &Env,
    name: &str,
    command: &[OsString],
    streams: Streams,
    reach_wait: Duration,
    cancel: &Cancel,
    waiting: &dyn Fn(),
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
    } = reach(
        root,
        env,
        name,
        "ssh",
        FirstContact::ItsOwnLogin,
        reach_wait,
        cancel,
    )?;
    let mark = exec_mark();
    let ssh_to = |route: &Route, remote: OsString| {
        ssh_command(&ssh, route, &key, &stored, env.path_var(), remote)
    };
    // Directly: the VM's master may be this exec's own ssh, gone with stoat.
    let stop = stop_script(&signal_marked(&mark, "TERM"), &signal_marked(&mark, "KILL"));
    let _guard = Guard::start(&ssh_to(&Route::direct(), stop.into()))
        .map_err(|e| child::RunError::Spawn(e).into_error("exec's guard"))?;
    let mut said_waiting = false;
    let (status, stdout, stderr) = loop {
        let route = mux.route();
        let mut ssh_cmd = ssh_to(
            &route,
            marked_command(
                &mark,
                &quote_remote_argv(command),
                streams == Streams::Capture,
            ),
        );
        let ran = match streams {
            // The terminal stays stoat's: ssh shares its process group to read it. The guest's
            // stderr is passed on as it comes; ssh's own talk waits for the session mark.
            Streams::Inherit => {
                let ran =
                    child::status_consuming_stderr(&mut ssh_cmd, Group::Shared, pass_guest_stderr);
                ran.map(|(status, filter)| {
                    let filter = filter.unwrap_or_default();
                    let opened = filter.opened();
                    (status, Vec::new(), (opened, filter.into_held()))
                })
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
                let mut stop = ssh_to(&Route::direct(), stop_marked(&mark));
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
                "{} is running but stoat could not log in over ssh (port {}) within {}: {}",
                stored.name,
                stored.config.sshport,
                humantime::format_duration(reach_wait),
                last_line(&stderr)
            )));
        }
        if !said_waiting {
            waiting();
            said_waiting = true;
        }
        std::thread::sleep(RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now())));
        cancel.check()?;
        if stored.running_pid().is_none() {
            return Err(Error::NotRunning { name: stored.name });
        }
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

/// `ssh` to the guest through `route`, running `remote`.
fn ssh_command(
    ssh: &Path,
    route: &Route,
    key: &Path,
    stored: &StoredVm,
    path: &str,
    remote: OsString,
) -> Command {
    let mut command = Command::new(ssh);
    route.configure(&mut command);
    command
        .args(ssh_args_with(key, stored, route.options()))
        .arg(remote)
        .env("PATH", path);
    command
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

/// The mark this exec's guest command carries in its environment (`STOAT_EXEC=<mark>`), by
/// which a cancel finds it and what it started. Fixed width after the PID, so no mark is a
/// prefix of another.
fn exec_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{}.{nanos:09}", std::process::id())
}

/// The remote command. The guest command and everything it starts, double-forked children
/// included, carry `STOAT_EXEC=<mark>` in their environment: a cancel, or the guard of a stoat
/// gone without a word (exec_guard.rs), finds them by it ([`signal_marked`]). Nothing is
/// written in the guest and nothing is left to remove.
///
/// `captured` (`--json`, the guest reads an empty stdin): the login shell runs the command
/// itself, as `ssh vm cmd` does, and nothing of stoat's runs beside it ([`captured_form`]).
/// In a terminal, where the command reads the session's stdin, it gets a session of its own
/// from `setsid`, where the guest has it ([`setsid_form`]). Then the status is passed on.
fn marked_command(mark: &str, quoted: &std::ffi::OsStr, captured: bool) -> OsString {
    let mut remote = OsString::from(WRITE_MARK);
    if captured {
        remote.push(captured_form(mark, quoted));
    } else {
        remote.push(setsid_form(mark, quoted));
    }
    remote
}

/// The command run by the login shell. A shell that takes job control without a terminal
/// (bash; busybox sh and dash refuse) runs it as a job, in the foreground, which leads a
/// process group of its own, so a stop also reaches what it started that cleared its
/// environment (`sudo`'s children). The shell's own stderr goes to /dev/null (fd 4 keeps the
/// session's for the command): job control reports there a job that a signal ended.
fn captured_form(mark: &str, quoted: &std::ffi::OsStr) -> OsString {
    let mut remote = OsString::from(format!("exec 4>&2 2>/dev/null; set -m; STOAT_EXEC={mark} "));
    remote.push(quoted);
    remote.push(" 2>&4 4>&- </dev/null");
    remote
}

/// The command in a session of its own (`setsid`, where the guest has it), run by `sh`, with
/// the session's stdin.
fn setsid_form(mark: &str, quoted: &std::ffi::OsStr) -> OsString {
    let mut remote = OsString::from(format!(
        "exec 3<&0; if command -v setsid >/dev/null 2>&1; then set -- setsid; else set --; fi; STOAT_EXEC={mark} \"$@\" sh -c '\"$@\"' sh "
    ));
    remote.push(quoted);
    remote.push(" <&3 3<&- & c=$!; exec 3<&-; wait $c; s=$?; exit $s");
    remote
}

/// The remote command that stops a cancelled exec: every process whose environment carries
/// the mark, the groups they lead, the group of the login shell that ran the command (its
/// command line holds the mark: [`captured_form`] where the login shell leads its group, as
/// OpenSSH starts it), and everything below them (a child that cleared its environment,
/// `sudo`'s for one, is still below a marked parent).
fn stop_marked(mark: &str) -> OsString {
    OsString::from(signal_marked(mark, "TERM"))
}

/// [`stop_marked`]'s script with `signal` (a name `kill` takes: `TERM`, `KILL`).
fn signal_marked(mark: &str, signal: &str) -> String {
    format!(
        "m=STOAT_EXEC={mark}; p=$(grep -lszx -F \"$m\" /proc/[0-9]*/environ | sed 's,^/proc/,,; s,/environ$,,'); [ -n \"$p\" ] || exit 0; \
for q in $p; do kill -{signal} -$q 2>/dev/null; g=; {{ read -r _ _ _ _ g _ < /proc/$q/stat; }} 2>/dev/null; [ -n \"$g\" ] && grep -qsaF \"$m\" /proc/$g/cmdline && kill -{signal} -$g 2>/dev/null; done; \
kids() {{ pgrep -P \"$1\" 2>/dev/null || for s in /proc/[0-9]*/stat; do read -r c _ _ pp _ < \"$s\" && [ \"$pp\" = \"$1\" ] && echo \"$c\"; done 2>/dev/null; }}; \
all=$p; todo=$p; while [ -n \"$todo\" ]; do next=; for q in $todo; do next=\"$next $(kids $q)\"; done; todo=$(echo $next); all=\"$all $todo\"; done; \
kill -{signal} $all 2>/dev/null; exit 0"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The guest's login shells, as the host's shells stand in for them: one that leads its
    /// own process group (OpenSSH starts it so), bash that does not (dropbear) and takes job
    /// control without a terminal, and a shell without job control.
    const LOGINS: [(&str, &[&str]); 3] = [
        ("leader", &["setsid", "sh"]),
        ("bash", &["bash"]),
        ("sh", &["sh"]),
    ];

    /// exec's captured remote command for `argv` with `mark`, run by `login` (one of
    /// [`LOGINS`]).
    fn remote(argv: &[&str], mark: &str, login: &[&str]) -> std::process::Child {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let script = marked_command(mark, &quote_remote_argv(&argv), true);
        Command::new(login[0])
            .args(&login[1..])
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Kills the processes whose PIDs the test's command wrote, however the test ends.
    struct Reap(Vec<PathBuf>);

    impl Drop for Reap {
        fn drop(&mut self) {
            for pid in self.0.iter().filter_map(|file| read_pid(file)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    fn read_pid(file: &Path) -> Option<rustix::process::Pid> {
        let pid: i32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
        rustix::process::Pid::from_raw(pid)
    }

    fn gone(pid: rustix::process::Pid) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()));
        stat.map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    }

    #[test]
    fn the_command_s_output_and_status_come_back_whatever_the_login_shell() {
        for (name, login) in LOGINS {
            let run = remote(
                &["sh", "-c", "echo out; echo err >&2; exit 3"],
                "0.000000001",
                login,
            );
            let run = run.wait_with_output().unwrap();
            assert_eq!(run.status.code(), Some(3), "{name}");
            assert_eq!(run.stdout, b"out\n");
            // Nothing of the shell's own beside the command's.
            assert_eq!(
                session_mark::split(&run.stderr),
                (true, b"err\n".to_vec()),
                "{name}"
            );
            // A command the guest does not have: the shell says so on the session's stderr.
            let run = remote(&["stoat-no-such-program"], "0.000000001", login);
            let run = run.wait_with_output().unwrap();
            assert_eq!(run.status.code(), Some(127), "{name}");
            let (opened, stderr) = session_mark::split(&run.stderr);
            assert!(opened, "{name}");
            assert!(
                String::from_utf8_lossy(&stderr).contains("stoat-no-such-program"),
                "{name}: {stderr:?}"
            );
            // One killed by a signal: its status, and what the login shell says of it when
            // it runs the command bare, as `ssh vm cmd` would (dash: `Terminated`; bash:
            // nothing), no more.
            let killed = ["sh", "-c", "kill -TERM $$"];
            let run = remote(&killed, "0.000000001", login);
            let run = run.wait_with_output().unwrap();
            assert_eq!(run.status.code(), Some(128 + 15), "{name}");
            let argv: Vec<OsString> = killed.iter().map(OsString::from).collect();
            let bare = Command::new(login[0])
                .args(&login[1..])
                .arg("-c")
                .arg(quote_remote_argv(&argv))
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(
                session_mark::split(&run.stderr),
                (true, bare.stderr),
                "{name}"
            );
        }
    }

    /// What a cancel and the guard run in the guest: the command stops, and so does the child
    /// it double-forked, whatever the login shell.
    #[test]
    fn the_stop_by_mark_takes_the_command_and_the_child_it_double_forked() {
        for (at, (name, login)) in LOGINS.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let (child, command) = (dir.path().join("child"), dir.path().join("command"));
            let _reap = Reap(vec![child.clone(), command.clone()]);
            let script = format!(
                "( sleep 300 & echo $! > {} ); echo $$ > {}; exec sleep 301",
                child.display(),
                command.display()
            );
            let mark = format!("{}.{at:09}", std::process::id());
            let mut run = remote(&["sh", "-c", &script], &mark, login);
            let started = Instant::now();
            let pids = loop {
                if let (Some(a), Some(b)) = (read_pid(&child), read_pid(&command)) {
                    break [a, b];
                }
                assert!(started.elapsed() < Duration::from_secs(10), "never started");
                std::thread::yield_now();
            };
            let stop = Command::new("sh")
                .arg("-c")
                .arg(signal_marked(&mark, "TERM"))
                .status()
                .unwrap();
            assert!(stop.success(), "{name}");
            while run.try_wait().unwrap().is_none() || !pids.iter().all(|pid| gone(*pid)) {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "still running ({name})"
                );
                std::thread::yield_now();
            }
        }
    }
}
