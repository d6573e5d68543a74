//! Golden transcripts end to end (docs/golden.md): `golden verify` passes against the
//! reference (`target/debug/stoat`; missing or stale fails, see support/reference.rs),
//! including the frozen older-version corpus; a SUT that drops a field, changes an error
//! code or breaks the envelope fails; additive changes pass; `bless` writes `.new` files
//! only for cases that changed and refuses under `CI`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn conformance() -> Command {
    let mut command = Command::cargo_bin("stoat-conformance").expect("binary");
    command.env_remove("CI");
    command
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden")
}

#[path = "support/reference.rs"]
mod support;

/// The reference binary, fresh.
fn reference() -> PathBuf {
    support::fresh_reference()
}

fn verify(dir: &Path, sut: &[&str], cases: &[&str]) -> (bool, String) {
    let mut command = conformance();
    // The reference set too: these tests run against the reference.
    command
        .args(["golden", "verify", "--reference", "--dir"])
        .arg(dir);
    for case in cases {
        command.args(["--case", case]);
    }
    let output = command.arg("--").args(sut).output().expect("verify runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.success(), stdout)
}

/// The SUT argv of the reference wrapped in one mutation operator.
fn mutant(op: &str, stoat: &Path) -> Vec<String> {
    let exe = assert_cmd::cargo::cargo_bin("stoat-conformance");
    vec![
        exe.display().to_string(),
        "mutate".into(),
        "--op".into(),
        op.into(),
        "--".into(),
        stoat.display().to_string(),
    ]
}

#[test]
fn verify_passes_against_the_reference() {
    let stoat = reference();
    let (passed, stdout) = verify(&golden_dir(), &[stoat.to_str().expect("utf-8")], &[]);
    assert!(passed, "golden verify failed:\n{stdout}");
    assert!(
        stdout.contains("PASS v3.0/ls/empty"),
        "the frozen corpus is verified too:\n{stdout}"
    );
}

#[test]
fn additive_mutants_pass_and_breaking_ones_fail() {
    let stoat = reference();
    let cases = ["ls/*", "get/*"];
    for op in ["extra-field", "unknown-event", "stderr-noise"] {
        let sut = mutant(op, &stoat);
        let sut: Vec<&str> = sut.iter().map(String::as_str).collect();
        let (passed, stdout) = verify(&golden_dir(), &sut, &cases);
        assert!(passed, "{op} is additive and must pass:\n{stdout}");
    }
    for op in ["null-list", "wrong-cmd", "v-2", "error-exit-0", "no-result"] {
        let sut = mutant(op, &stoat);
        let sut: Vec<&str> = sut.iter().map(String::as_str).collect();
        let (passed, stdout) = verify(&golden_dir(), &sut, &cases);
        assert!(!passed, "{op} must fail golden verify:\n{stdout}");
    }
}

/// Copies two cases into a scratch golden dir, edited by `edit`.
fn scratch_with(edit: impl Fn(&mut serde_json::Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    for case in ["ls/two-vms", "get/not-found"] {
        let text =
            std::fs::read_to_string(golden_dir().join(format!("{case}.json"))).expect("case");
        let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
        edit(&mut value);
        let path = dir.path().join(format!("{case}.json"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, serde_json::to_string_pretty(&value).expect("render"))
            .expect("write");
    }
    dir
}

#[test]
fn a_removed_field_or_changed_code_fails() {
    let stoat = reference();
    let stoat = stoat.to_str().expect("utf-8");
    // An older transcript naming a field (or code) the SUT no longer emits.
    let dir = scratch_with(|case| {
        let result = case["lines"]
            .as_array_mut()
            .and_then(|l| l.last_mut())
            .expect("result");
        if let Some(vm) = result
            .pointer_mut("/data/vms/0")
            .and_then(|v| v.as_object_mut())
        {
            vm.insert("removed_field".into(), serde_json::json!(1));
        }
        if let Some(code) = result.pointer_mut("/error/code") {
            *code = serde_json::json!("retired_code");
        }
    });
    let (passed, stdout) = verify(dir.path(), &[stoat], &[]);
    assert!(!passed, "{stdout}");
    assert!(
        stdout.contains("/data/vms/0/removed_field: missing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("/error/code: expected \"retired_code\""),
        "{stdout}"
    );
}

#[test]
fn bless_writes_new_files_only_for_changes_and_refuses_under_ci() {
    let stoat = reference();
    let stoat = stoat.to_str().expect("utf-8");
    let dir = scratch_with(|case| {
        if case["cmd"] == "ls" {
            case["exit"] = serde_json::json!(7);
        }
    });
    let status = conformance()
        .env("CI", "true")
        .args(["golden", "bless", "--from-files", "--dir"])
        .arg(dir.path())
        .args(["--", stoat])
        .output()
        .expect("bless");
    assert_eq!(status.status.code(), Some(2), "bless refuses under CI");
    assert!(!dir.path().join("ls/two-vms.json.new").exists());
    let output = conformance()
        .args(["golden", "bless", "--from-files", "--dir"])
        .arg(dir.path())
        .args(["--", stoat])
        .output()
        .expect("bless");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let new = dir.path().join("ls/two-vms.json.new");
    let text = std::fs::read_to_string(&new).expect("a .new file for the changed case");
    assert!(text.contains("\"exit\": 0"));
    assert!(
        !dir.path().join("get/not-found.json.new").exists(),
        "unchanged: no .new"
    );
}
