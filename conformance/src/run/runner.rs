//! Owns the scheduler: the smoke stage, then every selected scenario on `--jobs` worker
//! threads, then the oracle checks aggregated over every invocation made. Emits [`Event`]s
//! and never prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::catalog::{self, CheckDef, Kind};
use crate::error::HarnessError;
use crate::finding::{Finding, Level};
use crate::oracle::{Oracle, Outcome};
use crate::spec::Edition;

use super::baseline::Baseline;
use super::case::{Case, Inv, InvocationRecord, RunEnv};
use super::events::{CheckResult, Event, RunInfo, Status, Summary};
use super::selection::Selection;
use super::sut::Sut;

/// Everything a run needs.
pub struct RunConfig {
    pub sut: Sut,
    pub fakes: Option<PathBuf>,
    pub selection: Selection,
    pub jobs: usize,
    pub seed: u64,
    pub timeout: Duration,
    pub baseline: Option<Baseline>,
    /// Skip the smoke stage (tests of the runner itself).
    pub skip_smoke: bool,
    /// The oracle to judge with (default: every schema checker this build has).
    pub oracle: Option<Oracle>,
    /// The real tier's guest directory (`--guest`); real checks skip without it.
    pub guest: Option<PathBuf>,
    /// The contract edition to judge by.
    pub edition: Edition,
}

/// What one scenario produced, sent from a worker to the main thread.
struct Done {
    def: &'static CheckDef,
    outcome: Result<(), HarnessError>,
    findings: Vec<Finding>,
    oracle_findings: Vec<(usize, Finding)>,
    exercised: BTreeSet<&'static str>,
    invocations: Vec<InvocationRecord>,
    crashed: bool,
    skipped: Option<String>,
    duration_ms: u64,
}

