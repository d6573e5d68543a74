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
use crate::ids;
use crate::oracle::{Context, Oracle, Outcome};
use crate::spec::Edition;

use super::baseline::Baseline;
use super::case::{Case, Inv, InvocationRecord, RunEnv};
use super::events::{CheckResult, Event, Migration, RunInfo, Status, Summary};
use super::profile::Profile;
use super::repro::{Repro, RunFacts};
use super::selection::Selection;
use super::sut::Sut;

/// Everything a run needs.
pub struct RunConfig {
    pub sut: Sut,
    pub fakes: Option<PathBuf>,
    pub selection: Selection,
    pub jobs: usize,
    pub seed: u64,
    /// Where `seed` came from (the suite's default, `--seed N`, `--seed random`).
    pub seed_source: super::seed::SeedSource,
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
    /// The `--profile` file as given (reports and reproduction commands name it).
    pub profile_path: Option<String>,
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
    also_flagged: Vec<BTreeSet<String>>,
    crashed: bool,
    skipped: Option<String>,
    duration_ms: u64,
    /// Milliseconds of SUT time in invocations the scenario watched itself.
    watched_sut_ms: u64,
    /// Migration view: the same check judged by the SUT's own edition did not pass.
    fails_in_sut_edition: Option<bool>,
    /// The invocation the scenario's first finding came after.
    first_failing: Option<usize>,
}

/// Runs the suite; returns the summary and whether the smoke stage failed.
pub fn run(
    mut config: RunConfig,
    emit: &mut dyn FnMut(&Event),
) -> Result<(Summary, bool), HarnessError> {
    let started = Instant::now();
    let defs = catalog::all();
    let tiers = config.selection.tiers();
    let mut env = env_of(&mut config);
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
        let mut findings = smoke.findings;
        let judged = match config.contract {
            Contract::Fixed(edition) => Some(edition),
            Contract::Auto => smoke.edition,
        };
        for finding in &mut findings {
            cite(finding, judged.unwrap_or(env.edition));
        }
        smoke_event = Some(Event::Smoke {
            passed: smoke.passed,
            findings,
            invocation: smoke.invocation,
        });
    }
    if let (Contract::Auto, Some(edition)) = (config.contract, sut_edition) {
        env.edition = edition;
    }
    let migration = sut_edition.filter(|e| *e != env.edition);
    env.also_judge = migration;
    let edition = env.edition;
    let sut_argv: Vec<String> = std::iter::once(config.sut.program.display().to_string())
        .chain(config.sut.leading.iter().cloned())
        .collect();
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
    // A rerun (`--rerun-failed`) feeds a failed rule only with the scenarios that failed it.
    let any_scenario_selected =
        selected.iter().any(|d| d.kind == Kind::Scenario) || config.selection.only_ids.is_some();
    let scenarios: Vec<&'static CheckDef> = defs
        .iter()
        .filter(|d| d.kind == Kind::Scenario && d.editions.contains(edition))
        .filter(|d| {
            selected.iter().any(|s| s.id == d.id)
                || (config.selection.feeds(d.id) && tiers.contains(&d.tier))
                || (wants_oracle && !any_scenario_selected && tiers.contains(&d.tier))
        })
        .collect();
    let mut scenarios = match config.selection.shard {
        Some(shard) => shard.part(&scenarios),
        None => scenarios,
    };
    // The explorations run hundreds of SUT calls each (seconds, against tens of milliseconds
    // for most scenarios): started first, they no longer run alone at the end while the
    // other workers idle. Results are reported in catalog order whatever the order of work.
    scenarios.sort_by_key(|def| !def.tags.contains(&"explore"));
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
        sut_argv: sut_argv.clone(),
        profile: config.profile_path.clone(),
        sut_version,
        seed: config.seed,
        seed_source: config.seed_source,
        jobs,
        selected: selected.len(),
        tiers: tiers.iter().map(|t| t.as_str().to_string()).collect(),
        shard: config.selection.shard.map(|s| s.to_string()),
    }));
    if let Some(event) = &smoke_event {
        emit(event);
    }
    let facts = RunFacts {
        sut_argv: &sut_argv,
        seed: config.seed,
        edition: edition.number(),
        profile: config.profile_path.as_deref(),
    };
    let mut summary = Summary::default();
    // The smoke stage's `--json version` is an invocation of the SUT like any other.
    if let Some(Event::Smoke {
        invocation: Some(record),
        ..
    }) = &smoke_event
    {
        summary.invocations += 1;
        summary.sut_ms += record.capture.duration_ms;
    }
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
    let mut fed: BTreeMap<&'static str, Fed> = BTreeMap::new();
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
            fed.insert(done.def.id, Fed::of(&done));
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
                            scenario: done.def.id,
                            order: (catalog_position(done.def.id), *index),
                        });
                }
            }
            if !selected.iter().any(|s| s.id == done.def.id) {
                continue;
            }
            let def = done.def;
            let fails_in_sut_edition = done.fails_in_sut_edition;
            let mut result = scenario_result(done, &config.profile, edition, &facts);
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
        let mut hits = oracle_hits.remove(def.id).unwrap_or_default();
        // Workers finish in any order; the evidence is listed in catalog order.
        hits.sort_by_key(|h| h.order);
        let fails_in_sut_edition = hits.iter().any(|h| h.also_in_sut_edition);
        let mut result = oracle_result(
            def,
            hits,
            exercised.contains(def.id),
            &config.profile,
            edition,
            &facts,
        );
        if let Some((_, feeders)) = config.selection.rejudge.iter().find(|(id, _)| id == def.id) {
            require_rejudged(&mut result, feeders, &fed);
        }
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

