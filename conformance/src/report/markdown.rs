//! Owns the markdown summary of one report (`report r.json --format md`), written for a CI
//! job summary: the closing line and the run's facts first, then the failures (status, level,
//! first finding) with their evidence folded, then warnings, expected failures and skips.

use std::fmt::Write as _;

use super::{closing_details, closing_line, first_finding, is_bad, text, Report};
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
    let details = closing_details(&report.summary);
    if !details.is_empty() {
        for line in &details {
            let _ = writeln!(out, "- {}", cell(line));
        }
        out.push('\n');
    }
    if let Some(info) = &report.info {
        let _ = writeln!(
            out,
            "Suite {} judging contract {} against {} (version {}), tiers {}, seed {} ({}).\n",
            cell(&info.suite_version),
            info.contract,
            cell(&info.sut),
            cell(info.sut_version.as_deref().unwrap_or("unknown")),
            info.tiers.join(", "),
            info.seed,
            info.seed_source.as_str()
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
    migration(
        &mut out,
        &rows.iter().map(|r| r.as_ref()).collect::<Vec<_>>(),
    );
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

/// The migration view's grouping, as the terminal shows it: what the documented changes
/// between the editions explain, and the violations of both editions (fix these first).
fn migration(out: &mut String, rows: &[&CheckResult]) {
    let (explained, both) = super::migration_groups(rows);
    if explained.is_empty() && both.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Migration view\n\n**{} violations of both editions** (bugs whatever edition you target):\n",
        both.len()
    );
    if both.is_empty() {
        out.push_str("- none\n");
    }
    for id in &both {
        let _ = writeln!(out, "- `{id}`");
    }
    let _ = writeln!(
        out,
        "\n<details><summary>{} explained by the documented differences between the editions</summary>\n",
        explained.len()
    );
    for (id, change) in &explained {
        let _ = writeln!(out, "- `{id}`: {}", cell(change));
    }
    out.push_str("\n</details>\n\n");
}

fn table(out: &mut String, rows: &[&CheckResult]) {
    out.push_str("| check | status | level | tier | first finding |\n|---|---|---|---|---|\n");
    for row in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            row.id,
            row.status.label(),
            cell(&super::level_label(row)),
            cell(&row.tier),
            cell(&first_finding(row).unwrap_or_default())
        );
    }
}

fn evidence(out: &mut String, row: &CheckResult) {
    // The summary line is an HTML block, where Markdown is not read: HTML escapes only.
    let _ = writeln!(
        out,
        "<details><summary><code>{}</code> {}: {}</summary>\n",
        html(&row.id),
        row.status.label(),
        html(&row.title)
    );
    if let Some(reason) = &row.reason {
        let _ = writeln!(out, "- reason: {}", cell(reason));
    }
    if let Some(req) = &row.requires {
        let _ = writeln!(out, "- {}", cell(&req.describe()));
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
    if let Some(repro) = &row.repro {
        for line in repro.lines() {
            let _ = writeln!(out, "- {}", cell(&line));
        }
    }
    out.push_str("\n</details>\n\n");
}

/// Text shown as itself inside a table cell or a list item on GitHub (cmark-gfm): one line,
/// control bytes escaped, the characters Markdown or its tables read as markup
/// backslash-escaped (CommonMark lets any ASCII punctuation be), a leading list or heading
/// marker too, and `<`, `>`, `&` as entities so no HTML tag or entity forms.
pub fn cell(raw: &str) -> String {
    let mut out = String::new();
    for (i, c) in text::one_line(raw).chars().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text inside an HTML block of the Markdown (a `<summary>` line), where Markdown is not
/// read.
fn html(raw: &str) -> String {
    super::html::escape(&text::one_line(raw))
}
