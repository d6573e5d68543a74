//! Recipes: manifests, the bundled set and its install, the search roots, and the checks that
//! decide whether named recipes can run on an OS (docs/contract.md behaviour#recipes; json-v3#per-command-data: `recipes`,
//! `check-recipes`, `recipe list|show|new|refresh`).
//!
//! Every reader goes through [`Catalog::load`], which installs the bundled recipes lazily: only
//! the commands that read recipes pay for it, never `ls` or `version`.

pub mod apply;
pub mod bundled;
pub mod catalog;
pub mod index;
pub mod manifest;
pub mod params;
pub mod plan;
pub mod remote;
pub mod scaffold;
pub mod seed;

use std::collections::BTreeMap;

use stoat_wire::dto::{RecipeIssue, RecipeSchema};

pub use bundled::{install_bundled, refresh_bundled};
pub use catalog::{find_project, Catalog};
pub use manifest::{Manifest, Stage};

use crate::guests::{self, GuestDef, Registry};
use crate::hint::{Said, Setting, Value};
use crate::{Error, Result, Root};

/// The text of an install-stage refusal.
pub const INSTALL_STAGE_UNSUPPORTED: &str = "install-stage recipes are not yet supported";

/// Loads the catalog with the project found from the process's working directory.
pub fn load_catalog(root: &Root) -> Result<Catalog> {
    let project = std::env::current_dir()
        .ok()
        .and_then(|cwd| find_project(&cwd));
    Catalog::load(root, project.as_deref())
}

/// Checks that every recipe in `names` can run on `os` (create-time validation). `Err` is
/// `recipe_not_applicable` with a message saying why (unknown, broken, not offered, install
/// stage, a dependency missing from the list, a cycle) and what is available. The backend is
/// only named in messages: offering depends on the OS alone (as upstream).
pub fn check_applicable(root: &Root, os: &str, backend: &str, names: &[String]) -> Result<()> {
    let registry = guests::registry(root)?;
    let catalog = load_catalog(root)?;
    check_applicable_in(&catalog, &registry, os, backend, names)
}

/// [`check_applicable`] over an already loaded catalog and registry.
pub fn check_applicable_in(
    catalog: &Catalog,
    registry: &Registry,
    os: &str,
    backend: &str,
    names: &[String],
) -> Result<()> {
    let problems = issues(catalog, registry, os, backend, names);
    if problems.is_empty() {
        return Ok(());
    }
    let reasons: Vec<&str> = problems.iter().map(|i| i.reason.as_str()).collect();
    let available: Vec<&str> = registry
        .get(os)
        .map(|guest| {
            catalog
                .offered(guest)
                .iter()
                .map(|(f, _)| f.key.as_str())
                .collect()
        })
        .unwrap_or_default();
    let target = target_label(os, backend);
    let hint = if os.trim().is_empty() {
        // A cloud image whose name names no OS: recipes need one, and os is fixed at create.
        Said::text("the image's OS was not recognised; create the VM with ")
            .set(Setting::Os, Value::Placeholder("<os>".into()))
            .then(" to use recipes")
    } else if available.is_empty() {
        Said::text(format!("no recipes are available for {target}"))
    } else {
        Said::text(format!("available for {target}: {}", available.join(", ")))
    };
    let said = Said::text(format!("{} (", reasons.join("; ")));
    Err(Error::spelled(
        Error::RecipeNotApplicable,
        said.join(hint).then(")"),
    ))
}

/// `os` or `os/backend`, as messages name a target.
fn target_label(os: &str, backend: &str) -> String {
    if backend.is_empty() {
        os.to_owned()
    } else {
        format!("{os}/{backend}")
    }
}

/// Every reason the named recipes cannot run on `os`, in the order the names were given
/// (`check-recipes` data). Empty means applicable.
pub fn issues(
    catalog: &Catalog,
    registry: &Registry,
    os: &str,
    backend: &str,
    names: &[String],
) -> Vec<RecipeIssue> {
    let names = dedup(names);
    let issue = |name: &str, reason: String| RecipeIssue {
        name: name.to_owned(),
        reason,
    };
    let Some(guest) = registry.get(os) else {
        let known = registry.names().join(", ");
        return names
            .iter()
            .map(|name| issue(name, format!("{name}: unknown os {os:?} (known: {known})")))
            .collect();
    };
    let target = target_label(&guest.name, backend);
    let mut found_issues = Vec::new();
    let mut usable: Vec<(&str, &Manifest)> = Vec::new();
    for name in &names {
        match per_recipe_issue(catalog, guest, &target, name) {
            Ok(manifest) => usable.push((name, manifest)),
            Err(reason) => found_issues.push(issue(name, reason)),
        }
    }
    for (name, manifest) in &usable {
        for dep in &manifest.depends {
            if !names.iter().any(|n| n == dep) {
                found_issues.push(issue(
                    name,
                    format!("{name} depends on {dep}; add it to the recipe list"),
                ));
            }
        }
    }
    let usable_names: Vec<String> = usable.iter().map(|(n, _)| n.to_string()).collect();
    let depends: BTreeMap<&str, &Vec<String>> =
        usable.iter().map(|(n, m)| (*n, &m.depends)).collect();
    if let Err(cycle) = order(&usable_names, |n| {
        depends.get(n).map(|d| d.to_vec()).unwrap_or_default()
    }) {
        let first = cycle.first().cloned().unwrap_or_default();
        found_issues.push(issue(&first, cycle_text(&cycle)));
    }
    found_issues
}

