//! Owns the reporters: each consumes runner [`Event`]s and nothing else (adding a format
//! touches one file and one arm of [`render`]). Also the saved-report model ([`Report`])
//! that every file format is rendered from, so a live run and `report r.json` print the
//! same bytes, and the catalog renderer behind `list`.

pub mod catalog_doc;
pub mod compare;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod matrix;
pub mod tap;
pub mod text;

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::run::case::InvocationRecord;
use crate::run::events::{CheckResult, Event, RunInfo, Status, Summary};

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
    fn vacuous_row(&self) -> CheckResult {
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
        }
    }

    fn smoke_row(&self) -> CheckResult {
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
            reason: Some(SMOKE_REASON.to_string()),
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
pub const SMOKE_REASON: &str =
    "smoke stage failed: the SUT does not answer `--json version` in contract; no other check ran";

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

/// The closing line every human-facing summary ends with (`N passed, N failed, N skipped`).
///
/// The summary already counts a failed smoke stage as one failure.
/// A run that judged nothing it was asked to says so (it fails), and what was not run is
/// named with its reason.
pub fn closing_line(summary: &Summary) -> String {
    let mut tail = String::new();
    if !summary.vacuous.is_empty() {
        tail.push_str(&format!(
            "; FAILED: judged nothing it was asked to: {} (pass --allow-empty to accept)",
            summary.vacuous.join("; ")
        ));
    }
    if !summary.not_run.is_empty() {
        tail.push_str(&format!("; not run: {}", summary.not_run.join("; ")));
    }
    format!(
        "{} passed, {} failed, {} skipped{tail}",
        summary.passed + summary.warned + summary.expected_failures,
        summary.failed + summary.crashed + summary.stale_baseline + summary.errored,
        summary.skipped
    )
}

/// A file format a run can write and `report` can print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Junit,
    Tap(tap::Version),
    Html,
    Markdown,
}

/// Renders a whole report in one format.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Json => json::render(report),
        Format::Junit => junit::render(report),
        Format::Tap(version) => tap::render(report, version),
        Format::Html => html::render(report),
        Format::Markdown => markdown::render(report),
    }
}

/// Writes one format to a file when the run finishes.
pub struct FileReporter {
    path: PathBuf,
    format: Format,
    report: Report,
}

impl FileReporter {
    pub fn new(path: PathBuf, format: Format) -> Self {
        FileReporter {
            path,
            format,
            report: Report::default(),
        }
    }
}

impl Reporter for FileReporter {
    fn event(&mut self, event: &Event) {
        self.report.absorb(event);
    }

    fn finish(&mut self) -> std::io::Result<()> {
        std::fs::write(&self.path, render(&self.report, self.format))
    }
}
