//! Owns the HTML report: ONE self-contained page (inline CSS, no script, no external asset)
//! that reads on a phone as well as on a desktop. Top to bottom: the run's facts and verdict
//! (a failed smoke stage with its reason), a summary table of counts linking to the rows, the
//! failures (first finding, link to the row), the check matrix (area × tier, counts by
//! status), then every row, failures first, whose findings and invocations unfold with
//! `<details>`. Long lines wrap or scroll inside their own box; the SUT's control bytes are
//! shown escaped.
//!
//! Also the page of several implementations side by side ([`matrix_page`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{closing_line, first_finding, is_bad, text, Report};
use crate::run::events::{CheckResult, Status};

const STYLE: &str = "*{box-sizing:border-box}
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;max-width:80em;color:#222;overflow-wrap:break-word}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .4em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.passed{background:#d9f2d9}.failed,.crashed,.stale_baseline,.errored{background:#f7d4d4}
.warned{background:#fcefc7}.skipped{background:#eee;color:#555}.expected_failure{background:#e4dcf5}
.verdict{font-size:1.1em;padding:.5em .8em;border-radius:4px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f8f8f8;padding:4px;margin:2px 0;max-height:20em;overflow:auto;max-width:100%}
code{font-size:.85em;overflow-wrap:anywhere}summary{cursor:pointer}
.st,th{white-space:nowrap;overflow-wrap:normal}td{overflow-wrap:anywhere}
table.rows{width:100%}table.rows th.wide,table.rows td.wide{width:1%;overflow-wrap:normal}td.nw{white-space:nowrap}
td.id{white-space:nowrap;overflow-wrap:normal;position:sticky;left:0;background:#fff}
@media (max-width:40em){body{padding:.5em;font-size:14px}td,th{padding:2px 4px}.wide{display:none}}";

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
}

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    let rows = report.rows();
    let rows: Vec<&CheckResult> = rows.iter().map(|r| r.as_ref()).collect();
    let mut out = String::new();
    head(&mut out, "stoat-conformance report");
    let _ = writeln!(out, "<h1>stoat-conformance report</h1>");
    if let Some(info) = &report.info {
        let _ = writeln!(
            out,
            "<p>Suite {} judging contract {} against <code>{}</code> (version {}), seed {} ({}), {} jobs, tiers {}{}.</p>",
            escape(&info.suite_version),
            info.contract,
            escape(&info.sut),
            escape(info.sut_version.as_deref().unwrap_or("unknown")),
            info.seed,
            escape(info.seed_source.as_str()),
            info.jobs,
            escape(&info.tiers.join(", ")),
            report
                .started
                .as_deref()
                .map(|t| format!(", started {}", escape(t)))
                .unwrap_or_default()
        );
    }
    let summary = &report.summary;
    let bad = rows.iter().any(|r| is_bad(r.status));
    let _ = writeln!(
        out,
        "<p class=\"verdict {}\"><b>{}</b> &mdash; {}, {} ms in the SUT of {} ms.</p>",
        if bad { "failed" } else { "passed" },
        escape(&closing_line(summary)),
        text::count(summary.invocations, "invocation"),
        summary.sut_ms,
        summary.duration_ms
    );
    let details = super::closing_details(summary);
    if !details.is_empty() {
        let items: Vec<String> = details
            .iter()
            .map(|d| format!("<li>{}</li>", escape(d)))
            .collect();
        let _ = writeln!(out, "<ul class=\"details\">{}</ul>", items.join(""));
    }
    if report.smoke_failed {
        // The findings are the row's evidence, shown there once.
        let _ = writeln!(
            out,
            "<div class=\"verdict failed\"><b>Smoke stage failed</b>: {}. The evidence is in the row <a href=\"#{id}\"><code>{id}</code></a>.</div>",
            escape(&super::smoke_reason()),
            id = super::SMOKE_ID
        );
    }
    counts(&mut out, &rows);
    failures(&mut out, &rows);
    migration(&mut out, &rows);
    matrix(&mut out, &rows);
    checks_table(&mut out, &rows);
    out.push_str("</body></html>\n");
    out
}

const STATUSES: &[Status] = &[
    Status::Failed,
    Status::Crashed,
    Status::StaleBaseline,
    Status::Errored,
    Status::Warned,
    Status::ExpectedFailure,
    Status::Skipped,
    Status::Passed,
];

pub(crate) fn status_class(status: Status) -> &'static str {
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

/// Failures first, then warnings, expected failures, skips, passes; catalog order within.
fn display_rank(status: Status) -> usize {
    STATUSES.iter().position(|s| *s == status).unwrap_or(0)
}

