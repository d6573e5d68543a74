//! Owns `stoat-conformance explore`: random command histories run against the SUT, each in
//! a fresh pure-tier sandbox, judged after every step by the oracle, the model of the
//! contract ([`model`]) and a read-back; the first failing history is shrunk ([`shrink`])
//! and written as a golden transcript `golden verify` replays. Deterministic by seed.
//! `--concurrent K` runs K clients on one data root at once instead ([`concurrent`]) and
//! checks every history for linearizability against the same model ([`linearize`]).

pub mod concurrent;
pub mod engine;
pub mod gen;
pub mod linearize;
pub mod model;
pub mod shrink;

use std::path::{Path, PathBuf};

use crate::error::HarnessError;
use crate::golden::format::GoldenCase;
pub use engine::{Engine, Invocation, Run};
pub use model::Cmd;

// The default budget lives with the generator, whose coverage test holds it to its minimums.
pub use gen::{DEFAULT_HISTORIES, DEFAULT_SEED};
/// Steps per history by default.
pub const DEFAULT_STEPS: usize = 12;

/// How much to explore.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub seed: u64,
    pub histories: u64,
    pub steps: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            seed: DEFAULT_SEED,
            histories: DEFAULT_HISTORIES,
            steps: DEFAULT_STEPS,
        }
    }
}

/// A failing history, shrunk.
pub struct Found {
    /// Which history of the run (0-based) failed first.
    pub index: u64,
    pub original: Vec<Cmd>,
    pub shrunk: Vec<Cmd>,
    pub run: Run,
    pub transcript: Option<GoldenCase>,
    /// Whether replaying the transcript (`golden verify`) fails on this SUT too.
    pub reproduces: bool,
}

/// What one exploration did.
pub struct Summary {
    pub histories: u64,
    pub invocations: usize,
    pub found: Option<Found>,
}

/// Runs the budget's histories in order and stops at the first that fails, shrunk.
pub fn explore(engine: &Engine, budget: Budget) -> Result<Summary, HarnessError> {
    let mut invocations = 0;
    for index in 0..budget.histories {
        let history = gen::history(gen::history_seed(budget.seed, index), budget.steps);
        let run = engine.run(&history)?;
        invocations += run.log.len();
        if run.failed {
            let (shrunk, run) = shrink::shrink(engine, &history, run)?;
            let about = format!(
                "explore --seed {} history {index}, shrunk from {} to {} steps",
                budget.seed,
                history.len(),
                shrunk.len()
            );
            // The first form that fails on this SUT when replayed: the transcript reproduces.
            let mut transcript = None;
            let mut reproduces = false;
            for case in shrink::transcripts(&shrunk, &run, &about) {
                if !engine.replay(&case)?.is_empty() {
                    transcript = Some(case);
                    reproduces = true;
                    break;
                }
                transcript.get_or_insert(case);
            }
            return Ok(Summary {
                histories: index + 1,
                invocations,
                found: Some(Found {
                    index,
                    original: history,
                    shrunk,
                    run,
                    transcript,
                    reproduces,
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

/// Writes a found failure's transcript as `DIR/<cmd>/explore-seed-S-history-I.json`.
pub fn write_transcript(
    dir: &Path,
    seed: u64,
    found: &Found,
) -> Result<Option<PathBuf>, HarnessError> {
    let Some(case) = &found.transcript else {
        return Ok(None);
    };
    let folder = dir.join(&case.cmd);
    std::fs::create_dir_all(&folder).map_err(|e| HarnessError::io(&folder, e))?;
    let path = folder.join(format!("explore-seed-{seed}-history-{}.json", found.index));
    std::fs::write(&path, case.render()).map_err(|e| HarnessError::io(&path, e))?;
    Ok(Some(path))
}
