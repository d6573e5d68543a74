//! Owns the scheduler: the smoke stage (which also learns the contract edition the SUT
//! speaks), then every selected scenario of the judged edition on `--jobs` worker threads,
//! then the oracle checks aggregated over every invocation made, then the vacuity verdict
//! (a run that judged nothing it was asked to fails). In the migration view (judged by an
//! edition the SUT does not speak) every check that did not pass is grouped: explained by
//! the documented difference, or forbidden by the SUT's own edition too. Emits [`Event`]s
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
use crate::oracle::{Context, Oracle, Outcome};
use crate::spec::Edition;

use super::baseline::Baseline;
use super::case::{Case, Inv, InvocationRecord, RunEnv};
use super::events::{CheckResult, Event, Migration, RunInfo, Status, Summary};
use super::profile::Profile;
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
    /// The contract edition to judge by (`--contract`).
    pub contract: Contract,
    /// A run that judged nothing it was asked to passes (`--allow-empty`).
    pub allow_empty: bool,
    /// The implementer's declarations (`--profile`); default: the reference's knobs.
    pub profile: Profile,
}

/// Which edition a run judges by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Contract {
    /// The edition the SUT names in `--json version`.
    #[default]
    Auto,
    /// This edition, whatever the SUT names (the migration view when they differ).
    Fixed(Edition),
}

/// What one scenario produced, sent from a worker to the main thread.
struct Done {
    def: &'static CheckDef,
    outcome: Result<(), HarnessError>,
    findings: Vec<Finding>,
    oracle_findings: Vec<(usize, Finding)>,
    exercised: BTreeSet<&'static str>,
    invocations: Vec<InvocationRecord>,
    also_flagged: Vec<BTreeSet<&'static str>>,
    crashed: bool,
    skipped: Option<String>,
    duration_ms: u64,
    /// Milliseconds of SUT time in invocations the scenario watched itself.
    watched_sut_ms: u64,
    /// Migration view: the same check judged by the SUT's own edition did not pass.
    fails_in_sut_edition: Option<bool>,
}