/// One line per status present, with its count and a link to its first row.
fn counts(out: &mut String, rows: &[&CheckResult]) {
    out.push_str("<h2>Summary</h2>\n<div class=\"scroll\"><table><tr><th>status</th><th>checks</th><th>first</th></tr>\n");
    for status in STATUSES {
        let picked: Vec<&&CheckResult> = rows.iter().filter(|r| r.status == *status).collect();
        let Some(first) = picked.first() else {
            continue;
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"st {}\">{}</td><td>{}</td><td><a href=\"#{}\"><code>{}</code></a></td></tr>",
            status_class(*status),
            status.label(),
            picked.len(),
            escape(&first.id),
            escape(&first.id)
        );
    }
    let _ = writeln!(
        out,
        "<tr><th>total</th><th>{}</th><th></th></tr></table></div>",
        rows.len()
    );
}

fn failures(out: &mut String, rows: &[&CheckResult]) {
    let bad: Vec<&&CheckResult> = rows.iter().filter(|r| is_bad(r.status)).collect();
    if bad.is_empty() {
        out.push_str("<h2 id=\"failures\">Failures</h2>\n<p>None.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<h2 id=\"failures\">Failures ({})</h2>\n<div class=\"scroll\"><table><tr><th>status</th><th>check</th><th>first finding</th></tr>",
        bad.len()
    );
    for row in bad {
        let _ = writeln!(
            out,
            "<tr><td class=\"st {}\">{}</td><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td></tr>",
            status_class(row.status),
            row.status.label(),
            escape(&row.id),
            escape(&row.id),
            escape(&first_finding(row).unwrap_or_default())
        );
    }
    out.push_str("</table></div>\n");
}

/// The migration view's grouping: the violations of both editions first (fix these first),
/// then what the documented changes between the editions explain, each linking to its row.
fn migration(out: &mut String, rows: &[&CheckResult]) {
    let (explained, both) = super::migration_groups(rows);
    if explained.is_empty() && both.is_empty() {
        return;
    }
    let link = |id: &str| format!("<a href=\"#{0}\"><code>{0}</code></a>", escape(id));
    let _ = write!(
        out,
        "<h2 id=\"migration\">Migration view</h2>\n<p><b>{} violations of both editions</b> (bugs whatever edition you target):</p><ul>",
        both.len()
    );
    if both.is_empty() {
        out.push_str("<li>none</li>");
    }
    for id in &both {
        let _ = write!(out, "<li>{}</li>", link(id));
    }
    let _ = write!(
        out,
        "</ul>\n<details><summary>{} explained by the documented differences between the editions</summary><ul>",
        explained.len()
    );
    for (id, change) in &explained {
        let _ = write!(out, "<li>{}: {}</li>", link(id), escape(change));
    }
    out.push_str("</ul></details>\n");
}

/// Area (the id's prefix) × tier, each cell counting checks by status.
fn matrix(out: &mut String, checks: &[&CheckResult]) {
    let mut cells: BTreeMap<(&str, &str), BTreeMap<Status, usize>> = BTreeMap::new();
    let mut tiers: Vec<&str> = Vec::new();
    let mut areas: Vec<&str> = Vec::new();
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
        if !areas.contains(&area) {
            areas.push(area);
        }
    }
    tiers.sort_by_key(|t| ["pure", "fake", "real"].iter().position(|x| x == t));
    out.push_str("<h2>Check matrix</h2>\n<div class=\"scroll\"><table><tr><th>area</th>");
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
                    // The first status in display order is the worst present.
                    let worst = STATUSES
                        .iter()
                        .find(|s| counts.contains_key(s))
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
    out.push_str("</table></div>\n");
}

fn checks_table(out: &mut String, checks: &[&CheckResult]) {
    let mut ordered: Vec<&&CheckResult> = checks.iter().collect();
    // A stable sort keeps catalog order within a status.
    ordered.sort_by_key(|c| display_rank(c.status));
    out.push_str("<h2>Checks</h2>\n<div class=\"scroll\"><table class=\"rows\"><tr><th>status</th><th>check</th><th class=\"wide\">level</th><th class=\"wide\">tier</th><th class=\"wide\">section</th></tr>\n");
    for check in ordered {
        let _ = write!(
            out,
            "<tr id=\"{id}\"><td class=\"st {class}\">{label}</td><td><code>{id}</code><br>{title}",
            id = escape(&check.id),
            class = status_class(check.status),
            label = check.status.label(),
            title = escape(&check.title),
        );
        if let Some(reason) = &check.reason {
            let _ = write!(out, "<br><i>{}</i>", escape(reason));
        }
        evidence(out, check);
        let _ = writeln!(
            out,
            "</td><td class=\"wide\">{}</td><td class=\"wide nw\">{}</td><td class=\"wide nw\">{}</td></tr>",
            escape(&super::level_label(check)),
            escape(&check.tier),
            spec_link(&check.spec_ref)
        );
    }
    out.push_str("</table></div>\n");
}

