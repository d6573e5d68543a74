//! `wait --until reachable|stopped|applied --timeout D` (docs/contract.md behaviour#host-commands): check at
//! once, then every 300 ms; `cannot_reach` at once when the state can never come, `timeout`
//! at the deadline, `canceled` on Ctrl-C. `applied` answers at once with the failure of an
//! apply that failed (its own code), and `cannot_reach` for one that was interrupted.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use stoat_wire::dto::WaitData;

use stoat_wire::ErrorCode;

use crate::qemu;
use crate::recipes::apply::LastApply;
use crate::vm::{self, StoredVm};
use crate::{Cancel, Error, Result, Root};

const POLL: Duration = Duration::from_millis(300);
const DIAL_TIMEOUT: Duration = Duration::from_secs(1);
const BANNER_TIMEOUT: Duration = Duration::from_secs(2);

/// What to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Reachable,
    Stopped,
    Applied,
}

impl Until {
    pub fn parse(text: &str) -> Result<Until> {
        match text {
            "reachable" => Ok(Until::Reachable),
            "stopped" => Ok(Until::Stopped),
            "applied" => Ok(Until::Applied),
            other => Err(Error::Usage(format!(
                "wait: --until must be reachable, stopped or applied, not {other:?}"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Until::Reachable => "reachable",
            Until::Stopped => "stopped",
            Until::Applied => "applied",
        }
    }
}

/// Waits for `name` to reach `until` within `timeout`.
pub fn wait(
    root: &Root,
    name: &str,
    until: Until,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<WaitData> {
    let stored = vm::load_ok(root, name)?;
    let started = Instant::now();
    let deadline = started + timeout;
    loop {
        cancel.check()?;
        if reached(&stored, until)? {
            return Ok(WaitData {
                vm: stored.name,
                until: until.as_str().into(),
                reached: true,
                waited_ms: started.elapsed().as_millis() as u64,
            });
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::Timeout(format!(
                "{} did not become {} within {timeout:?}",
                stored.name,
                until.as_str()
            )));
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// One check; `cannot_reach` when the state can never come.
fn reached(stored: &StoredVm, until: Until) -> Result<bool> {
    let running = qemu::running(&stored.dir).is_some();
    match until {
        Until::Stopped => Ok(!running),
        Until::Reachable if !running => Err(Error::CannotReach(format!(
            "{} is not running, so ssh can never answer; start it with `stoat up {}`",
            stored.name, stored.name
        ))),
        Until::Reachable => Ok(ssh_banner(stored.config.sshport)),
        Until::Applied if stored.config.recipes.is_empty() => Err(Error::CannotReach(format!(
            "{} has no recipes, so nothing is ever applied",
            stored.name
        ))),
        Until::Applied => match crate::recipes::apply::last_apply(&stored.dir) {
            LastApply::Done => Ok(true),
            LastApply::Unfinished => Ok(false),
            // An interrupted apply never finishes on its own: nothing is coming.
            LastApply::Failed {
                code: ErrorCode::Canceled,
                ..
            } => Err(Error::CannotReach(format!(
                "{}'s last apply was interrupted; run `stoat apply {}` to finish it",
                stored.name, stored.name
            ))),
            LastApply::Failed { code, message } => Err(Error::LastApplyFailed {
                vm: stored.name.clone(),
                code,
                message,
            }),
        },
    }
}

/// Waits until a running VM's ssh answers with a banner (`up` by default, `exec` and `cp`
/// before they connect). Returns how long it took. `timeout` at the deadline (the VM keeps
/// running), `qemu_start_failed` when QEMU exits first, `canceled` on Ctrl-C.
pub fn until_reachable(stored: &StoredVm, timeout: Duration, cancel: &Cancel) -> Result<Duration> {
    let started = Instant::now();
    let deadline = started + timeout;
    let name = &stored.name;
    loop {
        cancel.check()?;
        if qemu::running(&stored.dir).is_none() {
            return Err(Error::QemuStartFailed(format!(
                "{name} stopped while booting; `stoat logs {name} --which console` shows how far it got"
            )));
        }
        if ssh_banner(stored.config.sshport) {
            return Ok(started.elapsed());
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::Timeout(format!(
                "{name} is running but its ssh (port {}) did not answer within {}; \
                 `stoat logs {name} --which console` shows the boot, `stoat down {name}` stops it",
                stored.config.sshport,
                humantime::format_duration(timeout)
            )));
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// True when 127.0.0.1:port answers with an SSH banner.
pub fn ssh_banner(port: u16) -> bool {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&address, DIAL_TIMEOUT) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(BANNER_TIMEOUT));
    let mut banner = [0u8; 4];
    stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-"
}
