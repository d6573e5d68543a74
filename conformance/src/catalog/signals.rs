//! Owns the interruption checks: SIGINT and SIGTERM sent to the SUT's pid (as `kill`, a
//! supervisor or a CI runner's cancel does) while a command is visibly busy in the fake tier:
//! `exec` while the fake ssh holds the guest command, `up` while the fake QEMU's launcher is
//! held at a gate (its guest never answers ssh). The contract names the `canceled` code and no more; that a
//! signal under `--json` ends with a `canceled` result line is our decision, so these are
//! SHOULDs. What the contract itself says of every answer (one result line, last; exit 1 for
//! a failure; or no result line and a nonzero exit when the process died) the oracle judges
//! on these invocations as on every other, with its own levels.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{get_vm, str_at, with_running_work};
use super::lifecycle::prepare_bootable;
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Match, QemuScript, Rule};
use crate::finding::Level::Should;
use crate::oracle::Outcome;
use crate::run::{Case, Inv, Ran, SignalPlan};
use crate::sandbox::Sandbox;
use crate::spec::Source;

const QUOTE: &str = "SIGINT/SIGTERM under `--json` end with a `canceled` result line";

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "SIGNAL.exec-canceled",
        level: Should,
        tier: Tier::Fake,
        spec: "design#decisions",
        source: Source::Design,
        quote: QUOTE,
        title: "SIGINT, then (fresh sandbox) SIGTERM, sent to the SUT once the fake ssh holds `exec work`'s guest command: one result line, last, error canceled, exit 1; `get work` still shows it running",
        tags: &["signals", "exec"],
        ..scenario(exec_canceled)
    },
    CheckDef {
        id: "SIGNAL.up-canceled",
        level: Should,
        tier: Tier::Fake,
        spec: "design#decisions",
        source: Source::Design,
        quote: QUOTE,
        title: "SIGINT, then SIGTERM, while `up work` starts a fake QEMU (held at a gate until the signal is sent) whose guest never answers ssh: one result line, last, canceled, exit 1; `get work` shows it stopped and that QEMU is gone (or, for an up that finished first, ok and running)",
        tags: &["signals", "lifecycle", "state"],
        ..scenario(up_canceled)
    },
];