/// What every case of a run shares, from its configuration.
fn env_of(config: &mut RunConfig) -> RunEnv {
    RunEnv {
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
        stop: None,
    }
}

/// `repro`: runs `scenario` (a scenario check, or the smoke stage) again as the run did,
/// up to its invocation `at` (0-based; `None`: to its end), and keeps every sandbox it made.
/// Returns the last invocation made, with its sandbox, environment and output.
pub fn reproduce(
    mut config: RunConfig,
    scenario: &str,
    at: Option<usize>,
) -> Result<Option<super::repro::Reached>, HarnessError> {
    let stop = std::sync::Arc::new(super::repro::Stop {
        at,
        reached: Default::default(),
    });
    let mut env = env_of(&mut config);
    env.stop = Some(stop.clone());
    let outcome = if scenario == crate::report::SMOKE_ID {
        smoke(&env).map(|_| ())
    } else {
        let def = catalog::find(scenario)
            .filter(|d| d.scenario.is_some())
            .ok_or_else(|| {
                HarnessError::Other(format!("{scenario} is not a scenario check of this suite"))
            })?;
        run_one(def, &env).outcome
    };
    match outcome {
        Ok(()) | Err(HarnessError::Stopped) => {}
        Err(error) => return Err(error),
    }
    let reached = stop.reached.lock().ok().and_then(|mut r| r.take());
    Ok(reached)
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
    let mut case = Case::new(ids::SMOKE_VERSION, env);
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
                ids::SMOKE_VERSION,
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
                ids::SMOKE_VERSION,
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
    // The reason every format gives says the SUT answers in no known edition; the findings
    // are the evidence, each once.
    let passed = findings.is_empty();
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
    /// The scenario whose invocation it was.
    scenario: &'static str,
    /// (catalog position of the scenario, index of the invocation in it): the order the
    /// evidence is reported in, whatever order the workers finished in.
    order: (usize, usize),
}