/// Runs the suite; returns the summary and whether the smoke stage failed.
pub fn run(
    mut config: RunConfig,
    emit: &mut dyn FnMut(&Event),
) -> Result<(Summary, bool), HarnessError> {
    let started = Instant::now();
    let defs = catalog::all();
    let tiers = config.selection.tiers();
    let mut env = RunEnv {
        sut: config.sut.clone(),
        oracle: std::sync::Arc::new(config.oracle.take().unwrap_or_default()),
        fakes: config.fakes.clone(),
        timeout: config.timeout,
        seed: config.seed,
        guest: config.guest.clone(),
        edition: match config.contract {
            Contract::Fixed(edition) => edition,
            Contract::Auto => Edition::default(),
        },
        also_judge: None,
        profile: std::sync::Arc::new(config.profile.clone()),
    };
    let jobs = config.jobs.max(1);

    let mut sut_version = None;
    let mut sut_edition = None;
    let mut smoke_failed = false;
    let mut smoke_event = None;
    if !config.skip_smoke {
        let smoke = smoke(&env)?;
        sut_version = smoke.version;
        sut_edition = smoke.edition;
        smoke_failed = !smoke.passed;
        smoke_event = Some(Event::Smoke {
            passed: smoke.passed,
            findings: smoke.findings,
            invocation: smoke.invocation,
        });
    }
    if let (Contract::Auto, Some(edition)) = (config.contract, sut_edition) {
        env.edition = edition;
    }
    let migration = sut_edition.filter(|e| *e != env.edition);
    env.also_judge = migration;
    let edition = env.edition;
    let matched: Vec<&'static CheckDef> = defs
        .iter()
        .filter(|d| config.selection.selects(d))
        .collect();
    let selected: Vec<&'static CheckDef> = matched
        .iter()
        .copied()
        .filter(|d| d.editions.contains(edition))
        .collect();
    let wants_oracle = selected.iter().any(|d| d.kind == Kind::Oracle);
    // Oracle rules are judged over the invocations of the selected scenarios; when only
    // oracle rules are selected, every scenario of the selected tiers runs to feed them.
    let any_scenario_selected = selected.iter().any(|d| d.kind == Kind::Scenario);
    let scenarios: Vec<&'static CheckDef> = defs
        .iter()
        .filter(|d| d.kind == Kind::Scenario && d.editions.contains(edition))
        .filter(|d| {
            selected.iter().any(|s| s.id == d.id)
                || (wants_oracle && !any_scenario_selected && tiers.contains(&d.tier))
        })
        .collect();
    // The same checks judged by the SUT's own edition, for the migration view's grouping.
    let sut_env = migration.map(|sut_edition| RunEnv {
        edition: sut_edition,
        also_judge: None,
        ..env.clone()
    });
    emit(&Event::Started(RunInfo {
        suite_version: env!("CARGO_PKG_VERSION").to_string(),
        contract: edition.number(),
        sut_contract: sut_edition.map(Edition::number),
        contract_source: match config.contract {
            Contract::Auto => "auto",
            Contract::Fixed(_) => "flag",
        }
        .to_string(),
        migration: migration.is_some(),
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
    let mut ran: Vec<Ran> = Vec::new();
    if smoke_failed {
        // The failed smoke stage is one failed check in every count (JSON, human, exit).
        summary.count(Status::Failed);
        summary.duration_ms = started.elapsed().as_millis() as u64;
        emit(&Event::Finished {
            summary: summary.clone(),
            smoke_failed,
        });
        return Ok((summary, smoke_failed));
    }

    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Done>();
    let mut oracle_hits: BTreeMap<String, Vec<Hit>> = BTreeMap::new();
    let mut exercised: BTreeSet<&'static str> = BTreeSet::new();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(scenarios.len().max(1)) {
            let tx = tx.clone();
            let scenarios = &scenarios;
            let next = &next;
            let env = &env;
            let sut_env = sut_env.as_ref();
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(def) = scenarios.get(index) else {
                    break;
                };
                let mut done = run_one(def, env);
                if let Some(sut_env) = sut_env {
                    done.fails_in_sut_edition = Some(fails_in(def, &done, sut_env));
                }
                if tx.send(done).is_err() {
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
                .sum::<u64>()
                + done.watched_sut_ms;
            exercised.extend(done.exercised.iter().copied());
            for (index, finding) in &done.oracle_findings {
                if let Some(record) = done.invocations.get(*index) {
                    let also = done
                        .also_flagged
                        .get(*index)
                        .is_some_and(|f| f.contains(finding.check_id.as_str()));
                    oracle_hits
                        .entry(finding.check_id.clone())
                        .or_default()
                        .push(Hit {
                            finding: finding.clone(),
                            record: record.clone(),
                            also_in_sut_edition: also,
                        });
                }
            }
            if !selected.iter().any(|s| s.id == done.def.id) {
                continue;
            }
            let def = done.def;
            let fails_in_sut_edition = done.fails_in_sut_edition;
            let mut result = scenario_result(done);
            if let Some(sut_edition) = migration {
                result.migration = group(def, &result, sut_edition, fails_in_sut_edition);
            }
            let result = apply_baseline(result, config.baseline.as_ref());
            ran.push(Ran::of(def, &result));
            summary.count(result.status);
            emit(&Event::Check(Box::new(result)));
        }
    });

    for def in selected.iter().filter(|d| d.kind == Kind::Oracle) {
        let hits = oracle_hits.remove(def.id).unwrap_or_default();
        let fails_in_sut_edition = hits.iter().any(|h| h.also_in_sut_edition);
        let mut result = oracle_result(def, hits, exercised.contains(def.id));
        if let Some(sut_edition) = migration {
            result.migration = group(def, &result, sut_edition, Some(fails_in_sut_edition));
        }
        let result = apply_baseline(result, config.baseline.as_ref());
        ran.push(Ran::of(def, &result));
        summary.count(result.status);
        emit(&Event::Check(Box::new(result)));
    }
    let verdict = Vacuity {
        matched: &matched,
        selected: &selected,
        edition,
        tiers: &tiers,
        ran: &ran,
    }
    .judge();
    if config.allow_empty {
        summary.not_run = verdict.vacuous.into_iter().chain(verdict.notes).collect();
    } else {
        summary.vacuous = verdict.vacuous;
        summary.not_run = verdict.notes;
    }
    summary.duration_ms = started.elapsed().as_millis() as u64;
    emit(&Event::Finished {
        summary: summary.clone(),
        smoke_failed,
    });
    Ok((summary, smoke_failed))
}

/// What the smoke stage learnt.
struct SmokeOutcome {
    passed: bool,
    findings: Vec<Finding>,
    invocation: Option<InvocationRecord>,
    version: Option<String>,
    /// The edition the SUT answers in (the one it names, when its answer holds there).
    edition: Option<Edition>,
}

/// `--json version` must answer ok in some edition this suite knows: the one the SUT names
/// (`data.contract`, else its envelope `v`), judged by that edition's rules. Only when no
/// known edition accepts the answer does the run stop, with one clear finding.
fn smoke(env: &RunEnv) -> Result<SmokeOutcome, HarnessError> {
    let mut case = Case::new("SMOKE.version", env);
    let sandbox = case.sandbox()?;
    let ran = case.run(&sandbox, Inv::json(&["version"]))?;
    let result = ran.judgement.result.as_ref();
    let named_v = result.and_then(|r| r.get("v")).and_then(Value::as_u64);
    let named_contract = ran
        .judgement
        .data()
        .and_then(|d| d.get("contract"))
        .and_then(Value::as_u64);
    // `data.contract` is where `version` names its edition; the envelope's `v` decides when
    // that is not a number this suite knows (contract 2's published example shows 1 there).
    let named = named_contract
        .and_then(Edition::from_number)
        .or_else(|| named_v.and_then(Edition::from_number));
    let version = ran
        .data()
        .and_then(|d| d.get("version"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let must = |edition: Edition| -> Vec<Finding> {
        let context = Context {
            expect_cmd: Some("version".to_string()),
            canaries: sandbox.canaries(),
            edition,
        };
        let judgement = env.oracle.judge(&ran.capture, &context);
        let mut findings: Vec<Finding> = judgement
            .findings
            .into_iter()
            .filter(|f| f.level == Level::Must)
            .collect();
        if judgement.outcome != Outcome::Ok {
            findings.push(Finding::new(
                "SMOKE.version",
                "stdout",
                format!(
                    "`--json version` did not answer ok:true ({}); stdout: {} stderr: {}",
                    ran.capture.ending.describe(),
                    crate::oracle::excerpt(&String::from_utf8_lossy(&ran.capture.stdout.0)),
                    crate::oracle::excerpt(&String::from_utf8_lossy(&ran.capture.stderr.0)),
                ),
            ));
        }
        findings
    };
    let (edition, findings) = match named {
        Some(edition) => (Some(edition), must(edition)),
        None => {
            let mut findings = must(env.edition);
            findings.push(Finding::new(
                "SMOKE.version",
                "line 1/v",
                format!(
                    "`--json version` names no contract edition this suite knows ({}): v is {}, data.contract is {}",
                    Edition::ALL.map(|e| e.to_string()).join(", "),
                    named_v.map_or("absent".to_string(), |v| v.to_string()),
                    named_contract.map_or("absent".to_string(), |v| v.to_string()),
                ),
            ));
            (None, findings)
        }
    };
    let passed = findings.is_empty();
    let findings = if passed {
        findings
    } else {
        // One clear error: the first reason, the rest as evidence.
        let first = Finding::new(
            "SMOKE.version",
            "stdout",
            format!(
                "the SUT does not answer `--json version` in any contract edition this suite knows ({}): {}",
                Edition::ALL.map(|e| e.to_string()).join(", "),
                findings[0].message
            ),
        );
        std::iter::once(first).chain(findings).collect()
    };
    Ok(SmokeOutcome {
        passed,
        findings,
        invocation: case.invocations.pop(),
        version,
        edition: if passed { edition } else { None },
    })
}

/// One oracle finding, with the invocation it came from and whether the SUT's own edition
/// flags the same rule there (the migration view).
struct Hit {
    finding: Finding,
    record: InvocationRecord,
    also_in_sut_edition: bool,
}

/// Migration view: whether `def` also fails when judged by the SUT's own edition. A check
/// that edition does not state cannot fail there; one it does is run again under it.
fn fails_in(def: &'static CheckDef, done: &Done, sut_env: &RunEnv) -> bool {
    if !def.editions.contains(sut_env.edition) {
        return false;
    }
    let failed_here = done.outcome.is_err()
        || done.crashed
        || done.findings.iter().any(|f| f.level == Level::Must);
    if !failed_here && done.findings.is_empty() {
        return false;
    }
    let again = run_one(def, sut_env);
    again.outcome.is_err() || again.crashed || !again.findings.is_empty()
}

/// Migration view: the group of a check that did not pass.
fn group(
    def: &CheckDef,
    result: &CheckResult,
    sut_edition: Edition,
    fails_in_sut_edition: Option<bool>,
) -> Option<Migration> {
    if !matches!(
        result.status,
        Status::Failed | Status::Crashed | Status::Warned | Status::Errored
    ) {
        return None;
    }
    if !def.editions.contains(sut_edition) {
        let change = def.editions.change().map_or_else(
            || format!("contract {sut_edition} does not state this rule"),
            str::to_string,
        );
        return Some(Migration::Explained { change });
    }
    match fails_in_sut_edition {
        Some(false) => Some(Migration::Explained {
            change: format!(
                "what the rule expects differs between the editions: judged by contract {sut_edition} it passes"
            ),
        }),
        _ => Some(Migration::BothEditions),
    }
}

/// What one check came to, for the vacuity verdict.
struct Ran {
    def: &'static CheckDef,
    status: Status,
    reason: Option<String>,
}

impl Ran {
    fn of(def: &'static CheckDef, result: &CheckResult) -> Self {
        Ran {
            def,
            status: result.status,
            reason: result.reason.clone(),
        }
    }

    /// Whether it judged something (a skip or a harness error judged nothing).
    fn judged(&self) -> bool {
        !matches!(self.status, Status::Skipped | Status::Errored)
    }
}

/// Decides whether a run judged anything it was asked to.
struct Vacuity<'a> {
    matched: &'a [&'static CheckDef],
    selected: &'a [&'static CheckDef],
    edition: Edition,
    tiers: &'a [catalog::Tier],
    ran: &'a [Ran],
}

