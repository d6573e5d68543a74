//! Owns the reporters: each consumes runner [`Event`]s and nothing else (adding a format
//! touches one file and one arm here). Also the saved-report model ([`Report`]) that
//! `report` renders and compares, and the catalog renderer behind `list`.

pub mod catalog_doc;
pub mod compare;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod tap;

use serde::{Deserialize, Serialize};

use crate::run::events::{CheckResult, Event, RunInfo, Summary};

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
    pub smoke: Option<SmokeRecord>,
    pub checks: Vec<CheckResult>,
    pub summary: Summary,
    pub smoke_failed: bool,
}

/// The smoke stage as saved.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SmokeRecord {
    pub passed: bool,
    pub findings: Vec<crate::finding::Finding>,
}

pub const REPORT_SCHEMA: &str = "stoat-conformance-report/1";

impl Default for Report {
    fn default() -> Self {
        Report {
            schema: REPORT_SCHEMA.to_string(),
            info: None,
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
            Event::Started(info) => self.info = Some(info.clone()),
            Event::Smoke {
                passed, findings, ..
            } => {
                self.smoke = Some(SmokeRecord {
                    passed: *passed,
                    findings: findings.clone(),
                })
            }
            Event::Check(result) => self.checks.push((**result).clone()),
            Event::Finished {
                summary,
                smoke_failed,
            } => {
                self.summary = summary.clone();
                self.smoke_failed = *smoke_failed;
                self.checks.sort_by(|a, b| a.id.cmp(&b.id));
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
                invocation: None,
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

    pub fn load(path: &std::path::Path) -> Result<Self, crate::error::HarnessError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| crate::error::HarnessError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| crate::error::HarnessError::BadInput {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }
}

/// The closing line every human-facing summary ends with.
///
/// A failed smoke stage counts as one failure, so CI never reads "0 failed" for it.
/// A run that judged nothing it was asked to says so (it fails), and what was not run is
/// named with its reason.
pub fn closing_line(summary: &Summary, smoke_failed: bool) -> String {
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
        summary.failed
            + summary.crashed
            + summary.stale_baseline
            + summary.errored
            + usize::from(smoke_failed),
        summary.skipped
    )
}
