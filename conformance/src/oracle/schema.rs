//! Owns SCHEMA.data: each line validated against the schema for its `cmd`.
//!
//! [`SchemaCheck`] is the seam: [`BuiltinShapes`] is this suite's own minimal reading of
//! the per-command table (required members and their JSON types); the JSON Schemas of
//! `stoat-schemas` plug in behind the same trait. Implements json-v3#per-command-data
//! (docs/contract.md).

use serde_json::Value;

use super::sink::{at, Sink, Stream};
use crate::ids;

/// Validates one stdout line; returns one message per violation (`pointer: message`).
pub trait SchemaCheck {
    /// A short name for reports (`builtin`, `stoat-schemas`).
    fn name(&self) -> &'static str;
    /// Validates a whole line (envelope + data) and returns `(pointer, message)` pairs.
    fn validate_line(&self, line: &Value) -> Vec<(String, String)>;
}

/// Every checker this build has: the suite's own shapes and the published JSON Schemas.
pub fn available() -> Vec<Box<dyn SchemaCheck + Send + Sync>> {
    vec![Box::new(BuiltinShapes), Box::new(PublishedSchemas::new())]
}

/// The JSON Schema 2020-12 files of `schemas/` (crate `stoat-schemas`), compiled once.
pub struct PublishedSchemas {
    validator: std::sync::Arc<stoat_schemas::validate::Validator>,
}

impl PublishedSchemas {
    pub fn new() -> Self {
        static COMPILED: std::sync::OnceLock<std::sync::Arc<stoat_schemas::validate::Validator>> =
            std::sync::OnceLock::new();
        PublishedSchemas {
            validator: COMPILED
                .get_or_init(|| std::sync::Arc::new(stoat_schemas::validate::Validator::new()))
                .clone(),
        }
    }
}

impl Default for PublishedSchemas {
    fn default() -> Self {
        Self::new()
    }
}

impl SchemaCheck for PublishedSchemas {
    fn name(&self) -> &'static str {
        "schemas"
    }

    fn validate_line(&self, line: &Value) -> Vec<(String, String)> {
        self.validator
            .validate_line(line)
            .into_iter()
            .map(|message| {
                // Messages read `file.json: /pointer: text`; keep the pointer for the finding.
                let mut parts = message.splitn(3, ": ");
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(file), Some(pointer), Some(text)) if pointer.starts_with('/') => {
                        (pointer.to_string(), format!("{file}: {text}"))
                    }
                    _ => (String::new(), message),
                }
            })
            .collect()
    }
}

