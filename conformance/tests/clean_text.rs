//! Clean report text, through the real binary: the terminal's last line is exactly `N
//! passed, N failed, N skipped` with the details on the lines before it, a skip reason
//! names its cause once and without a temp path, no finding is listed twice (a failed smoke
//! stage included, which counts its invocation), and the migration grouping is in the
//! Markdown and HTML formats as well as the terminal.

use std::collections::BTreeSet;
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn conformance() -> Command {
    Command::cargo_bin("stoat-conformance").expect("binary")
}

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_stoat-fixture-sut")
}

/// Runs the suite; returns the exit status, the terminal report and the JSON report.
fn run(args: &[&str], sut: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String, Value) {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("r.json");
    let mut command = conformance();
    command
        .arg("run")
        .args(args)
        .arg("--json-report")
        .arg(&report)
        .arg("--")
        .args(sut);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run");
    let json =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        json,
    )
}

fn render(json: &Value, format: &str) -> String {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("r.json");
    std::fs::write(&path, json.to_string()).expect("write");
    let output = conformance()
        .args(["report", path.to_str().expect("utf-8"), "--format", format])
        .output()
        .expect("report");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn closing(text: &str) -> bool {
    regex::Regex::new(r"^\d+ passed, \d+ failed, \d+ skipped$")
        .expect("re")
        .is_match(text)
}

#[test]
fn the_closing_line_is_exactly_the_counts_with_each_skip_cause_once_on_the_lines_before() {
    // A contract-2 SUT judged by contract 3: failures, the migration view and several
    // skip causes, some of them shared by many checks.
    let (code, human, json) = run(
        &["--jobs", "2", "--contract", "3"],
        &[fixture(), "--fixture-speaks-contract-2"],
        &[],
    );
    assert_eq!(code, Some(1), "{human}");
    let lines: Vec<&str> = human.lines().collect();
    let last = lines.last().copied().unwrap_or("");
    assert!(closing(last), "the last line is only the counts: {last}");
    let not_run: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("not run: "))
        .collect();
    assert!(
        not_run.len() >= 3,
        "the details are lines of their own: {human}"
    );
    let causes: BTreeSet<&str> = not_run
        .iter()
        .map(|l| l.split_once(" skipped: ").map_or(*l, |(_, cause)| cause))
        .collect();
    assert_eq!(
        causes.len(),
        not_run.len(),
        "a cause listed twice: {not_run:?}"
    );
    assert!(
        not_run
            .iter()
            .any(|l| l.starts_with("7 checks skipped: the SUT refuses `recipe add")),
        "one cause counts every check it stopped: {not_run:?}"
    );
    for line in &lines[..lines.len() - 1] {
        assert!(line.len() < 400, "a detail line runs on: {line}");
    }
    let md = render(&json, "md");
    let heading = md.lines().next().unwrap_or("");
    assert_eq!(
        heading.strip_prefix("## stoat-conformance: ").map(closing),
        Some(true),
        "{heading}"
    );
    assert!(md.contains("- not run: 7 checks skipped"), "{md}");
    let html = render(&json, "html");
    assert!(
        html.contains("<ul class=\"details\"><li>not run: "),
        "{html}"
    );
}

#[test]
fn a_skip_reason_shows_a_temp_path_as_one_word() {
    // A directory under the temp dir that stores user xattrs: ERRORS.no-xattr skips,
    // naming the variable.
    let dir = tempfile::tempdir().expect("tmp");
    let (_, human, json) = run(
        &["--id", "ERRORS.no-xattr", "--allow-empty"],
        &[fixture()],
        &[("STOAT_CONFORMANCE_NO_XATTR_DIR", dir.path())],
    );
    let row = &json["checks"][0];
    assert_eq!(row["status"], "skipped", "{human}");
    let reason = row["reason"].as_str().expect("reason");
    let shown = dir.path().display().to_string();
    assert!(
        reason.starts_with("STOAT_CONFORMANCE_NO_XATTR_DIR=<temp> is on a filesystem"),
        "{reason}"
    );
    assert!(!human.contains(&shown), "{human}");
}

fn findings_are_unique(json: &Value) {
    for row in json["checks"].as_array().into_iter().flatten() {
        let mut seen = BTreeSet::new();
        for finding in row["findings"].as_array().into_iter().flatten() {
            let key = (
                finding["pointer"].to_string(),
                finding["message"].to_string(),
            );
            assert!(
                seen.insert(key.clone()),
                "{} lists {key:?} twice",
                row["id"]
            );
        }
    }
}

#[test]
fn no_finding_is_listed_twice_and_a_failed_smoke_stage_counts_its_invocation() {
    let (_, _, json) = run(
        &["--jobs", "2", "--contract", "3"],
        &[fixture(), "--fixture-speaks-contract-2"],
        &[],
    );
    findings_are_unique(&json);
    let repeated = json["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row["findings"].as_array().into_iter().flatten())
        .any(|f| {
            f["message"]
                .as_str()
                .is_some_and(|m| m.ends_with(" times)"))
        });
    assert!(repeated, "a repeated finding says how many times");

    let conformance_bin = env!("CARGO_BIN_EXE_stoat-conformance");
    let (code, human, json) = run(
        &[],
        &[conformance_bin, "mutate", "--op", "v-2", "--", fixture()],
        &[],
    );
    assert_eq!(code, Some(1), "{human}");
    assert_eq!(json["summary"]["invocations"], 1, "{human}");
    assert!(human.contains(", 1 invocation, "), "{human}");
    let messages: Vec<&str> = json["smoke"]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(!messages.is_empty());
    for message in &messages {
        assert_eq!(
            human.matches(message).count(),
            1,
            "the smoke stage says {message:?} once: {human}"
        );
        assert!(
            !message.contains("does not answer `--json version`"),
            "the reason is not repeated as a finding: {message}"
        );
    }
    assert!(
        human.contains("SMOKE FAILED: the SUT does not answer `--json version` in any contract edition this suite knows (2, 3); no other check ran"),
        "{human}"
    );
    // The page lists the findings once, in the row (the failures table shows the first
    // one as the row's summary).
    let html = render(&json, "html");
    for (n, message) in messages.iter().enumerate() {
        let shown = message.replace('<', "&lt;").replace('>', "&gt;");
        let expected = if n == 0 { 2 } else { 1 };
        assert_eq!(
            html.matches(&shown).count(),
            expected,
            "{message} in the page"
        );
    }
}

#[test]
fn the_migration_grouping_is_in_every_format() {
    let (_, human, json) = run(
        &["--jobs", "2", "--contract", "3"],
        &[fixture(), "--fixture-speaks-contract-2"],
        &[],
    );
    let both: Vec<&str> = json["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["migration"]["group"] == "both_editions")
        .filter_map(|row| row["id"].as_str())
        .collect();
    let explained = json["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["migration"]["group"] == "explained")
        .count();
    assert!(!both.is_empty() && explained > 0, "{human}");
    let md = render(&json, "md");
    assert!(
        md.contains(&format!("**{} violations of both editions**", both.len())),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "<summary>{explained} explained by the documented differences"
        )),
        "{md}"
    );
    let html = render(&json, "html");
    assert!(html.contains("<h2 id=\"migration\">Migration view</h2>"));
    for id in both {
        assert!(md.contains(&format!("- `{id}`")), "{id} in the markdown");
        assert!(
            html.contains(&format!("<li><a href=\"#{id}\"><code>{id}</code></a></li>")),
            "{id} in the page"
        );
    }
}