const SIGNALS: [(i32, &str); 2] = [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")];

/// How long a command may take to reach the point where it is interrupted.
const REACH: Duration = Duration::from_secs(20);

/// The marker in `exec`'s guest command that the fake ssh holds on.
const HOLD: &str = "stoat-conformance-hold";

/// Runs `args` and sends `signal` once `ready` holds; `None` (with a skip or a finding) when
/// the command never got that far.
fn interrupted(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    args: &[&str],
    (signal, name): (i32, &str),
    ready: Arc<dyn Fn() -> bool + Send + Sync>,
    waiting_for: &str,
) -> Result<Option<Ran>, HarnessError> {
    let inv = Inv {
        signal: Some(SignalPlan {
            signal,
            ready,
            within: REACH,
            then: None,
        }),
        ..Inv::json(args)
    };
    let ran = case.run(sandbox, inv)?;
    if ran.signaled != Some(true) {
        case.fail(
            "signal",
            format!(
                "`{}` never reached the point to interrupt ({waiting_for}) within {} s, so no {name} was sent; it answered {}",
                ran.capture.argv_display(),
                REACH.as_secs(),
                ran.answer()
            ),
        );
        return Ok(None);
    }
    Ok(Some(ran))
}

/// The answer to a signal: a result line (the oracle holds it to being the only one and
/// last), error canceled, exit 1. Returns whether it said canceled.
fn judge_canceled(case: &mut Case<'_>, ran: &Ran, name: &str) -> bool {
    let argv = ran.capture.argv_display();
    match &ran.judgement.outcome {
        Outcome::Failed { code: Some(code) } if code == "canceled" => {
            case.ensure(
                ran.exit() == Some(1),
                "exit",
                format!(
                    "`{argv}` answered canceled after {name} and ended with {} (a failure exits 1)",
                    ran.capture.ending.describe()
                ),
            );
            true
        }
        Outcome::Crashed => {
            case.fail(
                "stdout",
                format!(
                    "`{argv}` wrote no result line after {name} ({}): an interrupted command ends with a canceled result line",
                    ran.capture.ending.describe()
                ),
            );
            false
        }
        _ => {
            case.fail(
                "/error/code",
                format!(
                    "`{argv}` answered {} after {name}, not error canceled",
                    ran.answer()
                ),
            );
            false
        }
    }
}

/// Whether the fake call log holds a line containing `needle`.
fn logged(log: PathBuf, needle: &'static str) -> Arc<dyn Fn() -> bool + Send + Sync> {
    Arc::new(move || std::fs::read_to_string(&log).is_ok_and(|text| text.contains(needle)))
}

fn exec_canceled(case: &mut Case<'_>) -> Result<(), HarnessError> {
    for signal in SIGNALS {
        let sandbox = with_running_work(case)?;
        // The guest command "runs" until the fake ssh is stopped.
        sandbox.write_script(&FakeScript::default().rule(
            "ssh",
            Rule {
                when: Match {
                    arg_contains: Some(HOLD.into()),
                    ..Default::default()
                },
                delay_ms: Some(60_000),
                ..Default::default()
            },
        ))?;
        let ready = logged(sandbox.fake_log.clone(), HOLD);
        let Some(ran) = interrupted(
            case,
            &sandbox,
            &["exec", "work", "echo", HOLD],
            signal,
            ready,
            "the fake ssh running the guest command",
        )?
        else {
            continue;
        };
        if !judge_canceled(case, &ran, signal.1) {
            continue;
        }
        if let Some(vm) = get_vm(case, &sandbox, "work")? {
            case.ensure(
                str_at(&vm, "/state") == Some("running"),
                "/data/vm/state",
                format!(
                    "after an exec canceled by {}, `get work` shows state {}: interrupting a guest command left the VM changed",
                    signal.1,
                    str_at(&vm, "/state").unwrap_or("(none)")
                ),
            );
        }
    }
    Ok(())
}

/// The fake QEMU daemons the sandbox's fakes recorded.
fn fake_qemu_pids(sandbox: &Sandbox) -> Vec<i32> {
    std::fs::read_to_string(&sandbox.fake_pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|pid| *pid > 1)
        .collect()
}

/// Whether `pid` is a live process (a zombie has exited).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name's closing parenthesis.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

fn up_canceled(case: &mut Case<'_>) -> Result<(), HarnessError> {
    for signal in SIGNALS {
        let mut sandbox = case.sandbox()?;
        prepare_bootable(&sandbox)?;
        // The guest never boots: no banner on its port, and ssh (reaching the port first, as
        // the real client does) is refused, so an `up` that waits for the guest is still
        // waiting when the signal comes. The fake QEMU's launcher is held at a gate until the
        // signal was sent, so the signal always finds `up` at work, even one that answers
        // without waiting for the guest: the verdict never depends on the host's timing.
        sandbox.set_env("STOAT_FAKE_SSH_CONNECT", "1");
        // In TMPDIR: the gate and its `.held` mark are the suite's own files, which the
        // fake QEMU writes while `up` runs, so SANDBOX.no-writes-outside must not count them.
        let gate = sandbox.tmp.join("qemu-start-gate");
        sandbox.write_script(&FakeScript {
            qemu: QemuScript {
                no_ssh: true,
                start_gate: Some(gate.clone()),
                ..Default::default()
            },
            ..Default::default()
        })?;
        let mut held = gate.clone().into_os_string();
        held.push(".held");
        let held = PathBuf::from(held);
        let ready: Arc<dyn Fn() -> bool + Send + Sync> = Arc::new(move || held.exists());
        let then: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            let _ = std::fs::write(&gate, b"");
        });
        let ran = case.run(
            &sandbox,
            Inv {
                signal: Some(SignalPlan {
                    signal: signal.0,
                    ready,
                    within: REACH,
                    then: Some(then),
                }),
                ..Inv::json(&["up", "work"])
            },
        )?;
        if ran.signaled != Some(true) {
            case.fail(
                "signal",
                format!(
                    "`up work` never started QEMU within {} s, so no {} was sent; it answered {}",
                    REACH.as_secs(),
                    signal.1,
                    ran.answer()
                ),
            );
            continue;
        }
        if ran.judgement.outcome == Outcome::Ok {
            // It finished before it noticed the signal (it was starting QEMU and does not wait
            // for the guest): then its answer must be true.
            if let Some(vm) = get_vm(case, &sandbox, "work")? {
                case.ensure(
                    str_at(&vm, "/state") == Some("running"),
                    "/data/vm/state",
                    format!(
                        "up answered ok after {}, and `get work` shows state {}",
                        signal.1,
                        str_at(&vm, "/state").unwrap_or("(none)")
                    ),
                );
            }
            let _ = case.json(&sandbox, &["down", "work"])?;
            continue;
        }
        let canceled = judge_canceled(case, &ran, signal.1);
        let Some(vm) = get_vm(case, &sandbox, "work")? else {
            continue;
        };
        let state = str_at(&vm, "/state").map(str::to_string);
        let left: Vec<i32> = fake_qemu_pids(&sandbox)
            .into_iter()
            .filter(|pid| alive(*pid))
            .collect();
        if canceled {
            case.ensure(
                state.as_deref() == Some("stopped"),
                "/data/vm/state",
                format!(
                    "up answered canceled after {}, yet `get work` shows state {}: the VM was left started",
                    signal.1,
                    state.as_deref().unwrap_or("(none)")
                ),
            );
            case.ensure(
                left.is_empty(),
                "qemu",
                format!(
                    "up answered canceled after {}, yet the QEMU it started still runs (pid {})",
                    signal.1,
                    left.iter()
                        .map(i32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if state.as_deref() == Some("running") {
            let _ = case.json(&sandbox, &["down", "work"])?;
        }
    }
    Ok(())
}
