//! Stored per-recipe state as `get` shows it (`recipes_detail`) and the VM's aggregate health.
//!
//! Secret params are shown only as `<set>`/`<unset>`: vm.toml stores a secret's value as
//! the marker itself, never the value (the recipes module decides which params are secret).

use std::collections::BTreeMap;

use serde_json::Value;
use stoat_wire::dto::{Health, RecipeDetail};

use crate::vm::VmConfig;

/// Returns the stored state of recipe `name` on a VM.
pub fn detail(config: &VmConfig, name: &str) -> RecipeDetail {
    let applied = config.applied.get(name);
    let to_values = |map: &BTreeMap<String, String>| -> BTreeMap<String, Value> {
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect()
    };
    RecipeDetail {
        name: name.to_owned(),
        applied: applied.is_some(),
        version: applied.map(|a| a.version.clone()).unwrap_or_default(),
        at: applied
            .and_then(|a| a.at.as_ref())
            .map(at_text)
            .unwrap_or_default(),
        health: applied
            .map(|a| health_of(&a.health))
            .unwrap_or(Health::Unknown),
        params: applied.map(|a| to_values(&a.params)).unwrap_or_default(),
        outputs: applied.map(|a| to_values(&a.outputs)).unwrap_or_default(),
    }
}

fn at_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn health_of(text: &str) -> Health {
    match text {
        "ok" => Health::Ok,
        "failed" => Health::Failed,
        _ => Health::Unknown,
    }
}

/// Returns `failed` if any recipe failed, `ok` if all checked ok, else `unknown`.
pub fn aggregate_health(details: &[RecipeDetail]) -> Health {
    if details.iter().any(|d| d.health == Health::Failed) {
        Health::Failed
    } else if !details.is_empty() && details.iter().all(|d| d.health == Health::Ok) {
        Health::Ok
    } else {
        Health::Unknown
    }
}
