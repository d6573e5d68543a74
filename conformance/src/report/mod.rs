//! Owns the reporters: each consumes runner [`Event`]s and nothing else (adding a format
//! touches one file and one arm of [`formats::render`]). Also the saved-report model ([`Report`])
//! that every file format is rendered from, so a live run and `report r.json` print the
//! same bytes, and the catalog renderer behind `list`.

pub mod catalog_doc;
pub mod compare;
pub mod formats;
pub mod grid;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod matrix;
pub mod merge;
pub mod tap;
pub mod text;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::run::case::InvocationRecord;
use crate::run::events::{CheckResult, Event, Migration, RunInfo, Status, Summary};

/// Something that consumes run events.
pub trait Reporter {
    fn event(&mut self, event: &Event);
    /// Called once after the last event; writes files.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A whole run, as saved in the JSON report (schema `stoat-conformance-report/1`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub info: Option<RunInfo>,
    /// When the run started, RFC 3339 in UTC (JUnit's suite timestamp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    pub smoke: Option<SmokeRecord>,
    /// In catalog order, whatever order the checks finished in.
    pub checks: Vec<CheckResult>,
    pub summary: Summary,
    pub smoke_failed: bool,
}

/// The smoke stage as saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SmokeRecord {
    pub passed: bool,
    pub findings: Vec<crate::finding::Finding>,
    /// The `--json version` invocation the verdict is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<InvocationRecord>,
}

pub const REPORT_SCHEMA: &str = "stoat-conformance-report/1";

/// The id the smoke stage reports under when it fails (a catalog check).
pub const SMOKE_ID: &str = "SMOKE.version";

/// The row a vacuous run (one that judged nothing it was asked to) ends with; not a catalog
/// check, a verdict on the run.
pub const VACUOUS_ID: &str = "RUN.judged-something";

impl Default for Report {
    fn default() -> Self {
        Report {
            schema: REPORT_SCHEMA.to_string(),
            info: None,
            started: None,
            smoke: None,
            checks: Vec::new(),
            summary: Summary::default(),
            smoke_failed: false,
        }
    }
}

impl Report {
    /// Folds one event into the report.
    pub fn absorb(&mut self, event: &Event) {
        match event {
            Event::Started(info) => {
                self.info = Some(info.clone());
                self.started = Some(
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
                );
            }
            Event::Smoke {
                passed,
                findings,
                invocation,
            } => {
                self.smoke = Some(SmokeRecord {
                    passed: *passed,
                    findings: findings.clone(),
                    invocation: invocation.clone(),
                })
            }
            Event::Check(result) => self.checks.push((**result).clone()),
            Event::Finished {
                summary,
                smoke_failed,
            } => {
                self.summary = summary.clone();
                self.smoke_failed = *smoke_failed;
                sort_catalog_order(&mut self.checks);
            }
        }
    }

    /// Rebuilds the event stream of a saved report (so any reporter can render it again).
    pub fn replay(&self) -> Vec<Event> {
        let mut events = Vec::new();
        if let Some(info) = &self.info {
            events.push(Event::Started(info.clone()));
        }
        if let Some(smoke) = &self.smoke {
            events.push(Event::Smoke {
                passed: smoke.passed,
                findings: smoke.findings.clone(),
                invocation: smoke.invocation.clone(),
            });
        }
        events.extend(
            self.checks
                .iter()
                .map(|c| Event::Check(Box::new(c.clone()))),
        );
        events.push(Event::Finished {
            summary: self.summary.clone(),
            smoke_failed: self.smoke_failed,
        });
        events
    }

