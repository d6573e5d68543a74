//! The `stoat-conformance` binary end to end: run against the fixture with every report
//! format, rerun-failed narrowing, the baseline rules, `check`, `report --compare`, `list`.

use assert_cmd::Command;

fn conformance() -> Command {
    Command::cargo_bin("stoat-conformance").expect("binary")
}

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_stoat-fixture-sut")
}

#[test]
fn run_against_the_fixture_passes_and_writes_reports() {
    let dir = tempfile::tempdir().expect("tmp");
    let json = dir.path().join("r.json");
    let junit = dir.path().join("r.xml");
    let tap = dir.path().join("r.tap");
    let output = conformance()
        .args([
            "run",
            "--id",
            "LS.*",
            "--id",
            "GET.not-found",
            "--id",
            "ENV.*",
            "--seed",
            "1",
            "--json-report",
        ])
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg("--tap")
        .arg(&tap)
        .args(["--", fixture()])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        regex::Regex::new(r"^\d+ passed, 0 failed, \d+ skipped$")
            .expect("re")
            .is_match(last),
        "{last}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    assert_eq!(report["schema"], "stoat-conformance-report/1");
    assert!(std::fs::read_to_string(&junit)
        .expect("junit")
        .contains("<testsuite"));
    assert!(std::fs::read_to_string(&tap)
        .expect("tap")
        .starts_with("TAP version 13\n"));
}

#[test]
fn a_mutant_fails_the_run_and_rerun_failed_narrows_to_the_failures() {
    let dir = tempfile::tempdir().expect("tmp");
    let json = dir.path().join("r.json");
    let mutant = [
        env!("CARGO_BIN_EXE_stoat-conformance"),
        "mutate",
        "--op",
        "null-list",
        "--",
        fixture(),
    ];
    let output = conformance()
        .args(["run", "--id", "LS.*", "--id", "LIST.*", "--json-report"])
        .arg(&json)
        .arg("--")
        .args(mutant)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    let failed: Vec<String> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] == "failed")
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        failed.contains(&"LIST.never-null".to_string()),
        "{failed:?}"
    );

    let again = dir.path().join("again.json");
    conformance()
        .arg("run")
        .arg("--rerun-failed")
        .arg(&json)
        .arg("--json-report")
        .arg(&again)
        .arg("--")
        .args(mutant)
        .assert()
        .code(1);
    let rerun: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).expect("json")).expect("parse");
    let mut ids: Vec<String> = rerun["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect();
    ids.sort();
    let mut expected = failed.clone();
    expected.sort();
    assert_eq!(ids, expected, "rerun-failed runs exactly the failed checks");

    let compare = conformance()
        .args(["report"])
        .arg(&json)
        .arg("--compare")
        .arg(&again)
        .output()
        .expect("compare");
    assert!(String::from_utf8_lossy(&compare.stdout).contains("## stoat-conformance: comparison"));
}

#[test]
fn the_baseline_forgives_listed_failures_and_flags_stale_entries() {
    let dir = tempfile::tempdir().expect("tmp");
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(&baseline, "[[expected]]\nid = \"LS.empty-is-array\"\nreason = \"known: null list\"\n[[expected]]\nid = \"LIST.never-null\"\nreason = \"known: null list\"\n").expect("write");
    let mutant = [
        env!("CARGO_BIN_EXE_stoat-conformance"),
        "mutate",
        "--op",
        "null-list",
        "--",
        fixture(),
    ];
    conformance()
        .args([
            "run",
            "--id",
            "LS.empty-is-array",
            "--id",
            "LIST.never-null",
            "--baseline",
        ])
        .arg(&baseline)
        .arg("--")
        .args(mutant)
        .assert()
        .code(0);
    // Against the correct fixture the same baseline is stale.
    conformance()
        .args([
            "run",
            "--id",
            "LS.empty-is-array",
            "--id",
            "LIST.never-null",
            "--baseline",
        ])
        .arg(&baseline)
        .args(["--", fixture()])
        .assert()
        .code(1);
}

#[test]
fn check_judges_a_transcript_offline() {
    let good = "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"vms\":[]}}\n";
    conformance()
        .args(["check", "-", "--cmd", "ls", "--exit", "0"])
        .write_stdin(good)
        .assert()
        .code(0);
    let two = format!("{good}{good}");
    let output = conformance()
        .args(["check", "-", "--exit", "0"])
        .write_stdin(two)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("ENV.one-result"));
    conformance()
        .args(["check", "-", "--exit", "1"])
        .write_stdin("panic: boom\n")
        .assert()
        .code(1);
}

#[test]
fn usage_errors_exit_2_and_a_missing_sut_is_a_harness_error() {
    conformance().args(["run"]).assert().code(2);
    conformance().args(["frobnicate"]).assert().code(2);
    conformance()
        .args(["run", "--", "/nonexistent/stoat"])
        .assert()
        .code(3);
}

