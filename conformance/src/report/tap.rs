//! Owns the TAP report: a plan, one test point per row (a failed smoke stage is the failing
//! point `SMOKE.version`, never a skip-all plan), XFAIL as `# TODO`, SKIP as `# SKIP`, and
//! YAML diagnostics under every point that is not a plain pass or skip.
//!
//! The diagnostics keep to the YAML subset that both Perl's TAP::Harness (a "YAMLish" reader)
//! and a full YAML parser read the same way: block mappings with plain lower-case keys,
//! sequences of mappings (never of bare scalars: the YAMLish reader takes `- word: ...` for a
//! mapping), integers, and single-line single-quoted strings in which every control character
//! is shown as an escape. No block scalars, no multi-line or double-quoted strings.

use std::fmt::Write as _;

use super::{first_finding, text, Report};
use crate::run::events::{CheckResult, Status};

/// The `TAP version` line: 13 is what TAP::Harness (prove) accepts; 14 is for consumers that
/// want it (tap-parser reads both). The body is the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Version {
    #[default]
    V13,
    V14,
}

impl Version {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "13" => Some(Version::V13),
            "14" => Some(Version::V14),
            _ => None,
        }
    }

    fn number(self) -> u8 {
        match self {
            Version::V13 => 13,
            Version::V14 => 14,
        }
    }
}

/// How many findings and invocations a point's diagnostics list before saying "and N more".
const MAX_FINDINGS: usize = 20;
const MAX_INVOCATIONS: usize = 5;
/// Characters of stdout/stderr kept per invocation.
const MAX_OUTPUT: usize = 2000;

pub fn render(report: &Report, version: Version) -> String {
    let rows = report.rows();
    let mut out = format!("TAP version {}\n1..{}\n", version.number(), rows.len());
    for (index, row) in rows.iter().enumerate() {
        point(&mut out, index + 1, row);
    }
    out
}

/// TAP written as the run goes (`--tap -`): the version line first, a point per check as it
/// finishes, the rows a run adds at its end (a failed smoke stage, a vacuous run), then the
/// plan, last, as TAP allows.
pub struct Stream<W: std::io::Write> {
    out: W,
    version: Version,
    points: usize,
    report: Report,
}

impl<W: std::io::Write> Stream<W> {
    pub fn new(out: W, version: Version) -> Self {
        Stream {
            out,
            version,
            points: 0,
            report: Report::default(),
        }
    }

    fn write(&mut self, row: &CheckResult) {
        self.points += 1;
        let mut text = String::new();
        point(&mut text, self.points, row);
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }
}

impl<W: std::io::Write> super::Reporter for Stream<W> {
    fn event(&mut self, event: &crate::run::Event) {
        self.report.absorb(event);
        match event {
            crate::run::Event::Started(_) => {
                let _ = writeln!(self.out, "TAP version {}", self.version.number());
            }
            crate::run::Event::Check(result) => self.write(result),
            crate::run::Event::Finished { .. } => {
                if self.report.smoke_failed {
                    let row = self.report.smoke_row();
                    self.write(&row);
                }
                if !self.report.summary.vacuous.is_empty() {
                    let row = self.report.vacuous_row();
                    self.write(&row);
                }
                let _ = writeln!(self.out, "1..{}", self.points);
            }
            crate::run::Event::Smoke { .. } => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn point(out: &mut String, number: usize, row: &CheckResult) {
    let reason = row.reason.as_deref().map(description).unwrap_or_default();
    let (word, directive) = match row.status {
        Status::Passed | Status::Warned => ("ok", String::new()),
        Status::Skipped => ("ok", format!(" # SKIP {reason}")),
        Status::ExpectedFailure => ("not ok", format!(" # TODO {reason}")),
        Status::Failed | Status::Crashed | Status::StaleBaseline | Status::Errored => {
            ("not ok", String::new())
        }
    };
    let requirement = row
        .requires
        .as_ref()
        .map(|r| format!(" [{}]", r.describe()))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{word} {number} - {}: {}{}{}",
        description(&row.id),
        description(&row.title),
        description(&requirement),
        directive.trim_end()
    );
    if matches!(row.status, Status::Passed | Status::Skipped) {
        return;
    }
    out.push_str("  ---\n");
    if let Some(message) = first_finding(row) {
        let _ = writeln!(out, "  message: {}", quote(&message));
    }
    let _ = writeln!(out, "  status: {}", quote(row.status.label()));
    let _ = writeln!(out, "  level: {}", quote(&super::level_label(row)));
    let _ = writeln!(out, "  tier: {}", quote(&row.tier));
    let _ = writeln!(out, "  spec: {}", quote(&row.spec_ref));
    if let Some(reason) = &row.reason {
        let _ = writeln!(out, "  reason: {}", quote(reason));
    }
    if !row.findings.is_empty() {
        out.push_str("  findings:\n");
        for finding in row.findings.iter().take(MAX_FINDINGS) {
            let _ = writeln!(out, "    - pointer: {}", quote(&finding.pointer));
            let _ = writeln!(out, "      message: {}", quote(&finding.message));
            let _ = writeln!(out, "      level: {}", quote(finding.level.as_str()));
            let _ = writeln!(out, "      spec: {}", quote(&finding.spec_ref));
        }
        if row.findings.len() > MAX_FINDINGS {
            let _ = writeln!(
                out,
                "  more_findings: {}",
                row.findings.len() - MAX_FINDINGS
            );
        }
    }
    if !row.invocations.is_empty() {
        out.push_str("  invocations:\n");
        for record in row.invocations.iter().take(MAX_INVOCATIONS) {
            let capture = &record.capture;
            let _ = writeln!(out, "    - argv: {}", quote(&capture.argv_display()));
            let _ = writeln!(out, "      ending: {}", quote(&capture.ending.describe()));
            if let Some(code) = capture.ending.code() {
                let _ = writeln!(out, "      exit: {code}");
            }
            for (name, bytes) in [("stdout", &capture.stdout.0), ("stderr", &capture.stderr.0)] {
                if !bytes.is_empty() {
                    let shown = text::truncate(&String::from_utf8_lossy(bytes), MAX_OUTPUT);
                    let _ = writeln!(out, "      {name}: {}", quote(&shown));
                }
            }
        }
        if row.invocations.len() > MAX_INVOCATIONS {
            let _ = writeln!(
                out,
                "  more_invocations: {}",
                row.invocations.len() - MAX_INVOCATIONS
            );
        }
    }
    if let Some(repro) = &row.repro {
        out.push_str("  repro:\n");
        if let Some(argv) = &repro.argv {
            let _ = writeln!(out, "    argv: {}", quote(argv));
        }
        if let Some(ending) = &repro.ending {
            let _ = writeln!(out, "    ending: {}", quote(ending));
        }
        for (name, lines) in [("stdout", &repro.stdout), ("stderr", &repro.stderr)] {
            if !lines.is_empty() {
                let _ = writeln!(out, "    {name}: {}", quote(&lines.join("\n")));
            }
        }
        let _ = writeln!(out, "    command: {}", quote(&repro.command));
    }
    out.push_str("  ...\n");
}

/// A test point's description or directive text: one line, `#` escaped so it never starts
/// a directive.
fn description(text: &str) -> String {
    text::one_line(text)
        .replace('\\', "\\\\")
        .replace('#', "\\#")
}

/// A YAML single-quoted scalar on one line.
fn quote(text: &str) -> String {
    format!("'{}'", text::one_line(text).replace('\'', "''"))
}
