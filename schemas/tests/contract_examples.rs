//! Every JSON example of the contract (copied, with `...` completed minimally, into
//! `tests/examples/*.json`) validates against its schema. A case whose `schema` is `"line"` is
//! a whole `--json` line and goes through `Validator::validate_line`.

use std::path::PathBuf;

use serde_json::Value;
use stoat_schemas::validate::Validator;

fn example_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/examples");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    found.sort();
    found
}

#[test]
fn every_contract_example_validates() {
    let validator = Validator::new();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in example_files() {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for (index, case) in doc["cases"].as_array().unwrap().iter().enumerate() {
            let schema = case["schema"].as_str().unwrap();
            let value = &case["value"];
            let messages = if schema == "line" {
                validator.validate_line(value)
            } else {
                validator.validate(schema, value)
            };
            if !messages.is_empty() {
                failures.push(format!(
                    "{}#{index} ({schema}): {messages:#?}",
                    file.display()
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 100, "only {checked} examples checked");
}

#[test]
fn every_dto_and_data_schema_has_an_example() {
    let mut used = std::collections::BTreeSet::new();
    for file in example_files() {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            used.insert(case["schema"].as_str().unwrap().to_owned());
        }
    }
    // Nested DTOs and variant files are covered through the files that use them.
    let covered_elsewhere = [
        "dto/recipe-detail.json",
        "dto/capability.json",
        "data/apply/run.json",
        "data/apply/dry-run.json",
        "data/forward/show.json",
        "data/forward/set.json",
        "data/snapshot/list.json",
        "data/snapshot/act.json",
        "data/guest/ls.json",
        "data/guest/show.json",
        "data/logs/stoat.json",
        "data/logs/vm.json",
        "data/mcp/doctor.json",
        "data/mcp/install.json",
        "data/capabilities.json",
    ];
    let missing: Vec<&str> = stoat_schemas::files()
        .iter()
        .map(|file| file.path)
        .filter(|path| path.starts_with("dto/") || path.starts_with("data/"))
        .filter(|path| !used.contains(*path) && !covered_elsewhere.contains(path))
        .collect();
    assert!(missing.is_empty(), "no example for {missing:?}");
}
