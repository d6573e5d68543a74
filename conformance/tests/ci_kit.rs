//! The implementer's kit (ci-kit/run.sh, the steps of action.yml; ci-kit/dist.sh, behind
//! `make dist`) run locally as GitHub would run them: against the reference (passes, every
//! report and the job summary written, exit-code 0 in $GITHUB_OUTPUT) and against a mutant of
//! it taken from a release tarball (fails with exit 1, its failure in the summary); a tarball
//! whose checksum does not match is refused. And the action's inputs and the documented
//! workflow agree with the script.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/dist.rs"]
mod dist;
#[path = "support/reference.rs"]
mod support;

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn suite_bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_stoat-conformance"))
        .parent()
        .expect("bin dir")
        .to_path_buf()
}

/// Runs ci-kit/run.sh in `dir` with `env` plus GitHub's summary and output files.
fn kit(dir: &Path, env: &[(&str, &str)]) -> (Output, String, String) {
    let summary = dir.join("step-summary.md");
    let outputs = dir.join("github-output.txt");
    std::fs::write(&summary, "").expect("summary");
    std::fs::write(&outputs, "").expect("outputs");
    let mut command = Command::new(format!("{REPO}/ci-kit/run.sh"));
    command
        .current_dir(dir)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs)
        .env("STOAT_SUITE_ROOT", dir.join("suite"));
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run.sh");
    (
        output,
        std::fs::read_to_string(&summary).expect("summary"),
        std::fs::read_to_string(&outputs).expect("outputs"),
    )
}

#[test]
fn the_kit_passes_the_reference_and_fails_a_mutant_from_a_release_tarball() {
    let reference = support::fresh_reference();
    let reference = reference.to_str().expect("utf-8 path");
    let dir = tempfile::tempdir().expect("tmp");
    let bins = suite_bin_dir();

    let (output, summary, outputs) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", reference),
            ("STOAT_SUITE_BIN_DIR", bins.to_str().expect("utf-8")),
            ("STOAT_RUN_ARGS", "--tier pure"),
            ("STOAT_REPORT_DIR", "reference"),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{summary}");
    assert!(
        outputs.contains("exit-code=0\n") && outputs.contains("report-dir=reference\n"),
        "{outputs}"
    );
    // The counts as the action's outputs: a pure run passes checks and fails none.
    assert!(outputs.contains("\nfailed=0\n"), "{outputs}");
    let passed: usize = outputs
        .lines()
        .find_map(|l| l.strip_prefix("passed="))
        .and_then(|n| n.parse().ok())
        .expect("passed=N");
    assert!(passed > 0, "{outputs}");
    assert!(
        summary.starts_with("## stoat-conformance: ") && summary.contains("No failure."),
        "{summary}"
    );
    for file in [
        "conformance.json",
        "junit.xml",
        "conformance.tap",
        "report.html",
        "summary.md",
        "badge/conformance.svg",
    ] {
        assert!(
            dir.path().join("reference").join(file).is_file(),
            "no {file}"
        );
    }

    // A release tarball of these binaries, as `make dist` packs them.
    let tarball = dist::pack(&dir.path().join("dist"), &bins)
        .display()
        .to_string();
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&tarball)
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout);
    for file in [
        "/stoat-conformance\n",
        "/stoat-fake\n",
        "/README.md\n",
        "/docs/contract.md\n",
        "/docs/checks.md\n",
        "/docs/conformance.md\n",
        "/report.schema.json\n",
        "/LICENSE-MIT\n",
        "/LICENSE-APACHE\n",
    ] {
        assert!(listing.contains(file), "no {file} in {listing}");
    }
    let sums = Command::new("sha256sum")
        .arg("-c")
        .arg(format!("{tarball}.sha256"))
        .current_dir(dir.path().join("dist"))
        .output()
        .expect("sha256sum");
    assert!(
        sums.status.success(),
        "{}",
        String::from_utf8_lossy(&sums.stdout)
    );

    let conformance = env!("CARGO_BIN_EXE_stoat-conformance");
    let mutant_args = format!("mutate --op exec-lossy -- {reference}");
    let (output, summary, outputs) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", conformance),
            ("STOAT_SUT_ARGS", &mutant_args),
            ("STOAT_SUITE_TARBALL", &tarball),
            ("STOAT_RUN_ARGS", "--id EXEC.*"),
            ("STOAT_REPORT_DIR", "mutant"),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}\n{summary}");
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    assert!(
        summary.contains("### Failures (") && summary.contains("`EXEC.base64-stdout` | FAIL"),
        "{summary}"
    );
    let junit = std::fs::read_to_string(dir.path().join("mutant/junit.xml")).expect("junit");
    assert!(junit.contains("<failure type=\"FAIL\""), "{junit}");

    // A tarball that is not the one its checksum names is refused before anything runs.
    let forged = dir.path().join("forged.tar.gz");
    std::fs::copy(&tarball, &forged).expect("copy");
    std::fs::write(
        format!("{}.sha256", forged.display()),
        format!("{} forged.tar.gz\n", "0".repeat(64)),
    )
    .expect("sum");
    let (output, summary, _) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", reference),
            ("STOAT_SUITE_TARBALL", forged.to_str().expect("utf-8")),
            (
                "STOAT_SUITE_ROOT",
                dir.path().join("forged-root").to_str().expect("utf-8"),
            ),
            ("STOAT_REPORT_DIR", "forged"),
        ],
    );
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("checksum mismatch"));
    assert!(summary.is_empty() && !dir.path().join("forged/conformance.json").exists());
}

