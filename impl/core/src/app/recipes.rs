//! Recipes and guests: `recipes`, `check-recipes`, `recipe list|show|new|refresh`, the remote
//! `recipe add|lock|sync|update|rm|search`, and `guest ls|show` (json-v3#per-command-data).
//! The work is in [`crate::recipes`] and [`crate::guests`].

use stoat_wire::dto::{
    CheckRecipesData, GuestListData, GuestShowData, RecipeAdded, RecipeListData, RecipeNewData,
    RecipePinsData, RecipeRefreshData, RecipeRemoved, RecipeSearchData, RecipeShowData,
    RecipesData,
};

use super::Session;
use crate::recipes::remote::{self, Store};
use crate::recipes::{index, scaffold};
use crate::{guests, recipes, Result};

/// `recipes [--os OS]`: what is offered (the backend does not change it).
pub fn recipes(s: &Session, os: Option<&str>) -> Result<RecipesData> {
    let root = s.root()?;
    let registry = guests::registry(root)?;
    let catalog = recipes::load_catalog(root)?;
    Ok(RecipesData {
        recipes: recipes::offered_schemas(&catalog, &registry, os),
    })
}

/// `check-recipes NAMES --os OS [--backend B]`: `applicable` is the answer, never an error.
pub fn check_recipes(
    s: &Session,
    names: &[String],
    os: &str,
    backend: Option<&str>,
) -> Result<CheckRecipesData> {
    let root = s.root()?;
    let registry = guests::registry(root)?;
    let catalog = recipes::load_catalog(root)?;
    let issues = recipes::issues(&catalog, &registry, os, backend.unwrap_or(""), names);
    Ok(CheckRecipesData {
        applicable: issues.is_empty(),
        issues,
    })
}

/// `recipe list`: every search root and valid manifest in shadow order, plus a line per
/// manifest that does not load (human output only: the wire lists valid ones).
pub struct RecipeListing {
    pub data: RecipeListData,
    /// `<key>  invalid: <why>` for each manifest that does not load.
    pub invalid: Vec<String>,
}

/// `recipe list`.
pub fn list(s: &Session) -> Result<RecipeListing> {
    let catalog = recipes::load_catalog(s.root()?)?;
    let invalid = catalog
        .found
        .iter()
        .filter_map(|found| match &found.manifest {
            Err(err) => Some(format!("{}  invalid: {err}", found.key)),
            Ok(_) => None,
        })
        .collect();
    Ok(RecipeListing {
        data: RecipeListData {
            roots: catalog.wire_roots(),
            recipes: catalog.wire_entries(),
        },
        invalid,
    })
}

/// `recipe show <name>`.
pub fn show(s: &Session, name: &str) -> Result<RecipeShowData> {
    let catalog = recipes::load_catalog(s.root()?)?;
    Ok(RecipeShowData {
        recipe: recipes::show(&catalog, name)?.to_schema(),
    })
}

/// `recipe new <name> [--os OS]`: a scaffold under the data root's recipes.
pub fn new(s: &Session, name: &str, os: Option<&str>) -> Result<RecipeNewData> {
    let root = s.root()?;
    let registry = guests::registry(root)?;
    let catalog = recipes::load_catalog(root)?;
    let dir = scaffold::new_recipe(root, &registry, &catalog, name, os)?;
    Ok(RecipeNewData {
        path: format!("{}/", dir.display()),
    })
}

/// `recipe refresh`: the bundled recipes re-installed, user edits backed up.
pub fn refresh(s: &Session) -> Result<RecipeRefreshData> {
    Ok(RecipeRefreshData {
        files: recipes::refresh_bundled(s.root()?)?,
    })
}

/// Where a remote recipe operation acts: the data root's store, or a project's.
pub enum Scope {
    Global,
    /// The project around the session's working directory (`not_found` when there is none).
    Project,
}

fn store(s: &Session, scope: &Scope) -> Result<Store> {
    match scope {
        Scope::Global => Ok(Store::global(s.root()?)),
        Scope::Project => Ok(Store::project(super::project::required(s)?)),
    }
}

/// `recipe add <url> [--ref R]`.
pub fn add(s: &Session, scope: &Scope, url: &str, git_ref: Option<&str>) -> Result<RecipeAdded> {
    remote::add(&s.env, &store(s, scope)?, url, git_ref)
}

/// `recipe lock` (global; the project's is [`super::project::recipe_lock`]).
pub fn lock(s: &Session) -> Result<RecipePinsData> {
    Ok(RecipePinsData {
        recipes: remote::lock_global(&s.env, &store(s, &Scope::Global)?)?,
    })
}

/// `recipe sync`.
pub fn sync(s: &Session, scope: &Scope) -> Result<RecipePinsData> {
    Ok(RecipePinsData {
        recipes: remote::sync(&s.env, &store(s, scope)?)?,
    })
}

/// `recipe update [name]`.
pub fn update(s: &Session, scope: &Scope, only: Option<&str>) -> Result<RecipePinsData> {
    Ok(RecipePinsData {
        recipes: remote::update(&s.env, &store(s, scope)?, only)?,
    })
}

/// `recipe rm <name>`.
pub fn rm(s: &Session, scope: &Scope, name: &str) -> Result<RecipeRemoved> {
    let root = s.root()?;
    remote::rm(root, &store(s, scope)?, name)
}

/// `recipe search [query]`: the recipe index `STOAT_RECIPE_INDEX` names (design#recipe-index).
pub fn search(s: &Session, query: Option<&str>) -> Result<RecipeSearchData> {
    Ok(RecipeSearchData {
        recipes: index::search(&s.env, query)?,
    })
}

/// `guest ls`: every guest definition, bundled and the user's.
pub fn guests(s: &Session) -> Result<GuestListData> {
    let registry = guests::registry(s.root()?)?;
    Ok(GuestListData {
        guests: registry.all().iter().map(|g| g.to_wire()).collect(),
    })
}

/// `guest show <name>`.
pub fn guest(s: &Session, name: &str) -> Result<GuestShowData> {
    let registry = guests::registry(s.root()?)?;
    Ok(GuestShowData {
        guest: registry.require(name)?.to_wire(),
    })
}
