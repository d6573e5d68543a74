//! Self-contained schemas: a schema with every `$ref` to another embedded file inlined under
//! its `$defs`, for consumers that cannot resolve cross-file references (an MCP client reading
//! a tool's `outputSchema`).
//!
//! Each referenced file lands once under `$defs/<key>`, its key being its path with `/` turned
//! into `-` and `.json` dropped (`dto/vm.json` → `dto-vm`); every `$ref` is rewritten to a
//! pointer inside the bundle (`../dto/vm.json#/properties/name` → `#/$defs/dto-vm/properties/name`).
//! Inlined files lose `$id` and `$schema`, so nothing changes the base URI inside the bundle.
//! A file that only holds definitions (`defs.json`: `$defs` and prose, no keyword of its own)
//! is not inlined as a whole, which would be a schema that accepts anything: each of its
//! definitions becomes its own entry, `$defs/<key>-<name>` (`#/$defs/defs-vm_name`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::BASE_URI;

/// Why a schema could not be bundled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// A `$ref` names a file that is not embedded.
    UnknownFile { reference: String },
    /// An embedded file is not valid JSON (a build problem, caught by this crate's tests).
    NotJson { path: String },
    /// A bundled file's key is already a `$defs` entry of the root schema.
    KeyTaken { key: String },
}

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleError::UnknownFile { reference } => {
                write!(f, "$ref {reference:?} names no embedded schema")
            }
            BundleError::NotJson { path } => write!(f, "{path} is not JSON"),
            BundleError::KeyTaken { key } => write!(f, "$defs/{key} is already defined"),
        }
    }
}

impl std::error::Error for BundleError {}

/// The embedded file at `path`, bundled.
pub fn bundle_file(path: &str) -> Result<Value, BundleError> {
    let root = parse(path)?;
    bundle(root, path)
}

/// `schema` bundled, its relative `$ref`s read as relative to the embedded file `base_path`
/// (e.g. `"data/x.json"` for a schema written beside the files of `data/`).
pub fn bundle(mut schema: Value, base_path: &str) -> Result<Value, BundleError> {
    let mut pending = Vec::new();
    rewrite(&mut schema, base_path, base_path, &mut pending)?;
    let mut bundled: BTreeMap<String, Value> = BTreeMap::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    while let Some(path) = pending.pop() {
        if !done.insert(path.clone()) {
            continue;
        }
        let key = key_of(&path);
        let mut file = parse(&path)?;
        if let Value::Object(map) = &mut file {
            map.remove("$id");
            map.remove("$schema");
        }
        rewrite(&mut file, &path, base_path, &mut pending)?;
        if is_container(&file) {
            if let Some(Value::Object(defs)) = file.get_mut("$defs").map(Value::take) {
                for (name, def) in defs {
                    bundled.insert(format!("{key}-{name}"), def);
                }
            }
        } else {
            bundled.insert(key, file);
        }
    }
    if let Value::Object(map) = &mut schema {
        map.remove("$id");
        if !bundled.is_empty() {
            let defs = map
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(defs) = defs {
                for (key, file) in bundled {
                    if defs.contains_key(&key) {
                        return Err(BundleError::KeyTaken { key });
                    }
                    defs.insert(key, file);
                }
            }
        }
    }
    Ok(schema)
}

fn parse(path: &str) -> Result<Value, BundleError> {
    let text = crate::get(path).ok_or_else(|| BundleError::UnknownFile {
        reference: path.to_owned(),
    })?;
    serde_json::from_str(text).map_err(|_| BundleError::NotJson {
        path: path.to_owned(),
    })
}

/// True for a schema that only holds definitions: nothing but `$defs` and annotations.
fn is_container(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.contains_key("$defs")
            && map.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "$defs" | "$schema" | "$id" | "$comment" | "title" | "description"
                )
            })
    })
}

/// Where `fragment` of the embedded file `target` lands in the bundle.
fn pointer_in_bundle(target: &str, fragment: &str) -> Result<String, BundleError> {
    let key = key_of(target);
    if is_container(&parse(target)?) {
        if let Some(rest) = fragment.strip_prefix("/$defs/") {
            let (name, tail) = match rest.split_once('/') {
                Some((name, tail)) => (name, format!("/{tail}")),
                None => (rest, String::new()),
            };
            return Ok(format!("/$defs/{key}-{name}{tail}"));
        }
    }
    Ok(format!("/$defs/{key}{fragment}"))
}