/// The `STOAT_*` names `text` mentions.
fn stoat_vars(text: &str) -> std::collections::BTreeSet<String> {
    let re = regex::Regex::new(r"\bSTOAT_[A-Z_]+\b").expect("re");
    re.find_iter(text).map(|m| m.as_str().to_string()).collect()
}

#[test]
fn the_action_the_script_and_the_documented_workflow_agree() {
    let action = std::fs::read_to_string(format!("{REPO}/action.yml")).expect("action.yml");
    let script = std::fs::read_to_string(format!("{REPO}/ci-kit/run.sh")).expect("run.sh");
    assert!(
        action.contains("using: composite")
            && action.contains("\"$GITHUB_ACTION_PATH/ci-kit/run.sh\"")
    );
    // Every variable the action sets is one the script reads, and the script's inputs
    // (other than the local-only bin dir) are all set by the action.
    let set = stoat_vars(&action);
    let read = stoat_vars(&script);
    assert!(
        set.is_subset(&read),
        "the action sets {set:?}, the script reads {read:?}"
    );
    let unset: Vec<&String> = read
        .difference(&set)
        .filter(|v| *v != "STOAT_SUITE_BIN_DIR")
        .collect();
    assert!(unset.is_empty(), "the action never sets {unset:?}");
    // The inputs the action declares (two-space indented keys under `inputs:`).
    let inputs_block = action
        .split("\ninputs:\n")
        .nth(1)
        .and_then(|rest| rest.split("\noutputs:\n").next())
        .expect("inputs");
    let inputs: Vec<&str> = inputs_block
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    assert!(
        inputs.contains(&"sut") && inputs.contains(&"profile") && inputs.contains(&"baseline"),
        "{inputs:?}"
    );
    // The documented workflows (the plain one and the sharded one) use this action with
    // inputs it declares.
    let docs = std::fs::read_to_string(format!("{REPO}/docs/conformance.md")).expect("docs");
    let workflows: Vec<&str> = docs
        .split("```yaml\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .filter(|block| block.contains("uses: OWNER/stoat@"))
        .collect();
    assert!(
        workflows.len() >= 2
            && workflows
                .iter()
                .any(|w| w.contains("--shard ${{ matrix.shard }}/3"))
            && workflows.iter().any(|w| w.contains("report --merge")),
        "a workflow and a sharded one in docs/conformance.md"
    );
    for workflow in workflows {
        assert!(
            workflow.contains("on:") && workflow.contains("jobs:") && workflow.contains("runs-on:"),
            "{workflow}"
        );
        let lines: Vec<&str> = workflow.lines().collect();
        let indent = |l: &str| l.len() - l.trim_start().len();
        for (at, line) in lines.iter().enumerate() {
            if !line.trim_start().starts_with("uses: OWNER/stoat@") {
                continue;
            }
            // The step's `with:`, at the indent of its `uses:`, then the keys under it.
            let step = indent(line);
            let with = lines[at + 1..]
                .iter()
                .take_while(|l| indent(l) >= step)
                .position(|l| indent(l) == step && l.trim() == "with:")
                .map(|p| at + 1 + p)
                .unwrap_or_else(|| panic!("no `with:` after {line:?}"));
            for key_line in lines[with + 1..]
                .iter()
                .take_while(|l| indent(l) > step)
                .filter(|l| indent(l) == step + 2)
            {
                let key = key_line.trim().split(':').next().expect("key");
                assert!(
                    inputs.contains(&key),
                    "the workflow passes {key:?}, the action declares {inputs:?}"
                );
            }
        }
    }
}

/// The release procedure in a clone of this repository: the tarball and its checksum, the
/// version tag and the moving major tag on the commit; a second release of the same version,
/// a version that is not the suite's, and a dirty tree are refused.
#[test]
fn a_release_tags_the_commit_moves_the_major_tag_and_makes_the_assets() {
    let dir = tempfile::tempdir().expect("tmp");
    let clone = dir.path().join("repo");
    let git = |args: &[&str], cwd: &Path| {
        let out = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .expect("git");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        )
    };
    let (cloned, _) = git(
        &[
            "clone",
            "--quiet",
            "--no-hardlinks",
            REPO,
            clone.to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    assert!(cloned);
    let manifest = std::fs::read_to_string(clone.join("Cargo.toml")).expect("Cargo.toml");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("version")
        .to_owned();
    let release = |version: &str| {
        Command::new(clone.join("ci-kit/release.sh"))
            .arg(version)
            .arg(dir.path().join("dist"))
            .current_dir(&clone)
            .env("STOAT_DIST_BIN_DIR", suite_bin_dir())
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .expect("release.sh")
    };
    let wrong = release("9.9.9");
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("not 9.9.9"));
    let made = release(&version);
    let said = String::from_utf8_lossy(&made.stdout).into_owned();
    assert!(
        made.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (_, head) = git(&["rev-parse", "HEAD"], &clone);
    let major = format!("v{}", version.split('.').next().expect("major"));
    for tag in [format!("v{version}"), major.clone()] {
        let (_, at) = git(&["rev-parse", &format!("{tag}^{{commit}}")], &clone);
        assert_eq!(at, head, "{tag}");
    }
    let tarball = said
        .lines()
        .map(str::trim)
        .find(|l| l.ends_with(".tar.gz"))
        .expect("the tarball's path")
        .to_owned();
    assert!(Path::new(&tarball).is_file() && Path::new(&format!("{tarball}.sha256")).is_file());
    assert!(
        said.contains(&format!("git push --force origin {major}")),
        "{said}"
    );
    let again = release(&version);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    std::fs::write(clone.join("README.md"), "edited").expect("edit");
    let dirty = release("0.0.1");
    assert!(String::from_utf8_lossy(&dirty.stderr).contains("uncommitted"));
}

/// A suite built before from the same sources (a restored CI cache) is used without cargo:
/// the kit finds its key beside the binaries and never builds.
#[test]
fn a_suite_built_from_the_same_sources_is_reused_without_cargo() {
    let reference = support::fresh_reference();
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("suite");
    std::fs::create_dir_all(root.join("bin")).expect("bin");
    for name in ["stoat-conformance", "stoat-fake"] {
        std::fs::copy(suite_bin_dir().join(name), root.join("bin").join(name)).expect("copy");
    }
    let key = Command::new(format!("{REPO}/ci-kit/source-key.sh"))
        .arg(REPO)
        .output()
        .expect("source-key.sh");
    assert!(key.status.success());
    std::fs::write(root.join(".source-key"), &key.stdout).expect("key");
    // No cargo on PATH: a build would fail the kit with exit 3.
    let (output, _, outputs) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", reference.to_str().expect("utf-8")),
            ("STOAT_SUITE_SOURCE", REPO),
            ("STOAT_RUN_ARGS", "--tier pure --id LS.*"),
            ("PATH", "/usr/bin:/bin"),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("using the suite built before"), "{stderr}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
}

/// `run-args` and `sut-args` are words, never globs: `--id LS.*` in a directory holding a
/// file that the glob would match still selects the LS checks.
#[test]
fn run_args_and_sut_args_are_words_without_glob_expansion() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("LS.decoy"), "").expect("decoy");
    let bins = suite_bin_dir();
    let fixture = env!("CARGO_BIN_EXE_stoat-fixture-sut");
    let (output, summary, _) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", env!("CARGO_BIN_EXE_stoat-conformance")),
            (
                "STOAT_SUT_ARGS",
                &format!("mutate --op unknown-event -- {fixture}"),
            ),
            ("STOAT_SUITE_BIN_DIR", bins.to_str().expect("utf-8")),
            ("STOAT_RUN_ARGS", "--id LS.*   --tier pure"),
            ("STOAT_REPORT_DIR", "words"),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("words/conformance.json")).expect("report"),
    )
    .expect("json");
    let ids: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|id| id.starts_with("LS.")),
        "{ids:?}"
    );
    assert!(summary.contains("passed"), "{summary}");
}

