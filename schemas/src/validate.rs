//! The optional validator (feature `validate`): compiles every embedded schema once with
//! `jsonschema`, resolving `$ref`s from the embedded files through `EmbeddedRetriever`, which
//! never touches the network or the file system, and checks values and whole `--json` lines.
//!
//! Messages name the schema file and the JSON pointer of the offending value, e.g.
//! `data/ls.json: /vms/0/state: "paused" is not one of ...`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{data_schema_path, event_schema_path, files, get, BASE_URI};

/// Every embedded schema, compiled once.
pub struct Validator {
    /// Keyed by schema path; a schema that failed to compile keeps its compile error, which
    /// every validation against it reports (the crate's tests make sure none fails).
    compiled: BTreeMap<&'static str, Result<jsonschema::Validator, String>>,
}

impl Default for Validator {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Validator")
            .field("schemas", &self.compiled.len())
            .finish()
    }
}

impl Validator {
    /// Compiles every embedded schema file.
    pub fn new() -> Self {
        let compiled = files()
            .iter()
            .map(|file| (file.path, compile(file.text)))
            .collect();
        Self { compiled }
    }

    /// Compile errors, one message per schema that did not compile (`[]` when all did).
    pub fn compile_errors(&self) -> Vec<String> {
        self.compiled
            .iter()
            .filter_map(|(path, result)| result.as_ref().err().map(|err| format!("{path}: {err}")))
            .collect()
    }

    /// Validates `value` against the schema file at `schema_path` (e.g. `"dto/vm.json"`).
    /// Returns `[]` when valid, otherwise one message per violation naming its JSON pointer.
    pub fn validate(&self, schema_path: &str, value: &Value) -> Vec<String> {
        self.validate_at(schema_path, value, "")
    }

    /// Validates one parsed `--json` line: the envelope first; then, for a known event type
    /// (`progress`, `stage`, `log`) its `data`; for a result, its `error` object or, when the
    /// `cmd` has a data schema, its `data`. Unknown event types get the envelope check only.
    pub fn validate_line(&self, line: &Value) -> Vec<String> {
        let mut messages = self.validate("envelope.json", line);
        let Some(object) = line.as_object() else {
            return messages;
        };
        let line_type = object.get("type").and_then(Value::as_str).unwrap_or("");
        let cmd = object.get("cmd").and_then(Value::as_str).unwrap_or("");
        if line_type == "result" {
            if let Some(error) = object.get("error") {
                messages.extend(self.validate_at("error.json", error, "/error"));
            }
            if let (Some(data), Some(schema_path)) = (object.get("data"), data_schema_path(cmd)) {
                messages.extend(self.validate_at(schema_path, data, "/data"));
            }
        } else if let (Some(data), Some(schema_path)) =
            (object.get("data"), event_schema_path(line_type))
        {
            messages.extend(self.validate_at(schema_path, data, "/data"));
        }
        messages.dedup();
        messages
    }

    /// Validates `value`, reporting pointers as `pointer_prefix` + the pointer inside `value`.
    fn validate_at(&self, schema_path: &str, value: &Value, pointer_prefix: &str) -> Vec<String> {
        match self.compiled.get(schema_path) {
            None => vec![format!("{schema_path}: no such schema")],
            Some(Err(compile_error)) => {
                vec![format!("{schema_path}: does not compile: {compile_error}")]
            }
            Some(Ok(validator)) => validator
                .iter_errors(value)
                .map(|error| {
                    let pointer = format!("{pointer_prefix}{}", error.instance_path());
                    let shown = if pointer.is_empty() {
                        "(root)"
                    } else {
                        &pointer
                    };
                    format!("{schema_path}: {shown}: {error}")
                })
                .collect(),
        }
    }
}

/// Compiles one schema text as draft 2020-12, resolving references from the embedded files.
fn compile(text: &str) -> Result<jsonschema::Validator, String> {
    let schema: Value = serde_json::from_str(text).map_err(|err| format!("not JSON: {err}"))?;
    jsonschema::draft202012::options()
        .with_retriever(EmbeddedRetriever)
        .build(&schema)
        .map_err(|err| err.to_string())
}

/// Answers `$ref`s under [`BASE_URI`] from the embedded files and refuses everything else: the
/// schemas never need the network (the 2020-12 meta-schema is built into `jsonschema`).
struct EmbeddedRetriever;

impl jsonschema::Retrieve for EmbeddedRetriever {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let address = uri.as_str();
        let text = address
            .strip_prefix(BASE_URI)
            .and_then(get)
            .ok_or_else(|| {
                format!("{address} is not an embedded stoat schema; nothing is fetched")
            })?;
        Ok(serde_json::from_str(text)?)
    }
}