/// `dto/vm.json` → `dto-vm`.
fn key_of(path: &str) -> String {
    path.trim_end_matches(".json").replace('/', "-")
}

/// Rewrites every `$ref` in `value` (a part of the file at `path`) to a pointer inside the
/// bundle, queueing the files it names. `root` is the file the bundle starts from, whose
/// references stay as they are.
fn rewrite(
    value: &mut Value,
    path: &str,
    root: &str,
    pending: &mut Vec<String>,
) -> Result<(), BundleError> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref") {
                let (target, fragment) = resolve(path, reference)?;
                *reference = if target == root {
                    format!("#{fragment}")
                } else {
                    let pointer = pointer_in_bundle(&target, &fragment)?;
                    if target != path {
                        pending.push(target);
                    }
                    format!("#{pointer}")
                };
            }
            for (_, child) in map.iter_mut() {
                rewrite(child, path, root, pending)?;
            }
        }
        Value::Array(items) => {
            for child in items {
                rewrite(child, path, root, pending)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The embedded file a reference written in `path` names, and its fragment (without `#`).
fn resolve(path: &str, reference: &str) -> Result<(String, String), BundleError> {
    let (file, fragment) = match reference.split_once('#') {
        Some((file, fragment)) => (file, fragment.to_owned()),
        None => (reference, String::new()),
    };
    if file.is_empty() {
        return Ok((path.to_owned(), fragment));
    }
    let unknown = || BundleError::UnknownFile {
        reference: reference.to_owned(),
    };
    let mut parts: Vec<&str> = if let Some(absolute) = file.strip_prefix(BASE_URI) {
        absolute.split('/').collect()
    } else if file.contains(':') {
        return Err(unknown());
    } else {
        let mut base: Vec<&str> = path.split('/').collect();
        base.pop();
        base.extend(file.split('/'));
        base
    };
    let mut normal: Vec<&str> = Vec::new();
    for part in parts.drain(..) {
        match part {
            "" | "." => {}
            ".." => {
                normal.pop().ok_or_else(unknown)?;
            }
            other => normal.push(other),
        }
    }
    let target = normal.join("/");
    if crate::get(&target).is_none() {
        return Err(unknown());
    }
    Ok((target, fragment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_file_bundles_to_local_references_only() {
        for file in crate::files() {
            let bundled = bundle_file(file.path).unwrap();
            let mut found = Vec::new();
            refs(&bundled, &mut found);
            for reference in found {
                assert!(reference.starts_with('#'), "{}: {reference}", file.path);
                let pointer = reference.trim_start_matches('#');
                assert!(
                    bundled.pointer(pointer).is_some(),
                    "{}: {reference} points at nothing",
                    file.path
                );
            }
        }
    }

    #[test]
    fn a_file_of_definitions_is_hoisted_entry_by_entry() {
        let bundled = bundle_file("data/rm.json").unwrap();
        let text = bundled.to_string();
        assert!(text.contains("#/$defs/defs-vm_name"), "{text}");
        assert!(bundled["$defs"].get("defs").is_none(), "{text}");
        assert!(
            bundled.pointer("/$defs/defs-vm_name/type").is_some(),
            "{text}"
        );
    }

    #[test]
    fn references_resolve_relative_to_their_file() {
        assert_eq!(
            resolve("data/logs.json", "../data/logs/vm.json").unwrap(),
            ("data/logs/vm.json".to_owned(), String::new())
        );
        assert_eq!(
            resolve("dto/vm.json", "../defs.json#/$defs/vm_name").unwrap(),
            ("defs.json".to_owned(), "/$defs/vm_name".to_owned())
        );
        assert_eq!(
            resolve("data/x.json", &format!("{BASE_URI}dto/vm.json")).unwrap(),
            ("dto/vm.json".to_owned(), String::new())
        );
        for bad in [
            "../../x.json",
            "nope.json",
            "https://elsewhere.example/x.json",
        ] {
            assert!(resolve("data/x.json", bad).is_err(), "{bad}");
        }
    }
}
