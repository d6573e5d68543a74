//! Every spec id a report cites resolves in what the suite ships: the release tarball
//! (ci-kit/dist.sh, behind `make dist`) is unpacked alone in an empty directory, its own
//! `stoat-conformance` judges the fixture SUT (contract 3, and contract 2 with
//! `--fixture-speaks-contract-2`) and writes its reports at the tarball's top, and every
//! spec id of the JSON report is an anchor of the shipped docs/contract.md, linked as such by
//! the HTML report (a relative link that works from there).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/dist.rs"]
mod dist;

fn fixture() -> &'static str {
    env!("CARGO_BIN_EXE_stoat-fixture-sut")
}

/// Packs the tarball from the binaries cargo built and unpacks it, alone, in `empty`;
/// returns the directory it unpacked to.
fn unpack_tarball(work: &Path, empty: &Path) -> PathBuf {
    let bins = Path::new(env!("CARGO_BIN_EXE_stoat-conformance"))
        .parent()
        .expect("bin dir");
    let tarball = dist::pack(&work.join("dist"), bins);
    std::fs::create_dir_all(empty).expect("empty dir");
    let untar = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .current_dir(empty)
        .output()
        .expect("tar");
    assert!(untar.status.success());
    let entries: Vec<PathBuf> = std::fs::read_dir(empty)
        .expect("read")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(entries.len(), 1, "one top directory: {entries:?}");
    entries.into_iter().next().expect("top")
}

/// Every `spec_ref` in a JSON report: the rows', their findings' and the smoke stage's.
fn spec_ids(report: &Value) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut add = |value: &Value| {
        if let Some(id) = value["spec_ref"].as_str().filter(|id| !id.is_empty()) {
            ids.insert(id.to_string());
        }
    };
    for row in report["checks"].as_array().into_iter().flatten() {
        add(row);
        for finding in row["findings"].as_array().into_iter().flatten() {
            add(finding);
        }
    }
    for finding in report["smoke"]["findings"].as_array().into_iter().flatten() {
        add(finding);
    }
    ids
}

/// The `id="..."` attributes of an HTML or Markdown text.
fn ids_defined(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r#"\bid="([^"]+)""#).expect("re");
    re.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// Runs the unpacked suite against `sut` from the tarball's top directory, checks its
/// reports there, and returns the spec ids it cited.
fn check_run(top: &Path, label: &str, sut: &[&str]) -> BTreeSet<String> {
    let json = format!("{label}.json");
    let html = format!("{label}.html");
    let run = Command::new(top.join("stoat-conformance"))
        .args(["run", "--json-report", &json, "--html", &html, "--"])
        .args(sut)
        .current_dir(top)
        .output()
        .expect("run");
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{label}: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(top.join(&json)).expect("report"))
            .expect("json");
    assert!(
        report["checks"].as_array().is_some_and(|c| c.len() > 100),
        "{label}: the whole catalog ran"
    );
    let cited = spec_ids(&report);
    let page = std::fs::read_to_string(top.join(&html)).expect("html");

    // Every link the page holds into the shipped docs resolves, relative to the page.
    let link = regex::Regex::new(r##"href="([^"#]+\.md)#([^"]+)""##).expect("re");
    let mut linked = BTreeSet::new();
    for hit in link.captures_iter(&page) {
        let (file, fragment) = (&hit[1], &hit[2]);
        let target = top.join(file);
        let text = std::fs::read_to_string(&target)
            .unwrap_or_else(|_| panic!("{label}: the page links {file}, not in the tarball"));
        assert!(
            ids_defined(&text).contains(fragment),
            "{label}: {file} has no anchor {fragment}"
        );
        linked.insert(format!("{file}#{fragment}"));
    }

    // Every spec id the report cites is an anchor of the shipped contract, and the page
    // links it there.
    let contract = std::fs::read_to_string(top.join("docs/contract.md")).expect("contract");
    let anchors = ids_defined(&contract);
    for id in &cited {
        let anchor = stoat_conformance::spec::doc_anchor(id);
        assert!(
            anchors.contains(&anchor),
            "{label}: {id} has no anchor in the tarball's docs/contract.md"
        );
        assert!(
            linked.contains(&stoat_conformance::spec::doc_link(id)),
            "{label}: the page does not link {id}"
        );
        assert!(
            page.contains(&format!(
                "<a href=\"{}\">{id}</a>",
                stoat_conformance::spec::doc_link(id)
            )),
            "{label}: {id} is not shown as its link"
        );
    }
    cited
}

#[test]
fn every_spec_id_of_a_report_resolves_in_the_unpacked_tarball() {
    let work = tempfile::tempdir().expect("tmp");
    let top = unpack_tarball(work.path(), &work.path().join("empty"));

    let v3 = check_run(&top, "contract-3", &[fixture()]);
    assert!(v3.iter().any(|id| id.starts_with("json-v3#")), "{v3:?}");
    assert!(v3.iter().all(|id| !id.starts_with("json-v2#")), "{v3:?}");

    let v2 = check_run(
        &top,
        "contract-2",
        &[fixture(), "--fixture-speaks-contract-2"],
    );
    assert!(v2.iter().any(|id| id.starts_with("json-v2#")), "{v2:?}");
    assert!(
        v2.iter().all(|id| !id.starts_with("json-v3#")),
        "an edition-2 run cites edition 2: {v2:?}"
    );
}
