//! Every embedded schema file is well formed: JSON, draft 2020-12, an `$id` that is
//! `BASE_URI` + its path, and it compiles (with every `$ref` resolved offline). Also pins the
//! lookup helpers and the error-code list.

use serde_json::Value;
use stoat_schemas::validate::Validator;
use stoat_schemas::{codes, data_schema_path, event_schema_path, files, get, BASE_URI};

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

#[test]
fn every_file_is_json_with_2020_12_and_its_own_id() {
    assert!(
        files().len() > 80,
        "only {} schema files embedded",
        files().len()
    );
    for file in files() {
        let schema: Value =
            serde_json::from_str(file.text).unwrap_or_else(|err| panic!("{}: {err}", file.path));
        assert_eq!(schema["$schema"], DRAFT_2020_12, "{}: $schema", file.path);
        assert_eq!(
            schema["$id"],
            format!("{BASE_URI}{}", file.path),
            "{}: $id",
            file.path
        );
        assert!(schema["title"].is_string(), "{}: title", file.path);
        assert!(
            schema["description"].is_string(),
            "{}: description",
            file.path
        );
    }
}

#[test]
fn files_are_sorted_and_found_by_get() {
    let paths: Vec<&str> = files().iter().map(|file| file.path).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(paths, sorted);
    for file in files() {
        assert_eq!(get(file.path), Some(file.text));
    }
    assert_eq!(get("nope.json"), None);
    assert!(get("envelope.json").is_some());
    assert!(get("error.json").is_some());
}

#[test]
fn every_file_compiles_offline() {
    let validator = Validator::new();
    assert_eq!(validator.compile_errors(), Vec::<String>::new());
}

#[test]
fn every_relative_ref_points_at_an_embedded_file() {
    fn walk(path: &str, node: &Value) {
        match node {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    let file_part = target.split('#').next().unwrap_or("");
                    if !file_part.is_empty() {
                        assert!(!file_part.contains("://"), "{path}: absolute $ref {target}");
                        let base = format!("{BASE_URI}{path}");
                        let resolved = resolve(&base, file_part);
                        let relative = resolved
                            .strip_prefix(BASE_URI)
                            .unwrap_or_else(|| panic!("{path}: {target} leaves BASE_URI"));
                        assert!(
                            get(relative).is_some(),
                            "{path}: $ref {target} -> {relative} is not embedded"
                        );
                    }
                }
                map.values().for_each(|child| walk(path, child));
            }
            Value::Array(items) => items.iter().for_each(|child| walk(path, child)),
            _ => {}
        }
    }
    /// Minimal RFC 3986 merge for the `../` and `name.json` forms these files use.
    fn resolve(base: &str, relative: &str) -> String {
        let mut parts: Vec<&str> = base.split('/').collect();
        parts.pop();
        for segment in relative.split('/') {
            match segment {
                ".." => {
                    parts.pop();
                }
                "." => {}
                other => parts.push(other),
            }
        }
        parts.join("/")
    }
    for file in files() {
        let schema: Value = serde_json::from_str(file.text).unwrap();
        walk(file.path, &schema);
    }
}

#[test]
fn data_schema_path_covers_every_cmd_of_the_contract() {
    let cmds = [
        "init",
        "status",
        "ls",
        "get",
        "create",
        "update",
        "up",
        "down",
        "wait",
        "rm",
        "clone",
        "exec",
        "ssh-command",
        "cp",
        "forward",
        "images",
        "pull",
        "snapshot",
        "prune",
        "apply",
        "recipes",
        "check-recipes",
        "guest",
        "recipe",
        "screenshot",
        "logs",
        "doctor",
        "mcp",
        "version",
        "help",
        "capabilities",
    ];
    for cmd in cmds {
        let path = data_schema_path(cmd).unwrap_or_else(|| panic!("no data schema for {cmd}"));
        assert_eq!(path, format!("data/{cmd}.json"));
    }
    assert_eq!(data_schema_path("ls"), Some("data/ls.json"));
    assert_eq!(data_schema_path("ssh"), None);
    assert_eq!(
        data_schema_path("provision"),
        None,
        "provision reports cmd apply"
    );
    assert_eq!(data_schema_path("frobnicate"), None);
    assert_eq!(data_schema_path(""), None);
    assert_eq!(
        data_schema_path("recipe/list"),
        None,
        "variants are not cmds"
    );
    assert_eq!(data_schema_path("../envelope"), None);
}

#[test]
fn event_schema_path_knows_the_three_events() {
    assert_eq!(event_schema_path("progress"), Some("events/progress.json"));
    assert_eq!(event_schema_path("stage"), Some("events/stage.json"));
    assert_eq!(event_schema_path("log"), Some("events/log.json"));
    assert_eq!(event_schema_path("result"), None);
    assert_eq!(event_schema_path("heartbeat"), None);
}

#[test]
fn codes_are_the_37_of_the_v3_table_sorted_and_unique() {
    let all = codes();
    assert_eq!(all.len(), 37);
    let mut sorted = all.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(all, sorted);
    for code in [
        "not_found",
        "usage",
        "internal",
        "host_unsupported",
        "lock_out_of_date",
        "rate_limited",
    ] {
        assert!(all.contains(&code), "{code} missing");
    }
}

#[test]
fn codes_json_is_an_enum_that_a_producer_can_check_against() {
    let validator = Validator::new();
    assert!(validator
        .validate("codes.json", &Value::from("not_found"))
        .is_empty());
    assert!(!validator
        .validate("codes.json", &Value::from("no_such_code"))
        .is_empty());
    // ... while error.json deliberately accepts an unknown code.
    let error = serde_json::json!({"code": "no_such_code_yet", "message": "from the future"});
    assert!(validator.validate("error.json", &error).is_empty());
}

#[test]
fn every_list_schema_says_type_array_so_null_fails() {
    /// Checks one schema object, then its subschemas; `properties` and `$defs` are maps of
    /// schemas (a property may be called "items").
    fn check_schema(path: &str, node: &Value) {
        let Value::Object(map) = node else { return };
        if map.contains_key("items") || map.contains_key("prefixItems") {
            assert_eq!(
                map.get("type"),
                Some(&Value::from("array")),
                "{path}: items without type array: {node}"
            );
        }
        for (key, child) in map {
            match (key.as_str(), child) {
                ("properties" | "$defs" | "dependentSchemas", Value::Object(schemas)) => schemas
                    .values()
                    .for_each(|schema| check_schema(path, schema)),
                (_, Value::Array(items)) => items.iter().for_each(|item| check_schema(path, item)),
                (_, child) => check_schema(path, child),
            }
        }
    }
    for file in files() {
        check_schema(file.path, &serde_json::from_str(file.text).unwrap());
    }
}
