//! Verdicts an implementer can trust, through the real binary: a run without `--seed` judges
//! the same cases every time (the same JSON report apart from times), and `--rerun-failed`
//! never passes a check it did not judge again.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn conformance() -> Command {
    Command::cargo_bin("stoat-conformance").expect("binary")
}

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_stoat-fixture-sut")
}

fn mutant(op: &str) -> Vec<String> {
    [
        env!("CARGO_BIN_EXE_stoat-conformance"),
        "mutate",
        "--op",
        op,
        "--",
        fixture(),
    ]
    .map(str::to_string)
    .to_vec()
}

/// Runs the suite with `args`, writing the JSON report to `report`; returns the exit status
/// and the human output.
fn run(args: &[&str], report: &Path, sut: &[String]) -> (Option<i32>, String) {
    let output = conformance()
        .arg("run")
        .args(args)
        .arg("--json-report")
        .arg(report)
        .arg("--")
        .args(sut)
        .output()
        .expect("run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("json")
}

/// The report without what differs between two runs of the same suite on the same SUT by
/// nature: times (durations, the start stamp), the bytes the SUT printed (they carry its own
/// clock, its ports and the sandbox's temp paths) and the temp directory names in argv.
fn verdict(report: &Value) -> Value {
    let temp = regex::Regex::new(r"stoat-conf-[0-9a-f]+-[A-Za-z0-9]+").expect("re");
    fn walk(value: &Value, temp: &regex::Regex) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| {
                        !matches!(
                            k.as_str(),
                            "duration_ms" | "sut_ms" | "started" | "stdout" | "stderr"
                        )
                    })
                    .map(|(k, v)| (k.clone(), walk(v, temp)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, temp)).collect()),
            Value::String(text) => Value::String(temp.replace_all(text, "<temp>").into_owned()),
            other => other.clone(),
        }
    }
    walk(report, &temp)
}

fn assert_same_verdicts(label: &str, sut: &[String]) {
    assert_same_verdicts_over(label, sut, 2);
}

/// `runs` runs of the suite without `--seed` against `sut` give the first run's exit status
/// and the same JSON report apart from times.
fn assert_same_verdicts_over(label: &str, sut: &[String], runs: usize) {
    let dir = tempfile::tempdir().expect("tmp");
    let first = dir.path().join("1.json");
    let (code1, human) = run(&["--jobs", "2"], &first, sut);
    assert!(
        human
            .lines()
            .nth(1)
            .is_some_and(|l| l.ends_with("seed 1 (default)")),
        "{label}: the header names the default seed: {human}"
    );
    let a = load(&first);
    assert_eq!(a["info"]["seed"], 1, "{label}");
    assert_eq!(a["info"]["seed_source"], "default", "{label}");
    assert!(
        a["checks"].as_array().is_some_and(|c| c.len() > 100),
        "{label}: the whole catalog ran"
    );
    let debug = regex::Regex::new(r"\bSome\(|\bNone\b|\bNull\b").expect("re");
    for row in a["checks"].as_array().into_iter().flatten() {
        let texts = row["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["message"].as_str())
            .chain(row["reason"].as_str());
        for text in texts {
            assert!(
                !debug.is_match(text),
                "{label}: Rust debug text in {}: {text}",
                row["id"]
            );
        }
    }
    assert!(
        !debug.is_match(&human),
        "{label}: Rust debug text in the human report"
    );
    let a = verdict(&a);
    for n in 2..=runs {
        let path = dir.path().join(format!("{n}.json"));
        let (code, _) = run(&["--jobs", "2"], &path, sut);
        assert_eq!(
            code1, code,
            "{label}: the exit statuses of runs 1 and {n} differ"
        );
        let b = verdict(&load(&path));
        if a != b {
            let (a, b) = (
                serde_json::to_string_pretty(&a).unwrap_or_default(),
                serde_json::to_string_pretty(&b).unwrap_or_default(),
            );
            let first_difference = a
                .lines()
                .zip(b.lines())
                .enumerate()
                .find(|(_, (x, y))| x != y);
            panic!(
                "{label}: runs 1 and {n} without --seed judged differently: {first_difference:?}"
            );
        }
    }
}

#[test]
fn runs_without_a_seed_give_the_same_report_for_a_correct_sut_an_edition_2_sut_and_a_mutant() {
    assert_same_verdicts("fixture", &[fixture().to_string()]);
    assert_same_verdicts(
        "contract-2 fixture",
        &[
            fixture().to_string(),
            "--fixture-speaks-contract-2".to_string(),
        ],
    );
    assert_same_verdicts("exec-lossy mutant", &mutant("exec-lossy"));
}

/// The criterion in full: ten runs without `--seed` per SUT (a correct one, a
/// contract-2 one, a mutant). About 30 whole pure + fake runs, a few minutes here, so it is
/// not part of `cargo test`; run it with
/// `cargo test -p stoat-conformance --test verdicts -- --ignored` (docs/conformance.md).
#[test]
#[ignore = "30 whole runs: cargo test -p stoat-conformance --test verdicts -- --ignored"]
fn ten_runs_without_a_seed_give_the_same_report() {
    assert_same_verdicts_over("fixture", &[fixture().to_string()], 10);
    assert_same_verdicts_over(
        "contract-2 fixture",
        &[
            fixture().to_string(),
            "--fixture-speaks-contract-2".to_string(),
        ],
        10,
    );
    assert_same_verdicts_over("exec-lossy mutant", &mutant("exec-lossy"), 10);
}

#[test]
fn the_seed_is_named_and_random_only_when_asked() {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("r.json");
    let (code, human) = run(
        &["--id", "EXEC.generated-bytes", "--seed", "5"],
        &report,
        &[fixture().to_string()],
    );
    assert_eq!(code, Some(0), "{human}");
    assert!(human.contains("seed 5 (--seed)"), "{human}");
    assert_eq!(load(&report)["info"]["seed_source"], "flag");
    let (code, human) = run(
        &["--id", "EXEC.generated-bytes", "--seed", "random"],
        &report,
        &[fixture().to_string()],
    );
    assert_eq!(code, Some(0), "{human}");
    assert!(human.contains("(--seed random)"), "{human}");
    let saved = load(&report);
    assert_eq!(saved["info"]["seed_source"], "random");
    assert!(saved["info"]["seed"].is_u64());
    conformance()
        .args(["run", "--seed", "soon", "--", fixture()])
        .assert()
        .code(2);
}

fn check<'r>(report: &'r Value, id: &str) -> &'r Value {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no row {id} in {report}"))
}