/// Runs the suite; returns the summary and whether the smoke stage failed.
pub fn run(
    config: RunConfig,
    emit: &mut dyn FnMut(&Event),
) -> Result<(Summary, bool), HarnessError> {
    let started = Instant::now();
    let defs = catalog::all();
    let selected: Vec<&'static CheckDef> = defs
        .iter()
        .filter(|d| config.selection.selects(d) && d.editions.contains(config.edition))
        .collect();
    let wants_oracle = selected.iter().any(|d| d.kind == Kind::Oracle);
    let tiers = config.selection.tiers();
    // Oracle rules are judged over the invocations of the selected scenarios; when only
    // oracle rules are selected, every scenario of the selected tiers runs to feed them.
    let any_scenario_selected = selected.iter().any(|d| d.kind == Kind::Scenario);
    let scenarios: Vec<&'static CheckDef> = defs
        .iter()
        .filter(|d| d.kind == Kind::Scenario && d.editions.contains(config.edition))
        .filter(|d| {
            selected.iter().any(|s| s.id == d.id)
                || (wants_oracle && !any_scenario_selected && tiers.contains(&d.tier))
        })
        .collect();
    let env = RunEnv {
        sut: config.sut.clone(),
        oracle: config.oracle.unwrap_or_default(),
        fakes: config.fakes.clone(),
        timeout: config.timeout,
        seed: config.seed,
        guest: config.guest.clone(),
        edition: config.edition,
    };
    let jobs = config.jobs.max(1);

    let mut sut_version = None;
    let mut smoke_failed = false;
    let mut smoke_event = None;
    if !config.skip_smoke {
        let (passed, findings, invocation, version) = smoke(&env)?;
        sut_version = version;
        smoke_failed = !passed;
        smoke_event = Some(Event::Smoke {
            passed,
            findings,
            invocation,
        });
    }
    emit(&Event::Started(RunInfo {
        suite_version: env!("CARGO_PKG_VERSION").to_string(),
        contract: crate::spec::CONTRACT_VERSION,
        sut: config.sut.display(),
        sut_version,
        seed: config.seed,
        jobs,
        selected: selected.len(),
        tiers: tiers.iter().map(|t| t.as_str().to_string()).collect(),
    }));
    if let Some(event) = &smoke_event {
        emit(event);
    }
    let mut summary = Summary::default();
    if smoke_failed {
        summary.duration_ms = started.elapsed().as_millis() as u64;
        emit(&Event::Finished {
            summary: summary.clone(),
            smoke_failed,
        });
        return Ok((summary, smoke_failed));
    }

    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Done>();
    let mut oracle_hits: BTreeMap<String, Vec<(Finding, InvocationRecord)>> = BTreeMap::new();
    let mut exercised: BTreeSet<&'static str> = BTreeSet::new();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(scenarios.len().max(1)) {
            let tx = tx.clone();
            let scenarios = &scenarios;
            let next = &next;
            let env = &env;
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(def) = scenarios.get(index) else {
                    break;
                };
                if tx.send(run_one(def, env)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for done in rx {
            summary.invocations += done.invocations.len();
            summary.sut_ms += done
                .invocations
                .iter()
                .map(|i| i.capture.duration_ms)
                .sum::<u64>();
            exercised.extend(done.exercised.iter().copied());
            for (index, finding) in &done.oracle_findings {
                if let Some(record) = done.invocations.get(*index) {
                    oracle_hits
                        .entry(finding.check_id.clone())
                        .or_default()
                        .push((finding.clone(), record.clone()));
                }
            }
            if !selected.iter().any(|s| s.id == done.def.id) {
                continue;
            }
            let result = apply_baseline(scenario_result(done), config.baseline.as_ref());
            summary.count(result.status);
            emit(&Event::Check(Box::new(result)));
        }
    });

    for def in selected.iter().filter(|d| d.kind == Kind::Oracle) {
        let hits = oracle_hits.remove(def.id).unwrap_or_default();
        let result = apply_baseline(
            oracle_result(def, hits, exercised.contains(def.id)),
            config.baseline.as_ref(),
        );
        summary.count(result.status);
        emit(&Event::Check(Box::new(result)));
    }
    summary.duration_ms = started.elapsed().as_millis() as u64;
    emit(&Event::Finished {
        summary: summary.clone(),
        smoke_failed,
    });
    Ok((summary, smoke_failed))
}

type SmokeOutcome = (bool, Vec<Finding>, Option<InvocationRecord>, Option<String>);

/// `--json version` must answer in contract and name contract 3.
fn smoke(env: &RunEnv) -> Result<SmokeOutcome, HarnessError> {
    let mut case = Case::new("SMOKE.version", env);
    let sandbox = case.sandbox()?;
    let ran = case.run(&sandbox, Inv::json(&["version"]))?;
    let mut findings: Vec<Finding> = ran
        .judgement
        .findings
        .iter()
        .filter(|f| f.level == Level::Must)
        .cloned()
        .collect();
    let version = ran
        .data()
        .and_then(|d| d.get("version"))
        .and_then(Value::as_str)
        .map(str::to_string);
    match ran.data() {
        Some(data)
            if data.get("contract").and_then(Value::as_u64)
                == Some(crate::spec::CONTRACT_VERSION) => {}
        Some(data) => findings.push(Finding::new(
            "SMOKE.version",
            "line 1/data/contract",
            format!(
                "`--json version` names contract {}, this suite judges contract 3",
                data.get("contract").unwrap_or(&Value::Null)
            ),
        )),
        None => findings.push(Finding::new(
            "SMOKE.version",
            "stdout",
            format!(
                "`--json version` did not answer ok:true ({}); stdout: {} stderr: {}",
                ran.capture.ending.describe(),
                crate::oracle::excerpt(&String::from_utf8_lossy(&ran.capture.stdout.0)),
                crate::oracle::excerpt(&String::from_utf8_lossy(&ran.capture.stderr.0)),
            ),
        )),
    }
    let passed = findings.is_empty();
    Ok((passed, findings, case.invocations.pop(), version))
}

