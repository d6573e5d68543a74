//! The mutant kit against the REFERENCE stoat: each mutation operator wraps the reference
//! (`stoat-conformance mutate --op OP -- <stoat>`) and must be caught, i.e. some check that
//! passes on the unmutated reference fails on the mutant; the benign operators must flag
//! nothing that passes on the reference. Prints which checks caught each mutant.
//!
//! Independence: conformance never depends on impl/ crates, so the reference is found by
//! path (support/reference.rs: `STOAT_REFERENCE`, else `target/debug/stoat`; missing or stale
//! fails). An operator whose trigger scenarios all fail on the reference itself cannot be
//! exercised: that fails the test too, since a mutant nobody can trigger proves nothing.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use stoat_conformance::mutate::{operators, About};
use stoat_conformance::report::Report;
use stoat_conformance::run::{self, RunConfig, Selection, Status, Sut};

#[path = "support/reference.rs"]
mod support;

fn run_suite(sut: Vec<String>, include: Vec<String>, skip_smoke: bool) -> Report {
    let config = RunConfig {
        sut: Sut::from_argv(&sut).expect("sut"),
        fakes: Some(PathBuf::from(env!("CARGO_BIN_EXE_stoat-fake"))),
        selection: Selection {
            include,
            ..Default::default()
        },
        jobs: 2,
        seed: 42,
        seed_source: Default::default(),
        timeout: Duration::from_secs(30),
        baseline: None,
        skip_smoke,
        oracle: None,
        guest: None,
        contract: Default::default(),
        allow_empty: false,
        profile: Default::default(),
        profile_path: None,
    };
    let mut report = Report::default();
    run::run(config, &mut |event| report.absorb(event)).expect("the harness runs");
    report
}

fn with_status(report: &Report, wanted: &[Status]) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|c| wanted.contains(&c.status))
        .map(|c| c.id.clone())
        .collect()
}

/// What a mutant run selects: the operator's triggers and named checks, plus the oracle.
fn selection_for(op: &About) -> Vec<String> {
    let mut include: Vec<String> = op.triggers.iter().map(|s| s.to_string()).collect();
    include.extend(op.caught_by.iter().map(|s| s.to_string()));
    include.extend(
        [
            "ENV.*",
            "EXIT.*",
            "LEAK.*",
            "LIST.*",
            "EXEC.*",
            "SANDBOX.*",
            "SCHEMA.*",
        ]
        .map(String::from),
    );
    include
}

#[test]
fn every_mutant_of_the_reference_is_caught() {
    let stoat = support::fresh_reference().display().to_string();
    let clean = run_suite(vec![stoat.clone()], Vec::new(), false);
    assert!(
        !clean.smoke_failed,
        "the reference fails the smoke stage: {:?}",
        clean.smoke
    );
    let passing = with_status(&clean, &[Status::Passed]);

    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Report>>> = operators().iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(op) = operators().get(index) else {
                    break;
                };
                let sut = vec![
                    env!("CARGO_BIN_EXE_stoat-conformance").to_string(),
                    "mutate".into(),
                    "--op".into(),
                    op.name.into(),
                    "--".into(),
                    stoat.clone(),
                ];
                let report = run_suite(sut, selection_for(op), true);
                *slots[index].lock().expect("slot") = Some(report);
            });
        }
    });

    let mut failures = Vec::new();
    for (op, slot) in operators().iter().zip(slots) {
        let report = slot.into_inner().expect("slot").expect("every mutant ran");
        let flagged = with_status(&report, &[Status::Failed, Status::Crashed, Status::Warned]);
        let newly: Vec<&String> = flagged.iter().filter(|id| passing.contains(*id)).collect();
        let checks = op.checks();
        if op.explored() && checks.is_empty() {
            // Killed by `explore` alone, not by catalog checks: tests/explore.rs.
            continue;
        }
        if op.caught_by.is_empty() {
            println!("benign  {:<24} flagged by {newly:?}", op.name);
            if !newly.is_empty() {
                failures.push(format!(
                    "benign operator {} was flagged by {newly:?}",
                    op.name
                ));
            }
            continue;
        }
        let exercisable = op.triggers.iter().any(|t| passing.contains(*t));
        // Killed by a check about ITS rule, not by a side effect somewhere else.
        let by_its_rule = newly.iter().any(|id| checks.contains(&id.as_str()));
        if by_its_rule {
            println!("caught  {:<24} by {newly:?}", op.name);
        } else if !newly.is_empty() {
            failures.push(format!(
                "mutant {} ({}) was flagged only by {newly:?}, none of the checks about its rule {checks:?}",
                op.name, op.breaks
            ));
        } else if exercisable {
            failures.push(format!(
                "mutant {} ({}) was not caught: nothing that passes on the reference failed; flagged: {flagged:?}",
                op.name, op.breaks
            ));
        } else {
            failures.push(format!(
                "mutant {} cannot be exercised: its trigger scenarios {:?} fail on the reference itself",
                op.name,
                op.triggers
            ));
        }
    }
    println!("{} operators", operators().len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