#[test]
fn rerun_failed_keeps_a_failed_oracle_rule_failed_and_never_passes_what_it_did_not_rejudge() {
    let dir = tempfile::tempdir().expect("tmp");
    let first = dir.path().join("first.json");
    let leaking = mutant("leak-password");
    // INIT.result fails too (the fixture has no `init`): the rerun then selects a scenario
    // of its own, whose invocations alone must not pass the rule.
    let (code, human) = run(
        &[
            "--id",
            "LEAK.console-password",
            "--id",
            "LS.*",
            "--id",
            "INIT.result",
        ],
        &first,
        &leaking,
    );
    assert_eq!(code, Some(1), "{human}");
    let saved = load(&first);
    let rule = check(&saved, "LEAK.console-password");
    assert_eq!(rule["status"], "failed");
    let feeders: Vec<&str> = rule["scenarios"]
        .as_array()
        .expect("the rule names the scenarios that failed it")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(feeders.contains(&"LS.lists-fixture"), "{feeders:?}");

    // The SUT is unchanged: the rule is judged again over those scenarios, and fails again.
    let again = dir.path().join("again.json");
    let (code, human) = run(
        &["--rerun-failed", first.to_str().expect("utf-8")],
        &again,
        &leaking,
    );
    assert_eq!(code, Some(1), "{human}");
    let rerun = load(&again);
    let rule = check(&rerun, "LEAK.console-password");
    assert_eq!(rule["status"], "failed", "{rule}");
    assert!(rule["invocations"]
        .as_array()
        .is_some_and(|i| !i.is_empty()));
    let compare = conformance()
        .arg("report")
        .arg(&first)
        .arg("--compare")
        .arg(&again)
        .output()
        .expect("compare");
    let text = String::from_utf8_lossy(&compare.stdout);
    assert!(!text.contains("Newly passing"), "{text}");

    // Fixed, the rule passes, because it was judged again (invocations were made).
    let fixed = dir.path().join("fixed.json");
    run(
        &["--rerun-failed", first.to_str().expect("utf-8")],
        &fixed,
        &[fixture().to_string()],
    );
    let fixed = load(&fixed);
    assert_eq!(check(&fixed, "LEAK.console-password")["status"], "passed");
    assert!(fixed["summary"]["invocations"]
        .as_u64()
        .is_some_and(|n| n > 0));

    // The scenarios that failed it cannot run (another tier): SKIP, saying why, never PASS.
    let other_tier = dir.path().join("other-tier.json");
    let (code, human) = run(
        &[
            "--rerun-failed",
            first.to_str().expect("utf-8"),
            "--tier",
            "fake",
        ],
        &other_tier,
        &[fixture().to_string()],
    );
    assert_eq!(code, Some(1), "a rerun that judged nothing fails: {human}");
    let rule = check(&load(&other_tier), "LEAK.console-password").clone();
    assert_eq!(rule["status"], "skipped", "{rule}");
    let reason = rule["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("not judged again") && reason.contains("LS.lists-fixture did not run"),
        "{reason}"
    );

    // A report that does not name the scenarios (an older suite's): SKIP, saying why.
    let mut older = saved.clone();
    if let Some(rows) = older["checks"].as_array_mut() {
        for row in rows {
            if let Some(row) = row.as_object_mut() {
                row.remove("scenarios");
            }
        }
    }
    let older_path = dir.path().join("older.json");
    std::fs::write(&older_path, older.to_string()).expect("write");
    let unnamed = dir.path().join("unnamed.json");
    let (_, human) = run(
        &["--rerun-failed", older_path.to_str().expect("utf-8")],
        &unnamed,
        &[fixture().to_string()],
    );
    let rule = check(&load(&unnamed), "LEAK.console-password").clone();
    assert_eq!(rule["status"], "skipped", "{human}");
    assert!(
        rule["reason"]
            .as_str()
            .is_some_and(|r| r.contains("names no scenario")),
        "{rule}"
    );
}

