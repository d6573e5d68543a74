//! The reports as real consumers nobody here wrote read them (installed by
//! tests/consumers/setup.sh, which `make test` runs):
//! - TAP: Perl's prove and its TAP::Parser (Debian's TAP::Harness) and npm's tap-parser count
//!   the same points, failures, TODOs and skips, read the same YAML `message`, and report no
//!   parse error; a failed smoke stage is a failing point for both, never a skip-all;
//! - JUnit: the file validates against the Jenkins/Ant schema (junit-10.xsd, xmlschema), and
//!   junitparser and xunitparser read every case in catalog order with the right element,
//!   type, message and time.
//!
//! Inputs are real runs (the contract-written fixture SUT, a mutant of it, a SUT that fails
//! the smoke stage, a run with a baseline) plus a saved report holding every status and raw
//! control bytes. The tests that need the consumers are ignored unless asked for (`make test`
//! asks, with STOAT_REPORT_CONSUMERS); asked for without them, they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const CONSUMERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/consumers");

/// Where the consumers are installed (STOAT_REPORT_CONSUMERS, else target/report-consumers);
/// the tests that use them are ignored unless asked for, and asked for without them they fail.
fn consumers_dir(test: &str) -> PathBuf {
    let dir = std::env::var_os("STOAT_REPORT_CONSUMERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/report-consumers")
        });
    let ready =
        dir.join("node/node_modules/tap-parser").is_dir() && dir.join("venv/bin/python").is_file();
    assert!(
        ready,
        "{test}: the report consumers are not installed in {} (run `make report-consumers`)",
        dir.display()
    );
    dir
}

fn suite() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stoat-conformance"))
}

/// Runs the suite and returns the JSON report; `extra` adds report flags.
fn run(dir: &Path, name: &str, flags: &[&str], sut: &[&str]) -> Value {
    let json = dir.join(format!("{name}.json"));
    let output = suite()
        .args(["run", "--seed", "5", "--jobs", "2"])
        .args(flags)
        .arg("--json-report")
        .arg(&json)
        .arg("--")
        .args(sut)
        .output()
        .expect("run the suite");
    let code = output.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "{name}: harness error {code:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&json).expect("report written")).expect("JSON")
}

/// `report FILE --format FORMAT [more]` printed to a file next to it.
fn render(report: &Path, format: &str, more: &[&str], out: &Path) {
    let output = suite()
        .arg("report")
        .arg(report)
        .args(["--format", format])
        .args(more)
        .output()
        .expect("report");
    // The exit status is the report's verdict (3 when it holds a harness error).
    assert!(
        matches!(output.status.code(), Some(0) | Some(1) | Some(3)) && !output.stdout.is_empty(),
        "report --format {format}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(out, &output.stdout).expect("write");
}

/// The catalog's ids in its order, as `list --format json` prints them.
fn catalog_order() -> &'static [String] {
    static IDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        let output = suite()
            .args(["list", "--format", "json"])
            .output()
            .expect("list");
        let list: Value = serde_json::from_slice(&output.stdout).expect("list is JSON");
        list.as_array()
            .expect("array")
            .iter()
            .map(|d| d["id"].as_str().expect("id").to_string())
            .collect()
    })
}

/// The rows a report shows, as (id, status): the failed smoke stage first, then the checks
/// in catalog order.
fn rows(report: &Value) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    if report["smoke_failed"] == json!(true) {
        rows.push(("SMOKE.version".to_string(), "failed".to_string()));
    }
    let mut checks: Vec<(String, String)> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|check| {
            (
                check["id"].as_str().expect("id").to_string(),
                check["status"].as_str().expect("status").to_string(),
            )
        })
        .collect();
    let order = catalog_order();
    checks.sort_by_key(|(id, _)| order.iter().position(|o| o == id).unwrap_or(usize::MAX));
    rows.extend(checks);
    // A run that judged nothing it was asked to ends with a failing verdict row.
    if report["summary"]["vacuous"]
        .as_array()
        .is_some_and(|v| !v.is_empty())
    {
        rows.push(("RUN.judged-something".to_string(), "failed".to_string()));
    }
    rows
}

