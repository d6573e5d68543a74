//! Whether the recipes named for a VM can run on it (`recipe_not_applicable`), as far as
//! create and update need to know before anything is saved.
//!
//! The recipes room decides (from its manifests and search roots and the guests room's
//! registry); this only installs the bundled recipes first and asks it.

use crate::{Result, Root};

/// Refuses recipe names that cannot run on a VM of `os`/`backend`: unknown, not offered to
/// that OS, install-stage, or with a missing dependency or a cycle. The recipes module decides.
pub fn check_recipes_applicable(
    root: &Root,
    os: &str,
    backend: &str,
    names: &[String],
) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    crate::recipes::install_bundled(root)?;
    crate::recipes::check_applicable(root, os, backend, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_recipe(root: &Root, name: &str, extra: &str) {
        let dir = root.recipes().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("recipe.toml"),
            format!("name = \"{name}\"\nscript = \"install.sh\"\n{extra}"),
        )
        .unwrap();
        std::fs::write(dir.join("install.sh"), "#!/bin/sh\ntrue\n").unwrap();
    }

    #[test]
    fn missing_and_other_os_recipes_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        root.ensure().unwrap();
        write_recipe(&root, "alpinetool", "os = [\"alpine\", \"debian\"]\n");
        write_recipe(&root, "any", "");
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        check_recipes_applicable(&root, "alpine", "apkovl", &names(&["alpinetool", "any"]))
            .unwrap();
        for (os, name) in [
            ("fedora", "alpinetool"),
            ("fedora", "ghost"),
            ("fedora", "../x"),
        ] {
            let err =
                check_recipes_applicable(&root, os, "cloudinit", &names(&[name])).unwrap_err();
            assert_eq!(
                err.code(),
                stoat_wire::ErrorCode::RecipeNotApplicable,
                "{name}: {err}"
            );
        }
        check_recipes_applicable(&root, "fedora", "cloudinit", &[]).unwrap();
    }
}
