//! Contract editions and empty runs, proven through the runner and the binary against the
//! fixture SUT in both of its editions: `auto` judges the contract-2 fixture by contract 2
//! (every check of that edition passes, none of contract 3 only runs); `--contract 3` gives
//! the migration view (every failure explained by a documented difference, none of both
//! editions), and the same fixture broken in a rule both editions state is grouped as a
//! violation of both; a SUT answering in no known edition stops at the smoke gate with one
//! error; a run that judged nothing fails unless `--allow-empty`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;

use assert_cmd::Command;
use stoat_conformance::catalog::{all, Tier};
use stoat_conformance::report::Report;
use stoat_conformance::run::events::Migration;
use stoat_conformance::run::{self, Contract, RunConfig, Selection, Status, Sut};
use stoat_conformance::spec::Edition;

#[path = "support/fixture_families.rs"]
mod fixture_families;
use fixture_families::not_implemented_by_fixture;

const SPEAKS_V2: &str = "--fixture-speaks-contract-2";

fn fixture() -> String {
    env!("CARGO_BIN_EXE_stoat-fixture-sut").to_string()
}

fn fixture_v2() -> Vec<String> {
    vec![fixture(), SPEAKS_V2.to_string()]
}

fn run_suite(sut: Vec<String>, contract: Contract, fakes: bool, selection: Selection) -> Report {
    let config = RunConfig {
        sut: Sut::from_argv(&sut).expect("sut"),
        fakes: fakes.then(|| PathBuf::from(env!("CARGO_BIN_EXE_stoat-fake"))),
        selection,
        jobs: 2,
        seed: 7,
        seed_source: Default::default(),
        timeout: Duration::from_secs(30),
        baseline: None,
        skip_smoke: false,
        oracle: None,
        guest: None,
        contract,
        allow_empty: false,
        profile: Default::default(),
        profile_path: None,
    };
    let mut report = Report::default();
    run::run(config, &mut |event| report.absorb(event)).expect("the harness runs");
    report
}

/// Ids of the checks that did not pass (an oracle rule no invocation exercised aside: the
/// fixture always answers, and a rule about a command family contract 2 lacks has nothing to
/// judge there).
fn not_passed(report: &Report) -> Vec<String> {
    let unexercised = |c: &&stoat_conformance::run::CheckResult| {
        c.status == Status::Skipped
            && c.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("no selected scenario made an invocation"))
    };
    report
        .checks
        .iter()
        .filter(|c| {
            c.status != Status::Passed && !unexercised(c) && !not_implemented_by_fixture(&c.id)
        })
        .map(|c| {
            format!(
                "{} {}: {:?} {:?}",
                c.status.label(),
                c.id,
                c.reason,
                c.findings
            )
        })
        .collect()
}

#[test]
fn auto_judges_a_contract_2_sut_by_contract_2() {
    let report = run_suite(fixture_v2(), Contract::Auto, true, Selection::default());
    assert!(!report.smoke_failed, "smoke: {:?}", report.smoke);
    let info = report.info.as_ref().expect("info");
    assert_eq!(info.contract, 2);
    assert_eq!(info.sut_contract, Some(2));
    assert!(!info.migration);
    let problems = not_passed(&report);
    assert!(
        problems.is_empty(),
        "the contract-2 fixture keeps contract 2:\n{}",
        problems.join("\n")
    );
    let expected = all()
        .iter()
        .filter(|d| d.tier != Tier::Real && d.editions.contains(Edition::V2))
        .count();
    assert_eq!(
        report.checks.len(),
        expected,
        "every contract-2 check ran, no other"
    );
    assert!(report.checks.iter().all(|c| c.editions.contains(&2)));
    assert!(report.checks.iter().any(|c| c.id == "ENV.v-is-2"));
    assert!(!report.checks.iter().any(|c| c.id == "ENV.v-is-3"));
}

#[test]
fn contract_3_against_a_contract_2_sut_is_the_migration_view() {
    let report = run_suite(
        fixture_v2(),
        Contract::Fixed(Edition::V3),
        true,
        Selection::default(),
    );
    assert!(!report.smoke_failed, "smoke: {:?}", report.smoke);
    let info = report.info.as_ref().expect("info");
    assert_eq!(
        (info.contract, info.sut_contract, info.migration),
        (3, Some(2), true)
    );
    let expected = all()
        .iter()
        .filter(|d| d.tier != Tier::Real && d.editions.contains(Edition::V3))
        .count();
    assert_eq!(report.checks.len(), expected, "every contract-3 check ran");
    let failed: Vec<_> = report
        .checks
        .iter()
        .filter(|c| matches!(c.status, Status::Failed | Status::Crashed | Status::Warned))
        .filter(|c| !not_implemented_by_fixture(&c.id))
        .collect();
    for id in [
        "ENV.v-is-3",
        "VERSION.contract-3",
        "GET.vm-status",
        "APPLY.provision-alias",
    ] {
        assert!(
            failed.iter().any(|c| c.id == id),
            "{id} fails against contract 2"
        );
    }
    for check in &failed {
        assert!(
            matches!(check.migration, Some(Migration::Explained { .. })),
            "{} is explained by the documented differences, got {:?}",
            check.id,
            check.migration
        );
    }
    let v = report
        .checks
        .iter()
        .find(|c| c.id == "ENV.v-is-3")
        .expect("ran");
    assert_eq!(
        v.migration,
        Some(Migration::Explained {
            change: "contract 2 says v is 2".to_string()
        })
    );
    assert!(report
        .checks
        .iter()
        .filter(|c| c.status == Status::Passed)
        .all(|c| c.migration.is_none()));
}