    /// The rows every format shows: a failed smoke stage first, as the failing check
    /// `SMOKE.version` (so no consumer reads a broken SUT as "nothing ran, all fine"), then
    /// the checks in catalog order.
    pub fn rows(&self) -> Vec<Cow<'_, CheckResult>> {
        let mut rows = Vec::with_capacity(self.checks.len() + 1);
        if self.smoke_failed {
            rows.push(Cow::Owned(self.smoke_row()));
        }
        rows.extend(self.checks.iter().map(Cow::Borrowed));
        if !self.summary.vacuous.is_empty() {
            rows.push(Cow::Owned(self.vacuous_row()));
        }
        rows
    }

    /// A run that judged nothing it was asked to fails (exit 1); this row says so to every
    /// consumer, which would otherwise read a plan of skips as a pass.
    pub(crate) fn vacuous_row(&self) -> CheckResult {
        CheckResult {
            id: VACUOUS_ID.to_string(),
            title: "the run judged what it was asked to".to_string(),
            level: crate::Level::Must,
            tier: "pure".to_string(),
            tags: Vec::new(),
            spec_ref: String::new(),
            status: Status::Failed,
            reason: Some(format!(
                "judged nothing it was asked to: {}",
                self.summary.vacuous.join("; ")
            )),
            findings: Vec::new(),
            invocations: Vec::new(),
            duration_ms: 0,
            editions: Vec::new(),
            migration: None,
            scenarios: Vec::new(),
            requires: None,
            repro: None,
        }
    }

    pub(crate) fn smoke_row(&self) -> CheckResult {
        let def = crate::catalog::find(SMOKE_ID);
        let smoke = self.smoke.as_ref();
        CheckResult {
            id: SMOKE_ID.to_string(),
            title: def
                .map(|d| d.title.to_string())
                .unwrap_or_else(|| "`--json version` answers in contract".to_string()),
            level: crate::Level::Must,
            tier: "pure".to_string(),
            tags: def
                .map(|d| d.tags.iter().map(|t| t.to_string()).collect())
                .unwrap_or_default(),
            spec_ref: def
                .map(|d| d.spec.to_string())
                .unwrap_or_else(|| "json-v3#per-command-data".to_string()),
            status: Status::Failed,
            reason: Some(smoke_reason()),
            findings: smoke.map(|s| s.findings.clone()).unwrap_or_default(),
            invocations: smoke
                .and_then(|s| s.invocation.clone())
                .into_iter()
                .collect(),
            duration_ms: 0,
            editions: def
                .map(|d| d.editions.list().iter().map(|e| e.number()).collect())
                .unwrap_or_default(),
            migration: None,
            scenarios: Vec::new(),
            requires: None,
            repro: self.info.as_ref().map(|info| {
                let invocation = smoke.and_then(|s| s.invocation.as_ref());
                crate::run::repro::Repro::new(
                    SMOKE_ID,
                    "pure",
                    SMOKE_ID,
                    invocation.map(|record| (0, record)),
                    &crate::run::repro::RunFacts {
                        sut_argv: &info.sut_argv,
                        seed: info.seed,
                        edition: info.contract,
                        profile: info.profile.as_deref(),
                    },
                )
            }),
        }
    }

    pub fn load(path: &std::path::Path) -> Result<Self, crate::error::HarnessError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| crate::error::HarnessError::io(path, e))?;
        let mut report: Report =
            serde_json::from_str(&text).map_err(|e| crate::error::HarnessError::BadInput {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        sort_catalog_order(&mut report.checks);
        Ok(report)
    }

    /// `passed/total` for badges and matrices: `total` counts every judged row (the smoke
    /// row included, skips not), `passed` those that kept the contract (PASS or WARN; an
    /// expected failure is still a failure of the implementation).
    pub fn passed_of_total(&self) -> (usize, usize) {
        let rows = self.rows();
        let judged = rows.iter().filter(|r| r.status != Status::Skipped);
        let passed = judged
            .clone()
            .filter(|r| matches!(r.status, Status::Passed | Status::Warned))
            .count();
        (passed, judged.count())
    }
}

/// Why the smoke row failed, in every format.
pub fn smoke_reason() -> String {
    format!(
        "the SUT does not answer `--json version` in any contract edition this suite knows ({}); no other check ran",
        crate::spec::Edition::ALL.map(|e| e.to_string()).join(", ")
    )
}

/// Whether a status is shown as a failure (fails the run, or the harness could not judge).
pub fn is_bad(status: Status) -> bool {
    status.fails_run() || status == Status::Errored
}

/// Catalog order; ids the catalog does not know (an older or newer suite's report) last, by id.
fn sort_catalog_order(checks: &mut [CheckResult]) {
    let all = crate::catalog::all();
    checks.sort_by_cached_key(|c| {
        (
            all.iter().position(|d| d.id == c.id).unwrap_or(usize::MAX),
            c.id.clone(),
        )
    });
}

/// The first finding of a row as one line (`pointer: message`), else its reason.
pub fn first_finding(row: &CheckResult) -> Option<String> {
    row.findings
        .first()
        .map(|f| format!("{}: {}", f.pointer, f.message))
        .or_else(|| row.reason.clone())
        .map(|t| text::one_line(&t))
}

/// A row's level as every format prints it: `MUST` or `SHOULD`, and for a check resting on
/// a knob of the SUT's profile rather than on the contract, which knob and whether the
/// profile declared it.
pub fn level_label(row: &CheckResult) -> String {
    match &row.requires {
        Some(req) if req.declared => {
            format!("{}, declared requirement {}", row.level.as_str(), req.key)
        }
        Some(req) => format!(
            "{}, requirement {} not declared",
            row.level.as_str(),
            req.key
        ),
        None => row.level.as_str().to_string(),
    }
}

/// The closing line every human-facing summary ends with, exactly `N passed, N failed, N
/// skipped` (what CI systems and the docs read); the details go on the lines before it
/// ([`closing_details`]).
///
/// The summary already counts a failed smoke stage as one failure; a run that judged
/// nothing it was asked to counts its `RUN.judged-something` row as one too, so the line
/// never reads `0 failed` for a run that fails.
pub fn closing_line(summary: &Summary) -> String {
    format!(
        "{} passed, {} failed, {} skipped",
        summary.passed + summary.warned + summary.expected_failures,
        summary.failed
            + summary.crashed
            + summary.stale_baseline
            + summary.errored
            + usize::from(!summary.vacuous.is_empty()),
        summary.skipped
    )
}

/// The lines before the closing line: a run that judged nothing it was asked to says so (it
/// fails), then what was not run, one cause a line with how many checks it stopped.
pub fn closing_details(summary: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    if !summary.vacuous.is_empty() {
        lines.push(format!(
            "FAILED: judged nothing it was asked to: {} (pass --allow-empty to accept)",
            summary.vacuous.join("; ")
        ));
    }
    lines.extend(summary.not_run.iter().map(|n| format!("not run: {n}")));
    lines
}

/// The migration view's two groups over a report's rows: the failures the documented
/// changes between the editions explain (id, change), and the violations of both editions.
pub fn migration_groups(rows: &[&CheckResult]) -> (Vec<(String, String)>, Vec<String>) {
    let mut explained = Vec::new();
    let mut both = Vec::new();
    for row in rows {
        match &row.migration {
            Some(Migration::Explained { change }) => {
                explained.push((row.id.clone(), change.clone()))
            }
            Some(Migration::BothEditions) => both.push(row.id.clone()),
            None => {}
        }
    }
    (explained, both)
}
