//! Owns the `EXPLORE.*` checks: the engine of `stoat-conformance explore` (random command
//! histories judged by the oracle, the contract model and a read-back after every step;
//! [`crate::explore`]) run inside `run` with a small fixed budget, so a run, and CI with
//! it, judges histories as well as hand-written scenarios. The histories come from the
//! run's seed, so two runs with one seed judge the same ones. A failing history is shrunk
//! and becomes one finding whose message shows it step by step and names the file written
//! under `explore-failures/` (relative to the run's working directory), the same place and
//! form as `explore`'s own default `--out`.

use std::path::Path;

use super::def::{scenario, CheckDef, Tier};
use crate::error::HarnessError;
use crate::explore::{self, concurrent, Budget, Engine};
use crate::ids;
use crate::run::Case;
use crate::spec::{Editions, Source};

/// Histories of the sequential check: about 15 s on the reference under load, and enough
/// that the mutants naming the check meet their history at seeds 1 and 42 (the last of
/// them at history 23; docs/decisions/explore.md). The others need `explore`'s longer
/// budget.
pub const RUN_HISTORIES: u64 = 24;
/// Steps per history of the sequential check, as `explore`'s default.
pub const RUN_STEPS: usize = explore::DEFAULT_STEPS;
/// Histories of the concurrent check (3 clients of 5 commands each).
pub const RUN_CONCURRENT_HISTORIES: u64 = 12;
/// Where a failing history's file goes, relative to the working directory of the run.
pub const OUT_DIR: &str = "explore-failures";
/// Lines of the shrunk history a finding's message carries (the file holds it all).
const MESSAGE_LINES: usize = 60;

const V2_CHANGE: &str =
    "the model is written from contract 3's per-command data (applies_at, skipped_reason, wait, agent_access)";

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: ids::EXPLORE_SEQUENTIAL.name,
        level: ids::EXPLORE_SEQUENTIAL.level,
        tier: Tier::Fake,
        spec: ids::EXPLORE_SEQUENTIAL.spec,
        quote: "A flag you did not pass does not appear, and the field it names is untouched.",
        title: "random histories of create, clone, rm, update, forward, snapshot, up/down/wait/exec, apply, recipes, images, pull and the project's init/status/down (the run's seed): every answer and the get/forward/snapshot list/status/images/ls read after each step agree with the contract model, every transition of which quotes the contract",
        tags: &["explore", "state"],
        editions: Editions::V3 { change: V2_CHANGE },
        ..scenario(sequential)
    },
    CheckDef {
        id: ids::EXPLORE_CONCURRENT.name,
        level: ids::EXPLORE_CONCURRENT.level,
        tier: Tier::Fake,
        spec: ids::EXPLORE_CONCURRENT.spec,
        quote: "commands run at once on one data root answer as some order of them would, and never `internal`",
        title: "3 clients on one data root (creates of one name, updates, rm, clone, snapshots of one tag, forwards): no answer is internal, and some order that keeps the real-time order explains every answer and the read-back (linearizable)",
        tags: &["explore", "concurrency"],
        source: Source::Design,
        editions: Editions::V3 { change: V2_CHANGE },
        ..scenario(concurrent_histories)
    },
];

/// The explore engine for this run: its SUT, fake tools, timeout, edition and data root.
fn engine(case: &Case<'_>) -> Engine {
    Engine {
        sut: case.sut().clone(),
        fakes: case.fakes(),
        timeout: case.timeout(),
        edition: case.edition(),
        data_root_var: Some(case.profile().data_root_var.clone()),
        profile_env: case
            .profile()
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        sut_clock: Some(case.watched_us.clone()),
    }
}

/// The most a finding's line holds: each finding is one line of the report.
const LINE_CAP: usize = 360;

/// `text` as one report line of at most [`LINE_CAP`] characters (cut on a character).
fn one_line(text: &str) -> String {
    let flat = text
        .split('\n')
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" / ");
    match flat.char_indices().nth(LINE_CAP) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// Reports `lines` as findings of their own under `pointer`, at most [`MESSAGE_LINES`] of
/// them, saying how many were left out.
fn fail_lines(case: &mut Case<'_>, pointer: &str, lines: &[String]) {
    for line in lines.iter().take(MESSAGE_LINES) {
        case.fail(pointer.to_owned(), one_line(line));
    }
    if lines.len() > MESSAGE_LINES {
        case.fail(
            pointer.to_owned(),
            format!(
                "... ({} more lines in the file)",
                lines.len() - MESSAGE_LINES
            ),
        );
    }
}