/// Why one named recipe is not usable on `guest`, or its manifest.
fn per_recipe_issue<'c>(
    catalog: &'c Catalog,
    guest: &GuestDef,
    target: &str,
    name: &str,
) -> std::result::Result<&'c Manifest, String> {
    let found = catalog
        .lookup(name)
        .ok_or_else(|| format!("no such recipe {name:?}"))?;
    let manifest = found
        .manifest
        .as_ref()
        .map_err(|err| format!("{name}: {err}"))?;
    if let Some(reason) = manifest.match_reason(guest) {
        return Err(format!("{name} is not offered to {target}: {reason}"));
    }
    if manifest.stage == Stage::Install {
        return Err(format!("{name}: {INSTALL_STAGE_UNSUPPORTED}"));
    }
    Ok(manifest)
}

fn dedup(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// Orders `names` so that each comes after its dependencies: a depth-first post-order over
/// the names in their given order. Dependencies outside `names` are ignored. A cycle is
/// `recipe_not_applicable: cycle detected: a -> b -> a`.
pub fn topo_order(
    names: &[String],
    depends_of: impl Fn(&str) -> Vec<String>,
) -> Result<Vec<String>> {
    order(names, depends_of).map_err(|cycle| Error::RecipeNotApplicable(cycle_text(&cycle)))
}

fn cycle_text(cycle: &[String]) -> String {
    format!("cycle detected: {}", cycle.join(" -> "))
}

/// The post-order, or the cycle as a path that starts and ends with the same name.
fn order(
    names: &[String],
    depends_of: impl Fn(&str) -> Vec<String>,
) -> std::result::Result<Vec<String>, Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    fn visit(
        name: &str,
        names: &[String],
        depends_of: &dyn Fn(&str) -> Vec<String>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
        out: &mut Vec<String>,
    ) -> std::result::Result<(), Vec<String>> {
        match marks.get(name) {
            Some(Mark::Done) => return Ok(()),
            Some(Mark::Visiting) => {
                let start = path.iter().position(|p| p == name).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(name.to_owned());
                return Err(cycle);
            }
            None => {}
        }
        marks.insert(name.to_owned(), Mark::Visiting);
        path.push(name.to_owned());
        for dep in depends_of(name) {
            if names.contains(&dep) {
                visit(&dep, names, depends_of, marks, path, out)?;
            }
        }
        path.pop();
        marks.insert(name.to_owned(), Mark::Done);
        out.push(name.to_owned());
        Ok(())
    }
    let mut marks = BTreeMap::new();
    let mut out = Vec::new();
    for name in names {
        visit(
            name,
            names,
            &depends_of,
            &mut marks,
            &mut Vec::new(),
            &mut out,
        )?;
    }
    Ok(out)
}

impl Catalog {
    /// [`topo_order`] with each recipe's `depends` from this catalog.
    pub fn topo_order(&self, names: &[String]) -> Result<Vec<String>> {
        topo_order(names, |name| {
            self.lookup(name)
                .and_then(|f| f.manifest.as_ref().ok())
                .map(|m| m.depends.clone())
                .unwrap_or_default()
        })
    }
}

/// The RecipeSchema of every recipe offered to `os` (an alias works; an unknown OS gives
/// none), or to any registry OS when `os` is `None`: de-duplicated and sorted by name.
pub fn offered_schemas(
    catalog: &Catalog,
    registry: &Registry,
    os: Option<&str>,
) -> Vec<RecipeSchema> {
    let guests: Vec<&GuestDef> = match os {
        Some(os) => registry.get(os).into_iter().collect(),
        None => registry.all().iter().collect(),
    };
    let mut by_key: BTreeMap<&str, &Manifest> = BTreeMap::new();
    for guest in guests {
        for (found, manifest) in catalog.offered(guest) {
            by_key.insert(&found.key, manifest);
        }
    }
    let mut schemas: Vec<RecipeSchema> = by_key.values().map(|m| m.to_schema()).collect();
    schemas.sort_by(|a, b| a.name.cmp(&b.name));
    schemas
}

/// The manifest `name` resolves to (`recipe show`): `not_found` when no root has it,
/// `broken` (naming the file) when it does not load.
pub fn show<'c>(catalog: &'c Catalog, name: &str) -> Result<&'c Manifest> {
    let found = catalog.lookup(name).ok_or_else(|| Error::UnknownName {
        kind: "recipe",
        name: name.to_owned(),
        known: catalog
            .winners()
            .iter()
            .map(|f| f.key.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    found.manifest()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn deps(
        edges: &'static [(&'static str, &'static [&'static str])],
    ) -> impl Fn(&str) -> Vec<String> {
        move |name| {
            edges
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, d)| strings(d))
                .unwrap_or_default()
        }
    }

    #[test]
    fn topo_order_is_depth_first_post_order_in_given_order() {
        let order = topo_order(
            &strings(&["app", "db", "base"]),
            deps(&[("app", &["db", "base"]), ("db", &["base"])]),
        )
        .unwrap();
        assert_eq!(order, ["base", "db", "app"]);
        let order = topo_order(&strings(&["b", "a"]), deps(&[])).unwrap();
        assert_eq!(order, ["b", "a"], "independent recipes keep their order");
        let order = topo_order(&strings(&["a"]), deps(&[("a", &["outside"])])).unwrap();
        assert_eq!(order, ["a"], "dependencies outside the set are ignored");
    }

    #[test]
    fn cycles_are_named() {
        let err = topo_order(
            &strings(&["x", "a", "b"]),
            deps(&[("a", &["b"]), ("b", &["a"])]),
        )
        .unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::RecipeNotApplicable);
        assert!(
            err.to_string().contains("cycle detected: a -> b -> a"),
            "{err}"
        );
    }
}
