//! `run --shard K/N` and `report --merge`: the pure tier against the reference, run whole
//! and in three shards, merges into the report of the whole run. Two runs of one SUT differ
//! in what no run can fix (timings, temporary paths, the SUT's own clock readings such as
//! `waited_ms`), so both reports are compared with those read out the same way; every row,
//! status, finding, reason, count and closing-line reason must be equal, and every row's
//! invocations must be the same command lines with the same outcomes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/reference.rs"]
mod support;

fn conformance() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stoat-conformance"))
}

fn run(stoat: &[String], out: &Path, shard: Option<&str>) {
    let mut command = conformance();
    command.args(["run", "--tier", "pure", "--jobs", "2", "--seed", "5"]);
    if let Some(shard) = shard {
        command.args(["--shard", shard]);
    }
    command
        .arg("--json-report")
        .arg(out)
        .arg("--fakes")
        .arg(env!("CARGO_BIN_EXE_stoat-fake"))
        .arg("--")
        .args(stoat);
    let output = command.output().expect("the suite runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{shard:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What a report says, without what differs from one run of the same SUT to the next.
fn comparable(report: &Value) -> Value {
    let mut report = report.clone();
    report.as_object_mut().expect("object").remove("started");
    for key in ["duration_ms", "sut_ms"] {
        report["summary"]
            .as_object_mut()
            .expect("summary")
            .remove(key);
    }
    let checks = report["checks"].as_array_mut().expect("checks");
    for row in checks.iter_mut() {
        let row = row.as_object_mut().expect("row");
        row.remove("duration_ms");
        // Evidence: the command lines and how each ended, not the bytes (which carry
        // temporary paths, ports and the SUT's clock).
        let invocations: Vec<Value> = row
            .remove("invocations")
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|i| serde_json::json!([i["capture"]["argv"], i["outcome"]]))
            .collect();
        row.insert("invocations".into(), Value::Array(invocations));
        if let Some(repro) = row.get_mut("repro").and_then(Value::as_object_mut) {
            for key in ["stdout", "stderr", "ending"] {
                repro.remove(key);
            }
        }
    }
    report["smoke"]
        .as_object_mut()
        .map(|s| s.remove("invocation"));
    // Each sandbox has a fresh temporary root.
    without_temp_paths(&mut report);
    report
}

fn without_temp_paths(value: &mut Value) {
    match value {
        Value::String(text) => *text = stoat_conformance::report::text::without_temp_paths(text),
        Value::Array(items) => items.iter_mut().for_each(without_temp_paths),
        Value::Object(map) => map.values_mut().for_each(without_temp_paths),
        _ => {}
    }
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("JSON")
}

#[test]
fn three_shards_merge_into_the_whole_runs_report() {
    let stoat: PathBuf = support::fresh_reference();
    shards_merge_into_the_whole(&[stoat.display().to_string()], false);
}

/// The same with findings to merge: every invocation of the reference, wrapped by the mutant
/// kit, answers an empty list as null, so an oracle rule finds something in every shard.
#[test]
fn shards_with_findings_merge_into_the_whole_runs_report() {
    let stoat: PathBuf = support::fresh_reference();
    shards_merge_into_the_whole(
        &[
            env!("CARGO_BIN_EXE_stoat-conformance").to_string(),
            "mutate".into(),
            "--op".into(),
            "null-list".into(),
            "--".into(),
            stoat.display().to_string(),
        ],
        true,
    );
}

/// Runs `stoat` whole and as three shards and compares; with `findings_to_merge`, some
/// oracle rule must have findings in at least two shards (so their merge is exercised).
fn shards_merge_into_the_whole(stoat: &[String], findings_to_merge: bool) {
    let dir = tempfile::tempdir().expect("tmp");
    let whole = dir.path().join("whole.json");
    run(stoat, &whole, None);
    let mut parts = Vec::new();
    for k in 1..=3 {
        let path = dir.path().join(format!("shard-{k}.json"));
        run(stoat, &path, Some(&format!("{k}/3")));
        let part = load(&path);
        assert_eq!(part["info"]["shard"], format!("{k}/3"));
        parts.push(path);
    }
    // Each scenario ran in exactly one shard; every shard judged the oracle rules.
    let whole_report = load(&whole);
    let scenario_rows = |report: &Value| -> Vec<String> {
        report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|row| {
                stoat_conformance::catalog::find(row["id"].as_str().unwrap_or(""))
                    .is_some_and(|d| d.kind == stoat_conformance::catalog::Kind::Scenario)
            })
            .map(|row| row["id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let mut spread: Vec<String> = parts.iter().flat_map(|p| scenario_rows(&load(p))).collect();
    let per_shard: Vec<usize> = parts
        .iter()
        .map(|p| scenario_rows(&load(p)).len())
        .collect();
    assert!(per_shard.iter().all(|n| *n > 0), "{per_shard:?}");
    spread.sort();
    let mut expected = scenario_rows(&whole_report);
    expected.sort();
    assert_eq!(spread, expected, "the shards split the scenarios");

    if findings_to_merge {
        let oracle_findings = |report: &Value| -> bool {
            report["checks"]
                .as_array()
                .expect("checks")
                .iter()
                .any(|row| {
                    stoat_conformance::catalog::find(row["id"].as_str().unwrap_or(""))
                        .is_some_and(|d| d.kind == stoat_conformance::catalog::Kind::Oracle)
                        && row["findings"].as_array().is_some_and(|f| !f.is_empty())
                })
        };
        let shards_with = parts.iter().filter(|p| oracle_findings(&load(p))).count();
        assert!(
            shards_with >= 2,
            "oracle findings in {shards_with} shard(s)"
        );
    }

    // Merged in any order, printed as JSON.
    let output = conformance()
        .args(["report", "--format", "json", "--merge"])
        .args([&parts[2], &parts[0], &parts[1]])
        .output()
        .expect("merge runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let whole_exit = conformance()
        .args(["report", "--format", "json"])
        .arg(&whole)
        .output()
        .expect("report runs")
        .status
        .code();
    assert_eq!(
        output.status.code(),
        whole_exit,
        "the merged report exits as the whole run's does"
    );
    let merged: Value = serde_json::from_slice(&output.stdout).expect("merged JSON");
    assert_eq!(merged["info"].get("shard"), None);
    let (a, b) = (comparable(&whole_report), comparable(&merged));
    if a != b {
        let rows = |v: &Value| v["checks"].as_array().cloned().unwrap_or_default();
        for (x, y) in rows(&a).iter().zip(rows(&b)) {
            assert_eq!(x, &y, "row {}", x["id"]);
        }
        assert_eq!(a["summary"], b["summary"]);
        assert_eq!(a, b);
    }

    // The human closing line is the same.
    let closing = |args: &[&std::ffi::OsStr]| {
        let out = conformance().args(args).output().expect("report");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    let mut merge_args: Vec<&std::ffi::OsStr> = vec!["report".as_ref(), "--merge".as_ref()];
    merge_args.extend(parts.iter().map(|p| p.as_os_str()));
    assert_eq!(
        closing(&["report".as_ref(), whole.as_os_str()]),
        closing(&merge_args)
    );

    // Two shards of one part, or a part missing, are refused.
    let refused = conformance()
        .args(["report", "--merge"])
        .args([&parts[0], &parts[0], &parts[2]])
        .output()
        .expect("merge runs");
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("1/N to N/N"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