#[test]
fn every_must_is_the_contracts_and_declared_requirements_are_marked_in_every_format() {
    let listed = conformance()
        .args(["list", "--format", "json"])
        .output()
        .expect("list");
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let rows = rows.as_array().expect("rows");
    let not_contract: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            // The contract hands `stoat mcp`'s protocol to MCP and JSON-RPC 2.0: their MUSTs
            // (source `mcp`, quoted word for word) bind it as the contract's own do.
            r["level"] == "MUST"
                && !matches!(
                    r["source"].as_str(),
                    Some("contract" | "contractv2" | "mcp")
                )
        })
        .collect();
    assert!(not_contract.is_empty(), "{not_contract:?}");
    let declared: Vec<&str> = rows
        .iter()
        .filter(|r| !r["requires"].is_null())
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(
        declared.contains(&"SANDBOX.no-writes-outside"),
        "{declared:?}"
    );
    assert!(declared.contains(&"PULL.verified"), "{declared:?}");
    let which = rows
        .iter()
        .find(|r| r["id"] == "LOGS.unknown-which")
        .expect("row");
    assert_eq!(which["source"], "contract");
    assert_eq!(which["spec"], "json-v3#error-codes");

    let strict = conformance()
        .args(["list", "--format", "json", "--strict-contract"])
        .output()
        .expect("list");
    let strict: Value = serde_json::from_slice(&strict.stdout).expect("json");
    let strict = strict.as_array().expect("rows");
    assert!(!strict.is_empty());
    assert!(strict
        .iter()
        .all(|r| r["source"] != "design" && r["requires"].is_null()));

    // The write-home mutant breaks the data-root requirement: a warning when the profile
    // does not declare the variable, a failure when it does.
    let dir = tempfile::tempdir().expect("tmp");
    let writes_home = mutant("write-home");
    let select = ["--id", "SANDBOX.no-writes-outside", "--id", "LS.*"];
    let undeclared = dir.path().join("undeclared.json");
    let (code, human) = run(&select, &undeclared, &writes_home);
    assert_eq!(code, Some(0), "{human}");
    let row = check(&load(&undeclared), "SANDBOX.no-writes-outside").clone();
    assert_eq!(row["status"], "warned", "{row}");
    assert_eq!(row["level"], "SHOULD");
    assert_eq!(row["requires"]["declared"], false);
    assert!(human.contains("WARN  SANDBOX.no-writes-outside (SHOULD, requirement data_root_var not declared, pure)"), "{human}");

    let profile = dir.path().join("profile.toml");
    std::fs::write(&profile, "data_root_var = \"STOAT_HOME\"\n").expect("profile");
    let declared = dir.path().join("declared.json");
    let mut args = select.to_vec();
    args.extend(["--profile", profile.to_str().expect("utf-8")]);
    let (code, human) = run(&args, &declared, &writes_home);
    assert_eq!(code, Some(1), "{human}");
    let row = check(&load(&declared), "SANDBOX.no-writes-outside").clone();
    assert_eq!(row["status"], "failed", "{row}");
    assert_eq!(row["level"], "MUST");
    assert!(row["findings"]
        .as_array()
        .is_some_and(|f| f.iter().all(|f| f["level"] == "MUST")));
    assert!(
        human.contains(
            "FAIL  SANDBOX.no-writes-outside (MUST, declared requirement data_root_var, pure)"
        ),
        "{human}"
    );
    for (format, mark) in [
        // Markdown escapes `_` so GitHub shows it as written.
        ("md", "MUST, declared requirement data\\_root\\_var"),
        ("html", "MUST, declared requirement data_root_var"),
        (
            "tap",
            "declared requirement: rests on the profile's data_root_var",
        ),
        (
            "junit",
            "group=\"declared requirement: rests on the profile",
        ),
    ] {
        let rendered = conformance()
            .arg("report")
            .arg(&declared)
            .args(["--format", format])
            .output()
            .expect("report");
        let text = String::from_utf8_lossy(&rendered.stdout);
        assert!(text.contains(mark), "{format} lacks {mark:?}:\n{text}");
    }
    let strict_run = dir.path().join("strict.json");
    let mut args = select.to_vec();
    args.push("--strict-contract");
    let (_, human) = run(&args, &strict_run, &writes_home);
    assert!(
        load(&strict_run)["checks"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["id"] != "SANDBOX.no-writes-outside")),
        "{human}"
    );
}