/// The message a consumer must read for a row: the first finding, else the reason.
fn first_finding(report: &Value, id: &str) -> Option<String> {
    if id == "RUN.judged-something" {
        let reasons: Vec<&str> = report["summary"]["vacuous"]
            .as_array()
            .expect("vacuous")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        return Some(visible(&format!(
            "judged nothing it was asked to: {}",
            reasons.join("; ")
        )));
    }
    let check = if id == "SMOKE.version" && report["smoke_failed"] == json!(true) {
        &report["smoke"]
    } else {
        report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["id"] == id)
            .expect("row")
    };
    let finding = check["findings"].as_array().and_then(|f| f.first());
    match finding {
        Some(f) => Some(format!(
            "{}: {}",
            f["pointer"].as_str().unwrap_or(""),
            f["message"].as_str().unwrap_or("")
        )),
        None => check["reason"].as_str().map(str::to_string),
    }
    .map(|t| visible(&t))
}

/// What the reports do to control characters: show them as escapes.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\t' => "\\t".to_string(),
            '\r' => "\\r".to_string(),
            c if c.is_control() => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

fn json_of(mut command: Command) -> Value {
    let output = command.output().expect("consumer runs");
    assert!(
        output.status.success(),
        "consumer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "consumer output is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// A saved report with every status, a WARN, and SUT output full of control bytes.
fn every_status_report(dir: &Path) -> PathBuf {
    let capture = |stdout: &str, code: i32| {
        json!({"capture": {"argv": ["--json", "ls", "it's"], "json": true, "stdin": "",
            "ending": {"kind": "exited", "value": code}, "stdout": stdout,
            "stderr": "warn: \u{1b}[31mred\u{1b}[0m\u{0}\n", "duration_ms": 4},
            "outcome": {"outcome": "ok"}})
    };
    let finding = |id: &str, level: &str, message: &str| {
        json!({"check_id": id, "level": level, "spec_ref": "json-v3#consumer-contract",
            "pointer": "stdout: line 2", "message": message})
    };
    let check = |id: &str,
                 status: &str,
                 reason: Option<&str>,
                 findings: Vec<Value>,
                 invocations: Vec<Value>| {
        let mut c = json!({"id": id, "title": format!("title of {id} # not a directive"),
            "level": "MUST", "tier": "pure", "tags": ["envelope"], "spec_ref": "json-v3#consumer-contract",
            "status": status, "findings": findings, "invocations": invocations, "duration_ms": 1234});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
        }
        c
    };
    let report = json!({
        "schema": "stoat-conformance-report/1",
        "info": {"suite_version": "0.1.0", "contract": 3, "sut": "/opt/their-stoat", "sut_version": "9.9.9",
            "seed": 1, "jobs": 2, "selected": 8, "tiers": ["pure", "fake"]},
        "started": "2026-01-02T03:04:05Z",
        "smoke": {"passed": true, "findings": []},
        "checks": [
            check("ENV.one-result", "failed", None,
                vec![finding("ENV.one-result", "MUST", "2 result lines: \u{1b}[2J\"quoted\" 'single' key: value - dash"),
                     finding("ENV.one-result", "MUST", "second")],
                vec![capture("{\"v\":3}\n\u{1b}[31m{\"v\":3}\u{1b}[0m\n", 0)]),
            check("ENV.result-last", "passed", None, vec![], vec![]),
            check("ENV.result-present", "crashed", None,
                vec![finding("ENV.result-present", "MUST", "no result line: crashed")], vec![capture("", 139)]),
            check("ENV.ok-bool", "warned", None,
                vec![finding("ENV.ok-bool", "SHOULD", "exit: a SHOULD broken")], vec![capture("x\n", 0)]),
            check("ENV.event-data", "skipped", Some("not exercised # by anything"), vec![], vec![]),
            check("ENV.data-xor-error", "expected_failure", Some("known: fixed in 2.0"),
                vec![finding("ENV.data-xor-error", "MUST", "data and error together")], vec![capture("{}\n", 1)]),
            check("ENV.json-lines", "stale_baseline", Some("listed in the baseline but passed"), vec![], vec![]),
            check("ENV.cmd-matches", "errored", Some("harness: could not create the sandbox: No space"), vec![], vec![]),
        ],
        "summary": {"passed": 1, "failed": 1, "crashed": 1, "warned": 1, "skipped": 1, "expected_failures": 1,
            "stale_baseline": 1, "errored": 1, "invocations": 4, "sut_ms": 16, "duration_ms": 2500},
        "smoke_failed": false
    });
    let path = dir.join("every-status.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report).expect("json")).expect("write");
    path
}

/// The reports every consumer test reads, made once per test binary: (name, JSON path).
fn reports() -> &'static [(String, PathBuf)] {
    // Under cargo's per-target scratch directory, remade by each run of this binary.
    static MADE: std::sync::OnceLock<Vec<(String, PathBuf)>> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-consumers");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        real_reports(&dir)
    })
}

