//! The published report schema (conformance/report.schema.json) holds for real reports:
//! a clean run and a mutant's run (failures, findings, base64 stdout, every capture field)
//! both validate, a broken report does not; and the HTML page is one self-contained file
//! (no external asset, no script) carrying the check matrix and every check's row.

use assert_cmd::Command;
use serde_json::Value;

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/report.schema.json"))
        .expect("report.schema.json");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// Runs the suite (a small selection) and returns the JSON report and the HTML page.
fn run(sut: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let json = dir.path().join("r.json");
    let html = dir.path().join("r.html");
    Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .args([
            "run", "--seed", "3", "--id", "EXEC.*", "--id", "LS.*", "--id", "ENV.*", "--id",
            "PULL.*",
        ])
        .arg("--json-report")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .arg("--")
        .args(sut)
        .output()
        .expect("run");
    let report = serde_json::from_str(&std::fs::read_to_string(&json).expect("report written"))
        .expect("report is JSON");
    (
        report,
        std::fs::read_to_string(&html).expect("html written"),
    )
}

fn errors(validator: &jsonschema::Validator, report: &Value) -> Vec<String> {
    validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn reports_of_a_clean_run_and_a_mutant_run_validate() {
    let validator = schema();
    let fixture = env!("CARGO_BIN_EXE_stoat-fixture-sut");
    let (clean, html) = run(&[fixture]);
    assert_eq!(errors(&validator, &clean), Vec::<String>::new());
    assert_page(&html, &clean);

    let mutant = [
        env!("CARGO_BIN_EXE_stoat-conformance"),
        "mutate",
        "--op",
        "exec-lossy",
        "--",
        fixture,
    ];
    let (broken, html) = run(&mutant);
    assert!(
        broken["summary"]["failed"].as_u64().unwrap_or(0) > 0,
        "the mutant run has failures to describe"
    );
    assert_eq!(errors(&validator, &broken), Vec::<String>::new());
    assert_page(&html, &broken);

    let mut wrong = clean.clone();
    wrong["checks"][0]["status"] = Value::from("great");
    assert!(
        !errors(&validator, &wrong).is_empty(),
        "an unknown status is refused"
    );
    let mut wrong = clean;
    wrong["schema"] = Value::from("stoat-conformance-report/0");
    assert!(
        !errors(&validator, &wrong).is_empty(),
        "another schema name is refused"
    );
}

fn assert_page(html: &str, report: &Value) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Check matrix"));
    for needle in ["src=", "<script", "<link", "url(", "@import"] {
        assert!(
            !html.contains(needle),
            "the page must be self-contained: found {needle}"
        );
    }
    // Links stay inside the page, but for the spec ids, which link their section of the
    // restated contract the suite ships (docs/contract.md, relative to the page).
    let contract = format!("{}#", stoat_conformance::spec::CONTRACT_DOC);
    assert!(
        html.split("href=\"")
            .skip(1)
            .all(|rest| rest.starts_with('#') || rest.starts_with(&contract)),
        "links stay inside the page or lead to the shipped contract"
    );
    assert!(
        html.contains(&format!("href=\"{contract}")),
        "spec ids are links"
    );
    for check in report["checks"].as_array().expect("checks") {
        let id = check["id"].as_str().expect("id");
        assert!(html.contains(&format!("id=\"{id}\"")), "no row for {id}");
    }
    assert!(!html.contains('\u{1b}'), "control bytes are escaped");
}