#[test]
fn an_edition_2_run_cites_edition_2_and_judges_apply_without_recipes() {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("v2.json");
    let mut sut = mutant("applied-null");
    sut.push("--fixture-speaks-contract-2".to_string());
    let (code, human) = run(&["--jobs", "2"], &report, &sut);
    assert_eq!(code, Some(1), "{human}");
    let saved = load(&report);
    assert_eq!(saved["info"]["contract"], 2);
    assert_eq!(saved["info"]["migration"], false);
    let row = check(&saved, "APPLY.nothing-to-run");
    assert_eq!(
        row["status"], "failed",
        "applied: null fails in its native edition: {row}"
    );
    assert_eq!(
        check(&saved, "APPLY.dry-run-data-object")["status"],
        "passed"
    );
    let edition_2 = |spec: &str| spec.starts_with("json-v2#") || spec.starts_with("design#");
    let mut cited = 0;
    for row in saved["checks"].as_array().expect("checks") {
        let spec = row["spec_ref"].as_str().unwrap_or("");
        assert!(
            edition_2(spec),
            "{} cites {spec} in an edition-2 run",
            row["id"]
        );
        for finding in row["findings"].as_array().into_iter().flatten() {
            let spec = finding["spec_ref"].as_str().unwrap_or("");
            assert!(edition_2(spec), "a finding of {} cites {spec}", row["id"]);
            cited += 1;
        }
    }
    assert!(cited > 0, "the mutant was found");
    assert!(!human.contains("json-v3#"), "{human}");
}

#[test]
fn tap_dash_streams_tap_on_stdout_and_list_md_honours_the_selection() {
    let dir = tempfile::tempdir().expect("tmp");
    let output = conformance()
        .current_dir(dir.path())
        .args([
            "run",
            "--id",
            "LS.*",
            "--id",
            "ENV.one-result",
            "--tap",
            "-",
            "--",
            fixture(),
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0));
    let tap = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = tap.lines().collect();
    assert_eq!(lines.first(), Some(&"TAP version 13"), "{tap}");
    let points = lines
        .iter()
        .filter(|l| l.starts_with("ok ") || l.starts_with("not ok "))
        .count();
    assert!(points > 1, "{tap}");
    assert_eq!(
        lines.last().copied(),
        Some(format!("1..{points}").as_str()),
        "{tap}"
    );
    assert!(
        !tap.contains("passed,"),
        "the human report goes to stderr: {tap}"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("passed, 0 failed"));
    assert!(!dir.path().join("-").exists(), "no file named -");

    let listed = conformance()
        .args(["list", "--format", "md", "--id", "LOGS.*"])
        .output()
        .expect("list");
    let md = String::from_utf8_lossy(&listed.stdout);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.starts_with("| `LOGS.")),
        "{md}"
    );
}
