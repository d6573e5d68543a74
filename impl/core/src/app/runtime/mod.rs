//! The operations that run a VM or reach into a running one: up (with its apply after boot),
//! down, wait, exec, cp (and `cp -`, `cp_stream`), screenshot, apply
//! (json-v3#per-command-data, json-v3#streaming; docs/contract.md behaviour#qemu,
//! behaviour#ssh, behaviour#host-commands). Each has its file beside this one; apply's work is
//! in [`crate::recipes::apply`].

mod cp;
mod cp_stream;
mod down;
mod exec;
pub(crate) mod exec_guard;
mod screenshot;
mod up;
mod wait;

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use stoat_wire::dto::{
    ApplyData, ApplyDryRunData, CpData, ExecData, ScreenshotData, VmData, WaitData,
};
use stoat_wire::StreamBytes;

use super::Session;
use crate::recipes::apply;
use crate::ssh::login;
use crate::vm::Mode;
use crate::{child, vm, Error, Result};

pub use crate::recipes::apply::ApplyRequest;
pub use crate::recipes::params::ParamSetting;
pub use cp::{absolute_local, CopyRequest, Transfer};
pub use cp_stream::StreamRequest;
pub use exec::{Streams, REACH_WAIT};
pub use wait::Until;

/// What `up` did: the VM re-read after everything, and the apply it ran after boot, if any.
pub struct UpOutcome {
    pub data: VmData,
    pub applied: Option<ApplyData>,
    /// A disk VM booting its installer (it powers off when the install is done).
    pub installing: bool,
    /// `up` waited until the guest's ssh answered.
    pub reachable: bool,
}

/// `up <vm>`: boot; wait until ssh answers (when `reach_wait` is set: at most that long, see
/// [`login::until_reachable`]; a disk VM booting its installer has no ssh and is not waited
/// for); then (when `apply_after_boot`) apply the VM's recipes, streaming their `stage`/`log`
/// events. The answer is the VM as the start left it (read under its lock), or read again
/// after recipes were applied. Says what it is about to
/// do as notes, for a VM that exists and is stopped: a missing, broken or running one gets
/// its error alone.
pub fn up(
    s: &Session,
    name: &str,
    apply_after_boot: bool,
    reach_wait: Option<Duration>,
) -> Result<UpOutcome> {
    let root = s.root()?;
    let mut checked = None;
    if let Ok(stored) = vm::load_ok(root, name) {
        if stored.running_pid().is_none() {
            checked = Some(up::host_ready(&s.env)?);
            s.events().note(&format!("starting {name}..."));
            if reach_wait.is_some() {
                s.events().note(&format!(
                    "then waiting for ssh on port {}...",
                    stored.config.sshport
                ));
            }
        }
    }
    // The launch either starts a VM or not, and a cancel's answer depends on which: it runs
    // to its end (see child::Finishing).
    let launched = {
        let _finishing = crate::child::finishing();
        up::up(root, &s.env, name, checked.as_ref())
    };
    let started = match launched {
        Ok(started) => started,
        // A Ctrl-C while QEMU was being started (its launcher may have died of the signal
        // after the VM itself was running): whatever started goes, and the answer is the cancel.
        Err(_) if s.cancel.is_cancelled() => {
            down::stop_canceled_start(root, &s.env, name);
            return Err(Error::Canceled);
        }
        Err(error) => return Err(error),
    };
    // Held until this up returns: another stoat starting a VM meanwhile keeps off its ports.
    let _claims = started.claims;
    if let Some(moved) = started.moved {
        s.events().note(&format!(
            "{name}'s ssh port {} is in use by another program; it now uses {}",
            moved.from, moved.to
        ));
    }
    match after_start(s, name, started.vm, apply_after_boot, reach_wait) {
        // `canceled` means nothing changed: the QEMU this up started goes again.
        Err(Error::Canceled) => {
            down::stop_canceled_start(root, &s.env, name);
            Err(Error::Canceled)
        }
        other => other,
    }
}

/// What `up` does once QEMU runs: wait until stoat can log in, then apply.
fn after_start(
    s: &Session,
    name: &str,
    booted: stoat_wire::dto::Vm,
    apply_after_boot: bool,
    reach_wait: Option<Duration>,
) -> Result<UpOutcome> {
    let root = s.root()?;
    let stored = vm::load_ok(root, name)?;
    let installing = stored.config.mode == Mode::Disk && !stored.config.installed;
    let reachable = match reach_wait {
        Some(limit) if !installing => {
            let still = |waited: Duration| {
                s.events().note(&format!(
                    "still waiting for {name} to take ssh logins ({}s; `stoat logs {name} -f` shows its console)",
                    waited.as_secs()
                ))
            };
            login::until_reachable_telling(root, &s.env, &stored, limit, &s.cancel, &still)?;
            true
        }
        _ => false,
    };
    if !apply_after_boot {
        return Ok(UpOutcome {
            data: VmData { vm: booted },
            applied: None,
            installing,
            reachable,
        });
    }
    let applied = apply::after_boot(root, &s.env, name, s.events(), &s.cancel, s.spelling())?;
    // Nothing applied: the VM as the start left it, read under its lock, so a change another
    // command made meanwhile is that command's answer, not this one's. Recipes applied: the
    // VM read again, with what they recorded.
    let vm = match &applied {
        None => booted,
        Some(_) => vm::load(root, name)?.to_wire(&s.env),
    };
    Ok(UpOutcome {
        data: VmData { vm },
        applied,
        installing,
        reachable,
    })
}