/// The real runs, and the saved report with every status.
fn real_reports(dir: &Path) -> Vec<(String, PathBuf)> {
    let fixture = env!("CARGO_BIN_EXE_stoat-fixture-sut");
    let conformance = env!("CARGO_BIN_EXE_stoat-conformance");
    let mutant = [conformance, "mutate", "--op", "exec-lossy", "--", fixture];
    let smoke = [conformance, "mutate", "--op", "v-2", "--", fixture];
    run(dir, "clean", &[], &[fixture]);
    let some = ["--id", "EXEC.*", "--id", "ENV.*", "--id", "EXIT.*"];
    let broken = run(dir, "mutant", &some, &mutant);
    let smoke_report = run(dir, "smoke", &[], &smoke);
    assert_eq!(smoke_report["smoke_failed"], json!(true));
    assert_eq!(
        smoke_report["summary"]["failed"],
        json!(1),
        "a failed smoke stage counts as one failure"
    );
    // A baseline expecting one of the mutant's failures (XFAIL) and one passing check (STALE).
    let failing = rows(&broken)
        .into_iter()
        .find(|(_, status)| status == "failed")
        .expect("the mutant fails a check")
        .0;
    let baseline = dir.join("baseline.toml");
    std::fs::write(
        &baseline,
        format!("[[expected]]\nid = \"{failing}\"\nreason = \"known\"\n\n[[expected]]\nid = \"ENV.one-result\"\nreason = \"stale on purpose\"\n"),
    )
    .expect("baseline");
    let baseline_flag = baseline.to_str().expect("utf-8 path").to_string();
    let mut flags = some.to_vec();
    flags.extend(["--baseline", &baseline_flag]);
    let with_baseline = run(dir, "baseline", &flags, &mutant);
    let statuses: Vec<String> = rows(&with_baseline).into_iter().map(|(_, s)| s).collect();
    assert!(
        statuses.contains(&"expected_failure".to_string())
            && statuses.contains(&"stale_baseline".to_string())
    );
    // Only oracle rules of a tier that runs no scenario: nothing is judged, the run fails.
    let vacuous = run(
        dir,
        "vacuous",
        &["--tier", "pure", "--id", "EXEC.*"],
        &[fixture],
    );
    assert!(
        vacuous["summary"]["vacuous"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{vacuous}"
    );
    // A contract-2 SUT judged by contract 3: the migration view, and rows with hundreds of
    // findings that must not crush the page's narrow columns.
    run(
        dir,
        "migration",
        &["--contract", "3"],
        &[fixture, "--fixture-speaks-contract-2"],
    );
    let mut names = vec![
        "clean",
        "mutant",
        "smoke",
        "baseline",
        "vacuous",
        "migration",
    ]
    .into_iter()
    .map(|n| (n.to_string(), dir.join(format!("{n}.json"))))
    .collect::<Vec<_>>();
    names.push(("every-status".to_string(), every_status_report(dir)));
    names
}

fn is_bad(status: &str) -> bool {
    matches!(status, "failed" | "crashed" | "stale_baseline" | "errored")
}

#[test]
#[ignore = "needs the report consumers (make report-consumers)"]
fn prove_and_tap_parser_count_every_report_alike() {
    let consumers = consumers_dir("prove_and_tap_parser_count_every_report_alike");
    let dir = tempfile::tempdir().expect("tmp");
    for (name, json_path) in reports() {
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(json_path).expect("read")).expect("json");
        let rows = rows(&report);
        let tap = dir.path().join(format!("{name}.tap"));
        render(json_path, "tap", &[], &tap);
        let text = std::fs::read_to_string(&tap).expect("tap");
        assert!(!text.contains('\u{1b}'), "{name}: raw control bytes in TAP");

        let perl = json_of({
            let mut c = Command::new("perl");
            c.arg(format!("{CONSUMERS}/tap-harness.pl")).arg(&tap);
            c
        });
        let node = json_of({
            let mut c = Command::new("node");
            c.arg(format!("{CONSUMERS}/tap-parser.js"))
                .arg(consumers.join("node"))
                .arg(&tap);
            c
        });
        let failing: Vec<u64> = rows
            .iter()
            .enumerate()
            .filter(|(_, (_, s))| is_bad(s))
            .map(|(i, _)| i as u64 + 1)
            .collect();
        let todo = rows.iter().filter(|(_, s)| s == "expected_failure").count();
        let skipped = rows.iter().filter(|(_, s)| s == "skipped").count();
        let what = format!("{name}: TAP::Parser {perl}\ntap-parser {node}");
        assert_eq!(perl["parse_errors"], json!([]), "{what}");
        assert_eq!(node["parse_errors"], json!([]), "{what}");
        assert_eq!(perl["tests_run"], json!(rows.len()), "{what}");
        assert_eq!(node["count"], json!(rows.len()), "{what}");
        assert_eq!(perl["failed_numbers"], json!(failing), "{what}");
        assert_eq!(node["failed_numbers"], json!(failing), "{what}");
        // tap-parser's `fail` counts TODO points too; its failure list does not.
        assert_eq!(node["fail"], json!(failing.len() + todo), "{what}");
        assert_eq!(perl["todo"], json!(todo), "{what}");
        assert_eq!(node["todo"], json!(todo), "{what}");
        assert_eq!(perl["skipped"], json!(skipped), "{what}");
        assert_eq!(node["skip"], json!(skipped), "{what}");
        assert_eq!(node["ok"], json!(failing.is_empty()), "{what}");
        assert_eq!(node["skip_all"], json!(false), "{what}");
        // Both read the YAML diagnostics the same, and it is the first finding.
        assert_eq!(perl["messages"], node["messages"], "{what}");
        for (index, (id, status)) in rows.iter().enumerate() {
            if status == "passed" || status == "skipped" {
                continue;
            }
            assert_eq!(
                node["messages"][(index + 1).to_string()]
                    .as_str()
                    .map(str::to_string),
                first_finding(&report, id),
                "{name}: the message of {id}"
            );
        }

        // prove itself: its verdict and count.
        let prove = Command::new("prove")
            .args(["--exec", "cat"])
            .arg(&tap)
            .output()
            .expect("prove");
        let out = String::from_utf8_lossy(&prove.stdout);
        assert_eq!(
            prove.status.success(),
            failing.is_empty(),
            "{name}: prove said {out}"
        );
        assert!(
            out.contains(&format!("Tests={},", rows.len())),
            "{name}: prove said {out}"
        );
        assert!(!out.contains("Parse errors"), "{name}: prove said {out}");

        // TAP 14: tap-parser reads it the same; prove refuses the version line.
        let tap14 = dir.path().join(format!("{name}.14.tap"));
        render(json_path, "tap", &["--tap-version", "14"], &tap14);
        let node14 = json_of({
            let mut c = Command::new("node");
            c.arg(format!("{CONSUMERS}/tap-parser.js"))
                .arg(consumers.join("node"))
                .arg(&tap14);
            c
        });
        assert_eq!(
            node14, node,
            "{name}: TAP 14 reads like TAP 13 for tap-parser"
        );
        let prove14 = Command::new("prove")
            .args(["--exec", "cat"])
            .arg(&tap14)
            .output()
            .expect("prove");
        assert!(
            !prove14.status.success(),
            "{name}: prove is expected to refuse TAP 14"
        );
    }
}

