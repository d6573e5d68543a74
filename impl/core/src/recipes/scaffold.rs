//! `recipe new <name> --os <os>`: a new local recipe directory with a schema-3 `recipe.toml`
//! and an `install.sh` built from the guest's package commands (json-v3#per-command-data: `recipe new`:
//! the path is returned with a trailing `/`).

use std::path::PathBuf;

use crate::error::IoContext;
use crate::guests::{GuestDef, Registry};
use crate::hint::{Said, Setting, Value};
use crate::recipes::catalog::Catalog;
use crate::{Error, Result, Root};

/// Creates `<root>/recipes/<name>/`; returns its path. Refuses a bad name or a missing or
/// unknown os (`invalid_spec`) and a name any search root already has (`name_taken`).
pub fn new_recipe(
    root: &Root,
    registry: &Registry,
    catalog: &Catalog,
    name: &str,
    os: Option<&str>,
) -> Result<PathBuf> {
    check_recipe_name(name)?;
    let os = os.ok_or_else(|| {
        Error::spelled(
            Error::InvalidSpec,
            Said::text("a recipe needs an os to target: pass ")
                .set(Setting::Os, Value::Placeholder("<os>".into())),
        )
    })?;
    let guest = registry.get(os).ok_or_else(|| {
        Error::InvalidSpec(format!(
            "unknown os {os:?}; known: {}",
            registry.names().join(", ")
        ))
    })?;
    if let Some(found) = catalog.lookup(name) {
        return Err(Error::NameTaken {
            name: format!(
                "recipe {name} ({} scope); edit it instead",
                found.scope.as_str()
            ),
        });
    }
    let dir = root.recipes().join(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::NameTaken {
                name: format!("recipe directory {}", dir.display()),
            })
        }
        Err(e) => return Err(Error::io(format!("create {}", dir.display()), e)),
    }
    if let Err(err) = write_files(&dir, name, guest) {
        // The directory is ours and half-written: leave nothing behind.
        let _ = std::fs::remove_dir_all(&dir);
        return Err(err);
    }
    Ok(dir)
}

/// A recipe name is a directory name and a `--recipes` item: plain and short.
pub fn check_recipe_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(Error::InvalidSpec(format!(
            "invalid recipe name {name:?}: use letters, digits, '-' and '_' (no '.', '/' or spaces), starting with a letter or digit, at most 64 characters"
        )))
    }
}

fn write_files(dir: &std::path::Path, name: &str, guest: &GuestDef) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let manifest = dir.join("recipe.toml");
    std::fs::write(&manifest, manifest_text(name, &guest.name))
        .context(|| format!("write {}", manifest.display()))?;
    let script = dir.join("install.sh");
    std::fs::write(&script, script_text(name, guest))
        .context(|| format!("write {}", script.display()))?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .context(|| format!("chmod {}", script.display()))
}

fn manifest_text(name: &str, os: &str) -> String {
    format!(
        r#"schema = 3
name = "{name}"
description = "TODO: what {name} sets up"
version = "0.1.0"
os = ["{os}"]
stage = "provision"
runtime = "sh"          # or "python3"
run = "once"            # once (re-runs when the script changes), always, manual
reboot = false
depends = []
script = "install.sh"

# Per-OS scripts override `script`:
# [scripts]
# {os} = "install-{os}.sh"

# Parameters (type: string, enum, bool, int, secret):
# [params.channel]
# type = "enum"
# values = ["stable", "test"]
# default = "stable"
# help = "which release channel"

# [outputs.socket]
# help = "path of the socket"

# [health]
# check = "true"
# timeout = "30s"
"#
    )
}

fn script_text(name: &str, guest: &GuestDef) -> String {
    let mut text = format!("#!/bin/sh\n# {name} for {}\nset -eu\n", guest.name);
    for (key, value) in &guest.pkg.env {
        text.push_str(&format!("export {key}={value}\n"));
    }
    text.push_str("packages=\"curl\"  # TODO: the packages this recipe installs\n");
    if !guest.pkg.setup.is_empty() {
        text.push_str(&guest.pkg.setup);
        text.push('\n');
    }
    if !guest.pkg.install.is_empty() {
        text.push_str(&format!("{} $packages\n", guest.pkg.install.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::manifest::Manifest;

    #[test]
    fn names_are_checked() {
        for bad in ["", "a.b", "a/b", "a b", ".hidden", "-x", &"x".repeat(65)] {
            assert!(check_recipe_name(bad).is_err(), "{bad:?}");
        }
        for good in ["x", "my-recipe_2", "9lives"] {
            assert!(check_recipe_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn the_template_parses_and_uses_the_guest_package_commands() {
        let registry = Registry::bundled();
        let guest = registry.get("debian").unwrap();
        let manifest = Manifest::parse(&manifest_text("foo", "debian")).unwrap();
        assert_eq!(
            (manifest.name.as_str(), manifest.os.as_slice()),
            ("foo", &["debian".to_string()][..])
        );
        let script = script_text("foo", guest);
        assert!(
            script.contains("apt-get update\napt-get install -y $packages"),
            "{script}"
        );
        assert!(script.contains("export DEBIAN_FRONTEND=noninteractive"));
    }
}