/// The action's `name` input (`STOAT_NAME`) names the implementation where the reports name
/// one, `report --matrix --name`: its column in badge/matrix.md and its page; the badge and
/// the action's outputs stay where they were.
#[test]
fn the_name_input_names_the_implementation_and_keeps_the_outputs() {
    let action = std::fs::read_to_string(format!("{REPO}/action.yml")).expect("action.yml");
    assert!(
        action.contains("\n  name:\n") && action.contains("STOAT_NAME: ${{ inputs.name }}"),
        "the action declares `name` and passes it on"
    );
    let dir = tempfile::tempdir().expect("tmp");
    let bins = suite_bin_dir();
    let (output, summary, outputs) = kit(
        dir.path(),
        &[
            ("STOAT_SUT", env!("CARGO_BIN_EXE_stoat-fixture-sut")),
            ("STOAT_SUITE_BIN_DIR", bins.to_str().expect("utf-8")),
            ("STOAT_RUN_ARGS", "--id LS.* --tier pure"),
            ("STOAT_REPORT_DIR", "named"),
            ("STOAT_NAME", "their stoat"),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{summary}");
    assert!(
        outputs.contains("exit-code=0\n") && outputs.contains("report-dir=named\n"),
        "{outputs}"
    );
    assert!(outputs.contains("\nfailed=0\n"), "{outputs}");
    let badge = dir.path().join("named/badge");
    let matrix = std::fs::read_to_string(badge.join("matrix.md")).expect("matrix.md");
    assert!(matrix.contains("| their stoat |"), "{matrix}");
    let page = std::fs::read_to_string(badge.join("matrix.html")).expect("matrix.html");
    assert!(page.contains("<a href=\"their stoat.html\">"), "{page}");
    assert!(badge.join("their stoat.html").is_file());
    let svgs: Vec<String> = std::fs::read_dir(&badge)
        .expect("badge dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    assert_eq!(
        svgs,
        ["conformance.svg"],
        "one badge, at its documented path"
    );
    for file in [
        "conformance.json",
        "junit.xml",
        "conformance.tap",
        "report.html",
        "summary.md",
        "docs/contract.md",
    ] {
        assert!(dir.path().join("named").join(file).is_file(), "no {file}");
    }
    // The report's spec-id links resolve inside the report directory (the artifact).
    let html = std::fs::read_to_string(dir.path().join("named/report.html")).expect("html");
    let contract =
        std::fs::read_to_string(dir.path().join("named/docs/contract.md")).expect("contract");
    let links = regex::Regex::new(r#"href="docs/contract\.md#([^"]+)""#).expect("re");
    let fragments: Vec<String> = links
        .captures_iter(&html)
        .map(|c| c[1].to_string())
        .collect();
    assert!(!fragments.is_empty(), "the page links spec ids");
    for fragment in fragments {
        assert!(
            contract.contains(&format!("<a id=\"{fragment}\"></a>")),
            "no anchor {fragment}"
        );
    }
}
