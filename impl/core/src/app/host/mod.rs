//! Host-side operations: ssh-command, ssh (prepared; the caller replaces itself), logs,
//! doctor, prune, snapshot, capabilities (json-v3#per-command-data, json-v3#capabilities;
//! docs/contract.md behaviour#ssh, behaviour#host-commands). doctor, prune, logs and the
//! capability report are host knowledge in [`crate::host`]; snapshot, an operation on one VM's
//! disk (offline through qemu-img, live through its monitor with the guest's shares paused),
//! has its files beside this one.

mod share_pause;
mod snapshot;

use std::path::Path;

use stoat_wire::dto::{
    CapabilityReport, DoctorData, LogsData, PruneData, SnapshotActData, SnapshotListData,
    SshCommandData,
};

use super::Session;
use crate::host::{capabilities, doctor, logs, prune};
use crate::ssh::argv as ssh_argv;
use crate::{keys, vm, Error, Result};

pub use crate::host::prune::PruneOptions;
/// A word of an argv as a person reads or pastes it (`ssh-command`'s human line).
pub use crate::shell::display as shell_word;
pub use snapshot::Action as SnapshotAction;

/// `ssh-command <vm>`: the argv to run yourself; it does not check that the VM runs.
pub fn ssh_command(s: &Session, name: &str) -> Result<SshCommandData> {
    let root = s.root()?;
    let stored = vm::load_ok(root, name)?;
    let key = keys::ensure(root, &s.env)?;
    Ok(SshCommandData {
        argv: ssh_argv::ssh_argv(&key, &stored),
    })
}

/// What `ssh <vm>` runs: the ssh program found on PATH, its arguments (argv[0] excluded),
/// and the directory to run it in (the VM's, when it goes through the VM's master, whose
/// socket path is relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshSession {
    pub program: std::path::PathBuf,
    pub args: Vec<std::ffi::OsString>,
    pub cwd: Option<std::path::PathBuf>,
}

/// What the session asks of ssh: a login shell, or one command for the guest.
pub struct SshRequest<'a> {
    /// The guest's argv, byte for byte (quoted here so its shell splits it back the same);
    /// empty for an interactive login.
    pub command: &'a [std::ffi::OsString],
    /// Ask the guest for a terminal even when stoat's own stdin is not one (`exec -t`).
    pub force_tty: bool,
    /// stoat's stdin is a terminal: a command gets a terminal too, as a login does.
    pub stdin_is_tty: bool,
}

/// `ssh <vm> [-- CMD...]`: checks that the VM runs, waits (like exec, up to its reach wait)
/// until stoat can log in, and prepares the session through the VM's master when one
/// answers, so it never lands in a booting guest's sshd restart; the caller replaces itself
/// with it (the CLI's `exec`).
pub fn ssh(s: &Session, name: &str, request: &SshRequest) -> Result<SshSession> {
    let root = s.root()?;
    let stored = vm::load_ok(root, name)?;
    if stored.running_pid().is_none() {
        return Err(Error::NotRunning { name: stored.name });
    }
    let key = keys::ensure(root, &s.env)?;
    let program = s.env.require_tool("ssh", "openssh-client")?;
    let mux = crate::ssh::mux::Mux::for_vm(&key, &stored);
    if !mux.answers() {
        crate::ssh::login::until_reachable(
            root,
            &s.env,
            &stored,
            super::runtime::REACH_WAIT,
            &s.cancel,
        )?;
    }
    let (args, cwd) = if mux.answers() {
        let route = mux.route();
        (
            ssh_argv::ssh_args_with(&key, &stored, route.options()),
            Some(stored.dir.clone()),
        )
    } else {
        (ssh_argv::ssh_args(&key, &stored), None)
    };
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if !request.command.is_empty() {
        // -tt: a terminal even without one here; -t: one only when stdin is a terminal.
        if request.force_tty {
            args.insert(0, "-tt".into());
        } else if request.stdin_is_tty {
            args.insert(0, "-t".into());
        }
        args.push(ssh_argv::quote_remote_argv(request.command));
    }
    Ok(SshSession { program, args, cwd })
}

pub use crate::host::logs::Which;

/// The log `logs` reads: one of a VM's, or stoat's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource<'a> {
    Vm { name: &'a str, which: Which },
    Stoat,
}

/// `logs <vm> --which W -n N`, or stoat's own log with no VM.
pub fn logs(s: &Session, source: LogSource<'_>, lines: i64) -> Result<LogsData> {
    let root = s.root()?;
    match source {
        LogSource::Vm { name, which } => logs::vm_log(root, name, which, lines),
        LogSource::Stoat => logs::stoat_log(root, lines),
    }
}

pub use crate::host::log_follow::LineSink;
pub use crate::host::logs::FollowEnd;

/// `logs [<vm>] -f`: the last `lines` lines, then every line appended, handed to `sink` as
/// each is written; ends when the VM stops (at once when it is not running), on the session's
/// cancel flag, or when `sink` fails. stoat's own log is followed until cancelled.
pub fn logs_follow(
    s: &Session,
    source: LogSource<'_>,
    lines: i64,
    sink: &mut LineSink,
) -> Result<FollowEnd> {
    let root = s.root()?;
    let target = match source {
        LogSource::Vm { name, which } => logs::Target::vm(root, name, which)?,
        LogSource::Stoat => logs::Target::stoat(root),
    };
    logs::follow(&target, lines, &s.cancel, s.events(), sink)
}

/// What doctor's human answer adds to the checks: the accelerator `up` will use (or the
/// value it refuses) and QEMU's version line.
pub struct DoctorFacts {
    pub accel: std::result::Result<&'static str, String>,
    pub qemu_version: Option<String>,
}

/// The [`DoctorFacts`] of this host and environment.
pub fn doctor_facts(s: &Session) -> DoctorFacts {
    let accel = crate::qemu::Accel::parse(s.env.get(crate::qemu::accel::ACCEL_ENV))
        .map(|accel| accel.as_str())
        .map_err(|e| e.to_string());
    DoctorFacts {
        accel,
        qemu_version: doctor::qemu_version(&s.env),
    }
}

/// `doctor`: an unhealthy host is an answer (`healthy:false`), not an error.
pub fn doctor(s: &Session) -> Result<DoctorData> {
    doctor::run(&s.env, s.root()?)
}

/// `prune`: a dry run unless `options.apply`.
pub fn prune(s: &Session, options: PruneOptions) -> Result<PruneData> {
    prune::prune(s.root()?, options)
}

/// `snapshot <vm>` with no tag: the VM's snapshots.
pub fn snapshot_list(s: &Session, name: &str) -> Result<SnapshotListData> {
    snapshot::list(s.root()?, &s.env, name)
}

/// `snapshot <vm> <tag> [--restore|--delete]`.
pub fn snapshot_act(
    s: &Session,
    name: &str,
    tag: &str,
    action: SnapshotAction,
) -> Result<SnapshotActData> {
    snapshot::act(s.root()?, &s.env, name, tag, action)
}

/// `capabilities [VM]`: reads host checks and stored metadata; never starts or touches a VM.
pub fn capabilities(
    s: &Session,
    cwd: Option<&Path>,
    target: Option<&str>,
    stoat_version: &str,
) -> Result<CapabilityReport> {
    capabilities::report(&capabilities::Request {
        env: &s.env,
        root: s.root()?,
        cwd,
        target,
        stoat_version,
    })
}
