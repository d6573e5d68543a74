//! Owns the HTML report: ONE self-contained page (inline CSS, no script, no external asset)
//! with the run's facts, the check matrix (area × tier, counts by status) and a row per
//! check whose findings and invocations unfold with `<details>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{closing_line, Report};
use crate::run::events::{CheckResult, Status};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.passed{background:#d9f2d9}.failed,.crashed,.stale_baseline,.errored{background:#f7d4d4}
.warned{background:#fcefc7}.skipped{background:#eee;color:#666}.expected_failure{background:#e4dcf5}
pre{white-space:pre-wrap;word-break:break-all;background:#f8f8f8;padding:4px;margin:2px 0;max-height:20em;overflow:auto}
code{font-size:12px}summary{cursor:pointer}";

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stoat-conformance report</title><style>{STYLE}</style></head><body>\n"
    );
    let _ = writeln!(out, "<h1>stoat-conformance report</h1>");
    if let Some(info) = &report.info {
        let _ = writeln!(
            out,
            "<p>Suite {} judging contract {} against <code>{}</code> (version {}), seed {}, {} jobs, tiers {}.</p>",
            escape(&info.suite_version),
            info.contract,
            escape(&info.sut),
            escape(info.sut_version.as_deref().unwrap_or("unknown")),
            info.seed,
            info.jobs,
            escape(&info.tiers.join(", "))
        );
    }
    if report.smoke_failed {
        let _ = writeln!(out, "<p class=\"failed\"><b>Smoke stage failed</b>: the SUT does not answer <code>--json version</code> in contract 3; no check ran.</p>");
    }
    let summary = &report.summary;
    let _ = writeln!(
        out,
        "<p><b>{}</b> &mdash; {} invocations, {} ms in the SUT of {} ms.</p>",
        escape(&closing_line(summary)),
        summary.invocations,
        summary.sut_ms,
        summary.duration_ms
    );
    matrix(&mut out, &report.checks);
    checks_table(&mut out, &report.checks);
    out.push_str("</body></html>\n");
    out
}

const STATUSES: &[Status] = &[
    Status::Passed,
    Status::Failed,
    Status::Crashed,
    Status::Warned,
    Status::Skipped,
    Status::ExpectedFailure,
    Status::StaleBaseline,
    Status::Errored,
];

fn status_class(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Crashed => "crashed",
        Status::Warned => "warned",
        Status::Skipped => "skipped",
        Status::ExpectedFailure => "expected_failure",
        Status::StaleBaseline => "stale_baseline",
        Status::Errored => "errored",
    }
}

/// Area (the id's prefix) × tier, each cell counting checks by status.
fn matrix(out: &mut String, checks: &[CheckResult]) {
    let mut cells: BTreeMap<(&str, &str), BTreeMap<Status, usize>> = BTreeMap::new();
    let mut tiers: Vec<&str> = Vec::new();
    for check in checks {
        let area = check.id.split('.').next().unwrap_or("");
        *cells
            .entry((area, check.tier.as_str()))
            .or_default()
            .entry(check.status)
            .or_default() += 1;
        if !tiers.contains(&check.tier.as_str()) {
            tiers.push(check.tier.as_str());
        }
    }
    tiers.sort_by_key(|t| ["pure", "fake", "real"].iter().position(|x| x == t));
    let mut areas: Vec<&str> = cells.keys().map(|(a, _)| *a).collect();
    areas.dedup();
    out.push_str("<h2>Check matrix</h2>\n<table><tr><th>area</th>");
    for tier in &tiers {
        let _ = write!(out, "<th>{}</th>", escape(tier));
    }
    out.push_str("</tr>\n");
    for area in areas {
        let _ = write!(out, "<tr><th>{}</th>", escape(area));
        for tier in &tiers {
            match cells.get(&(area, *tier)) {
                None => out.push_str("<td></td>"),
                Some(counts) => {
                    let worst = STATUSES
                        .iter()
                        .filter(|s| counts.contains_key(s))
                        .max_by_key(|s| severity(**s))
                        .copied()
                        .unwrap_or(Status::Passed);
                    let text: Vec<String> = STATUSES
                        .iter()
                        .filter_map(|s| counts.get(s).map(|n| format!("{n} {}", s.label())))
                        .collect();
                    let _ = write!(
                        out,
                        "<td class=\"{}\">{}</td>",
                        status_class(worst),
                        text.join(", ")
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn severity(status: Status) -> u8 {
    match status {
        Status::Passed => 0,
        Status::Skipped => 1,
        Status::ExpectedFailure => 2,
        Status::Warned => 3,
        Status::StaleBaseline => 4,
        Status::Errored => 5,
        Status::Failed => 6,
        Status::Crashed => 7,
    }
}

fn checks_table(out: &mut String, checks: &[CheckResult]) {
    out.push_str("<h2>Checks</h2>\n<table><tr><th>status</th><th>id</th><th>level</th><th>tier</th><th>section</th><th>what it checks, and what was found</th></tr>\n");
    for check in checks {
        let _ = write!(
            out,
            "<tr id=\"{id}\"><td class=\"{class}\">{label}</td><td><code>{id}</code></td><td>{level}</td><td>{tier}</td><td>{spec}</td><td>{title}",
            id = escape(&check.id),
            class = status_class(check.status),
            label = check.status.label(),
            level = check.level.as_str(),
            tier = escape(&check.tier),
            spec = escape(&check.spec_ref),
            title = escape(&check.title),
        );
        if let Some(reason) = &check.reason {
            let _ = write!(out, "<br><i>{}</i>", escape(reason));
        }
        evidence(out, check);
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n");
}

fn evidence(out: &mut String, check: &CheckResult) {
    if check.findings.is_empty() && check.invocations.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<details><summary>{} finding(s), {} invocation(s)</summary><ul>",
        check.findings.len(),
        check.invocations.len()
    );
    for finding in &check.findings {
        let _ = write!(
            out,
            "<li>{} <code>{}</code> {}</li>",
            finding.level.as_str(),
            escape(&finding.pointer),
            escape(&finding.message)
        );
    }
    out.push_str("</ul>");
    for record in &check.invocations {
        let capture = &record.capture;
        let _ = write!(
            out,
            "<p><code>stoat {}</code> &rarr; {}</p><pre>{}</pre>",
            escape(&capture.argv_display()),
            escape(&capture.ending.describe()),
            escape(&String::from_utf8_lossy(&capture.stdout.0))
        );
        if !capture.stderr.0.is_empty() {
            let _ = write!(
                out,
                "<pre>stderr: {}</pre>",
                escape(&String::from_utf8_lossy(&capture.stderr.0))
            );
        }
    }
    out.push_str("</details>");
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (an ANSI escape from a broken SUT) are shown, never passed on.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}
