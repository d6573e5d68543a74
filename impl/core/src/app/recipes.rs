//! Recipe queries: `recipes` (what is offered to an OS) and `check-recipes` (whether named
//! recipes can run on one), json-v3#per-command-data. The work is in [`crate::recipes`].

use stoat_wire::dto::{CheckRecipesData, RecipesData};

use super::Session;
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
