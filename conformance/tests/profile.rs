//! The SUT profile (`run --profile FILE`) through the binary against the fixture SUT: with
//! no profile the pull checks use the reference's catalog knob and pass; a profile naming a
//! catalog variable the SUT does not read makes each of them SKIP naming that variable (never
//! fail, never pass); `data_root_var = ""` runs the suite with the data root under HOME.

use assert_cmd::Command;

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_stoat-fixture-sut")
}

const CATALOG_CHECKS: &[&str] = &[
    "PULL.progress-monotonic",
    "PULL.result-shape",
    "PULL.verified",
    "PULL.checksum-mismatch",
    "PULL.download-failed-404",
    "PULL.through-proxy",
    "IMAGES.file-bare-name",
];

fn run(profile: Option<&str>, ids: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("r.json");
    let mut command = Command::cargo_bin("stoat-conformance").expect("binary");
    command
        .args(["run", "--seed", "5", "--json-report"])
        .arg(&report);
    if let Some(text) = profile {
        let path = dir.path().join("profile.toml");
        std::fs::write(&path, text).expect("profile");
        command.arg("--profile").arg(&path);
    }
    for id in ids {
        command.args(["--id", id]);
    }
    let output = command.args(["--", fixture()]).output().expect("run");
    let saved =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    (
        output.status.code(),
        saved,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn status<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} ran"))
}

#[test]
fn the_catalog_knob_comes_from_the_profile_and_an_ignored_one_skips() {
    let (code, report, out) = run(None, CATALOG_CHECKS);
    assert_eq!(code, Some(0), "{out}");
    for id in CATALOG_CHECKS {
        assert_eq!(status(&report, id)["status"], "passed", "{id}: {out}");
    }
    let (code, report, out) = run(
        Some("[catalog]\nenv = \"MY_IMAGE_CATALOG\"\n"),
        &[CATALOG_CHECKS, &["LS.*"]].concat(),
    );
    assert_eq!(code, Some(0), "the LS checks still ran and passed: {out}");
    for id in CATALOG_CHECKS {
        let check = status(&report, id);
        assert_eq!(check["status"], "skipped", "{id}: {out}");
        assert!(
            check["reason"]
                .as_str()
                .unwrap_or("")
                .contains("MY_IMAGE_CATALOG"),
            "{id} names the knob: {check}"
        );
    }
}

#[test]
fn a_sut_without_a_data_root_variable_keeps_its_data_under_home() {
    let (code, report, out) = run(
        Some("data_root_var = \"\"\n"),
        &["LS.*", "GET.*", "SANDBOX.home-untouched"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        status(&report, "LS.lists-fixture")["status"],
        "passed",
        "{out}"
    );
    assert_eq!(
        status(&report, "SANDBOX.home-untouched")["status"],
        "skipped",
        "{out}"
    );
}

#[test]
fn a_bad_profile_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.toml");
    std::fs::write(&path, "catalogue = 1\n").expect("write");
    let output = Command::cargo_bin("stoat-conformance")
        .expect("binary")
        .arg("run")
        .arg("--profile")
        .arg(&path)
        .args(["--", fixture()])
        .output()
        .expect("run");
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("catalogue"), "{stderr}");
}