fn catalog_position(id: &str) -> usize {
    catalog::all()
        .iter()
        .position(|d| d.id == id)
        .unwrap_or(usize::MAX)
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

/// What one scenario did for the oracle rules: whether it judged anything, and which rules
/// its invocations exercised.
struct Fed {
    /// Why it judged nothing (skipped or errored).
    not_judged: Option<String>,
    exercised: BTreeSet<&'static str>,
}

impl Fed {
    fn of(done: &Done) -> Self {
        let not_judged = match &done.outcome {
            Err(error) => Some(format!("errored: {error}")),
            Ok(()) if done.findings.is_empty() => {
                done.skipped.as_ref().map(|why| format!("skipped: {why}"))
            }
            Ok(()) => None,
        };
        Fed {
            not_judged,
            exercised: done.exercised.clone(),
        }
    }
}

/// `--rerun-failed` never passes what it did not judge again: a rule that failed before and
/// does not fail now is SKIP unless every scenario that failed it ran again and made an
/// invocation the rule applies to.
fn require_rejudged(result: &mut CheckResult, feeders: &[String], fed: &BTreeMap<&str, Fed>) {
    if matches!(
        result.status,
        Status::Failed | Status::Crashed | Status::Warned | Status::Errored
    ) {
        return;
    }
    let why = if feeders.is_empty() {
        Some("the report it reruns names no scenario whose invocations failed this rule (run without --rerun-failed to judge it)".to_string())
    } else {
        let missing: Vec<String> = feeders
            .iter()
            .filter_map(|scenario| match fed.get(scenario.as_str()) {
                None => Some(format!(
                    "{scenario} did not run (not in this suite's catalog, edition or tiers)"
                )),
                Some(Fed {
                    not_judged: Some(why),
                    ..
                }) => Some(format!("{scenario} {why}")),
                Some(f) if !f.exercised.contains(result.id.as_str()) => Some(format!(
                    "{scenario} made no invocation this rule applies to"
                )),
                Some(_) => None,
            })
            .collect();
        (!missing.is_empty()).then(|| missing.join("; "))
    };
    if let Some(why) = why {
        result.status = Status::Skipped;
        result.reason = Some(format!(
            "failed in the rerun report, not judged again: {why}"
        ));
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
    let mut case = Case::new(def.check_id(), env);
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
        first_failing: case.first_failing,
    }
}

fn base_result(def: &CheckDef, status: Status, profile: &Profile, edition: Edition) -> CheckResult {
    CheckResult {
        id: def.id.to_string(),
        title: def.title.to_string(),
        level: def.level_in(profile),
        tier: def.tier.as_str().to_string(),
        tags: def.tags.iter().map(|t| t.to_string()).collect(),
        spec_ref: def.spec_in(edition).to_string(),
        status,
        reason: None,
        findings: Vec::new(),
        invocations: Vec::new(),
        duration_ms: 0,
        editions: def.editions.list().iter().map(|e| e.number()).collect(),
        migration: None,
        scenarios: Vec::new(),
        requires: def.requires.map(|requirement| super::events::Declared {
            key: requirement.key().to_string(),
            declared: profile.declares(requirement),
        }),
        repro: None,
    }
}

/// Findings carry the check's level in this run (a declared requirement is a MUST only
/// when the profile declares it) and cite the edition judged.
fn at_level(mut findings: Vec<Finding>, level: Level, edition: Edition) -> Vec<Finding> {
    for finding in &mut findings {
        finding.level = level;
        cite(finding, edition);
    }
    findings
}

/// A finding cites its check's section in the edition judged.
fn cite(finding: &mut Finding, edition: Edition) {
    if let Some(def) = catalog::find(&finding.check_id) {
        finding.spec_ref = def.spec_in(edition).to_string();
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

fn scenario_result(
    done: Done,
    profile: &Profile,
    edition: Edition,
    facts: &RunFacts<'_>,
) -> CheckResult {
    let mut result = base_result(done.def, Status::Passed, profile, edition);
    let findings = at_level(done.findings, result.level, edition);
    result.duration_ms = done.duration_ms;
    // The failing invocation: the one the first finding came after, else the last one.
    let failing = done
        .first_failing
        .or_else(|| done.invocations.len().checked_sub(1));
    let record = failing.and_then(|i| done.invocations.get(i).map(|r| (i, r)));
    let repro = Repro::new(
        done.def.id,
        done.def.tier.as_str(),
        done.def.id,
        record,
        facts,
    );
    result.invocations = done.invocations;
    match done.outcome {
        Err(error) => {
            result.status = Status::Errored;
            result.reason = Some(error.to_string());
        }
        Ok(()) if done.skipped.is_some() && findings.is_empty() => {
            result.status = Status::Skipped;
            result.reason = done.skipped;
        }
        Ok(()) => {
            result.status = status_of(&findings, done.crashed);
            result.findings = crate::finding::dedupe(findings);
        }
    }
    if crate::report::is_bad(result.status) || result.status == Status::Warned {
        result.repro = Some(repro);
    }
    result
}

fn oracle_result(
    def: &CheckDef,
    hits: Vec<Hit>,
    exercised: bool,
    profile: &Profile,
    edition: Edition,
    facts: &RunFacts<'_>,
) -> CheckResult {
    let mut result = base_result(def, Status::Passed, profile, edition);
    // The first invocation that broke the rule, in catalog order, reproduces it.
    let repro = hits.first().map(|hit| {
        let scenario = catalog::find(hit.scenario).map_or(def.tier, |d| d.tier);
        Repro::new(
            def.id,
            scenario.as_str(),
            hit.scenario,
            Some((hit.order.1, &hit.record)),
            facts,
        )
    });
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
        finding,
        record,
        scenario,
        ..
    } in hits
    {
        if !result.scenarios.iter().any(|s| s == scenario) {
            result.scenarios.push(scenario.to_string());
        }
        if seen_argv.insert(record.capture.argv.clone()) && result.invocations.len() < 5 {
            result.invocations.push(record.clone());
        }
        let mut finding = finding;
        finding.level = result.level;
        cite(&mut finding, edition);
        finding.pointer = format!("`{}` {}", record.capture.argv_display(), finding.pointer);
        if record.outcome == Outcome::Crashed && def.id == "ENV.result-present" {
            result.status = Status::Crashed;
        }
        result.findings.push(finding);
    }
    if result.status != Status::Crashed {
        result.status = status_of(&result.findings, false);
    }
    result.findings = crate::finding::dedupe(std::mem::take(&mut result.findings));
    result.repro = repro;
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
