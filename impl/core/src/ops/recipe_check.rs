//! Whether the recipes named for a VM can run on it (`recipe_not_applicable`), as far as
//! create and update need to know before anything is saved.
//!
//! The recipes module owns manifests, search roots and the guest registry; this only calls it.

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