#[test]
fn the_live_tap_file_is_the_rendered_one() {
    // `run --tap` and `report --format tap` print the same bytes.
    let dir = tempfile::tempdir().expect("tmp");
    let fixture = env!("CARGO_BIN_EXE_stoat-fixture-sut");
    let tap = dir.path().join("live.tap");
    let tap_flag = tap.to_str().expect("utf-8").to_string();
    run(
        dir.path(),
        "live",
        &["--id", "ENV.*", "--tap", &tap_flag],
        &[fixture],
    );
    let again = dir.path().join("again.tap");
    render(&dir.path().join("live.json"), "tap", &[], &again);
    assert_eq!(
        std::fs::read_to_string(&tap).expect("live"),
        std::fs::read_to_string(&again).expect("again")
    );
}

#[test]
#[ignore = "needs the report consumers (make report-consumers)"]
fn junit_validates_and_two_parsers_read_it() {
    let consumers = consumers_dir("junit_validates_and_two_parsers_read_it");
    let dir = tempfile::tempdir().expect("tmp");
    for (name, json_path) in reports() {
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(json_path).expect("read")).expect("json");
        let rows = rows(&report);
        let xml = dir.path().join(format!("{name}.xml"));
        render(json_path, "junit", &[], &xml);
        let seen = json_of({
            let mut c = Command::new(consumers.join("venv/bin/python"));
            c.arg(format!("{CONSUMERS}/junit.py"))
                .arg(&xml)
                .arg(format!("{CONSUMERS}/junit-10.xsd"));
            c
        });
        let what = format!("{name}: {seen}");
        assert_eq!(seen["xsd_errors"], json!([]), "{what}");
        let cases = seen["junitparser"]["cases"].as_array().expect("cases");
        let names: Vec<&str> = cases
            .iter()
            .map(|c| c["name"].as_str().unwrap_or(""))
            .collect();
        let ids: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(names, ids, "{name}: one case per row, in catalog order");
        assert!(
            seen["junitparser"]["timestamp"]
                .as_str()
                .is_some_and(|t| t.len() >= 19),
            "{what}"
        );
        for (case, (id, status)) in cases.iter().zip(&rows) {
            let (kind, label) = match status.as_str() {
                "passed" => ("passed", None),
                "warned" => ("passed", None),
                "failed" => ("failure", Some("FAIL")),
                "stale_baseline" => ("failure", Some("STALE")),
                "crashed" => ("error", Some("CRASH")),
                "errored" => ("error", Some("ERROR")),
                "skipped" => ("skipped", Some("SKIP")),
                "expected_failure" => ("skipped", Some("XFAIL")),
                other => panic!("unknown status {other}"),
            };
            assert_eq!(case["kind"], json!(kind), "{name}: {id}");
            assert_eq!(case["type"], json!(label), "{name}: {id}");
            assert!(case["time"].is_number(), "{name}: {id} has a time");
            if matches!(kind, "failure" | "error") {
                assert_eq!(
                    case["message"].as_str().map(str::to_string),
                    first_finding(&report, id),
                    "{name}: the message of {id}"
                );
            }
            for text in [&case["text"], &case["system_out"], &case["message"]] {
                assert!(
                    !text.as_str().unwrap_or("").contains('\u{1b}'),
                    "{name}: raw ESC in {id}"
                );
            }
        }
        let count = |pick: &[&str]| {
            rows.iter()
                .filter(|(_, s)| pick.contains(&s.as_str()))
                .count()
        };
        let x = &seen["xunitparser"];
        assert_eq!(x["run"], json!(rows.len()), "{what}");
        assert_eq!(
            x["failures"],
            json!(count(&["failed", "stale_baseline"])),
            "{what}"
        );
        assert_eq!(x["errors"], json!(count(&["crashed", "errored"])), "{what}");
        assert_eq!(
            x["skipped"],
            json!(count(&["skipped", "expected_failure"])),
            "{what}"
        );
    }
    // The evidence: argv, exit, the offending output with its control bytes escaped.
    let xml = std::fs::read_to_string(dir.path().join("every-status.xml")).expect("xml");
    assert!(
        xml.contains("$ stoat --json ls &apos;it&apos;\\&apos;&apos;s&apos;"),
        "{xml}"
    );
    assert!(xml.contains("-&gt; exit 0"), "{xml}");
    assert!(
        xml.contains("\\u{1b}[31m{&quot;v&quot;:3}\\u{1b}[0m"),
        "{xml}"
    );
    assert!(xml.contains("timestamp=\"2026-01-02T03:04:05\""), "{xml}");
    assert!(xml.contains("time=\"1.234\""), "{xml}");
}

