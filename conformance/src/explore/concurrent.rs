//! Owns `explore --concurrent K`: K clients issue their commands against one data root at
//! once, round by round (a barrier starts every client's next command together, so commands
//! of one round overlap), then one reader reads everything back (`ls`, and `get` and
//! `forward` of every name). The history passes when every answer passes the oracle, none
//! is `internal`, and some order of all of them that keeps their real-time order is one the
//! model accepts ([`super::linearize`]). The plan is deterministic by seed; the
//! interleaving is the OS's, so a failing plan is shrunk by rerunning each smaller candidate
//! a few times and keeping it when any run fails.

use std::path::{Path, PathBuf};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::engine::{Answered, Engine};
use super::gen::{self, CONCURRENT_NAMES};
use super::linearize::{self, Event, Outcome, MAX_EVENTS};
use super::model::{Cmd, Model};
use crate::error::HarnessError;

/// Clients per history unless told otherwise (`--concurrent` names it).
pub const DEFAULT_CLIENTS: usize = 3;
/// Histories per concurrent run by default.
pub const DEFAULT_HISTORIES: u64 = 40;
/// Rounds (commands per client) per history by default.
pub const DEFAULT_ROUNDS: usize = 5;
/// Runs of one shrinking candidate before it counts as passing: the interleaving that
/// failed may not come again at once.
pub const ATTEMPTS: usize = 4;

/// What each client runs, round by round (`None`: it sits that round out).
pub type Plan = Vec<Vec<Option<Cmd>>>;

/// How much to explore concurrently.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub seed: u64,
    pub histories: u64,
    pub rounds: usize,
    pub clients: usize,
}

/// One operation as it ran.
#[derive(Clone, Debug)]
pub struct Op {
    /// The client that ran it (`None`: the read-back after every client finished).
    pub client: Option<usize>,
    pub round: usize,
    pub cmd: Cmd,
    /// From the history's start: when it was spawned and when its process had exited.
    pub start: Duration,
    pub end: Duration,
    pub answered: Answered,
}

/// Why a concurrent history failed.
#[derive(Clone, Debug)]
pub enum Failure {
    /// One operation failed whatever the order: the oracle, no result line, `internal`.
    Alone { op: usize, problem: String },
    /// No order the model accepts; the longest accepted prefix and what it refused next.
    NotLinearizable {
        prefix: Vec<usize>,
        refusals: Vec<(usize, String)>,
    },
}

/// One concurrent history's run.
#[derive(Clone, Debug)]
pub struct Run {
    pub ops: Vec<Op>,
    pub failure: Option<Failure>,
}

/// A failing plan, shrunk.
pub struct Found {
    pub index: u64,
    pub original: Plan,
    pub shrunk: Plan,
    pub run: Run,
}

/// What one concurrent exploration did.
pub struct Summary {
    pub histories: u64,
    pub invocations: usize,
    pub found: Option<Found>,
}

/// The plan of history `index` of a concurrent run seeded `seed` (its own stream: the
/// sequential histories of that seed are other ones).
pub fn plan_of(budget: &Budget, index: u64) -> Plan {
    let seed = gen::history_seed(budget.seed ^ 0xC0C0_C0C0_C0C0_C0C0, index);
    gen::plan(seed, budget.clients, budget.rounds)
}

/// Runs the budget's concurrent histories in order, stopping at the first that fails.
pub fn explore(engine: &Engine, budget: Budget) -> Result<Summary, HarnessError> {
    let mut invocations = 0;
    for index in 0..budget.histories {
        let plan = plan_of(&budget, index);
        let run = run(engine, &plan)?;
        invocations += run.ops.len();
        if run.failure.is_some() {
            let (shrunk, run) = shrink(engine, &plan, run)?;
            return Ok(Summary {
                histories: index + 1,
                invocations,
                found: Some(Found {
                    index,
                    original: plan,
                    shrunk,
                    run,
                }),
            });
        }
    }
    Ok(Summary {
        histories: budget.histories,
        invocations,
        found: None,
    })
}

/// The reads after every client finished: what the history left (a VM without a disk
/// answers the snapshot list `no_disk`, which the model expects).
fn read_back() -> Vec<Cmd> {
    let mut reads = vec![Cmd::Ls];
    for name in CONCURRENT_NAMES {
        reads.push(Cmd::Get {
            name: name.to_string(),
        });
        reads.push(Cmd::ForwardShow {
            name: name.to_string(),
        });
        reads.push(Cmd::SnapshotList {
            name: name.to_string(),
        });
    }
    reads
}

