//! Owns the markdown summary of one report (`report r.json --format md`), written for a CI
//! job summary: the closing line and the run's facts first, then the failures (status, level,
//! first finding) with their evidence folded, then warnings, expected failures and skips.

use std::fmt::Write as _;

use super::{closing_line, first_finding, is_bad, text, Report};
use crate::run::events::{CheckResult, Status};

/// Rows whose findings are listed in full; beyond it only the table row (a job summary is
/// capped at about 1 MiB).
const MAX_DETAILED: usize = 40;

pub fn render(report: &Report) -> String {
    let rows = report.rows();
    let mut out = format!(
        "## stoat-conformance: {}\n\n",
        closing_line(&report.summary)
    );
    if let Some(info) = &report.info {
        let _ = writeln!(
            out,
            "Suite {} judging contract {} against `{}` (version {}), tiers {}, seed {}.\n",
            cell(&info.suite_version),
            info.contract,
            cell(&info.sut).replace('`', "'"),
            cell(info.sut_version.as_deref().unwrap_or("unknown")),
            info.tiers.join(", "),
            info.seed
        );
    }
    let failing: Vec<&CheckResult> = rows
        .iter()
        .map(|r| r.as_ref())
        .filter(|r| is_bad(r.status))
        .collect();
    if failing.is_empty() {
        out.push_str("No failure.\n\n");
    } else if failing.len() == 1 && failing[0].id == super::VACUOUS_ID {
        let _ = writeln!(
            out,
            "**The run fails**: it {}.\n",
            cell(failing[0].reason.as_deref().unwrap_or("judged nothing"))
        );
    } else {
        let _ = writeln!(out, "### Failures ({})\n", failing.len());
        table(&mut out, &failing);
        out.push('\n');
        for row in failing.iter().take(MAX_DETAILED) {
            evidence(&mut out, row);
        }
        if failing.len() > MAX_DETAILED {
            let _ = writeln!(
                out,
                "({} more failures: see the JSON or HTML report.)\n",
                failing.len() - MAX_DETAILED
            );
        }
    }
    for (title, status) in [
        ("Warnings", Status::Warned),
        ("Expected failures", Status::ExpectedFailure),
        ("Skipped", Status::Skipped),
    ] {
        let picked: Vec<&CheckResult> = rows
            .iter()
            .map(|r| r.as_ref())
            .filter(|r| r.status == status)
            .collect();
        if picked.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<details><summary>{title} ({})</summary>\n",
            picked.len()
        );
        table(&mut out, &picked);
        out.push_str("\n</details>\n\n");
    }
    let passed = rows.iter().filter(|r| r.status == Status::Passed).count();
    let _ = writeln!(out, "{passed} checks passed.");
    out
}

fn table(out: &mut String, rows: &[&CheckResult]) {
    out.push_str("| check | status | level | tier | first finding |\n|---|---|---|---|---|\n");
    for row in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            row.id,
            row.status.label(),
            row.level.as_str(),
            cell(&row.tier),
            cell(&first_finding(row).unwrap_or_default())
        );
    }
}

fn evidence(out: &mut String, row: &CheckResult) {
    let _ = writeln!(
        out,
        "<details><summary><code>{}</code> {}: {}</summary>\n",
        row.id,
        row.status.label(),
        cell(&row.title)
    );
    if let Some(reason) = &row.reason {
        let _ = writeln!(out, "- reason: {}", cell(reason));
    }
    for finding in &row.findings {
        let _ = writeln!(
            out,
            "- {} {}: {} [{}]",
            finding.level.as_str(),
            cell(&finding.pointer),
            cell(&finding.message),
            cell(&finding.spec_ref)
        );
    }
    for record in &row.invocations {
        let capture = &record.capture;
        let _ = writeln!(
            out,
            "- invocation {} -> {}",
            cell(&capture.argv_display()),
            capture.ending.describe()
        );
    }
    out.push_str("\n</details>\n\n");
}

/// Text safe inside a table cell or a list item: one line, control bytes escaped, markup
/// characters neutralised.
pub fn cell(raw: &str) -> String {
    text::one_line(raw)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
}
