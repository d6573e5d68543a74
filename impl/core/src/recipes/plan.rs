//! The apply plan (docs/contract.md behaviour#recipes): which recipes an apply targets, in what order,
//! and whether each runs or is skipped, and why. `apply --dry-run` reports it as ApplyPlan
//! rows; `apply` runs the `run` steps.
//!
//! | run mode | case | action | reason |
//! |---|---|---|---|
//! | always | — | run | runs every time |
//! | manual | named in `--only` | run | named explicitly |
//! | manual | not named | skip | manual, not selected |
//! | once | nothing recorded | run | never applied |
//! | once | recorded hash ≠ sha256 of the script | run | script changed |
//! | once | params differ from the recorded ones | run | params changed |
//! | once | otherwise | skip | already applied |

use std::collections::BTreeMap;
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use stoat_wire::dto::ApplyPlan;

use super::manifest::{Manifest, RunMode};
use super::params::{self, ParamTables, Resolved};
use super::Catalog;
use crate::guests::Registry;
use crate::hint::{Said, Setting};
use crate::vm::StoredVm;
use crate::{Error, Result};

/// One recipe of the plan.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub run: bool,
    pub reason: String,
    /// The version recorded as applied, when it ever ran.
    pub applied_version: Option<String>,
    pub manifest: Manifest,
    /// The OS-specific script body and its sha256 (hex).
    pub script: String,
    pub hash: String,
    pub params: Vec<Resolved>,
    /// The values to remember in `[recipe_params.<name>]` (stored, overridden by given).
    pub param_values: BTreeMap<String, String>,
}

impl Step {
    pub fn to_wire(&self) -> ApplyPlan {
        ApplyPlan {
            name: self.name.clone(),
            action: if self.run { "run" } else { "skip" }.to_owned(),
            reason: self.reason.clone(),
            version: self.applied_version.clone().filter(|v| !v.is_empty()),
        }
    }
}

/// The sha256 hex of a script body: what `once` compares.
pub fn script_hash(body: &str) -> String {
    hex::encode(Sha256::digest(body.as_bytes()))
}

/// Builds the plan for `vm`. `only` narrows the targets (each must be one of the VM's
/// recipes); `given` are this invocation's `--param` values, merged over the stored ones.
pub fn plan(
    catalog: &Catalog,
    registry: &Registry,
    vm: &StoredVm,
    only: &[String],
    given: &ParamTables,
) -> Result<Vec<Step>> {
    let targets = targets(vm, only)?;
    let ordered = catalog.topo_order(&targets)?;
    let os = registry
        .get(&vm.config.os)
        .map(|g| g.name.clone())
        .unwrap_or_else(|| vm.config.os.clone());
    let mut steps: Vec<Step> = Vec::new();
    for name in ordered {
        let (manifest, dir) = manifest_for(catalog, registry, &os, &name)?;
        let script = super::manifest::read_recipe_file(&dir, manifest.script_for(&os))
            .map_err(|why| Error::RecipeNotApplicable(format!("{name}: {why}")))?;
        let hash = script_hash(&script);
        let mut param_values = vm
            .config
            .recipe_params
            .get(&name)
            .cloned()
            .unwrap_or_default();
        if let Some(extra) = given.get(&name) {
            params::check_given(&name, &manifest, extra)?;
            param_values.extend(extra.clone());
        }
        let named = only.iter().any(|o| o == &name);
        let recorded = vm.config.applied.get(&name);
        let (run, reason) = decide(&manifest, named, recorded, &hash);
        let resolution = params::resolve(&name, &manifest, &vm.config, &param_values);
        // A skipped recipe needs no value, so a missing one only fails a recipe that runs.
        let resolved = if run {
            resolution?
        } else {
            resolution.unwrap_or_default()
        };
        let explicit = given.get(&name);
        let (run, reason) = match recorded {
            Some(rec) if !run && manifest.run == RunMode::Once => {
                if params_changed(&manifest, rec, &resolved, explicit) {
                    (true, "params changed".to_owned())
                } else {
                    (run, reason)
                }
            }
            _ => (run, reason),
        };
        steps.push(Step {
            applied_version: recorded.map(|r| r.version.clone()),
            name,
            run,
            reason,
            manifest,
            script,
            hash,
            params: resolved,
            param_values,
        });
    }
    check_dependencies(vm, catalog, &steps)?;
    Ok(steps)
}

