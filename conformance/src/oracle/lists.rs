//! Owns LIST.never-null: a generic walk that flags `null` under every key the contract
//! defines as list-valued, whatever the command. Independent of the schemas so a schema
//! that forgot a list cannot hide a null. Implements json-v3#types.

use serde_json::Value;

use super::sink::{at, walk, Sink, Stream};
use crate::ids;

/// Keys that hold a list wherever they appear in a v3 payload.
pub const LIST_KEYS: &[&str] = &[
    "aliases",
    "applied",
    "argv",
    "capabilities",
    "changed",
    "checks",
    "cli_commands",
    "clients",
    "depends",
    "drift",
    "escalate",
    "evidence",
    "files",
    "filename_hints",
    "fix",
    "forwards",
    "guests",
    "images",
    "install",
    "issues",
    "items",
    "limits",
    "lines",
    "outputs",
    "params",
    "plan",
    "profiles",
    "recipes",
    "recipes_detail",
    "requirements",
    "roots",
    "seed_packages",
    "snapshots",
    "unavailable",
    "values",
    "vms",
];

pub(crate) fn check(stream: &Stream, sink: &mut Sink) {
    for (index, line) in stream.lines.iter().enumerate() {
        let Some(line) = line else { continue };
        let Some(data) = line.get("data") else {
            continue;
        };
        let mut pointer = String::from("/data");
        let mut hits = Vec::new();
        let mut seen_list = false;
        walk(data, &mut pointer, &mut |path, key, value| {
            if let Some(key) = key {
                if LIST_KEYS.contains(&key) {
                    seen_list = true;
                    if value.is_null() {
                        hits.push(path.to_string());
                    }
                }
            }
        });
        if seen_list {
            sink.touch(ids::LIST_NEVER_NULL);
        }
        for path in hits {
            sink.find(
                ids::LIST_NEVER_NULL,
                at(index, &path),
                "a list-valued field is null; an empty list is []",
            );
        }
    }
    // An `ok` result whose data is itself null is the same mistake one level up.
    if let Some((index, result)) = &stream.result {
        if result.get("data") == Some(&Value::Null) {
            sink.find(ids::LIST_NEVER_NULL, at(*index, "/data"), "data is null");
        }
    }
}
