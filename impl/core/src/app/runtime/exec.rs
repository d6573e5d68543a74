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

use super::exec_watch::{watch_script, Watch};
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
            // A watch in the guest stops the command if stoat goes without a word
            // (exec_watch.rs); it hears `done` when the watch is dropped, once ssh has ended.
            Streams::Inherit => {
                let watch = terminal_watch(&ssh, &key, &stored, env, &mark);
                let opened = watch.opened();
                let ran = child::status_consuming_stderr(&mut ssh_cmd, Group::Shared, |pipe| {
                    pass_guest_stderr(pipe, opened)
                });
                drop(watch);
                ran.map(|(status, filter)| {
                    let filter = filter.unwrap_or_default();
                    let opened = filter.opened();
                    (status, Vec::new(), (opened, filter.into_held()))
                })
            }
            Streams::Capture => {
                // A pipe stoat never writes and holds open while ssh runs: its end (stoat
                // gone, even by SIGKILL) is what the guest's watchdog waits for.
                ssh_cmd.stdin(Stdio::piped());
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

/// The watch of a terminal exec ([`Watch`]): its ssh logs in on a connection of its own.
/// Through the VM's master its session sometimes got the end of its input while stoat still
/// held the pipe open (the SIGKILL test failed about one run in four so, beside other calls on
/// the same master; 10 of 10 passed with the watch direct), and the watch then stopped a
/// command nobody had cancelled. A login of its own costs a handshake, in the background.
fn terminal_watch(ssh: &Path, key: &Path, stored: &StoredVm, env: &Env, mark: &str) -> Watch {
    let (ssh, key, stored) = (ssh.to_path_buf(), key.to_path_buf(), stored.clone());
    let path = env.path_var().to_owned();
    let script = watch_script(&signal_marked(mark, "TERM"), &signal_marked(mark, "KILL"));
    Watch::start(move || ssh_command(&ssh, &Route::direct(), &key, &stored, &path, script.into()))
}

/// Copies ssh's stderr to ours as it comes, once the session mark has gone by, and calls
/// `opened` then; returns the filter, which holds what ssh said when no session opened.
fn pass_guest_stderr(mut pipe: std::process::ChildStderr, opened: impl FnOnce()) -> MarkFilter {
    let mut filter = MarkFilter::default();
    let mut opened = Some(opened);
    let mut chunk = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            break;
        }
        let out = filter.feed(&chunk[..n]);
        if filter.opened() {
            if let Some(opened) = opened.take() {
                opened();
            }
        }
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
/// included, form one process group, and carry `STOAT_EXEC=<mark>` in their environment: a
/// cancel finds them by it. Nothing is written in the guest and nothing is left to remove.
///
/// With `watch` (the captured form, whose ssh stdin is a pipe stoat holds open and never
/// writes), a watchdog reads that stdin: its end means stoat is gone, killed or not, and the
/// watchdog stops the group (SIGTERM, SIGKILL 2 s later). The command reads /dev/null then.
/// Where the guest's sshd made the login shell a process group's leader (OpenSSH does) that
/// group is the command's: the login shell runs the command itself, as `ssh vm cmd` would, and
/// the watchdog is the one process stoat adds ([`leader_form`]). Elsewhere (dropbear) a login
/// shell that takes job control without a terminal (bash) runs the command as a job, which
/// leads a group of its own ([`job_form`]); any other gets a session of its own for the
/// command from `setsid`, where the guest has it ([`setsid_form`]).
/// Then the status is passed on.
fn marked_command(mark: &str, quoted: &std::ffi::OsStr, watch: bool) -> OsString {
    let mut remote = OsString::from(WRITE_MARK);
    remote.push("exec 3<&0; ");
    if watch {
        // The fifth field of /proc/$$/stat is the shell's process group.
        remote.push(
            "g=; { read -r _ _ _ _ g _ < /proc/$$/stat; } 2>/dev/null; if [ \"$g\" = $$ ]; then ",
        );
        remote.push(leader_form(mark, quoted));
        remote.push("fi; ");
        // A shell that takes job control without a terminal (bash) gives a background job a
        // group of its own; `$-` has `m` only then (busybox sh and dash refuse).
        remote.push("set -m 2>/dev/null; case $- in *m*) ");
        remote.push(job_form(mark, quoted));
        remote.push(";; esac; ");
    }
    remote.push(setsid_form(mark, quoted, watch));
    remote
}

/// The watchdog of a command that leads its own group, `$c`: it reads the session's stdin
/// (fd 3) to its end, then stops the group (the command alone where it leads none), SIGKILL
/// 2 s after SIGTERM.
const GROUP_WATCHDOG: &str = "{ while read -r _; do :; done; kill -TERM -$c 2>/dev/null || kill -TERM $c; sleep 2; kill -KILL -$c 2>/dev/null; } <&3 >/dev/null 2>&1";

/// The watched command run by a login shell that leads its process group: the watchdog
/// stops the shell's group, and ignores the SIGTERM it sends itself so that the SIGKILL
/// follows.
fn leader_form(mark: &str, quoted: &std::ffi::OsStr) -> OsString {
    let mut remote = OsString::from(
        "{ while read -r _; do :; done; trap '' TERM; kill -TERM -$$; sleep 2; kill -KILL -$$; } <&3 >/dev/null 2>&1 & w=$!; exec 3<&-; ",
    );
    remote.push(format!("STOAT_EXEC={mark} "));
    remote.push(quoted);
    remote.push(" </dev/null; s=$?; kill $w 2>/dev/null; exit $s; ");
    remote
}

/// The watched command run by a login shell with job control on: the command is a job, so it
/// leads a group of its own, which the watchdog stops. The shell's own stderr goes to
/// /dev/null (fd 4 keeps the session's for the command): job control makes it report a job
/// that ended (`[1]+ Done`, `Killed`) there.
fn job_form(mark: &str, quoted: &std::ffi::OsStr) -> OsString {
    let mut remote = OsString::from(format!("exec 4>&2 2>/dev/null; STOAT_EXEC={mark} "));
    remote.push(quoted);
    remote.push(" 2>&4 4>&- 3<&- </dev/null & c=$!; ");
    remote.push(GROUP_WATCHDOG);
    remote.push(" 4>&- & w=$!; exec 3<&- 4>&-; wait $c; s=$?; kill $w 2>/dev/null; exit $s");
    remote
}

/// The command in a session of its own (`setsid`, where the guest has it), run by `sh`.
fn setsid_form(mark: &str, quoted: &std::ffi::OsStr, watch: bool) -> OsString {
    let mut remote = OsString::from(format!(
        "if command -v setsid >/dev/null 2>&1; then set -- setsid; else set --; fi; STOAT_EXEC={mark} \"$@\" sh -c '\"$@\"' sh "
    ));
    remote.push(quoted);
    // An asynchronous command reads /dev/null unless told otherwise: without the watch, the
    // session's stdin (the user's, in a terminal) is the command's, as it always was.
    remote.push(if watch {
        " 3<&- </dev/null & "
    } else {
        " <&3 3<&- & "
    });
    remote.push("c=$!; ");
    if watch {
        remote.push(GROUP_WATCHDOG);
        remote.push(" & w=$!; ");
    }
    remote.push("exec 3<&-; wait $c; s=$?; ");
    if watch {
        remote.push("kill $w 2>/dev/null; ");
    }
    remote.push("exit $s");
    remote
}

/// The remote command that stops a cancelled exec: every process whose environment carries
/// the mark, the groups they lead, the group of the login shell that ran the command (its
/// command line holds the mark: [`leader_form`]), and everything below them (a child that
/// cleared its environment, `sudo`'s for one, is still below a marked parent).
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
    /// own process group (OpenSSH starts it so), bash that does not (dropbear), and a shell
    /// without job control that does not.
    const LOGINS: [(&str, &[&str]); 3] = [
        ("leader", &["setsid", "sh"]),
        ("bash", &["bash"]),
        ("sh", &["sh"]),
    ];

    /// exec's remote command for `argv`, run by `login` (one of [`LOGINS`]).
    fn remote(argv: &[&str], login: &[&str]) -> std::process::Child {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let script = marked_command("0.000000001", &quote_remote_argv(&argv), true);
        Command::new(login[0])
            .args(&login[1..])
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
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
            let mut run = remote(&["sh", "-c", "echo out; echo err >&2; exit 3"], login);
            // Held open, as exec holds it: its end would be stoat gone.
            let _stdin = run.stdin.take();
            let run = run.wait_with_output().unwrap();
            assert_eq!(run.status.code(), Some(3), "{name}");
            assert_eq!(run.stdout, b"out\n");
            // Nothing of the shell's own (a job's end) beside the command's.
            assert_eq!(
                session_mark::split(&run.stderr),
                (true, b"err\n".to_vec()),
                "{name}"
            );
        }
    }

    #[test]
    fn the_end_of_stdin_stops_the_command_and_the_child_it_double_forked() {
        for (name, login) in LOGINS {
            let dir = tempfile::tempdir().unwrap();
            let (child, command) = (dir.path().join("child"), dir.path().join("command"));
            let _reap = Reap(vec![child.clone(), command.clone()]);
            let script = format!(
                "( sleep 300 & echo $! > {} ); echo $$ > {}; exec sleep 301",
                child.display(),
                command.display()
            );
            let mut run = remote(&["sh", "-c", &script], login);
            let started = Instant::now();
            let pids = loop {
                if let (Some(a), Some(b)) = (read_pid(&child), read_pid(&command)) {
                    break [a, b];
                }
                assert!(started.elapsed() < Duration::from_secs(10), "never started");
                std::thread::yield_now();
            };
            drop(run.stdin.take());
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