fn run_one(def: &'static CheckDef, env: &RunEnv) -> Done {
    let started = Instant::now();
    let mut case = Case::new(def.id, env);
    let outcome = match def.scenario {
        Some(_) if def.tier == catalog::Tier::Fake && !case.has_fakes() => {
            case.skip("needs the stoat-fake tools (pass --fakes PATH)");
            Ok(())
        }
        Some(_) if def.tier == catalog::Tier::Real && case.guest().is_none() => {
            case.skip(
                "the real tier needs --guest <dir> (the output of conformance/guest/build.sh)",
            );
            Ok(())
        }
        Some(scenario) => scenario(&mut case),
        None => Ok(()),
    };
    Done {
        def,
        outcome,
        findings: case.findings,
        oracle_findings: case.oracle_findings,
        exercised: case.exercised,
        invocations: case.invocations,
        crashed: case.crashed,
        skipped: case.skipped,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

fn base_result(def: &CheckDef, status: Status) -> CheckResult {
    CheckResult {
        id: def.id.to_string(),
        title: def.title.to_string(),
        level: def.level,
        tier: def.tier.as_str().to_string(),
        tags: def.tags.iter().map(|t| t.to_string()).collect(),
        spec_ref: def.spec.to_string(),
        status,
        reason: None,
        findings: Vec::new(),
        invocations: Vec::new(),
        duration_ms: 0,
    }
}

fn status_of(findings: &[Finding], crashed: bool) -> Status {
    if crashed {
        Status::Crashed
    } else if findings.iter().any(|f| f.level == Level::Must) {
        Status::Failed
    } else if findings.is_empty() {
        Status::Passed
    } else {
        Status::Warned
    }
}

fn scenario_result(done: Done) -> CheckResult {
    let mut result = base_result(done.def, Status::Passed);
    result.duration_ms = done.duration_ms;
    result.invocations = done.invocations;
    match done.outcome {
        Err(error) => {
            result.status = Status::Errored;
            result.reason = Some(error.to_string());
        }
        Ok(()) if done.skipped.is_some() && done.findings.is_empty() => {
            result.status = Status::Skipped;
            result.reason = done.skipped;
        }
        Ok(()) => {
            result.status = status_of(&done.findings, done.crashed);
            result.findings = done.findings;
        }
    }
    result
}

fn oracle_result(
    def: &CheckDef,
    hits: Vec<(Finding, InvocationRecord)>,
    exercised: bool,
) -> CheckResult {
    let mut result = base_result(def, Status::Passed);
    if hits.is_empty() {
        if !exercised {
            result.status = Status::Skipped;
            result.reason =
                Some("no selected scenario made an invocation this rule applies to".to_string());
        }
        return result;
    }
    let mut seen_argv = BTreeSet::new();
    for (finding, record) in hits {
        if seen_argv.insert(record.capture.argv.clone()) && result.invocations.len() < 5 {
            result.invocations.push(record.clone());
        }
        let mut finding = finding;
        finding.pointer = format!("`{}` {}", record.capture.argv_display(), finding.pointer);
        if record.outcome == Outcome::Crashed && def.id == "ENV.result-present" {
            result.status = Status::Crashed;
        }
        result.findings.push(finding);
    }
    if result.status != Status::Crashed {
        result.status = status_of(&result.findings, false);
    }
    result
}

fn apply_baseline(mut result: CheckResult, baseline: Option<&Baseline>) -> CheckResult {
    let Some(reason) = baseline.and_then(|b| b.reason(&result.id)) else {
        return result;
    };
    match result.status {
        Status::Failed | Status::Crashed | Status::Warned => {
            result.status = Status::ExpectedFailure;
            result.reason = Some(reason.to_string());
        }
        Status::Passed => {
            result.status = Status::StaleBaseline;
            result.reason = Some(format!(
                "passes, but the baseline expects it to fail ({reason}): remove the entry"
            ));
        }
        _ => {}
    }
    result
}
