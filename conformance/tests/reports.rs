//! Snapshots of every reporter fed the same canned events, so a format change shows in review.

use stoat_conformance::finding::{Finding, Level};
use stoat_conformance::report::formats::{render, Format};
use stoat_conformance::report::human::Human;
use stoat_conformance::report::{compare, tap, Report, Reporter};
use stoat_conformance::run::events::{CheckResult, Event, RunInfo, Status, Summary};

fn result(id: &str, status: Status, findings: Vec<Finding>) -> Event {
    Event::Check(Box::new(CheckResult {
        id: id.into(),
        title: format!("title of {id}"),
        level: Level::Must,
        tier: "pure".into(),
        tags: vec!["envelope".into()],
        spec_ref: "json-v3#consumer-contract".into(),
        status,
        reason: (status == Status::Skipped).then(|| "not exercised".to_string()),
        findings,
        invocations: Vec::new(),
        duration_ms: 3,
        editions: vec![2, 3],
        migration: None,
        scenarios: Vec::new(),
        requires: None,
        repro: None,
    }))
}

fn events() -> Vec<Event> {
    let finding = Finding {
        check_id: "ENV.one-result".into(),
        level: Level::Must,
        spec_ref: "json-v3#consumer-contract".into(),
        pointer: "`--json ls` line 2".into(),
        message: "2 result lines (lines [1, 2]); exactly one is allowed".into(),
    };
    let mut summary = Summary::default();
    for status in [Status::Passed, Status::Failed, Status::Skipped] {
        summary.count(status);
    }
    vec![
        Event::Started(RunInfo {
            suite_version: "0.1.0".into(),
            contract: 3,
            sut_contract: Some(3),
            contract_source: "auto".into(),
            migration: false,
            sut: "stoat".into(),
            sut_argv: Vec::new(),
            profile: None,
            sut_version: Some("1.2.3".into()),
            seed: 7,
            seed_source: stoat_conformance::run::SeedSource::Flag,
            jobs: 2,
            selected: 3,
            tiers: vec!["pure".into()],
            shard: None,
        }),
        Event::Smoke {
            passed: true,
            findings: Vec::new(),
            invocation: None,
        },
        result("ENV.result-last", Status::Passed, Vec::new()),
        result("ENV.one-result", Status::Failed, vec![finding]),
        result("ENV.event-data", Status::Skipped, Vec::new()),
        Event::Finished {
            summary,
            smoke_failed: false,
        },
    ]
}

#[test]
fn human_report() {
    let mut out = Vec::new();
    {
        let mut human = Human::new(&mut out, false, true);
        for event in events() {
            human.event(&event);
        }
    }
    insta::assert_snapshot!(String::from_utf8_lossy(&out));
}

fn report() -> Report {
    let mut report = Report::default();
    for event in events() {
        report.absorb(&event);
    }
    report.started = Some("2026-01-02T03:04:05Z".into());
    report
}

#[test]
fn tap_report() {
    insta::assert_snapshot!(render(&report(), Format::Tap(tap::Version::V13)));
}

#[test]
fn junit_report() {
    insta::assert_snapshot!(render(&report(), Format::Junit));
}

#[test]
fn markdown_report() {
    insta::assert_snapshot!(render(&report(), Format::Markdown));
}

#[test]
fn compare_report() {
    let mut before = Report::default();
    for event in events() {
        before.absorb(&event);
    }
    let mut after = before.clone();
    for check in after.checks.iter_mut() {
        check.status = match check.status {
            Status::Failed => Status::Passed,
            Status::Passed => Status::Failed,
            other => other,
        };
    }
    insta::assert_snapshot!(compare::compare(&before, &after));
    assert!(compare::regressed(&before, &after));
}