struct Verdict {
    /// Reasons the run is vacuous (fail the run unless `--allow-empty`).
    vacuous: Vec<String>,
    /// What was not run and why.
    notes: Vec<String>,
}

impl Vacuity<'_> {
    fn judge(&self) -> Verdict {
        let mut vacuous = Vec::new();
        let mut notes = Vec::new();
        if self.matched.is_empty() {
            vacuous.push("the selection matched no check".to_string());
        } else if self.selected.is_empty() {
            vacuous.push(format!(
                "contract {} states none of the {} the selection matched",
                self.edition,
                checks(self.matched.len())
            ));
        }
        let other_edition = self.matched.len() - self.selected.len();
        if other_edition > 0 && !self.selected.is_empty() {
            notes.push(format!(
                "{} that contract {} does not state",
                checks(other_edition),
                self.edition
            ));
        }
        for tier in self.tiers {
            let in_tier: Vec<&Ran> = self
                .ran
                .iter()
                .filter(|r| r.def.kind == Kind::Scenario && r.def.tier == *tier)
                .collect();
            if in_tier.is_empty() {
                continue;
            }
            if !in_tier.iter().any(|r| r.judged()) {
                let why = in_tier
                    .iter()
                    .find_map(|r| r.reason.clone())
                    .unwrap_or_else(|| "every check was skipped".to_string());
                vacuous.push(format!(
                    "the {} tier ran nothing ({} skipped: {why})",
                    tier.as_str(),
                    checks(in_tier.len())
                ));
            }
        }
        if !self.selected.is_empty()
            && !self
                .ran
                .iter()
                .any(|r| r.def.level == Level::Must && r.judged())
        {
            vacuous.push("no MUST check ran".to_string());
        }
        let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
        for r in self.ran.iter().filter(|r| r.status == Status::Skipped) {
            *skipped
                .entry(
                    r.reason
                        .clone()
                        .unwrap_or_else(|| "no reason given".to_string()),
                )
                .or_default() += 1;
        }
        for (reason, count) in skipped {
            notes.push(format!("{} skipped: {reason}", checks(count)));
        }
        Verdict { vacuous, notes }
    }
}

fn checks(count: usize) -> String {
    if count == 1 {
        "1 check".to_string()
    } else {
        format!("{count} checks")
    }
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
        also_flagged: case.also_flagged,
        crashed: case.crashed,
        skipped: case.skipped,
        duration_ms: started.elapsed().as_millis() as u64,
        watched_sut_ms: case.watched_us.load(Ordering::Relaxed) / 1000,
        fails_in_sut_edition: None,
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
        editions: def.editions.list().iter().map(|e| e.number()).collect(),
        migration: None,
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

fn oracle_result(def: &CheckDef, hits: Vec<Hit>, exercised: bool) -> CheckResult {
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
    for Hit {
        finding, record, ..
    } in hits
    {
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