/// The shrunk run in a finding's few lines: every step's command, then the failing
/// invocation with the model's expectation, the answer and the problem (the file and
/// `explore` print every read-back too).
fn steps(run: &explore::Run) -> Vec<String> {
    let mut out = Vec::new();
    for invocation in &run.log {
        let failed = invocation.problem.is_some();
        if invocation.read_back && !failed {
            continue;
        }
        let kind = if invocation.read_back {
            format!("read-back after step {}", invocation.step + 1)
        } else {
            format!("step {}", invocation.step + 1)
        };
        let marker = if failed { "FAIL" } else { "ok" };
        out.push(format!("{marker} {kind}: {}", invocation.cmd.shell()));
        if let Some(problem) = &invocation.problem {
            out.push(format!(
                "  model ({}: \"{}\"): {}",
                invocation.spec,
                invocation.quote,
                invocation.expected.join(" | or | ")
            ));
            out.push(format!(
                "  answer: {}",
                crate::oracle::excerpt(&invocation.answer)
            ));
            out.push(format!("  problem: {problem}"));
        }
    }
    out
}

/// The SUT's argv as a replay command names it.
fn sut_words(case: &Case<'_>) -> String {
    let sut = case.sut();
    std::iter::once(sut.program.display().to_string())
        .chain(sut.leading.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn sequential(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let budget = Budget {
        seed: case.seed(),
        histories: RUN_HISTORIES,
        steps: RUN_STEPS,
    };
    let summary = explore::explore(&engine(case), budget)?;
    let Some(found) = &summary.found else {
        return Ok(());
    };
    let Some(failure) = found.run.failure() else {
        return Ok(());
    };
    let pointer = if failure.read_back {
        format!(
            "step {} read-back ({})",
            failure.step + 1,
            failure.cmd.shell()
        )
    } else {
        format!("step {} ({})", failure.step + 1, failure.cmd.shell())
    };
    let out = Path::new(OUT_DIR);
    let written = match explore::write_transcript(out, budget.seed, found)? {
        Some(path) if found.reproduces => format!(
            "transcript: {} (a golden case; replay: stoat-conformance golden verify --dir {OUT_DIR} -- {})",
            path.display(),
            sut_words(case)
        ),
        Some(path) => format!(
            "transcript: {} (replaying it alone does not fail on this SUT: the failure rests on a value the contract leaves open; rerun: stoat-conformance explore --seed {} --histories {} -- {})",
            path.display(),
            budget.seed,
            found.index + 1,
            sut_words(case)
        ),
        None => format!(
            "no transcript (the model allows more than one answer to the failing invocation); rerun: stoat-conformance explore --seed {} --histories {} -- {}",
            budget.seed,
            found.index + 1,
            sut_words(case)
        ),
    };
    let mut lines = vec![format!(
        "history {} of {} (seed {}) disagrees with the contract model, shrunk from {} to {} steps: {}",
        found.index,
        budget.histories,
        budget.seed,
        found.original.len(),
        found.shrunk.len(),
        failure.problem.as_deref().unwrap_or("failed"),
    )];
    lines.extend(steps(&found.run));
    lines.push(written);
    fail_lines(case, &pointer, &lines);
    Ok(())
}

fn concurrent_histories(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let budget = concurrent::Budget {
        seed: case.seed(),
        histories: RUN_CONCURRENT_HISTORIES,
        rounds: concurrent::DEFAULT_ROUNDS,
        clients: concurrent::DEFAULT_CLIENTS,
    };
    let summary = concurrent::explore(&engine(case), budget)?;
    let Some(found) = &summary.found else {
        return Ok(());
    };
    let path = concurrent::write(Path::new(OUT_DIR), &budget, found)?;
    let pointer = match &found.run.failure {
        Some(concurrent::Failure::Alone { op, .. }) => format!("operation #{op}"),
        _ => "the history".to_string(),
    };
    let mut lines = vec![format!(
        "concurrent history {} of {} (seed {}, {} clients) is not explained by the contract model, shrunk from {} to {} commands:",
        found.index,
        budget.histories,
        budget.seed,
        budget.clients,
        concurrent::size(&found.original),
        concurrent::size(&found.shrunk),
    )];
    lines.extend(
        concurrent::render_untimed(&found.shrunk, &found.run)
            .lines()
            .map(str::to_owned),
    );
    lines.push(format!(
        "history: {} (rerun: stoat-conformance explore --concurrent {} --seed {} --histories {} -- {})",
        path.display(),
        budget.clients,
        budget.seed,
        found.index + 1,
        sut_words(case)
    ));
    fail_lines(case, &pointer, &lines);
    Ok(())
}
