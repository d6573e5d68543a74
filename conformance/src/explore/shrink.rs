//! Owns shrinking a failing history to the shortest that still fails (cut after the failing
//! step, then drop one step at a time until no single drop still fails), and turning the
//! shrunk run into a golden transcript: the steps before the failing invocation become its
//! `before` history, the failing invocation its own argv, the model's expectation its lines.

use serde_json::Value;

use super::engine::{Engine, Run};
use super::model::{self, Cmd, Model};
use crate::error::HarnessError;
use crate::golden::format::{GoldenCase, GoldenStep, FORMAT};

/// Shrinks `history` (whose run `run` failed); returns the shortest failing history and its
/// run.
pub fn shrink(engine: &Engine, history: &[Cmd], run: Run) -> Result<(Vec<Cmd>, Run), HarnessError> {
    let mut best = history.to_vec();
    let mut best_run = run;
    if let Some(failure) = best_run.failure() {
        best.truncate(failure.step + 1);
    }
    loop {
        let mut smaller = None;
        for index in 0..best.len() {
            let mut candidate = best.clone();
            candidate.remove(index);
            let run = engine.run(&candidate)?;
            if let Some(failure) = run.failure() {
                candidate.truncate(failure.step + 1);
                smaller = Some((candidate, run));
                break;
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

/// The shrunk history, step by step: each invocation, what the model allowed, what came.
pub fn render(history: &[Cmd], run: &Run) -> String {
    let mut out = format!("shrunk history ({} steps):\n", history.len());
    for invocation in &run.log {
        let marker = if invocation.problem.is_some() {
            "FAIL"
        } else {
            "ok  "
        };
        let kind = if invocation.read_back {
            "  read-back"
        } else {
            "step"
        };
        out.push_str(&format!(
            "{marker} {kind} {}: {}\n       model ({}: \"{}\"): {}\n       answer: {}\n",
            invocation.step + 1,
            invocation.cmd.shell(),
            invocation.spec,
            invocation.quote,
            invocation.expected.join(" | or | "),
            crate::oracle::excerpt(&invocation.answer)
        ));
        if let Some(problem) = &invocation.problem {
            out.push_str(&format!("       problem: {problem}\n"));
        }
    }
    out
}

/// The golden transcripts that may replay the shrunk failure, best first: every step
/// before the failing invocation (with the answer the model expected when it allowed only
/// one, or the one the SUT gave among several when that is one line), then the failing invocation expecting what the model predicted. When the failure
/// is a step's own answer, a second form also runs that step and ends with `get` of its VM:
/// a transcript pins only what the contract fixes, so a failure that rests on a value the
/// model adopted (a default) may show only in the state the step left.
pub fn transcripts(history: &[Cmd], run: &Run, about: &str) -> Vec<GoldenCase> {
    let Some(failure) = run.failure() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if failure.read_back {
        out.extend(build(history, run, failure.step + 1, &failure.cmd, about));
    } else {
        out.extend(build(history, run, failure.step, &failure.cmd, about));
        if let Some(name) = failure.cmd.target() {
            let get = Cmd::Get { name: name.into() };
            out.extend(build(history, run, failure.step + 1, &get, about));
        }
    }
    out
}

/// Takes from `judged` the power of every VM `state` held stopping and the answer settled,
/// and pins it in `expected`'s `data.vm.state` when that VM is the one it shows.
fn pin_power(state: &mut Model, judged: &Model, expected: &mut Option<(i32, Value)>) {
    for (name, vm) in state.vms.iter_mut() {
        let Some(settled) = judged.vms.get(name) else {
            continue;
        };
        if vm.power != model::Power::Stopping || settled.power == model::Power::Stopping {
            continue;
        }
        vm.power = settled.power;
        if let Some((_, line)) = expected.as_mut() {
            let shown = line.pointer("/data/vm/name").and_then(Value::as_str) == Some(name);
            if let (true, Some(shown)) = (shown, line.pointer_mut("/data/vm")) {
                shown["state"] = serde_json::json!(if settled.power == model::Power::Running {
                    "running"
                } else {
                    "stopped"
                });
            }
        }
    }
}

/// The transcript's copy of the fake tools' script, in the SUT's working directory.
const SCRIPT: &str = "explore-fake-script.json";

/// One transcript: `history[..upto]` as its `before`, then `last`.
fn build(history: &[Cmd], run: &Run, upto: usize, last: &Cmd, about: &str) -> Option<GoldenCase> {
    let mut state = Model::default();
    let mut before = Vec::new();
    for (index, cmd) in history.iter().take(upto).enumerate() {
        let allowed = state.predict(cmd);
        let expected = model::expected_line(cmd, &allowed);
        // The branch the SUT took (ok or an error) picks the next state; values the model
        // adopted from answers are NOT carried: another implementation's defaults may differ.
        let answer = run
            .log
            .iter()
            .find(|i| i.step == index && !i.read_back)
            .and_then(|i| serde_json::from_str::<Value>(&i.answer).ok());
        // The branch the SUT's answer took: the first allowed answer it agrees with.
        let taken = answer.as_ref().and_then(|answer| {
            allowed
                .iter()
                .find(|a| model::judge(std::slice::from_ref(*a), answer).is_ok())
        });
        let succeeded = answer
            .as_ref()
            .and_then(|answer| answer.get("ok").and_then(Value::as_bool));
        let choice = taken.or_else(|| allowed.iter().find(|a| Some(a.answer.is_ok()) == succeeded));
        // A step the model allows several answers to pins the one the SUT gave when it is
        // one line (a clone's forwards_copied, say): the rest of the transcript follows it.
        let mut expected = expected
            .or_else(|| choice.and_then(|c| model::expected_line(cmd, std::slice::from_ref(c))));
        if let Some(choice) = choice {
            state = choice.next.clone();
            // A VM the model held stopping (a down's answer may say either) is as the SUT's
            // answer showed it: the step pins that state and the rest follows it.
            let judged = answer
                .as_ref()
                .and_then(|a| model::judge(std::slice::from_ref(choice), a).ok());
            if let Some((judged, ..)) = judged {
                pin_power(&mut state, &judged, &mut expected);
            }
        }
        before.push(GoldenStep {
            argv: cmd.argv(),
            exit: expected.as_ref().map(|(exit, _)| *exit),
            lines: expected.map(|(_, line)| vec![line]).unwrap_or_default(),
        });
    }
    let allowed = state.predict(last);
    let (exit, line) = model::expected_line(last, &allowed)?;
    Some(GoldenCase {
        format: FORMAT.into(),
        contract: 3,
        cmd: last.cmd().into(),
        about: about.into(),
        argv: last.argv(),
        // The fake tools' script travels in the work directory, named by the environment.
        env: [("STOAT_FAKE_SCRIPT".to_string(), format!("[WORK]/{SCRIPT}"))].into(),
        before,
        stdin: None,
        fixture: run.fixture.clone(),
        work: [(
            SCRIPT.to_string(),
            crate::capture::Bytes(model::fake_script().to_string().into_bytes()),
        )]
        .into(),
        running: Vec::new(),
        tools: None,
        exit,
        lines: vec![line],
        extra_keys: "allowed".into(),
    })
}
