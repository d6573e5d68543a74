//! The tools' JSON Schemas: each input schema generated (schemars) from the tool's argument
//! struct, each output schema bundled from the contract's schemas the binary ships (every
//! `$ref` inlined, so a client needs nothing else), and the check of a call's arguments
//! against the input schema. Built once per process.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use stoat_core::{Error, Result};
use stoat_schemas::BASE_URI;

/// What a successful call answers.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// The `data` schema of a CLI command, in the schemas the binary ships.
    Data(&'static str),
    /// A result only MCP gives (docs/mcp.md), written over the shipped schemas.
    Mcp(fn() -> Value),
}

/// One tool's schemas.
pub struct Schemas {
    pub input: Value,
    pub output: Value,
    validator: jsonschema::Validator,
}

/// The schemas of the tool `name`: its input schema as `input` makes it, its output as
/// `answer` says.
pub fn build(name: &str, input: fn() -> schemars::Schema, answer: Answer) -> Schemas {
    let input = Value::from(input());
    let validator = jsonschema::draft202012::options()
        .build(&input)
        .unwrap_or_else(|e| panic!("{name}: the generated input schema compiles: {e}"));
    Schemas {
        input,
        output: output_schema(answer)
            .unwrap_or_else(|e| panic!("{name}: the output schema bundles: {e}")),
        validator,
    }
}

/// The input schema of an argument struct: JSON Schema 2020-12, every subschema inline, no
/// title (the struct's name means nothing to a client), and optional fields without `null`
/// (the server reads a null argument as an absent one before checking).
pub fn input_schema<A: JsonSchema>() -> schemars::Schema {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        map.entry("required").or_insert_with(|| json!([]));
    }
    let mut value = Value::from(schema);
    drop_null(&mut value);
    schemars::Schema::try_from(value).unwrap_or_else(|_| panic!("a schema stays an object"))
}

/// Removes `"null"` from every `type` list (`["string","null"]` → `"string"`) and `enum`, and
/// schemars' Rust integer formats (`uint32`), which JSON Schema does not define and strict
/// validators refuse.
fn drop_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"))
            {
                map.remove("format");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            map.values_mut().for_each(drop_null);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null),
        _ => {}
    }
}

/// The self-contained output schema of a tool. MCP wants an object schema at the top, which
/// the contract's unions (e.g. up's `{vm}` or ProjectRun) are in every branch: saying so at
/// the top changes nothing they accept.
fn output_schema(answer: Answer) -> std::result::Result<Value, stoat_schemas::bundle::BundleError> {
    let mut schema = match answer {
        Answer::Data(path) => stoat_schemas::bundle::bundle_file(path)?,
        Answer::Mcp(written) => stoat_schemas::bundle::bundle(written(), "dto/mcp.json")?,
    };
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
    }
    Ok(schema)
}

fn shipped(path: &str) -> Value {
    json!({ "$ref": format!("{BASE_URI}{path}") })
}

/// `apply_recipes`: the VM and its stored per-recipe state.
pub fn apply_result() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "apply_recipes result",
        "type": "object",
        "required": ["vm", "recipes_detail"],
        "additionalProperties": false,
        "properties": {
            "vm": shipped("defs.json#/$defs/vm_name"),
            "recipes_detail": {"type": "array", "items": shipped("dto/recipe-detail.json")},
        },
    })
}

/// `forward`: the forwards after the call.
pub fn forward_list() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "forward result",
        "type": "object",
        "required": ["forwards"],
        "additionalProperties": false,
        "properties": {
            "forwards": {"type": "array", "items": shipped("dto/forward.json")},
        },
    })
}

/// `wait`: whether the VM got there in time.
pub fn wait_result() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "wait result",
        "type": "object",
        "required": ["healthy"],
        "additionalProperties": false,
        "properties": {"healthy": {"type": "boolean"}},
    })
}

/// `copy_to` and `copy_from`: what was copied where.
pub fn copy_result() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "copy result",
        "type": "object",
        "required": ["vm", "local", "remote", "to_remote"],
        "additionalProperties": false,
        "properties": {
            "vm": shipped("defs.json#/$defs/vm_name"),
            "local": {"type": "string", "minLength": 1},
            "remote": {"type": "string", "minLength": 1},
            "to_remote": {"type": "boolean"},
        },
    })
}

/// Checks a call's arguments against the tool's input schema; null arguments are removed
/// first (absent). Unknown and missing arguments are named with what the tool takes; any
/// other mismatch names the argument and the schema's complaint. Every failure is `usage`.
pub fn check_args(tool: &str, schemas: &Schemas, args: &mut Map<String, Value>) -> Result<()> {
    args.retain(|_, value| !value.is_null());
    let properties = schemas.input["properties"].as_object();
    let takes = || {
        let names: Vec<&str> = properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if names.is_empty() {
            "no arguments".to_owned()
        } else {
            names.join(", ")
        }
    };
    for key in args.keys() {
        if !properties.is_some_and(|p| p.contains_key(key)) {
            return Err(Error::Usage(format!(
                "{}: unknown argument {key:?}; it takes {}",
                tool,
                takes()
            )));
        }
    }
    for required in schemas.input["required"].as_array().into_iter().flatten() {
        if let Some(name) = required.as_str() {
            if !args.contains_key(name) {
                return Err(Error::Usage(format!("{tool}: missing argument {name:?}")));
            }
        }
    }
    let value = Value::Object(std::mem::take(args));
    let problem = schemas.validator.iter_errors(&value).next().map(|error| {
        let at = error.instance_path().to_string();
        let argument = at.trim_start_matches('/').split('/').next().unwrap_or("");
        format!("{tool}: argument {argument:?}: {error}")
    });
    if let Value::Object(map) = value {
        *args = map;
    }
    match problem {
        Some(message) => Err(Error::Usage(message)),
        None => Ok(()),
    }
}