fn evidence(out: &mut String, check: &CheckResult) {
    if let Some(repro) = &check.repro {
        let lines: Vec<String> = repro.lines().iter().map(|l| escape(l)).collect();
        let _ = write!(out, "<pre class=\"repro\">{}</pre>", lines.join("\n"));
    }
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
            "<li>{} <code>{}</code> {} [{}]</li>",
            finding.level.as_str(),
            escape(&finding.pointer),
            escape(&finding.message),
            spec_link(&finding.spec_ref)
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

/// Several implementations side by side: one column per report (with its SUT, version and
/// edition, and `passed/total`), one row per check id any of them ran.
pub fn matrix_page(reports: &[(String, Report)]) -> String {
    let mut out = String::new();
    head(&mut out, "stoat-conformance: implementations side by side");
    out.push_str(MATRIX_STYLE);
    out.push_str("<h1>Implementations side by side</h1>\n");
    let grid = super::grid::Grid::new(reports);
    // A checkbox and a sibling rule: no script, and the page still works as a file.
    out.push_str(
        "<input type=\"checkbox\" id=\"differ\"><label for=\"differ\"> only the checks whose verdicts differ</label>\n",
    );
    out.push_str(
        "<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th class=\"id\">check</th>",
    );
    for column in &grid.columns {
        let _ = write!(
            out,
            "<th><a href=\"{name}.html\">{name}</a><br><small>version {}, contract {}</small><br>{}/{} passed</th>",
            escape(&column.version),
            escape(&column.edition),
            column.passed,
            column.total,
            name = escape(&column.name),
        );
    }
    out.push_str("</tr></thead><tbody>\n");
    for (id, cells) in &grid.rows {
        let labels: Vec<Option<&str>> = cells
            .iter()
            .map(|cell| cell.as_ref().map(|(status, _)| status.label()))
            .collect();
        let same = labels.windows(2).all(|pair| pair[0] == pair[1]);
        // The id stays whole and in view while a narrow screen scrolls the grid sideways.
        let _ = write!(
            out,
            "<tr{}><td class=\"id\"><code>{}</code></td>",
            if same { " class=\"same\"" } else { "" },
            escape(id)
        );
        for (column, cell) in grid.columns.iter().zip(cells) {
            match cell {
                Some((status, finding)) => {
                    // A failure's reason is on the page, not in a tooltip a phone cannot show.
                    let why = match finding.as_deref() {
                        Some(text) if is_bad(*status) => {
                            format!("<div class=\"why\">{}</div>", escape(&cut(text, 160)))
                        }
                        _ => String::new(),
                    };
                    let _ = write!(
                        out,
                        "<td class=\"st {}\"><a href=\"{}.html#{}\">{}</a>{why}</td>",
                        status_class(*status),
                        escape(&column.name),
                        escape(id),
                        status.label()
                    );
                }
                None => out.push_str("<td>&ndash;</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n</body></html>\n");
    out
}

/// The matrix's own rules: a header that stays in view, reasons under the verdicts, and the
/// "only rows that differ" switch.
const MATRIX_STYLE: &str = "<style>table.matrix thead th{position:sticky;top:0;z-index:2}\
table.matrix th.id{left:0;z-index:3}table.matrix td.st{white-space:normal;min-width:6em}\
.why{font-size:.8em;color:#333;max-width:18em;overflow-wrap:anywhere}\
table.matrix a{color:inherit}#differ:checked~.scroll tr.same{display:none}</style>\n";

/// `text` cut to about `max` characters, with an ellipsis when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('\u{2026}');
    out
}

/// A spec id as a link to its section in the restated contract the suite ships
/// ([`crate::spec::doc_link`], relative to the page); text that is not a spec id stays text.
fn spec_link(spec_ref: &str) -> String {
    let is_spec_id = spec_ref.split_once('#').is_some_and(|(family, section)| {
        !family.is_empty()
            && !section.is_empty()
            && spec_ref
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '#' | '_' | '.'))
    });
    if !is_spec_id {
        return escape(spec_ref);
    }
    format!(
        "<a href=\"{}\">{}</a>",
        escape(&crate::spec::doc_link(spec_ref)),
        escape(spec_ref)
    )
}

/// Escapes text for HTML element content and attribute values; control characters (an
/// ANSI escape from a broken SUT) are shown as escapes, never passed on.
pub fn escape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in text::multi_line(raw).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
