//! Owns `report --compare a.json b.json`: markdown of what newly fails, newly passes, and
//! what appeared or disappeared, for a pull request comment.

use std::collections::BTreeMap;

use super::{closing_line, Report};
use crate::run::events::Status;

/// Renders the difference from `before` to `after` as markdown.
pub fn compare(before: &Report, after: &Report) -> String {
    let old: BTreeMap<&str, Status> = before
        .checks
        .iter()
        .map(|c| (c.id.as_str(), c.status))
        .collect();
    let new: BTreeMap<&str, Status> = after
        .checks
        .iter()
        .map(|c| (c.id.as_str(), c.status))
        .collect();
    // What a newly failing check found first: a reviewer reads why without the report.
    let why: BTreeMap<&str, String> = after
        .checks
        .iter()
        .filter_map(|c| super::first_finding(c).map(|f| (c.id.as_str(), f)))
        .collect();
    let bad = |s: Status| s.fails_run() || s == Status::Errored;
    let mut newly_failing = Vec::new();
    let mut newly_passing = Vec::new();
    let mut still_failing = Vec::new();
    let mut added = Vec::new();
    let mut removed = Vec::new();
    for (id, status) in &new {
        match old.get(id) {
            None => added.push(format!("`{id}` ({})", status.label())),
            Some(previous) if !bad(*previous) && bad(*status) => newly_failing.push(format!(
                "`{id}`: {} -> {}{}",
                previous.label(),
                status.label(),
                why.get(id)
                    .map(|f| format!(": {}", super::markdown::cell(f)))
                    .unwrap_or_default()
            )),
            Some(previous) if bad(*previous) && !bad(*status) => newly_passing.push(format!(
                "`{id}`: {} -> {}",
                previous.label(),
                status.label()
            )),
            Some(previous) if bad(*previous) && bad(*status) => {
                still_failing.push(format!("`{id}`"))
            }
            _ => {}
        }
    }
    for id in old.keys() {
        if !new.contains_key(id) {
            removed.push(format!("`{id}`"));
        }
    }
    let mut out = String::from("## stoat-conformance: comparison\n\n");
    let edition = |report: &Report| report.info.as_ref().map(|i| i.contract);
    if let (Some(was), Some(is)) = (edition(before), edition(after)) {
        if was != is {
            out.push_str(&format!(
                "> **Warning:** the two runs judged different editions (contract {was} before, {is} after): a check may change status because its rule changed, not the implementation.\n\n"
            ));
        }
    }
    out.push_str(&format!(
        "| | before | after |\n|---|---|---|\n| summary | {} | {} |\n\n",
        closing_line(&before.summary),
        closing_line(&after.summary)
    ));
    for (title, items) in [
        ("Newly failing", &newly_failing),
        ("Newly passing", &newly_passing),
        ("Still failing", &still_failing),
        ("New checks", &added),
        ("Checks no longer run", &removed),
    ] {
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!("### {title} ({})\n\n", items.len()));
        for item in items {
            out.push_str(&format!("- {item}\n"));
        }
        out.push('\n');
    }
    if newly_failing.is_empty()
        && newly_passing.is_empty()
        && added.is_empty()
        && removed.is_empty()
    {
        out.push_str("No change.\n");
    }
    out
}

/// Whether `after` newly fails something `before` passed (the exit status of compare).
pub fn regressed(before: &Report, after: &Report) -> bool {
    let old: BTreeMap<&str, Status> = before
        .checks
        .iter()
        .map(|c| (c.id.as_str(), c.status))
        .collect();
    after
        .checks
        .iter()
        .any(|c| c.status.fails_run() && old.get(c.id.as_str()).is_some_and(|s| !s.fails_run()))
}
