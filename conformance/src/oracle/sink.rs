//! Owns what every rule shares: the parsed [`Stream`] the rules read, the [`Sink`] they
//! write findings to, and the JSON-pointer helpers their findings are located with.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::finding::{CheckId, Finding};

/// Collects findings and exercised rule ids while the rules run.
pub(crate) struct Sink {
    pub findings: Vec<Finding>,
    pub exercised: BTreeSet<&'static str>,
}

impl Sink {
    pub fn touch(&mut self, id: CheckId) {
        self.exercised.insert(id.name);
    }

    pub fn find(&mut self, id: CheckId, pointer: impl Into<String>, message: impl Into<String>) {
        self.exercised.insert(id.name);
        self.findings.push(Finding::new(id, pointer, message));
    }
}

/// The parsed stream that the rules after `envelope` look at.
pub(crate) struct Stream {
    pub lines: Vec<Option<Value>>,
    /// Index and value of the LAST result line.
    pub result: Option<(usize, Value)>,
}

impl Stream {
    /// The result's `cmd`, if a string.
    pub fn cmd(&self) -> Option<&str> {
        self.result
            .as_ref()
            .and_then(|(_, r)| r.get("cmd"))
            .and_then(Value::as_str)
    }

    /// The result's `data` object when `ok:true`.
    pub fn ok_data(&self) -> Option<&Value> {
        let (_, result) = self.result.as_ref()?;
        if result.get("ok").and_then(Value::as_bool) == Some(true) {
            result.get("data")
        } else {
            None
        }
    }
}

/// Renders a JSON pointer for line `index` (1-based for humans) and a sub-path.
pub(crate) fn at(index: usize, path: &str) -> String {
    format!("line {}{}", index + 1, path)
}

/// Escapes one JSON pointer segment (RFC 6901).
pub(crate) fn escape_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Calls `visit(pointer, key, value)` for every value under `value`, depth first.
pub(crate) fn walk<'v>(
    value: &'v Value,
    pointer: &mut String,
    visit: &mut dyn FnMut(&str, Option<&str>, &'v Value),
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape_segment(key));
                visit(pointer, Some(key), child);
                walk(child, pointer, visit);
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                visit(pointer, None, child);
                walk(child, pointer, visit);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}
