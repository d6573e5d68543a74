//! Whether the recipes named for a VM can run on it (`recipe_not_applicable`), as far as
//! create and update need to know before anything is saved.
//!
//! A seam: the recipes module owns manifests, search roots and the guest registry.

use crate::{Error, Result, Root};

/// Refuses recipe names that are not installed, or whose manifest's `os = [...]` list leaves
/// out `os`. `backend` is accepted for the recipes module's finer rules.
// TODO(recipes): call recipes::check_applicable (all search roots, bundled recipes, backend
// rules, depends) instead of reading <root>/recipes/<name>/recipe.toml here.
pub fn check_recipes_applicable(
    root: &Root,
    os: &str,
    _backend: &str,
    names: &[String],
) -> Result<()> {
    for name in names {
        check_one(root, os, name)?;
    }
    Ok(())
}

fn check_one(root: &Root, os: &str, name: &str) -> Result<()> {
    let not_applicable = |why: String| Err(Error::RecipeNotApplicable(why));
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return not_applicable(format!("{name:?} is not a recipe name"));
    }
    let manifest = root.recipes().join(name).join("recipe.toml");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return not_applicable(format!("no recipe called {name:?} is installed"));
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return not_applicable(format!(
            "recipe {name:?} has a recipe.toml that does not parse"
        ));
    };
    let Some(offered) = table.get("os").and_then(|v| v.as_array()) else {
        return Ok(());
    };
    let offered: Vec<&str> = offered.iter().filter_map(|v| v.as_str()).collect();
    if os.is_empty() || !offered.contains(&os) {
        let os_word = if os.is_empty() { "an unknown OS" } else { os };
        return not_applicable(format!(
            "{name} is not offered to {os_word} (it supports {})",
            offered.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_other_os_recipes_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        let dir = root.recipes().join("xfce");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("recipe.toml"),
            "name = \"xfce\"\nos = [\"alpine\", \"debian\"]\n",
        )
        .unwrap();
        let any = root.recipes().join("any");
        std::fs::create_dir_all(&any).unwrap();
        std::fs::write(any.join("recipe.toml"), "name = \"any\"\n").unwrap();
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            check_recipes_applicable(&root, "alpine", "apkovl", &names(&["xfce", "any"])).is_ok()
        );
        assert!(check_recipes_applicable(&root, "fedora", "cloudinit", &names(&["xfce"])).is_err());
        assert!(
            check_recipes_applicable(&root, "fedora", "cloudinit", &names(&["ghost"])).is_err()
        );
        assert!(check_recipes_applicable(&root, "fedora", "cloudinit", &names(&["../x"])).is_err());
    }
}