/// `down <vm>`.
pub fn down(s: &Session, name: &str) -> Result<VmData> {
    Ok(VmData {
        vm: down::down(s.root()?, &s.env, name)?,
    })
}

/// `wait <vm> --until X --timeout D`.
pub fn wait(s: &Session, name: &str, until: wait::Until, timeout: Duration) -> Result<WaitData> {
    wait::wait(s.root()?, &s.env, name, until, timeout, &s.cancel)
}

/// `exec <vm> <cmd>...`: the guest's status and both streams, bytes kept exactly
/// (json-v3#exec-bytes) when `streams` captures them; a booting VM's ssh is waited for up to
/// `reach_wait`.
pub fn exec(
    s: &Session,
    name: &str,
    command: &[OsString],
    streams: exec::Streams,
    reach_wait: Duration,
) -> Result<ExecData> {
    let out = exec::exec(
        s.root()?,
        &s.env,
        name,
        command,
        streams,
        reach_wait,
        &s.cancel,
        &|| s.events().note(&format!("waiting for ssh on {name}...")),
    )?;
    let (stdout, stdout_truncated) = cut_capture(out.stdout);
    let (stderr, stderr_truncated) = cut_capture(out.stderr);
    Ok(ExecData {
        vm: out.vm,
        exit_code: out.exit_code,
        stdout: StreamBytes::from_bytes(stdout),
        stderr: StreamBytes::from_bytes(stderr),
        stdout_truncated,
        stderr_truncated,
    })
}

/// A captured stream cut to [`child::CAPTURE_LIMIT`] bytes, and whether it went on past
/// them (the capture keeps one byte more to tell). A cut that splits a UTF-8 character
/// drops that character's start, so text stays text.
fn cut_capture(mut bytes: Vec<u8>) -> (Vec<u8>, bool) {
    if bytes.len() <= child::CAPTURE_LIMIT {
        return (bytes, false);
    }
    bytes.truncate(child::CAPTURE_LIMIT);
    if let Err(e) = std::str::from_utf8(&bytes) {
        // Only an unfinished last character (no invalid byte before it) is dropped.
        if e.error_len().is_none() {
            bytes.truncate(e.valid_up_to());
        }
    }
    (bytes, true)
}

/// `cp`: a relative local path is resolved against `cwd`; a booting VM's ssh is waited for up
/// to `reach_wait`.
pub fn cp(
    s: &Session,
    cwd: &Path,
    request: &cp::CopyRequest,
    reach_wait: Duration,
) -> Result<CpData> {
    cp::copy(s.root()?, &s.env, cwd, request, reach_wait, &s.cancel)
}

/// `cp [-r] SRC... DST`: one record per source, in order (local paths absolute, relative
/// ones against `cwd`); a booting VM's ssh is waited for up to `reach_wait`.
pub fn cp_transfer(
    s: &Session,
    cwd: &Path,
    request: &cp::Transfer,
    reach_wait: Duration,
) -> Result<Vec<CpData>> {
    cp::transfer(s.root()?, &s.env, cwd, request, reach_wait, &s.cancel)
}

/// `cp - <vm>:<path>` / `cp <vm>:<path> -`: the guest file's bytes from this process's stdin
/// or to its stdout (human mode only: the CLI refuses `-` under --json).
pub fn cp_stream(
    s: &Session,
    request: &cp_stream::StreamRequest,
    reach_wait: Duration,
) -> Result<()> {
    cp_stream::stream(s.root()?, &s.env, request, reach_wait, &s.cancel)
}

/// `screenshot <vm> [-o PATH]` (`output` absolute).
pub fn screenshot(s: &Session, name: &str, output: Option<&Path>) -> Result<ScreenshotData> {
    screenshot::screenshot(s.root()?, name, output)
}

/// `apply <vm>`: runs the planned recipes, streaming `stage`/`log` events.
pub fn apply(s: &Session, name: &str, request: &ApplyRequest) -> Result<ApplyData> {
    apply::apply(
        s.root()?,
        &s.env,
        name,
        request,
        s.events(),
        &s.cancel,
        s.spelling(),
    )
}

/// `apply <vm> --dry-run`: the plan, computed host-side (a running cloud VM's first-boot
/// markers excepted); runs nothing.
pub fn apply_dry_run(s: &Session, name: &str, request: &ApplyRequest) -> Result<ApplyDryRunData> {
    apply::dry_run(s.root()?, &s.env, name, request, &s.cancel)
}