/// Runs tests/consumers/html-check.js on pages (one browser for all): one JSON object per
/// page and width (1280, 375); screenshots go to `shots`.
fn html_check(consumers: &Path, shots: &Path, pages: &[PathBuf]) -> Vec<Value> {
    let output = Command::new("node")
        .arg(format!("{CONSUMERS}/html-check.js"))
        .arg(consumers.join("node"))
        .arg(shots)
        .args(pages)
        .output()
        .expect("node");
    assert!(
        output.status.success(),
        "html-check: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn assert_fits(pages: usize, seen: &[Value]) {
    assert_eq!(seen.len(), 2 * pages, "two widths per page: {seen:?}");
    for width in seen {
        let name = &width["page"];
        assert_eq!(width["viewport_meta"], json!(true), "{name}: {width}");
        assert_eq!(width["offenders"], json!([]), "{name}: {width}");
        assert_eq!(
            width["crushed"],
            json!([]),
            "{name}: a column lost its width {width}"
        );
        assert!(
            width["scroll_width"].as_u64() <= width["client_width"].as_u64(),
            "{name}: horizontal overflow {width}"
        );
    }
}

#[test]
#[ignore = "needs the report consumers (make report-consumers)"]
fn html_fits_a_phone_and_a_desktop_with_failures_first() {
    let consumers = consumers_dir("html_fits_a_phone_and_a_desktop_with_failures_first");
    // Screenshots stay next to the runs for a person to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-consumers-html");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).expect("dir");
    let mut pages = Vec::new();
    for (name, json_path) in reports() {
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(json_path).expect("read")).expect("json");
        let page = shots.join(format!("{name}.html"));
        render(json_path, "html", &[], &page);
        let html = std::fs::read_to_string(&page).expect("html");
        assert!(!html.contains('\u{1b}'), "{name}: raw ESC in the page");
        let failures = html
            .find("<h2 id=\"failures\">")
            .expect("a failures section");
        let matrix = html
            .find("<h2>Check matrix</h2>")
            .expect("the check matrix");
        let checks = html.find("<h2>Checks</h2>").expect("the rows");
        assert!(
            failures < matrix && matrix < checks,
            "{name}: failures come first"
        );
        let rows = rows(&report);
        for (id, status) in &rows {
            assert!(
                html.contains(&format!("<tr id=\"{id}\">")),
                "{name}: no row for {id}"
            );
            if is_bad(status) {
                assert!(
                    html.contains(&format!("href=\"#{id}\"")),
                    "{name}: no link to {id}"
                );
            }
        }
        // In the rows, every failing one comes before every passing one.
        let position = |id: &str| html.find(&format!("<tr id=\"{id}\">")).expect("row");
        let last_bad = rows
            .iter()
            .filter(|(_, s)| is_bad(s))
            .map(|(id, _)| position(id))
            .max();
        let first_pass = rows
            .iter()
            .filter(|(_, s)| s == "passed")
            .map(|(id, _)| position(id))
            .min();
        if let (Some(bad), Some(pass)) = (last_bad, first_pass) {
            assert!(bad < pass, "{name}: a pass is listed before a failure");
        }
        if report["smoke_failed"] == json!(true) {
            assert!(html.contains("Smoke stage failed"), "{name}");
            let reason = report["smoke"]["findings"][0]["message"]
                .as_str()
                .expect("finding");
            let shown = reason.replace('<', "&lt;").replace('>', "&gt;");
            assert!(
                html.contains(&shown),
                "{name}: the smoke failure's reason is shown"
            );
        }
        if name == "every-status" {
            assert!(
                html.contains("\\u{1b}[31m"),
                "{name}: control bytes shown escaped"
            );
        }
        pages.push(page);
    }
    assert_fits(pages.len(), &html_check(&consumers, &shots, &pages));
}