#[test]
fn a_violation_of_both_editions_is_grouped_as_such() {
    let mut sut = vec![
        env!("CARGO_BIN_EXE_stoat-conformance").to_string(),
        "mutate".into(),
        "--op".into(),
        "null-list".into(),
        "--".into(),
    ];
    sut.extend(fixture_v2());
    let selection = Selection {
        include: vec!["LS.*".into(), "LIST.never-null".into(), "ENV.v-is-3".into()],
        ..Default::default()
    };
    let report = run_suite(sut, Contract::Fixed(Edition::V3), false, selection);
    let group = |id: &str| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id} ran"))
            .migration
            .clone()
    };
    assert_eq!(group("LIST.never-null"), Some(Migration::BothEditions));
    assert!(matches!(
        group("ENV.v-is-3"),
        Some(Migration::Explained { .. })
    ));
}

#[test]
fn the_binary_prints_the_migration_groups_and_records_the_edition() {
    let dir = tempfile::tempdir().expect("tmp");
    let json = dir.path().join("r.json");
    let output = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args([
            "run",
            "--contract",
            "3",
            "--id",
            "ENV.*",
            "--id",
            "VERSION.*",
            "--seed",
            "1",
            "--json-report",
        ])
        .arg(&json)
        .arg("--")
        .args(fixture_v2())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("migration view: the SUT speaks contract 2"),
        "{stdout}"
    );
    assert!(
        stdout.contains("explained by the documented differences"),
        "{stdout}"
    );
    assert!(stdout.contains("0 violations of both editions"), "{stdout}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    assert_eq!(saved["info"]["contract"], 3);
    assert_eq!(saved["info"]["sut_contract"], 2);
    assert_eq!(saved["info"]["migration"], true);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/report.schema.json"))
            .expect("schema"),
    )
    .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let errors: Vec<String> = validator
        .iter_errors(&saved)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "the migration report validates: {errors:?}"
    );
    assert!(saved["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .any(|c| c["migration"]["group"] == "explained"));

    let auto = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args(["run", "--id", "ENV.*", "--id", "VERSION.*", "--json-report"])
        .arg(&json)
        .arg("--")
        .args(fixture_v2())
        .output()
        .expect("run");
    assert_eq!(
        auto.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&auto.stdout)
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    assert_eq!(saved["info"]["contract"], 2);
}

/// A SUT answering `version` in an edition nobody knows.
fn unknown_edition_sut(dir: &std::path::Path) -> String {
    let path = dir.join("stoat-v7");
    std::fs::write(
        &path,
        "#!/bin/sh\nprintf '%s\\n' '{\"v\":7,\"type\":\"result\",\"cmd\":\"version\",\"ok\":true,\"data\":{\"version\":\"x\",\"contract\":7}}'\n",
    )
    .expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

#[test]
fn the_smoke_gate_stops_only_a_sut_of_no_known_edition() {
    let dir = tempfile::tempdir().expect("tmp");
    let output = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args([
            "run",
            "--contract",
            "3",
            "--",
            &unknown_edition_sut(dir.path()),
        ])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "does not answer `--json version` in any contract edition this suite knows (2, 3)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("0 passed, 1 failed, 0 skipped"), "{stdout}");
}

fn run_binary(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args(["run", "--seed", "1"])
        .args(args)
        .args(["--", &fixture()])
        .output()
        .expect("run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_run_that_judged_nothing_fails_unless_allowed() {
    let (code, out) = run_binary(&["--id", "NOSUCH.*"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("the selection matched no check"), "{out}");
    let (code, out) = run_binary(&["--id", "NOSUCH.*", "--allow-empty"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("not run: the selection matched no check"),
        "{out}"
    );

    let (code, out) = run_binary(&["--tier", "real", "--id", "REAL.*"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("the real tier ran nothing"), "{out}");
    assert!(out.contains("needs --guest"), "{out}");

    let (code, out) = run_binary(&["--id", "HELP.mentions-commands"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no MUST check ran"), "{out}");
}

#[test]
fn the_fake_tier_without_the_fake_tools_is_not_green() {
    let selection = Selection {
        tiers: vec![Tier::Fake],
        ..Default::default()
    };
    let report = run_suite(vec![fixture()], Contract::Auto, false, selection);
    assert!(
        report
            .summary
            .vacuous
            .iter()
            .any(|v| v.contains("the fake tier ran nothing") && v.contains("stoat-fake")),
        "{:?}",
        report.summary.vacuous
    );
    assert_ne!(report.summary.exit_code(report.smoke_failed), 0);
}

#[test]
fn golden_verify_holds_a_contract_2_sut_to_the_contract_2_transcripts() {
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/../golden");
    let verify = |sut: Vec<String>, extra: &[&str]| {
        let output = Command::cargo_bin("stoat-conformance")
            .expect("binary")
            .args(["golden", "verify", "--dir", golden])
            .args(extra)
            .arg("--")
            .args(sut)
            .output()
            .expect("verify");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, out) = verify(fixture_v2(), &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("PASS v2/get/ok"), "{out}");
    assert!(
        !out.contains("PASS ls/empty"),
        "contract-3 transcripts are not replayed: {out}"
    );
    // Judged as contract 3 instead, the same SUT fails the contract-3 transcripts.
    let (code, out) = verify(fixture_v2(), &["--contract", "3", "--case", "ls/empty"]);
    assert_eq!(code, Some(1), "{out}");
    let (code, out) = verify(vec![fixture()], &["--case", "v2/*"]);
    assert_eq!(
        code,
        Some(1),
        "a contract-3 SUT has no contract-2 transcripts to pass: {out}"
    );
}
