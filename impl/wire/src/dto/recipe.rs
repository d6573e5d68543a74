//! Recipe DTOs: schemas, params, outputs, entries and roots, remote pins, plans, issues.
//!
//! Implements json-v3#types (Recipe/RecipeSchema and friends) and the recipe rows of
//! "Per-command data". Params and outputs are sorted by name by their producer.

use serde::Serialize;

/// A recipe parameter as the manifest declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeParam {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    pub default: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_from: Option<String>,
    pub values: Vec<String>,
    pub help: String,
}

/// A value a recipe reports back after it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeOutput {
    pub name: String,
    pub help: String,
}

/// A recipe's health check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeHealth {
    pub check: String,
    pub timeout: String,
}

/// The RecipeSchema projection used by `recipes` and `recipe show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeSchema {
    pub name: String,
    pub description: String,
    pub schema: u32,
    pub runtime: String,
    pub reboot: bool,
    pub depends: Vec<String>,
    pub params: Vec<RecipeParam>,
    pub outputs: Vec<RecipeOutput>,
    /// `null` when the recipe has no health check.
    pub health: Option<RecipeHealth>,
}

/// One row of `recipe list`; only remote rows carry `source`, `ref` and a 7-char `commit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeEntry {
    pub name: String,
    pub description: String,
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// One recipe search root, in search order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeRoot {
    pub path: String,
    pub scope: String,
}

/// A remote recipe pin with the full resolved commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeAdded {
    pub name: String,
    pub source: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub commit: String,
    pub scope: String,
}

/// `recipe rm` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeRemoved {
    pub name: String,
    pub scope: String,
}

/// One bundled file `recipe refresh` looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeRefreshed {
    pub path: String,
    pub status: String,
}

/// One row of a recipe index (`recipe search`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexEntry {
    pub name: String,
    pub source: String,
    pub description: String,
    pub os: Vec<String>,
}

/// Why a named recipe cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeIssue {
    pub name: String,
    pub reason: String,
}

/// One step of an `apply --dry-run` plan; `version` is absent when the recipe never ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyPlan {
    pub name: String,
    pub action: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `recipes` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipesData {
    pub recipes: Vec<RecipeSchema>,
}

/// `check-recipes` data: `applicable` is explicit, not for consumers to derive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRecipesData {
    pub applicable: bool,
    pub issues: Vec<RecipeIssue>,
}

/// `recipe list` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeListData {
    pub roots: Vec<RecipeRoot>,
    pub recipes: Vec<RecipeEntry>,
}

/// `recipe show` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeShowData {
    pub recipe: RecipeSchema,
}

/// `recipe new` data: the new recipe's directory, with a trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeNewData {
    pub path: String,
}

/// `recipe lock`, `sync` and `update` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipePinsData {
    pub recipes: Vec<RecipeAdded>,
}

/// `recipe refresh` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeRefreshData {
    pub files: Vec<RecipeRefreshed>,
}

/// `recipe search` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecipeSearchData {
    pub recipes: Vec<IndexEntry>,
}

/// `apply` data: `applied` is always a list; `skipped_reason` is `""` when the apply ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyData {
    pub vm: String,
    pub applied: Vec<String>,
    pub skipped_reason: String,
}

/// `apply --dry-run` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyDryRunData {
    pub vm: String,
    pub dry_run: bool,
    pub plan: Vec<ApplyPlan>,
}

/// A `stage` event: a recipe boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageData {
    pub recipe: String,
}

/// A `log` event: one line of guest output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogData {
    pub line: String,
}