/// Runs `plan` in one fresh sandbox and judges it.
pub fn run(engine: &Engine, plan: &Plan) -> Result<Run, HarnessError> {
    let sandbox = engine.sandbox()?;
    let rounds = plan.iter().map(Vec::len).max().unwrap_or(0);
    let barrier = Barrier::new(plan.len().max(1));
    let clock = Instant::now();
    let ops: Mutex<Vec<Op>> = Mutex::new(Vec::new());
    let error: Mutex<Option<HarnessError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for (client, commands) in plan.iter().enumerate() {
            let (sandbox, barrier, ops, error) = (&sandbox, &barrier, &ops, &error);
            scope.spawn(move || {
                for round in 0..rounds {
                    // Every client waits at every round, even one that has nothing to run
                    // or whose harness failed: no other client is left at the barrier.
                    barrier.wait();
                    let Some(Some(cmd)) = commands.get(round) else {
                        continue;
                    };
                    if error.lock().map(|e| e.is_some()).unwrap_or(true) {
                        continue;
                    }
                    let start = clock.elapsed();
                    match engine.answer(sandbox, cmd) {
                        Ok(answered) => {
                            let end = clock.elapsed();
                            if let Ok(mut ops) = ops.lock() {
                                ops.push(Op {
                                    client: Some(client),
                                    round,
                                    cmd: cmd.clone(),
                                    start,
                                    end,
                                    answered,
                                });
                            }
                        }
                        Err(e) => {
                            if let Ok(mut slot) = error.lock() {
                                slot.get_or_insert(e);
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut ops = ops.into_inner().unwrap_or_default();
    ops.sort_by_key(|op| (op.round, op.start, op.client));
    for cmd in read_back() {
        let start = clock.elapsed();
        let answered = engine.answer(&sandbox, &cmd)?;
        ops.push(Op {
            client: None,
            round: rounds,
            cmd,
            start,
            end: clock.elapsed(),
            answered,
        });
    }
    let failure = judge(&ops);
    Ok(Run { ops, failure })
}

/// The failure of a history's operations, if any.
pub fn judge(ops: &[Op]) -> Option<Failure> {
    for (index, op) in ops.iter().enumerate() {
        if let Some(problem) = &op.answered.problem {
            return Some(Failure::Alone {
                op: index,
                problem: problem.clone(),
            });
        }
        let code = op
            .answered
            .result
            .as_ref()
            .and_then(|r| r.pointer("/error/code"))
            .and_then(Value::as_str);
        if code == Some("internal") {
            return Some(Failure::Alone {
                op: index,
                problem: "answered internal: the contract's escape hatch for the unanticipated, never an answer to a race".into(),
            });
        }
    }
    let events: Vec<Event> = ops
        .iter()
        .take(MAX_EVENTS)
        .map(|op| Event {
            cmd: op.cmd.clone(),
            start: op.start,
            end: op.end,
            result: op.answered.result.clone().unwrap_or(Value::Null),
        })
        .collect();
    match linearize::check(&events, &Model::default()) {
        Outcome::Linear(_) => None,
        Outcome::Not { prefix, refusals } => Some(Failure::NotLinearizable { prefix, refusals }),
    }
}

/// The smaller plans to try: each command left out in turn (its client sits that round
/// out), then rounds and clients that run nothing dropped.
fn candidates(plan: &Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    for client in 0..plan.len() {
        for round in 0..plan[client].len() {
            if plan[client][round].is_none() {
                continue;
            }
            let mut candidate = plan.clone();
            candidate[client][round] = None;
            out.push(tidy(candidate));
        }
    }
    out
}

/// Drops the clients that run nothing (keeping one) and the rounds in which no one runs.
fn tidy(mut plan: Plan) -> Plan {
    plan.retain(|commands| commands.iter().any(Option::is_some));
    if plan.is_empty() {
        plan.push(Vec::new());
    }
    let rounds = plan.iter().map(Vec::len).max().unwrap_or(0);
    let busy: Vec<bool> = (0..rounds)
        .map(|r| plan.iter().any(|c| matches!(c.get(r), Some(Some(_)))))
        .collect();
    for commands in &mut plan {
        let mut round = 0;
        commands.retain(|_| {
            round += 1;
            busy[round - 1]
        });
    }
    plan
}

/// The number of commands a plan runs.
pub fn size(plan: &Plan) -> usize {
    plan.iter().flatten().filter(|c| c.is_some()).count()
}

/// Shrinks a failing plan: one command left out at a time, each candidate run up to
/// [`ATTEMPTS`] times and kept when a run fails, to a fixpoint.
pub fn shrink(engine: &Engine, plan: &Plan, run: Run) -> Result<(Plan, Run), HarnessError> {
    let mut best = tidy(plan.clone());
    let mut best_run = run;
    loop {
        let mut smaller = None;
        'candidates: for candidate in candidates(&best) {
            for _ in 0..ATTEMPTS {
                let run = self::run(engine, &candidate)?;
                if run.failure.is_some() {
                    smaller = Some((candidate, run));
                    break 'candidates;
                }
            }
        }
        match smaller {
            Some((candidate, run)) => {
                best = candidate;
                best_run = run;
            }
            None => return Ok((best, best_run)),
        }
    }
}

fn who(op: &Op) -> String {
    match op.client {
        Some(client) => format!("client {}", client + 1),
        None => "read-back".into(),
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The failing history, round by round, and the verdict: how to read it is in
/// docs/conformance.md ("Reading a concurrent failure").
pub fn render(plan: &Plan, run: &Run) -> String {
    render_with(plan, run, true)
}

/// [`render`] without the operations' times (a finding's message, which a run repeated
/// with the same outcome should repeat word for word; the written file keeps the times).
pub fn render_untimed(plan: &Plan, run: &Run) -> String {
    render_with(plan, run, false)
}

fn render_with(plan: &Plan, run: &Run, timed: bool) -> String {
    let rounds = plan.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = format!(
        "concurrent history ({} clients, {rounds} rounds, {} commands, then {} read-backs):\n",
        plan.len(),
        size(plan),
        read_back().len()
    );
    let mut round_shown = None;
    for (index, op) in run.ops.iter().enumerate() {
        if round_shown != Some(op.round) {
            round_shown = Some(op.round);
            if op.client.is_some() {
                out.push_str(&format!("  round {} (started together)\n", op.round + 1));
            } else {
                out.push_str("  read-back (after every client finished)\n");
            }
        }
        let when = if timed {
            format!(" [{:>8.1} ..{:>8.1} ms]", millis(op.start), millis(op.end))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "    #{index} {:<9}{when} {}\n         answer: {}\n",
            who(op),
            op.cmd.shell(),
            crate::oracle::excerpt(&op.answered.answer)
        ));
    }
    match &run.failure {
        None => out.push_str("every answer agrees with some order the model accepts\n"),
        Some(Failure::Alone { op, problem }) => {
            out.push_str(&format!("FAIL #{op} whatever the order: {problem}\n"));
        }
        Some(Failure::NotLinearizable { prefix, refusals }) => {
            out.push_str(&format!(
                "FAIL no order of these {} operations that keeps their real-time order agrees with the model\n",
                run.ops.len()
            ));
            let order: Vec<String> = prefix.iter().map(|i| format!("#{i}")).collect();
            out.push_str(&format!(
                "  the longest order the model accepts: {}\n  after it, each operation that may come next is refused:\n",
                if order.is_empty() { "(none)".into() } else { order.join(" ") }
            ));
            for (op, problem) in refusals {
                out.push_str(&format!(
                    "    #{op} {}: {problem}\n",
                    run.ops.get(*op).map(|o| o.cmd.shell()).unwrap_or_default()
                ));
            }
        }
    }
    out
}

/// The failing history as JSON (the plan, every operation with its times and answer, the
/// verdict), for a person or a tool to read; concurrent histories have no golden form.
pub fn to_json(budget: &Budget, found: &Found) -> Value {
    let plan: Vec<Vec<Value>> = found
        .shrunk
        .iter()
        .map(|commands| {
            commands
                .iter()
                .map(|c| c.as_ref().map_or(Value::Null, |c| json!(c.argv())))
                .collect()
        })
        .collect();
    let ops: Vec<Value> = found
        .run
        .ops
        .iter()
        .enumerate()
        .map(|(index, op)| {
            json!({
                "op": index,
                "client": op.client.map(|c| c + 1),
                "round": op.round + 1,
                "argv": op.cmd.argv(),
                "start_ms": millis(op.start),
                "end_ms": millis(op.end),
                "answer": op.answered.result.clone().unwrap_or_else(|| json!(op.answered.answer)),
            })
        })
        .collect();
    let verdict = match &found.run.failure {
        Some(Failure::Alone { op, problem }) => json!({"op": op, "problem": problem}),
        Some(Failure::NotLinearizable { prefix, refusals }) => json!({
            "linearizable": false,
            "longest_accepted_order": prefix,
            "refused_next": refusals.iter().map(|(op, p)| json!({"op": op, "problem": p})).collect::<Vec<_>>(),
        }),
        None => json!({"linearizable": true}),
    };
    json!({
        "about": format!(
            "explore --concurrent {} --seed {} history {}, shrunk from {} to {} commands",
            budget.clients, budget.seed, found.index, size(&found.original), size(&found.shrunk)
        ),
        "plan": plan,
        "ops": ops,
        "verdict": verdict,
    })
}

/// Writes a found failure as `DIR/concurrent/explore-seed-S-history-I.json`.
pub fn write(dir: &Path, budget: &Budget, found: &Found) -> Result<PathBuf, HarnessError> {
    let folder = dir.join("concurrent");
    std::fs::create_dir_all(&folder).map_err(|e| HarnessError::io(&folder, e))?;
    let path = folder.join(format!(
        "explore-seed-{}-history-{}.json",
        budget.seed, found.index
    ));
    let text = serde_json::to_string_pretty(&to_json(budget, found)).unwrap_or_default();
    std::fs::write(&path, text + "\n").map_err(|e| HarnessError::io(&path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> Option<Cmd> {
        Some(Cmd::Get { name: name.into() })
    }

    #[test]
    fn tidy_drops_idle_clients_and_rounds() {
        let plan = vec![vec![get("a"), None, get("b")], vec![None, None, None]];
        assert_eq!(tidy(plan), vec![vec![get("a"), get("b")]]);
        let plan = vec![vec![None, get("a")], vec![get("b"), None]];
        assert_eq!(tidy(plan.clone()), plan);
        assert_eq!(candidates(&plan).len(), 2);
        assert_eq!(size(&plan), 2);
    }
}
