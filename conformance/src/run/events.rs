//! Owns what a run emits ([`Event`]) and what a report is made of ([`CheckResult`],
//! [`Summary`]). Plain serde data: the JSON report is these, and `report` reads them back.

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, Level};

use super::case::InvocationRecord;

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    /// A MUST was broken.
    Failed,
    /// The SUT gave no result line where one was due (crashed, not merely failed).
    Crashed,
    /// Only SHOULD findings.
    Warned,
    Skipped,
    /// Failed, and the baseline expects it to.
    ExpectedFailure,
    /// Passed, but the baseline still lists it: the baseline is stale.
    StaleBaseline,
    /// The harness could not run it.
    Errored,
}

impl Status {
    /// Whether this status fails the run.
    pub fn fails_run(self) -> bool {
        matches!(
            self,
            Status::Failed | Status::Crashed | Status::StaleBaseline
        )
    }

    pub fn label(self) -> &'static str {
        match self {
            Status::Passed => "PASS",
            Status::Failed => "FAIL",
            Status::Crashed => "CRASH",
            Status::Warned => "WARN",
            Status::Skipped => "SKIP",
            Status::ExpectedFailure => "XFAIL",
            Status::StaleBaseline => "STALE",
            Status::Errored => "ERROR",
        }
    }
}

/// One check's outcome with its evidence.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckResult {
    pub id: String,
    pub title: String,
    pub level: Level,
    pub tier: String,
    pub tags: Vec<String>,
    pub spec_ref: String,
    pub status: Status,
    /// Why skipped / errored / expected to fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The invocations that produced the findings (scenario checks: all of theirs).
    #[serde(default)]
    pub invocations: Vec<InvocationRecord>,
    #[serde(default)]
    pub duration_ms: u64,
    /// The contract editions the check's rule holds in.
    #[serde(default)]
    pub editions: Vec<u64>,
    /// In the migration view (judged by an edition the SUT does not speak), how a check that
    /// did not pass is explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<Migration>,
    /// An oracle rule's findings came from these scenarios' invocations (catalog order):
    /// what `--rerun-failed` runs again to judge the rule again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
    /// The check rests on a knob the SUT's profile declares, not on the contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<Declared>,
    /// A failing row's reproduction: the failing invocation and the command that runs the
    /// check again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro: Option<super::repro::Repro>,
}

/// A check's profile requirement, as a report shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declared {
    /// The profile key (`data_root_var`, `[catalog]`).
    pub key: String,
    /// Whether this run's profile declared it (then the check is a MUST, else a SHOULD).
    pub declared: bool,
}

impl Declared {
    /// One line for every report format.
    pub fn describe(&self) -> String {
        if self.declared {
            format!(
                "declared requirement: rests on the profile's {}, not on the contract (declared, so MUST)",
                self.key
            )
        } else {
            format!(
                "declared requirement: rests on the profile's {}, not on the contract (not declared, so SHOULD)",
                self.key
            )
        }
    }
}

/// The migration view's grouping of a check that did not pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "group", rename_all = "snake_case")]
pub enum Migration {
    /// Explained by the documented difference between the SUT's edition and the judged one.
    Explained { change: String },
    /// The SUT's own edition forbids it too: a violation of both editions.
    BothEditions,
}

/// Counts per status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub crashed: usize,
    pub warned: usize,
    pub skipped: usize,
    pub expected_failures: usize,
    pub stale_baseline: usize,
    pub errored: usize,
    /// SUT invocations made, and their summed wall time (for the overhead figure).
    pub invocations: usize,
    pub sut_ms: u64,
    pub duration_ms: u64,
    /// Why the run judged nothing it was asked to (a selected tier that ran nothing, no MUST
    /// check run, a selection that matched nothing). Non-empty fails the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vacuous: Vec<String>,
    /// What was not run and why, one short line each (the closing line lists them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}

impl Summary {
    pub fn count(&mut self, status: Status) {
        match status {
            Status::Passed => self.passed += 1,
            Status::Failed => self.failed += 1,
            Status::Crashed => self.crashed += 1,
            Status::Warned => self.warned += 1,
            Status::Skipped => self.skipped += 1,
            Status::ExpectedFailure => self.expected_failures += 1,
            Status::StaleBaseline => self.stale_baseline += 1,
            Status::Errored => self.errored += 1,
        }
    }

    /// The exit status of `stoat-conformance run`.
    pub fn exit_code(&self, smoke_failed: bool) -> u8 {
        if self.errored > 0 {
            crate::exit::HARNESS_ERROR
        } else if smoke_failed
            || self.failed + self.crashed + self.stale_baseline > 0
            || !self.vacuous.is_empty()
        {
            crate::exit::VIOLATIONS
        } else {
            crate::exit::PASS
        }
    }
}

/// Facts about the run, printed first and stored in every report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    pub suite_version: String,
    /// The contract edition the run judged by.
    pub contract: u64,
    /// The edition the SUT names in `--json version`, when it names one this suite knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sut_contract: Option<u64>,
    /// How the judged edition was chosen: `auto` (the SUT's own) or `flag` (`--contract`).
    #[serde(default = "default_contract_source")]
    pub contract_source: String,
    /// Judged by an edition the SUT does not speak: failures are grouped by explanation.
    #[serde(default)]
    pub migration: bool,
    pub sut: String,
    /// The SUT's program and leading arguments, as given after `--` (what `repro` runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sut_argv: Vec<String>,
    /// The `--profile` file the run read, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default)]
    pub sut_version: Option<String>,
    pub seed: u64,
    /// Where the seed came from: `default` (the suite's fixed seed), `flag`, `random`.
    #[serde(default)]
    pub seed_source: super::seed::SeedSource,
    pub jobs: usize,
    pub selected: usize,
    pub tiers: Vec<String>,
    /// `run --shard K/N`: this report holds the K-th of N parts of the run (`selected` is
    /// the whole run's); `report --merge` joins the N reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

fn default_contract_source() -> String {
    "auto".to_string()
}

/// What the runner emits, in order: `Started`, then `Smoke`, then one `Check` per check, then `Finished`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Started(RunInfo),
    /// The smoke stage: `--json version` must answer in some contract edition this suite knows.
    Smoke {
        passed: bool,
        findings: Vec<Finding>,
        #[serde(default)]
        invocation: Option<InvocationRecord>,
    },
    Check(Box<CheckResult>),
    Finished {
        summary: Summary,
        smoke_failed: bool,
    },
}