pub(crate) fn check(checker: &dyn SchemaCheck, stream: &Stream, sink: &mut Sink) {
    for (index, line) in stream.lines.iter().enumerate() {
        let Some(line) = line else { continue };
        if line.get("data").is_none() {
            continue;
        }
        sink.touch(ids::SCHEMA_DATA);
        for (pointer, message) in checker.validate_line(line) {
            sink.find(
                ids::SCHEMA_DATA,
                at(index, &pointer),
                format!("{}: {message}", checker.name()),
            );
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Bool,
    Arr,
    Obj,
    /// Present with any type.
    Any,
}

impl Kind {
    fn matches(self, value: &Value) -> bool {
        match self {
            Kind::Str => value.is_string(),
            Kind::Int => value.is_i64() || value.is_u64(),
            Kind::Bool => value.is_boolean(),
            Kind::Arr => value.is_array(),
            Kind::Obj => value.is_object(),
            Kind::Any => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Int => "an integer",
            Kind::Bool => "a bool",
            Kind::Arr => "an array",
            Kind::Obj => "an object",
            Kind::Any => "present",
        }
    }
}

use Kind::*;

/// The VM DTO members every VM object carries (broken VMs may zero them).
const VM_FIELDS: &[(&str, Kind)] = &[
    ("name", Str),
    ("os", Str),
    ("mode", Str),
    ("backend", Str),
    ("state", Str),
    ("cpus", Int),
    ("ram_mb", Int),
    ("disk", Str),
    ("share", Str),
    ("recipes", Arr),
    ("ssh_port", Int),
    ("ssh_user", Str),
    ("installed", Bool),
    ("forwards", Arr),
    ("allow_exec", Bool),
    ("agent_access", Str),
    ("display", Str),
    ("project", Str),
    ("key", Str),
    ("project_missing", Bool),
];

/// This suite's own minimal reading of the per-command data table.
pub struct BuiltinShapes;

impl BuiltinShapes {
    fn shape(cmd: &str, data: &Value) -> Vec<(&'static str, Kind)> {
        let has = |key: &str| data.get(key).is_some();
        match cmd {
            "version" => vec![("/version", Str), ("/contract", Int)],
            "help" => vec![("/usage", Str)],
            "ls" => vec![("/vms", Arr)],
            "get" | "create" | "up" | "down" if !has("vms") && !has("project") => {
                vec![("/vm", Obj)]
            }
            "update" => vec![("/vm", Obj), ("/changed", Arr), ("/applies_at", Str)],
            "clone" => vec![("/vm", Obj), ("/source", Str), ("/forwards_copied", Bool)],
            "wait" if !has("project") => vec![
                ("/vm", Str),
                ("/until", Str),
                ("/reached", Bool),
                ("/waited_ms", Int),
            ],
            "rm" if !has("project") => vec![("/name", Str), ("/deleted", Bool)],
            "exec" => vec![("/vm", Str), ("/exit_code", Int)],
            "ssh-command" => vec![("/argv", Arr)],
            "cp" => vec![
                ("/vm", Str),
                ("/direction", Str),
                ("/local", Str),
                ("/remote", Str),
            ],
            "forward" => vec![("/vm", Str), ("/forwards", Arr), ("/active", Bool)],
            "images" => vec![("/images", Arr)],
            "pull" => vec![
                ("/id", Str),
                ("/downloaded", Bool),
                ("/verified", Bool),
                ("/checksum_available", Bool),
            ],
            "snapshot" if has("snapshots") => vec![("/vm", Str), ("/snapshots", Arr)],
            "snapshot" => vec![("/vm", Str), ("/tag", Str), ("/action", Str)],
            "prune" => vec![("/dry_run", Bool), ("/items", Arr)],
            "apply" if has("plan") => vec![("/vm", Str), ("/dry_run", Bool), ("/plan", Arr)],
            "apply" if !has("project") => {
                vec![("/vm", Str), ("/applied", Arr), ("/skipped_reason", Str)]
            }
            "recipes" => vec![("/recipes", Arr)],
            "check-recipes" => vec![("/applicable", Bool), ("/issues", Arr)],
            "doctor" => vec![("/healthy", Bool), ("/checks", Arr)],
            "screenshot" => vec![
                ("/vm", Str),
                ("/path", Str),
                ("/bytes", Int),
                ("/width", Int),
                ("/height", Int),
            ],
            "capabilities" => vec![
                ("/schema", Int),
                ("/host", Obj),
                ("/profiles", Arr),
                ("/capabilities", Arr),
                ("/unavailable", Arr),
            ],
            "logs" => vec![("/lines", Arr)],
            _ => Vec::new(),
        }
    }

    fn vm_objects(cmd: &str, data: &Value) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        if let Some(vm) = data.get("vm").filter(|v| v.is_object()) {
            if cmd != "wait" {
                out.push(("/data/vm".to_string(), vm.clone()));
            }
        }
        if let Some(Value::Array(vms)) = data.get("vms") {
            if cmd == "ls" {
                for (index, vm) in vms.iter().enumerate() {
                    out.push((format!("/data/vms/{index}"), vm.clone()));
                }
            }
        }
        out
    }
}

impl SchemaCheck for BuiltinShapes {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn validate_line(&self, line: &Value) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        let (Some(kind), Some(cmd), Some(data)) = (
            line.get("type").and_then(Value::as_str),
            line.get("cmd").and_then(Value::as_str),
            line.get("data"),
        ) else {
            return problems;
        };
        if kind != "result" {
            let shape: &[(&str, Kind)] = match kind {
                "progress" => &[
                    ("/id", Str),
                    ("/done", Int),
                    ("/total", Int),
                    ("/percent", Int),
                ],
                "stage" => &[("/recipe", Str)],
                "log" => &[("/line", Str)],
                _ => &[],
            };
            check_members(data, "/data", shape, &mut problems);
            return problems;
        }
        check_members(data, "/data", &Self::shape(cmd, data), &mut problems);
        for (pointer, vm) in Self::vm_objects(cmd, data) {
            if vm.get("state").and_then(Value::as_str) == Some("broken") {
                check_members(
                    &vm,
                    &pointer,
                    &[("name", Str), ("state", Str), ("error", Str)],
                    &mut problems,
                );
                continue;
            }
            let shape: Vec<(&str, Kind)> = VM_FIELDS.to_vec();
            check_members(&vm, &pointer, &shape, &mut problems);
            if let Some(state) = vm.get("state").and_then(Value::as_str) {
                if !["stopped", "running", "broken"].contains(&state) {
                    problems.push((
                        format!("{pointer}/state"),
                        format!("state {state:?} is not stopped, running or broken"),
                    ));
                }
            }
            if vm.get("error").is_some() {
                problems.push((
                    format!("{pointer}/error"),
                    "error appears only on a broken VM".to_string(),
                ));
            }
            if let Some(display) = vm.get("display").and_then(Value::as_str) {
                if !["window", "vnc"].contains(&display) {
                    problems.push((
                        format!("{pointer}/display"),
                        format!("display {display:?} is not window or vnc"),
                    ));
                }
            }
        }
        problems
    }
}

fn check_members(
    value: &Value,
    base: &str,
    shape: &[(&str, Kind)],
    problems: &mut Vec<(String, String)>,
) {
    for (member, kind) in shape {
        let pointer = if member.starts_with('/') {
            member.to_string()
        } else {
            format!("/{member}")
        };
        match value.pointer(&pointer) {
            Some(found) if kind.matches(found) => {}
            Some(found) => problems.push((
                format!("{base}{pointer}"),
                format!(
                    "must be {}, got {}",
                    kind.name(),
                    super::envelope::excerpt(&found.to_string())
                ),
            )),
            None if *kind == Any => {}
            None => problems.push((
                format!("{base}{pointer}"),
                format!("required member is missing (must be {})", kind.name()),
            )),
        }
    }
}
