//! The proof that the suite works: the whole catalog passes against the fixture SUT, and
//! every mutant (the fixture wrapped by one mutation operator) is caught by the checks the
//! operator names, while the benign operators are not flagged at all.

use std::path::PathBuf;
use std::time::Duration;

use stoat_conformance::catalog::Tier;
use stoat_conformance::mutate::operators;
use stoat_conformance::report::Report;
use stoat_conformance::run::{self, RunConfig, Selection, Status, Sut};
use stoat_conformance::spec::Edition;

#[path = "support/fixture_families.rs"]
mod fixture_families;
use fixture_families::not_implemented_by_fixture;

fn fixture() -> String {
    env!("CARGO_BIN_EXE_stoat-fixture-sut").to_string()
}

fn fakes() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stoat-fake"))
}

fn run_suite(sut: Vec<String>, selection: Selection, skip_smoke: bool) -> Report {
    let config = RunConfig {
        sut: Sut::from_argv(&sut).expect("sut"),
        fakes: Some(fakes()),
        selection,
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

fn mutant(op: &str) -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_stoat-conformance").to_string(),
        "mutate".into(),
        "--op".into(),
        op.into(),
        "--".into(),
        fixture(),
    ]
}

/// Oracle rules no fixture invocation can trigger (the fixture always answers); they are exercised by the mutants and the oracle's unit tests instead.
const NOT_EXERCISED_BY_FIXTURE: &[&str] = &["EXIT.crash-nonzero", "PROJECT.fanout-json-lines"];

#[test]
fn the_fixture_passes_every_pure_and_fake_check() {
    let report = run_suite(vec![fixture()], Selection::default(), false);
    assert!(!report.smoke_failed, "smoke failed: {:?}", report.smoke);
    let mut problems = Vec::new();
    for check in &report.checks {
        let allowed_skip = check.status == Status::Skipped
            && NOT_EXERCISED_BY_FIXTURE.contains(&check.id.as_str());
        let not_implemented = not_implemented_by_fixture(&check.id);
        if check.status != Status::Passed && !allowed_skip && !not_implemented {
            problems.push(format!(
                "{} {}: {:?} {:?}",
                check.status.label(),
                check.id,
                check.reason,
                check.findings
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the fixture must pass:\n{}",
        problems.join("\n")
    );
    let expected = stoat_conformance::catalog::all()
        .iter()
        .filter(|d| d.tier != Tier::Real && d.editions.contains(Edition::V3))
        .count();
    assert_eq!(
        report.checks.len(),
        expected,
        "every pure and fake check ran"
    );
}

#[test]
fn every_mutant_is_caught_by_the_checks_it_names_and_benign_ones_pass() {
    let mut failures = Vec::new();
    // Four mutants at a time: the machine is small and shared.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Report>>> = operators()
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(op) = operators().get(index) else {
                    break;
                };
                let mut include: Vec<String> = op.triggers.iter().map(|s| s.to_string()).collect();
                include.extend(op.caught_by.iter().map(|s| s.to_string()));
                include.extend(["ENV.*", "EXIT.*", "LEAK.*", "LIST.*", "EXEC.*"].map(String::from));
                let selection = Selection {
                    include,
                    ..Default::default()
                };
                let report = run_suite(mutant(op.name), selection, true);
                *slots[index].lock().expect("slot") = Some(report);
            });
        }
    });
    let results: Vec<(String, Report)> = operators()
        .iter()
        .zip(slots)
        .map(|(op, slot)| {
            (
                op.name.to_string(),
                slot.into_inner().expect("slot").expect("every mutant ran"),
            )
        })
        .collect();
    for ((name, report), op) in results.iter().zip(operators()) {
        // The families the fixture does not implement fail on it unmutated: their mutants
        // are proven against the reference (tests/mutants_reference.rs), not here.
        let flagged: Vec<&str> = report
            .checks
            .iter()
            .filter(|c| matches!(c.status, Status::Failed | Status::Crashed | Status::Warned))
            .map(|c| c.id.as_str())
            .filter(|id| !not_implemented_by_fixture(id))
            .collect();
        let checks = op.checks();
        if op.explored() && checks.is_empty() {
            // Killed by `explore` alone, not by catalog checks: tests/explore.rs.
            continue;
        }
        if op.caught_by.is_empty() {
            if !flagged.is_empty() {
                failures.push(format!("benign operator {name} was flagged by {flagged:?}"));
            }
            continue;
        }
        let missed: Vec<&&str> = checks
            .iter()
            .filter(|id| !flagged.contains(id) && !not_implemented_by_fixture(id))
            .collect();
        if !missed.is_empty() {
            failures.push(format!(
                "mutant {name} ({}) was not caught by {missed:?}; flagged: {flagged:?}",
                op.breaks
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_smoke_stage_stops_a_wrong_contract_with_one_clear_error() {
    let report = run_suite(mutant("v-2"), Selection::default(), false);
    assert!(report.smoke_failed);
    assert!(
        report.checks.is_empty(),
        "no check runs after a failed smoke stage"
    );
    let smoke = report.smoke.expect("smoke recorded");
    assert!(
        smoke.findings.iter().any(|f| f.check_id == "ENV.v-is-3"),
        "{:?}",
        smoke.findings
    );
}
