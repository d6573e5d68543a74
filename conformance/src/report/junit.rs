//! Owns the JUnit XML report, in the shape the common Jenkins/Ant schema accepts: one
//! `<testsuite>` (with `timestamp` and `time`) holding one `<testcase>` per row in catalog
//! order, each with `time`.
//!
//! FAIL and STALE are `<failure>`, CRASH and ERROR `<error>`, SKIP and XFAIL `<skipped>`,
//! each with `type` = the status and `message` = the first finding (or the reason). The
//! element's text lists every finding and the argv and ending of each invocation;
//! `<system-out>` carries those invocations' stdout and stderr, control bytes escaped.

use std::fmt::Write as _;

use super::{first_finding, text, Report};
use crate::run::events::{CheckResult, Status};

/// Characters of stdout/stderr kept per invocation in `<system-out>`.
const MAX_OUTPUT: usize = 4000;

pub fn render(report: &Report) -> String {
    let rows = report.rows();
    let count = |pick: fn(Status) -> bool| rows.iter().filter(|r| pick(r.status)).count();
    let failures = count(|s| matches!(s, Status::Failed | Status::StaleBaseline));
    let errors = count(|s| matches!(s, Status::Crashed | Status::Errored));
    let skipped = count(|s| matches!(s, Status::Skipped | Status::ExpectedFailure));
    let time = seconds(report.summary.duration_ms);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"stoat-conformance\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time}\">",
        rows.len()
    );
    // Ant's timestamp is ISO 8601 without a zone; ours is UTC.
    let timestamp = report
        .started
        .as_deref()
        .map(|t| format!(" timestamp=\"{}\"", attr(t.trim_end_matches('Z'))))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  <testsuite name=\"stoat-conformance\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\"{timestamp}>",
        rows.len()
    );
    if let Some(info) = &report.info {
        out.push_str("    <properties>\n");
        let mut property = |name: &str, value: &str| {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                attr(value)
            );
        };
        property("suite_version", &info.suite_version);
        property("contract", &info.contract.to_string());
        property("sut", &info.sut);
        property(
            "sut_version",
            info.sut_version.as_deref().unwrap_or("unknown"),
        );
        property("seed", &info.seed.to_string());
        property("seed_source", info.seed_source.name());
        property("tiers", &info.tiers.join(","));
        out.push_str("    </properties>\n");
    }
    for row in &rows {
        case(&mut out, row);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn case(out: &mut String, row: &CheckResult) {
    let _ = write!(
        out,
        "    <testcase name=\"{}\" classname=\"{}.{}\" time=\"{}\"",
        attr(&row.id),
        attr(&row.tier),
        attr(row.id.split('.').next().unwrap_or("")),
        seconds(row.duration_ms)
    );
    if let Some(req) = &row.requires {
        let _ = write!(out, " group=\"{}\"", attr(&req.describe()));
    }
    let element = match row.status {
        Status::Passed => None,
        Status::Warned => None,
        Status::Failed | Status::StaleBaseline => Some("failure"),
        Status::Crashed | Status::Errored => Some("error"),
        Status::Skipped | Status::ExpectedFailure => Some("skipped"),
    };
    let output = system_out(row);
    if element.is_none() && output.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    if let Some(element) = element {
        let message = match row.status {
            Status::ExpectedFailure => format!(
                "expected failure: {}",
                row.reason.as_deref().unwrap_or("listed in the baseline")
            ),
            Status::Skipped => row.reason.clone().unwrap_or_default(),
            _ => first_finding(row).unwrap_or_else(|| row.status.label().to_string()),
        };
        let _ = writeln!(
            out,
            "      <{element} type=\"{}\" message=\"{}\">{}</{element}>",
            row.status.label(),
            attr(&message),
            body(&details(row))
        );
    }
    if !output.is_empty() {
        let _ = writeln!(out, "      <system-out>{}</system-out>", body(&output));
    }
    out.push_str("    </testcase>\n");
}

/// The findings, then each invocation's argv and ending.
fn details(row: &CheckResult) -> String {
    let mut text = String::new();
    if let Some(reason) = &row.reason {
        let _ = writeln!(text, "reason: {reason}");
    }
    if let Some(req) = &row.requires {
        let _ = writeln!(text, "{}", req.describe());
    }
    for finding in &row.findings {
        let _ = writeln!(
            text,
            "{} {}: {} [{}]",
            finding.level.as_str(),
            finding.pointer,
            finding.message,
            finding.spec_ref
        );
    }
    for record in &row.invocations {
        let _ = writeln!(
            text,
            "$ stoat {}\n  -> {}",
            record.capture.argv_display(),
            record.capture.ending.describe()
        );
    }
    if let Some(repro) = &row.repro {
        for line in repro.lines() {
            let _ = writeln!(text, "{line}");
        }
    }
    text
}

/// Each invocation's stdout and stderr (for a passing row: only when it warned).
fn system_out(row: &CheckResult) -> String {
    if matches!(row.status, Status::Passed | Status::Skipped) {
        return String::new();
    }
    let mut text = String::new();
    if row.status == Status::Warned {
        text.push_str(&details(row));
    }
    for record in &row.invocations {
        let capture = &record.capture;
        let _ = writeln!(
            text,
            "$ stoat {}\n  -> {}",
            capture.argv_display(),
            capture.ending.describe()
        );
        for (name, bytes) in [("stdout", &capture.stdout.0), ("stderr", &capture.stderr.0)] {
            if bytes.is_empty() {
                continue;
            }
            let shown = text::truncate(&String::from_utf8_lossy(bytes), MAX_OUTPUT);
            let _ = writeln!(text, "--- {name}\n{}", shown.trim_end_matches('\n'));
        }
    }
    text
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Escapes element text (control characters other than newline and tab made visible:
/// XML 1.0 cannot carry them at all).
fn body(raw: &str) -> String {
    xml_escape(&text::multi_line(raw))
}

/// Escapes an attribute value, on one line.
fn attr(raw: &str) -> String {
    xml_escape(&text::one_line(raw))
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
