//! Where recipes are found: the search roots, their scopes, and the catalog of every recipe
//! directory in shadow order (json-v3#per-command-data: `recipe list`, RecipeEntry, RecipeRoot).
//!
//! Search order, first match wins:
//! 1. `project`: `<project>/recipes/`, beside the nearest `stoat.toml` walking up from the
//!    working directory (only when there is one), then `<project>/.stoat/recipes/`, the
//!    project's remote recipes (`recipe add --project`, `recipe sync --project`);
//! 2. `global`: `<root>/recipes/.remote/` (recipes added from git; filled by `recipe add`);
//! 3. `local`: `<root>/recipes/<name>/` for a name that is not bundled (`recipe new`);
//! 4. `bundled`: `<root>/recipes/<name>/` for a bundled name (installed from the binary).
//!
//! Local and bundled share one directory and can never collide (a directory is bundled exactly
//! when its name is a bundled recipe's), so both roots report the same path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stoat_wire::dto::{RecipeEntry, RecipeRoot};

use super::bundled;
use super::manifest::{Manifest, MANIFEST_FILE};
use super::remote;
use crate::guests::GuestDef;
use crate::project::Pin;
use crate::{Error, Result, Root};

/// The global (git-added) recipes, under `<root>/recipes/`.
pub const REMOTE_DIR: &str = ".remote";

/// A recipe root's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    Global,
    Local,
    Bundled,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Global => "global",
            Scope::Local => "local",
            Scope::Bundled => "bundled",
        }
    }
}

/// One search root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRoot {
    pub scope: Scope,
    pub dir: PathBuf,
}

/// One recipe directory found under a root.
#[derive(Debug)]
pub struct Found {
    /// The directory name: the lookup key (`create --recipes`, `check-recipes`).
    pub key: String,
    pub scope: Scope,
    pub dir: PathBuf,
    /// The manifest, or why it does not load ([`Error::BadManifest`]).
    pub manifest: Result<Manifest>,
}

/// Every recipe directory of every root, in shadow order.
#[derive(Debug)]
pub struct Catalog {
    pub roots: Vec<SearchRoot>,
    pub found: Vec<Found>,
    /// The pins of remote recipe directories (source, ref, checked-out commit), by directory.
    pub pins: BTreeMap<PathBuf, Pin>,
}

/// Returns the nearest directory at or above `start` holding a `stoat.toml` (the project
/// module's walk: one implementation).
pub fn find_project(start: &Path) -> Option<PathBuf> {
    crate::project::find(start)
}

/// Returns the search roots in search order.
pub fn search_roots(root: &Root, project: Option<&Path>) -> Vec<SearchRoot> {
    let mut roots = Vec::new();
    if let Some(project) = project {
        roots.push(SearchRoot {
            scope: Scope::Project,
            dir: project.join("recipes"),
        });
        roots.push(SearchRoot {
            scope: Scope::Project,
            dir: remote::project_clones(project),
        });
    }
    for scope in [Scope::Global, Scope::Local, Scope::Bundled] {
        let dir = match scope {
            Scope::Global => remote::global_clones(root),
            _ => root.recipes(),
        };
        roots.push(SearchRoot { scope, dir });
    }
    roots
}

impl Catalog {
    /// Installs the bundled recipes (lazily; user edits kept) and reads every root.
    pub fn load(root: &Root, project: Option<&Path>) -> Result<Catalog> {
        if let Err(err) = bundled::install_bundled(root) {
            // A read-only root can still list what is there; say why it was not refreshed.
            crate::log::append(root, "warn", &format!("installing bundled recipes: {err}"));
        }
        let mut catalog = Catalog::read(search_roots(root, project));
        catalog.pins = remote::pins_by_dir(root, project);
        Ok(catalog)
    }

    /// Reads the given roots without installing anything.
    pub fn read(roots: Vec<SearchRoot>) -> Catalog {
        let found = roots.iter().flat_map(read_root).collect();
        Catalog {
            roots,
            found,
            pins: BTreeMap::new(),
        }
    }

    /// The recipe that `key` names: the first in shadow order.
    pub fn lookup(&self, key: &str) -> Option<&Found> {
        self.found.iter().find(|f| f.key == key)
    }

    /// The first recipe of each key (the ones not shadowed), sorted by key.
    pub fn winners(&self) -> Vec<&Found> {
        let mut winners: Vec<&Found> = Vec::new();
        for found in &self.found {
            if !winners.iter().any(|w| w.key == found.key) {
                winners.push(found);
            }
        }
        winners.sort_by(|a, b| a.key.cmp(&b.key));
        winners
    }

    /// The valid, unshadowed recipes offered to `guest`, sorted by key.
    pub fn offered(&self, guest: &GuestDef) -> Vec<(&Found, &Manifest)> {
        self.winners()
            .into_iter()
            .filter_map(|found| Some((found, found.manifest.as_ref().ok()?)))
            .filter(|(_, manifest)| manifest.match_reason(guest).is_none())
            .collect()
    }

    /// The RecipeRoot list, in search order.
    pub fn wire_roots(&self) -> Vec<RecipeRoot> {
        self.roots
            .iter()
            .map(|r| RecipeRoot {
                path: r.dir.display().to_string(),
                scope: r.scope.as_str().to_owned(),
            })
            .collect()
    }

    /// Every valid manifest as a RecipeEntry, in shadow order (shadowed ones included, after
    /// the root that shadows them).
    pub fn wire_entries(&self) -> Vec<RecipeEntry> {
        self.found
            .iter()
            .filter_map(|found| {
                let manifest = found.manifest.as_ref().ok()?;
                let pin = self.pins.get(&found.dir);
                Some(RecipeEntry {
                    name: manifest.name.clone(),
                    description: manifest.description.clone(),
                    scope: found.scope.as_str().to_owned(),
                    source: pin.map(|p| p.source.clone()),
                    git_ref: pin.map(|p| p.git_ref.clone()),
                    commit: pin.map(|p| p.commit.chars().take(7).collect()),
                })
            })
            .collect()
    }
}

/// The recipe directories of one root, sorted by name. Hidden directories (`.remote`,
/// `.v1-removed`) and directories without a recipe.toml are not recipes.
fn read_root(root: &SearchRoot) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(&root.dir) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().join(MANIFEST_FILE).is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|key| !key.starts_with('.'))
        .filter(|key| match root.scope {
            Scope::Local => !bundled::is_bundled(key),
            Scope::Bundled => bundled::is_bundled(key),
            Scope::Project | Scope::Global => true,
        })
        .collect();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let dir = root.dir.join(&key);
            Found {
                manifest: Manifest::load(&dir),
                key,
                scope: root.scope,
                dir,
            }
        })
        .collect()
}

impl Found {
    /// The manifest, or the `broken` error that says why it does not load.
    pub fn manifest(&self) -> Result<&Manifest> {
        self.manifest.as_ref().map_err(|err| match err {
            Error::BadManifest { file, reason } => Error::BadManifest {
                file: file.clone(),
                reason: reason.clone(),
            },
            // The file is named once, by the error itself, not again by a read's context.
            Error::Io { source, .. } => Error::BadManifest {
                file: self.dir.join(MANIFEST_FILE).display().to_string(),
                reason: source.to_string(),
            },
            other => Error::BadManifest {
                file: self.dir.join(MANIFEST_FILE).display().to_string(),
                reason: other.to_string(),
            },
        })
    }
}
