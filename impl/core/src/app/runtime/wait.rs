//! `wait --until reachable|stopped|applied --timeout D` (docs/contract.md behaviour#host-commands): check at
//! once, then every 300 ms; `cannot_reach` at once when the state can never come, `timeout`
//! at the deadline, `canceled` on Ctrl-C. `applied` answers at once with the failure of an
//! apply that failed (its own code), and `cannot_reach` for one that was interrupted.
//! `reachable` means stoat can log in (`ssh::login`), not merely that a port answers.

use std::time::{Duration, Instant};

use stoat_wire::dto::WaitData;

use stoat_wire::ErrorCode;

use crate::qemu;
use crate::recipes::apply::LastApply;
use crate::ssh::login::{Attempt, Login};
use crate::vm::{self, StoredVm};
use crate::{Cancel, Env, Error, Result, Root};

const POLL: Duration = Duration::from_millis(300);

/// What to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Reachable,
    Stopped,
    Applied,
}

impl Until {
    /// The state a word names (`reachable`, `stopped`, `applied`); `None` for any other
    /// word, which each front end refuses in its own terms.
    pub fn parse(text: &str) -> Option<Until> {
        match text {
            "reachable" => Some(Until::Reachable),
            "stopped" => Some(Until::Stopped),
            "applied" => Some(Until::Applied),
            _ => None,
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
    env: &Env,
    name: &str,
    until: Until,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<WaitData> {
    let stored = vm::load_ok(root, name)?;
    let login = match until {
        Until::Reachable => Some(Login::new(root, env, &stored)?),
        _ => None,
    };
    let started = Instant::now();
    let deadline = started + timeout;
    loop {
        cancel.check()?;
        let left = deadline.saturating_duration_since(Instant::now());
        if reached(&stored, until, login.as_ref(), left)? {
            return Ok(WaitData {
                vm: stored.name,
                until: until.as_str().into(),
                reached: true,
                waited_ms: started.elapsed().as_millis() as u64,
            });
        }
        let now = Instant::now();
        if now >= deadline {
            // A boot that never lets stoat in: how far the console got says why.
            let console = match until {
                Until::Reachable => qemu::console::last_line(&stored.files().console_log())
                    .map(|line| format!("; the console's last line: {line:?}"))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            return Err(Error::Timeout(format!(
                "{} did not become {} within {timeout:?}{console}",
                stored.name,
                until.as_str()
            )));
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// One check; `cannot_reach` when the state can never come.
fn reached(stored: &StoredVm, until: Until, login: Option<&Login>, left: Duration) -> Result<bool> {
    let running = stored.running_pid().is_some();
    match until {
        Until::Stopped => Ok(!running),
        Until::Reachable if !running => Err(Error::CannotReach(format!(
            "{} is not running, so ssh can never answer; start it with `stoat up {}`",
            stored.name, stored.name
        ))),
        // A login, never a bare connection (see `login`); it leaves the VM's master behind.
        Until::Reachable => match login {
            Some(login) => Ok(login.attempt(stored, left)? == Attempt::In),
            None => Ok(false),
        },
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
