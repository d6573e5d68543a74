//! A reproduction for every failure, through the real binary: every format carries, per
//! failing check, the failing invocation's argv, ending and first output lines and one
//! command that runs exactly that check again with its seed; `repro CHECK --report r.json`
//! rebuilds the sandbox, makes the failing invocation again, prints the environment and
//! leaves the sandbox, whose `repro.sh` makes it once more. Failing SUTs come from the
//! suite's own mutant kit around the contract-written fixture.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn conformance() -> Command {
    Command::cargo_bin("stoat-conformance").expect("binary")
}

fn mutant(op: &str) -> Vec<String> {
    [
        env!("CARGO_BIN_EXE_stoat-conformance"),
        "mutate",
        "--op",
        op,
        "--",
        env!("CARGO_BIN_EXE_stoat-fixture-sut"),
    ]
    .map(str::to_string)
    .to_vec()
}

/// Removes a kept sandbox even when the test fails.
struct Kept(Option<PathBuf>);

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn run(dir: &Path, id: &str, sut: &[String]) -> (PathBuf, Value, String) {
    let report = dir.join(format!("{id}.json"));
    let output = conformance()
        .args(["run", "--id", id, "--json-report"])
        .arg(&report)
        .arg("--")
        .args(sut)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1), "{id} fails on the mutant");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    (
        report,
        json,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn row<'r>(json: &'r Value, id: &str) -> &'r Value {
    json["checks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("no row {id}"))
}

/// Every format of the saved report carries the row's reproduction.
fn every_format_carries(report: &Path, repro: &Value, human: &str) {
    let command = repro["command"].as_str().expect("command");
    let argv = repro["argv"].as_str().expect("argv");
    let ending = repro["ending"].as_str().expect("ending");
    let first_stdout = repro["stdout"][0].as_str().expect("a stdout line");
    assert!(human.contains(&format!("reproduce: {command}")), "{human}");
    assert!(
        human.contains(&format!("failing invocation: stoat {argv} -> {ending}")),
        "{human}"
    );
    for format in ["human", "md", "html", "tap", "junit"] {
        let output = conformance()
            .arg("report")
            .arg(report)
            .args(["--format", format])
            .output()
            .expect("report");
        let text = String::from_utf8_lossy(&output.stdout);
        let visible = text
            .replace("&#39;", "'")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("''", "'")
            .replace('\\', "");
        for needle in [command, argv, ending] {
            let plain = needle.replace('\\', "");
            assert!(
                visible.contains(&plain),
                "{format} lacks {needle:?}:\n{text}"
            );
        }
        let quoted = first_stdout.replace('"', "");
        assert!(
            visible.replace('"', "").contains(&quoted),
            "{format} lacks the first stdout line"
        );
    }
}

/// Runs `repro` and returns its output and the sandbox it kept.
fn repro(id: &str, report: &Path) -> (String, Kept) {
    let output = conformance()
        .args(["repro", id, "--report"])
        .arg(report)
        .output()
        .expect("repro");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let kept = stdout
        .lines()
        .find_map(|l| l.strip_prefix("sandbox (kept): "))
        .map(PathBuf::from);
    let kept = Kept(kept);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (stdout, kept)
}

fn assert_repro_rebuilds(id: &str, op: &str, expect_in_stdout: &str) {
    let dir = tempfile::tempdir().expect("tmp");
    let (report, json, human) = run(dir.path(), id, &mutant(op));
    let repro_row = &row(&json, id)["repro"];
    assert_eq!(
        repro_row["command"]
            .as_str()
            .map(|c| c.contains("--seed 1")),
        Some(true)
    );
    every_format_carries(&report, repro_row, &human);
    // The command alone runs exactly that check again and fails it again.
    let command = repro_row["command"].as_str().expect("command");
    let rerun = std::process::Command::new("sh")
        .arg("-c")
        .arg(command.replacen(
            "stoat-conformance",
            env!("CARGO_BIN_EXE_stoat-conformance"),
            1,
        ))
        .output()
        .expect("sh");
    let rerun_out = String::from_utf8_lossy(&rerun.stdout);
    assert_eq!(rerun.status.code(), Some(1), "{rerun_out}");
    assert!(rerun_out.contains(&format!("FAIL  {id} ")), "{rerun_out}");
    assert!(rerun_out.contains("1 checks selected"), "{rerun_out}");

    let (out, kept) = repro(id, &report);
    let root = kept.0.clone().expect("the sandbox is named");
    assert!(root.join("work").is_dir(), "the sandbox stays: {out}");
    assert!(out.contains("environment (nothing else is set):"), "{out}");
    assert!(
        out.contains(&format!("  PATH={}", root.join("bin").display())),
        "{out}"
    );
    let argv = repro_row["argv"].as_str().expect("argv");
    assert!(
        out.lines()
            .any(|l| l.starts_with("$ ") && l.ends_with(argv)),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "-> {}",
            repro_row["ending"].as_str().expect("ending")
        )),
        "{out}"
    );
    assert!(out.contains(expect_in_stdout), "{out}");
    // The script makes the invocation again, in the sandbox, with the same answer.
    let again = std::process::Command::new(root.join("repro.sh"))
        .output()
        .expect("repro.sh");
    assert!(
        String::from_utf8_lossy(&again.stdout).contains(expect_in_stdout),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn a_fake_tier_failure_is_reproduced_in_every_format_and_by_repro() {
    // A running fixture VM (a fake QEMU holder) whose stored allow_exec is false.
    assert_repro_rebuilds(
        "EXEC.cli-ignores-agent-access",
        "cli-enforces-access",
        "access_denied",
    );
}

#[test]
fn a_pure_failure_is_reproduced_in_every_format_and_by_repro() {
    assert_repro_rebuilds(
        "STATE.update-unnamed-unchanged",
        "update-unnamed",
        "\"cmd\":\"",
    );
}

#[test]
fn an_oracle_rule_is_reproduced_through_the_scenario_that_broke_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let (report, json, _) = run(
        dir.path(),
        "LEAK.console-password",
        &mutant("leak-password"),
    );
    // With only the rule selected every scenario fed it; the reproduction names the first
    // one that broke it, and its command judges the rule over that scenario alone.
    let repro_row = &row(&json, "LEAK.console-password")["repro"];
    let scenario = repro_row["scenario"].as_str().expect("scenario");
    assert_ne!(scenario, "LEAK.console-password");
    assert!(
        repro_row["command"]
            .as_str()
            .is_some_and(|c| c.contains(&format!("--id LEAK.console-password --id {scenario}"))),
        "{repro_row}"
    );
    let (out, _kept) = repro("LEAK.console-password", &report);
    assert!(out.contains(&format!("scenario {scenario}")), "{out}");
    assert!(
        out.contains("cpw-"),
        "the leaked password is in what it printed: {out}"
    );
}

#[test]
fn repro_refuses_a_row_that_did_not_fail() {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("r.json");
    conformance()
        .args(["run", "--id", "VERSION.*", "--json-report"])
        .arg(&report)
        .args(["--", env!("CARGO_BIN_EXE_stoat-fixture-sut")])
        .assert()
        .code(0);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let passed = json["checks"][0]["id"].as_str().expect("a row").to_string();
    conformance()
        .args(["repro", &passed, "--report"])
        .arg(&report)
        .assert()
        .code(2);
}
