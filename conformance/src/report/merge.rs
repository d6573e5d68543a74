//! Owns `report --merge`: the reports of the shards of one run (`run --shard K/N`, K = 1..N)
//! folded into the report that run would have written unsharded. A scenario row comes from
//! the one shard that ran it; an oracle rule, judged in every shard over that shard's
//! invocations, is judged once over all of them: its findings, the scenarios they came from
//! and the invocations kept as evidence are the shards' in shard order, which is catalog
//! order because a shard is a contiguous block of the selected scenarios. The counts and
//! the closing line's reasons are worked out again from the merged rows.

use std::collections::BTreeMap;

use crate::catalog::{self, Kind};
use crate::error::HarnessError;
use crate::finding::{Finding, Level};
use crate::run::events::{CheckResult, Migration, Status, Summary};
use crate::run::selection::Shard;

use super::Report;

/// The oracle keeps at most this many invocations as an oracle rule's evidence.
const EVIDENCE: usize = 5;

/// Merges the shard reports (in any order); an error names what does not fit together.
pub fn merge(mut reports: Vec<Report>) -> Result<Report, HarnessError> {
    let bad = |message: String| HarnessError::Other(format!("report --merge: {message}"));
    let mut shards = Vec::new();
    for report in &reports {
        let info = report
            .info
            .as_ref()
            .ok_or_else(|| bad("a report without run facts (info)".into()))?;
        let shard = info
            .shard
            .as_deref()
            .and_then(Shard::parse)
            .ok_or_else(|| {
                bad(format!(
                    "{} is not the report of a `run --shard K/N`",
                    info.sut
                ))
            })?;
        shards.push(shard);
    }
    let count = shards.first().map(|s| s.count).unwrap_or(0);
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by_key(|i| shards[*i].index);
    let indices: Vec<usize> = order.iter().map(|i| shards[*i].index).collect();
    if shards.iter().any(|s| s.count != count) || indices != (1..=count).collect::<Vec<_>>() {
        return Err(bad(format!(
            "the shards given are {}; a merge needs exactly 1/N to N/N of one run",
            shards
                .iter()
                .map(|s| format!("{}/{}", s.index, s.count))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut slots: Vec<Option<Report>> = reports.drain(..).map(Some).collect();
    let reports: Vec<Report> = order.iter().filter_map(|i| slots[*i].take()).collect();
    let first = &reports[0];
    let same = |what: &str, of: &dyn Fn(&Report) -> String| -> Result<(), HarnessError> {
        let expected = of(first);
        match reports.iter().find(|r| of(r) != expected) {
            Some(other) => Err(bad(format!(
                "the shards are not of one run: {what} is {expected:?} in one and {:?} in another",
                of(other)
            ))),
            None => Ok(()),
        }
    };
    let info_of = |r: &Report| r.info.clone().expect("checked above");
    same("the suite version", &|r| info_of(r).suite_version)?;
    same("the SUT", &|r| info_of(r).sut)?;
    same("the contract judged", &|r| info_of(r).contract.to_string())?;
    same("the seed", &|r| info_of(r).seed.to_string())?;
    same("the tiers", &|r| info_of(r).tiers.join(","))?;
    same("the selection", &|r| info_of(r).selected.to_string())?;

    let mut info = info_of(first);
    info.shard = None;
    let smoke_failed = reports.iter().any(|r| r.smoke_failed);
    let mut merged = Report {
        schema: first.schema.clone(),
        info: Some(info),
        started: reports.iter().filter_map(|r| r.started.clone()).min(),
        smoke: first.smoke.clone(),
        checks: Vec::new(),
        summary: Summary::default(),
        smoke_failed,
    };
    // The smoke stage ran in every shard; a single run makes its invocation once.
    let smoke_ms = |r: &Report| {
        r.smoke
            .as_ref()
            .and_then(|s| s.invocation.as_ref())
            .map(|i| i.capture.duration_ms)
    };
    for (position, report) in reports.iter().enumerate() {
        merged.summary.invocations += report.summary.invocations;
        merged.summary.sut_ms += report.summary.sut_ms;
        if position > 0 {
            if let Some(ms) = smoke_ms(report) {
                merged.summary.invocations = merged.summary.invocations.saturating_sub(1);
                merged.summary.sut_ms = merged.summary.sut_ms.saturating_sub(ms);
            }
        }
        merged.summary.duration_ms = merged.summary.duration_ms.max(report.summary.duration_ms);
    }
    if smoke_failed {
        let failed = reports.iter().find(|r| r.smoke_failed).expect("one failed");
        merged.smoke = failed.smoke.clone();
        merged.summary.count(Status::Failed);
        return Ok(merged);
    }

    let mut oracle: BTreeMap<String, Vec<&CheckResult>> = BTreeMap::new();
    for report in &reports {
        for row in &report.checks {
            let is_oracle = catalog::find(&row.id).is_some_and(|d| d.kind == Kind::Oracle);
            if is_oracle {
                oracle.entry(row.id.clone()).or_default().push(row);
            } else if merged.checks.iter().any(|c| c.id == row.id) {
                return Err(bad(format!("{} was run by two shards", row.id)));
            } else {
                merged.checks.push(row.clone());
            }
        }
    }
    for rows in oracle.into_values() {
        merged.checks.push(merge_oracle_row(&rows));
    }
    super::sort_catalog_order(&mut merged.checks);
    for row in &merged.checks {
        merged.summary.count(row.status);
    }
    closing_reasons(&mut merged, &reports);
    Ok(merged)
}

/// One oracle rule judged over every shard's invocations.
fn merge_oracle_row(rows: &[&CheckResult]) -> CheckResult {
    let mut row = rows[0].clone();
    let mut findings = Vec::new();
    row.scenarios.clear();
    row.invocations.clear();
    row.repro = None;
    row.reason = None;
    row.migration = None;
    let mut seen_argv = Vec::new();
    for shard_row in rows {
        findings.extend(shard_row.findings.iter().flat_map(undedupe));
        for scenario in &shard_row.scenarios {
            if !row.scenarios.contains(scenario) {
                row.scenarios.push(scenario.clone());
            }
        }
        for record in &shard_row.invocations {
            if !seen_argv.contains(&record.capture.argv) {
                seen_argv.push(record.capture.argv.clone());
                if row.invocations.len() < EVIDENCE {
                    row.invocations.push(record.clone());
                }
            }
        }
        if row.repro.is_none() {
            row.repro = shard_row.repro.clone();
        }
        row.migration = match (&row.migration, &shard_row.migration) {
            (Some(Migration::BothEditions), _) | (_, None) => row.migration.clone(),
            (_, Some(other)) => Some(other.clone()),
        };
    }
    row.findings = crate::finding::dedupe(findings);
    let with = |status: Status| rows.iter().find(|r| r.status == status);
    row.status = if !row.findings.is_empty() {
        if let Some(listed) = with(Status::ExpectedFailure) {
            row.reason = listed.reason.clone();
            Status::ExpectedFailure
        } else if with(Status::Crashed).is_some() {
            Status::Crashed
        } else if row.findings.iter().any(|f| f.level == Level::Must) {
            Status::Failed
        } else {
            Status::Warned
        }
    } else if let Some(stale) = with(Status::StaleBaseline) {
        row.reason = stale.reason.clone();
        Status::StaleBaseline
    } else if rows.iter().all(|r| r.status == Status::Skipped) {
        row.reason = rows[0].reason.clone();
        Status::Skipped
    } else {
        Status::Passed
    };
    if row.status == Status::Passed || row.status == Status::Skipped {
        row.repro = None;
        row.migration = None;
    }
    row
}

/// A finding said once for N repeats (`message (N times)`) as the N findings it stands for.
fn undedupe(finding: &Finding) -> Vec<Finding> {
    let repeated = finding
        .message
        .strip_suffix(" times)")
        .and_then(|rest| rest.rsplit_once(" ("))
        .and_then(|(message, count)| Some((message.to_string(), count.parse::<usize>().ok()?)));
    match repeated {
        Some((message, count)) if count > 1 => {
            let mut one = finding.clone();
            one.message = message;
            vec![one; count]
        }
        _ => vec![finding.clone()],
    }
}

fn checks(count: usize) -> String {
    if count == 1 {
        "1 check".to_string()
    } else {
        format!("{count} checks")
    }
}

/// Whether a closing-line reason is about the run's rows (worked out again) rather than
/// about its selection (the same in every shard).
fn about_rows(reason: &str) -> bool {
    reason == "no MUST check ran"
        || (reason.starts_with("the ") && reason.contains(" tier ran nothing ("))
        || reason.split_once(' ').is_some_and(|(n, rest)| {
            n.parse::<usize>().is_ok()
                && (rest.starts_with("check skipped: ") || rest.starts_with("checks skipped: "))
        })
}

/// Whether a reason says the run judged nothing it was asked to (as opposed to a note).
fn vacuous_kind(reason: &str) -> bool {
    reason == "no MUST check ran"
        || reason == "the selection matched no check"
        || (reason.starts_with("contract ") && reason.contains(" states none of the "))
        || (reason.starts_with("the ") && reason.contains(" tier ran nothing ("))
}

/// The closing line's reasons (why the run is vacuous, what was not run) of the merged rows,
/// as the runner words them; `--allow-empty` (a vacuous reason among a shard's notes) is
/// kept.
fn closing_reasons(merged: &mut Report, reports: &[Report]) {
    let first = &reports[0].summary;
    let selection_vacuous: Vec<String> = first
        .vacuous
        .iter()
        .chain(&first.not_run)
        .filter(|r| vacuous_kind(r) && !about_rows(r))
        .cloned()
        .collect();
    let selection_notes: Vec<String> = first
        .not_run
        .iter()
        .filter(|r| !vacuous_kind(r) && !about_rows(r))
        .cloned()
        .collect();
    let allow_empty = reports
        .iter()
        .any(|r| r.summary.not_run.iter().any(|n| vacuous_kind(n)));
    let mut vacuous = selection_vacuous;
    let tiers = merged
        .info
        .as_ref()
        .map(|i| i.tiers.clone())
        .unwrap_or_default();
    let judged = |r: &CheckResult| !matches!(r.status, Status::Skipped | Status::Errored);
    for tier in &tiers {
        let in_tier: Vec<&CheckResult> = merged
            .checks
            .iter()
            .filter(|r| {
                &r.tier == tier && catalog::find(&r.id).is_some_and(|d| d.kind == Kind::Scenario)
            })
            .collect();
        if !in_tier.is_empty() && !in_tier.iter().any(|r| judged(r)) {
            let why = in_tier
                .iter()
                .find_map(|r| r.reason.clone())
                .unwrap_or_else(|| "every check was skipped".to_string());
            vacuous.push(format!(
                "the {tier} tier ran nothing ({} skipped: {why})",
                checks(in_tier.len())
            ));
        }
    }
    let selected = merged.info.as_ref().map_or(0, |i| i.selected);
    if selected > 0
        && !merged
            .checks
            .iter()
            .any(|r| r.level == Level::Must && judged(r))
    {
        vacuous.push("no MUST check ran".to_string());
    }
    let mut notes = selection_notes;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for row in merged.checks.iter().filter(|r| r.status == Status::Skipped) {
        *skipped
            .entry(
                row.reason
                    .clone()
                    .unwrap_or_else(|| "no reason given".to_string()),
            )
            .or_default() += 1;
    }
    for (reason, count) in skipped {
        notes.push(format!("{} skipped: {reason}", checks(count)));
    }
    if allow_empty {
        merged.summary.not_run = vacuous.into_iter().chain(notes).collect();
    } else {
        merged.summary.vacuous = vacuous;
        merged.summary.not_run = notes;
    }
}
