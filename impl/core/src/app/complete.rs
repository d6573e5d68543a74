//! Candidates for shell completion: the VM names and image ids a shell offers after
//! `stoat up <TAB>` or `stoat create vm --image <TAB>`. A shell calls these on every Tab, so
//! they read directory listings only (no vm.toml is parsed, no lock is taken) and never fail:
//! a data root that cannot be read offers nothing.

use crate::images::{catalog, local};
use crate::{Env, Root};

/// The names of the VMs under the data root, sorted.
pub fn vm_names(env: &Env) -> Vec<String> {
    let Ok(root) = Root::resolve(env) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root.dir()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| crate::vm::VmDir::at(entry.path()).record().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.') && !Root::is_reserved(name))
        .collect();
    names.sort();
    names
}

/// The catalog's ids, in its order (none when the catalog cannot be read).
pub fn catalog_ids(env: &Env) -> Vec<String> {
    catalog::load(env)
        .map(|catalog| catalog.entries().iter().map(|e| e.id.clone()).collect())
        .unwrap_or_default()
}

/// The catalog's ids, then the image files of `isos/` that no catalog id already names.
pub fn image_ids(env: &Env) -> Vec<String> {
    let mut ids = catalog_ids(env);
    if let Ok(root) = Root::resolve(env) {
        for file in local::image_files(&root.isos()).unwrap_or_default() {
            if !ids.contains(&file.name) {
                ids.push(file.name);
            }
        }
    }
    ids
}
