//! A bundled schema (every cross-file `$ref` inlined, see `stoat_schemas::bundle`) judges like
//! the file it comes from: every contract example it accepts, and the rule-breaking values of
//! a few shapes it rejects, compiled with no retriever at all (nothing left to fetch).

use std::path::PathBuf;

use serde_json::{json, Value};
use stoat_schemas::bundle::bundle_file;

fn compile(path: &str) -> jsonschema::Validator {
    let schema = bundle_file(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    jsonschema::draft202012::options()
        .build(&schema)
        .unwrap_or_else(|e| panic!("{path} bundled does not compile: {e}"))
}

#[test]
fn every_contract_example_validates_against_its_bundled_schema() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            let schema = case["schema"].as_str().unwrap();
            if schema == "line" {
                continue;
            }
            let errors: Vec<String> = compile(schema)
                .iter_errors(&case["value"])
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{schema}: {errors:#?}");
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} examples");
}

#[test]
fn bundled_schemas_still_reject_what_the_files_reject() {
    let ls = compile("data/ls.json");
    assert!(ls.is_valid(&json!({"vms": []})));
    assert!(!ls.is_valid(&json!({"vms": [{"name": "w"}]})));
    assert!(!ls.is_valid(&json!({"vms": null})));
    let rm = compile("data/rm.json");
    assert!(rm.is_valid(&json!({"name": "w", "deleted": true})));
    assert!(!rm.is_valid(&json!({"name": "", "deleted": true})));
}