/// The VM's recipes, or `--only` (each of which must be one of them).
fn targets(vm: &StoredVm, only: &[String]) -> Result<Vec<String>> {
    if only.is_empty() {
        return Ok(vm.config.recipes.clone());
    }
    let mut out: Vec<String> = Vec::new();
    for name in only {
        if !vm.config.recipes.contains(name) {
            return Err(Error::RecipeNotApplicable(format!(
                "recipe {name:?} is not one of {}'s recipes ({})",
                vm.name,
                list_or_none(&vm.config.recipes)
            )));
        }
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    Ok(out)
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "it has none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The manifest and directory `name` resolves to, offered to `os`.
fn manifest_for(
    catalog: &Catalog,
    registry: &Registry,
    os: &str,
    name: &str,
) -> Result<(Manifest, PathBuf)> {
    let found = catalog
        .lookup(name)
        .ok_or_else(|| Error::RecipeNotApplicable(format!("no such recipe {name:?}")))?;
    let manifest = found
        .manifest
        .as_ref()
        .map_err(|err| Error::RecipeNotApplicable(format!("{name}: {err}")))?;
    if let Some(guest) = registry.get(os) {
        if let Some(reason) = manifest.match_reason(guest) {
            return Err(Error::RecipeNotApplicable(format!(
                "{name} is not offered to {os}: {reason}"
            )));
        }
    }
    if manifest.stage == super::Stage::Install {
        return Err(Error::RecipeNotApplicable(format!(
            "{name}: {}",
            super::INSTALL_STAGE_UNSUPPORTED
        )));
    }
    Ok((manifest.clone(), found.dir.clone()))
}

/// The run/skip decision and its reason, by run mode (the table in the module comment).
fn decide(
    manifest: &Manifest,
    named: bool,
    recorded: Option<&crate::vm::AppliedRecipe>,
    hash: &str,
) -> (bool, String) {
    let (run, reason) = match (manifest.run, recorded) {
        (RunMode::Always, _) => (true, "runs every time"),
        (RunMode::Manual, _) if named => (true, "named explicitly"),
        (RunMode::Manual, _) => (false, "manual, not selected"),
        (RunMode::Once, None) => (true, "never applied"),
        (RunMode::Once, Some(rec)) if rec.hash != hash => (true, "script changed"),
        (RunMode::Once, Some(_)) => (false, "already applied"),
    };
    (run, reason.to_owned())
}

/// Whether a `once` recipe's params differ from what was recorded when it last ran. A record
/// without params (it predates them) only counts as changed when `--param` names the recipe;
/// a secret given explicitly counts as changed, since its recorded `<set>` cannot be compared.
fn params_changed(
    manifest: &Manifest,
    recorded: &crate::vm::AppliedRecipe,
    resolved: &[Resolved],
    explicit: Option<&BTreeMap<String, String>>,
) -> bool {
    if resolved.is_empty() && !manifest.params.is_empty() {
        return false;
    }
    let explicit_secret = explicit.is_some_and(|given| {
        resolved
            .iter()
            .any(|p| p.secret && given.contains_key(&p.name))
    });
    if explicit_secret {
        return true;
    }
    if recorded.params.is_empty() && explicit.is_none() {
        return false;
    }
    recorded.params != params::recorded(resolved)
}

/// Every recipe that runs needs each dependency run earlier in this pass or recorded.
fn check_dependencies(vm: &StoredVm, catalog: &Catalog, steps: &[Step]) -> Result<()> {
    for (index, step) in steps.iter().enumerate() {
        if !step.run {
            continue;
        }
        for dep in &step.manifest.depends {
            let earlier = steps[..index].iter().any(|s| &s.name == dep && s.run);
            if earlier || vm.config.applied.contains_key(dep) {
                continue;
            }
            let manual = catalog
                .lookup(dep)
                .and_then(|f| f.manifest.as_ref().ok())
                .is_some_and(|m| m.run == RunMode::Manual);
            let tail = if manual {
                ", which has never been applied (run = manual)"
            } else {
                ""
            };
            return Err(Error::spelled(
                Error::RecipeNotApplicable,
                Said::text(format!("{} depends on {dep}; add it to ", step.name))
                    .setting(Setting::Only)
                    .then(format!(" or apply it first{tail}")),
            ));
        }
    }
    Ok(())
}
