//! Recipes at a cloud VM's first boot (docs/contract.md behaviour#qemu, item 4): the
//! cloud-config document the runtime's seed builder adds to user-data. Each recipe that an
//! apply would run becomes a `write_files` entry (the script with its params prelude) and a
//! `runcmd` entry that runs it and, on success, touches `/var/lib/stoat/.applied/<name>`.
//! A later apply lists that directory and records what ran ([`super::apply`]).

use base64::Engine;

use super::manifest::{RunMode, Runtime};
use super::params;
use super::plan;
use crate::guests;
use crate::vm::StoredVm;
use crate::{Result, Root};

/// Where the seed's scripts go in the guest.
pub const SCRIPTS_DIR: &str = "/var/lib/stoat/recipes";
/// One empty file per recipe that finished at first boot.
pub const APPLIED_DIR: &str = "/var/lib/stoat/.applied";
/// Where first-boot recipes write their outputs.
pub const OUTPUTS_DIR: &str = "/var/lib/stoat/outputs";

/// The outputs file of `recipe` at first boot.
pub fn outputs_file(recipe: &str) -> String {
    format!("{OUTPUTS_DIR}/{recipe}")
}

/// The cloud-config text (without the archive wrapping) that runs the VM's recipes at first
/// boot, or `None` when there is nothing to run. Recipes an apply could not run now (unknown,
/// not offered, a required param missing, manual) are left to the apply, which says why.
pub fn cloud_config(root: &Root, vm: &StoredVm) -> Result<Option<String>> {
    if vm.config.recipes.is_empty() {
        return Ok(None);
    }
    let registry = guests::registry(root)?;
    let catalog = super::load_catalog(root)?;
    let Ok(steps) = plan::plan(&catalog, &registry, vm, &[], &Default::default()) else {
        return Ok(None);
    };
    let mut files = String::new();
    let mut commands = String::new();
    let mut seeded: Vec<&str> = Vec::new();
    for step in steps
        .iter()
        .filter(|s| s.run && s.manifest.run != RunMode::Manual)
    {
        let (extension, interpreter) = match step.manifest.runtime {
            Runtime::Sh => ("sh", "sh"),
            Runtime::Python3 => ("py", "python3"),
        };
        let path = format!("{SCRIPTS_DIR}/{}.{extension}", step.name);
        let body = format!(
            "{}{}",
            params::prelude(
                step.manifest.runtime,
                &step.params,
                &outputs_file(&step.name)
            ),
            step.script
        );
        files.push_str(&format!(
            "  - path: {}\n    permissions: \"0700\"\n    encoding: b64\n    content: {}\n",
            json(&path),
            base64::engine::general_purpose::STANDARD.encode(body.as_bytes())
        ));
        // A recipe runs only when the dependencies seeded before it finished.
        let guards: String = step
            .manifest
            .depends
            .iter()
            .filter(|d| seeded.contains(&d.as_str()))
            .map(|d| format!("[ -e {APPLIED_DIR}/{d} ] && "))
            .collect();
        let command = format!(
            "{guards}mkdir -p {OUTPUTS_DIR} && {interpreter} {path} && mkdir -p {APPLIED_DIR} && touch {APPLIED_DIR}/{}",
            step.name
        );
        commands.push_str(&format!("  - [sh, -c, {}]\n", json(&command)));
        seeded.push(&step.name);
    }
    if seeded.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!("write_files:\n{files}runcmd:\n{commands}")))
}

fn json(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}