#[test]
fn list_formats() {
    let text = conformance()
        .args(["list", "--tier", "fake"])
        .output()
        .expect("list");
    assert!(String::from_utf8_lossy(&text.stdout).contains("EXEC.base64-stdout"));
    let json = conformance()
        .args(["list", "--format", "json", "--id", "ENV.*"])
        .output()
        .expect("list");
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert!(rows
        .as_array()
        .expect("rows")
        .iter()
        .all(|r| r["id"].as_str().unwrap_or("").starts_with("ENV.")));
}

/// Runs the suite with `args` against `sut`, its JSON report written to `<dir>/<name>.json`;
/// returns the exit status and the report's path.
fn json_report(
    dir: &std::path::Path,
    name: &str,
    args: &[&str],
    sut: &[&str],
) -> (Option<i32>, std::path::PathBuf) {
    let path = dir.join(format!("{name}.json"));
    let output = conformance()
        .arg("run")
        .args(args)
        .arg("--json-report")
        .arg(&path)
        .arg("--")
        .args(sut)
        .output()
        .expect("run");
    (output.status.code(), path)
}

/// Two implementations side by side as a maintainer reads them on a phone: named columns,
/// each cell linking into that implementation's own page (written beside the matrix), a
/// failure's reason on the page, a header that stays in view, a switch to the rows that
/// differ; and `--compare` says what a newly failing check found.
#[test]
fn matrix_and_compare_show_names_reasons_links_and_the_rows_that_differ() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = |name: &str, sut: &[&str]| {
        json_report(
            dir.path(),
            name,
            &["--id", "LS.empty-is-array", "--id", "LS.lists-fixture"],
            sut,
        )
        .1
    };
    let clean = run("a", &[fixture()]);
    let mutant = run(
        "b",
        &[
            env!("CARGO_BIN_EXE_stoat-conformance"),
            "mutate",
            "--op",
            "null-list",
            "--",
            fixture(),
        ],
    );
    let out = dir.path().join("matrix");
    conformance()
        .args(["report", "--matrix"])
        .arg(&clean)
        .arg(&mutant)
        .args(["--name", "reference", "--name", "null lists", "--out"])
        .arg(&out)
        .assert()
        .code(0);
    let page = std::fs::read_to_string(out.join("matrix.html")).expect("page");
    for file in ["reference.html", "null lists.html", "reference.svg"] {
        assert!(out.join(file).is_file(), "no {file}");
    }
    assert!(
        page.contains("<a href=\"null lists.html\">null lists</a>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"null lists.html#LS.empty-is-array\">FAIL</a><div class=\"why\">"),
        "{page}"
    );
    assert!(page.contains("position:sticky;top:0"), "{page}");
    assert!(page.contains("id=\"differ\""), "{page}");
    let own = std::fs::read_to_string(out.join("null lists.html")).expect("own page");
    assert!(
        own.contains("id=\"LS.empty-is-array\""),
        "the link's target exists"
    );
    // The row both pass is marked for the switch to hide; the differing one is not.
    let row = |id: &str| {
        page.lines()
            .find(|l| l.contains(&format!("<code>{id}</code>")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!row("LS.empty-is-array").contains("class=\"same\""));
    let compared = conformance()
        .args(["report"])
        .arg(&clean)
        .arg("--compare")
        .arg(&mutant)
        .output()
        .expect("compare");
    let text = String::from_utf8_lossy(&compared.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("- `LS.empty-is-array`: PASS -> FAIL: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.len() > "- `LS.empty-is-array`: PASS -> FAIL: ".len() + 5,
        "{line}"
    );
    assert!(!text.contains("different editions"), "{text}");
}

/// `report --compare` of a contract-3 run and a contract-2 run warns first that the two
/// judged different editions, before any status change it lists.
#[test]
fn compare_warns_when_the_two_runs_judged_different_editions() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = |name: &str, sut: &[&str]| {
        let (code, path) = json_report(
            dir.path(),
            name,
            &["--id", "LS.*", "--id", "GET.not-found"],
            sut,
        );
        assert_eq!(code, Some(0), "{name}");
        path
    };
    let v3 = run("v3", &[fixture()]);
    let v2 = run("v2", &[fixture(), "--fixture-speaks-contract-2"]);
    let compared = conformance()
        .arg("report")
        .arg(&v3)
        .arg("--compare")
        .arg(&v2)
        .output()
        .expect("compare");
    let text = String::from_utf8_lossy(&compared.stdout);
    let warning =
        "> **Warning:** the two runs judged different editions (contract 3 before, 2 after)";
    let at = text
        .find(warning)
        .unwrap_or_else(|| panic!("no warning: {text}"));
    assert!(
        text.find("| summary |").is_some_and(|table| at < table),
        "the warning comes first: {text}"
    );
    // Against itself, the same edition: no warning.
    let same = conformance()
        .arg("report")
        .arg(&v2)
        .arg("--compare")
        .arg(&v2)
        .output()
        .expect("compare");
    assert!(!String::from_utf8_lossy(&same.stdout).contains("different editions"));
}