#[test]
#[ignore = "needs the report consumers (make report-consumers)"]
fn several_implementations_side_by_side() {
    let consumers = consumers_dir("several_implementations_side_by_side");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-consumers-matrix");
    let _ = std::fs::remove_dir_all(&dir);
    let reports = reports();
    let paths: Vec<&PathBuf> = reports
        .iter()
        .filter(|(n, _)| ["clean", "mutant", "smoke"].contains(&n.as_str()))
        .map(|(_, p)| p)
        .collect();
    let output = suite()
        .args(["report", "--matrix"])
        .args(&paths)
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("matrix");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let markdown = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        std::fs::read_to_string(dir.join("matrix.md")).expect("md"),
        markdown
    );
    for path in &paths {
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let rows = rows(&report);
        let judged = rows.iter().filter(|(_, s)| s != "skipped").count();
        let passed = rows
            .iter()
            .filter(|(_, s)| s == "passed" || s == "warned")
            .count();
        let version = report["info"]["sut_version"].as_str().expect("version");
        let line = markdown
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no line for {name} in {markdown}"));
        assert!(
            line.contains(version) && line.ends_with(&format!("| {passed}/{judged} |")),
            "{line}"
        );
        let badge = std::fs::read_to_string(dir.join(format!("{name}.svg"))).expect("badge");
        assert!(
            badge.starts_with("<svg") && badge.contains(&format!(">{passed}/{judged}<")),
            "{badge}"
        );
    }
    // One row per check, one column per implementation; the smoke row first.
    let table: Vec<&str> = markdown.lines().filter(|l| l.starts_with("| `")).collect();
    assert!(table[0].starts_with("| `SMOKE.version` |"), "{markdown}");
    assert!(
        table.iter().all(|l| l.matches(" |").count() == 4),
        "{markdown}"
    );
    // The page fits a phone: the wide grid scrolls inside its own box.
    let seen = html_check(&consumers, &dir, &[dir.join("matrix.html")]);
    assert_fits(1, &seen);
    // The badges are well-formed XML for a real parser.
    for path in &paths {
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let check = Command::new(consumers.join("venv/bin/python"))
            .args([
                "-c",
                "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])",
            ])
            .arg(dir.join(format!("{name}.svg")))
            .output()
            .expect("python");
        assert!(
            check.status.success(),
            "{name}.svg: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
#[ignore = "needs the report consumers (make report-consumers)"]
fn markdown_holding_markup_characters_renders_on_cmark_gfm_as_the_plain_text() {
    let consumers =
        consumers_dir("markdown_holding_markup_characters_renders_on_cmark_gfm_as_the_plain_text");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-consumers-md");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let title = "a *title* | with <b>tags</b>, `ticks` and _under_ ~~struck~~";
    let pointer = "`--json ls [*]` line 1/data/*";
    let message = "`[*]` matched *everything* | <i>x</i> &amp; \\ back # hash [a](b) **bold**";
    let reason = "- starts like a list item | and <script>";
    let report = json!({
        "schema": "stoat-conformance-report/1",
        "info": {"suite_version": "0.1.0", "contract": 3, "sut": "/opt/it's *my* stoat", "sut_version": "1.0|2",
            "seed": 1, "jobs": 2, "selected": 1, "tiers": ["pure"]},
        "smoke": {"passed": true, "findings": []},
        "checks": [{"id": "ENV.one-result", "title": title, "level": "MUST", "tier": "pure",
            "tags": [], "spec_ref": "json-v3#consumer-contract", "status": "failed", "reason": reason,
            "findings": [{"check_id": "ENV.one-result", "level": "MUST", "spec_ref": "json-v3#consumer-contract",
                "pointer": pointer, "message": message}],
            "invocations": [], "duration_ms": 1}],
        "summary": {"passed": 0, "failed": 1, "crashed": 0, "warned": 0, "skipped": 0, "expected_failures": 0,
            "stale_baseline": 0, "errored": 0, "invocations": 1, "sut_ms": 1, "duration_ms": 2},
        "smoke_failed": false
    });
    let path = dir.join("markup.json");
    std::fs::write(&path, report.to_string()).expect("write");
    let md_path = dir.join("markup.md");
    render(&path, "md", &[], &md_path);
    let markdown = std::fs::File::open(&md_path).expect("md");
    let seen = json_of({
        let mut c = Command::new(consumers.join("venv/bin/python"));
        c.arg(format!("{CONSUMERS}/markdown.py")).stdin(markdown);
        c
    });
    let texts = |tag: &str| -> Vec<String> {
        seen["texts"][tag]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect()
    };
    let cells = texts("td");
    assert!(
        cells.contains(&format!("{pointer}: {message}")),
        "the first finding reads as written: {cells:?}\n{}",
        seen["html"]
    );
    assert!(cells.contains(&"ENV.one-result".to_string()), "{cells:?}");
    let items = texts("li");
    for expected in [
        format!("reason: {reason}"),
        format!("MUST {pointer}: {message} [json-v3#consumer-contract]"),
    ] {
        assert!(items.contains(&expected), "{expected:?} not in {items:?}");
    }
    assert!(
        texts("summary").contains(&format!("ENV.one-result FAIL: {title}")),
        "{:?}",
        texts("summary")
    );
    // Only the ids are code; nothing the SUT or a title says becomes markup.
    let markup: Vec<&str> = seen["markup"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|m| *m != "code")
        .collect();
    assert!(markup.is_empty(), "{markup:?}\n{}", seen["html"]);
    let paragraph = seen["html"].as_str().unwrap_or("");
    assert!(
        paragraph.contains("against /opt/it's *my* stoat (version 1.0|2)"),
        "{paragraph}"
    );
}
