//! Owns [`Profile`]: what an implementer declares, in a TOML file (`run --profile FILE`),
//! about the knobs the contract does not name: the variable that moves the data root, how
//! the SUT is pointed at an image catalog the suite serves, and extra environment. Without
//! a profile the suite assumes the reference's knobs and probes, check by check, whether
//! the SUT honours them (a knob that is not honoured makes the check SKIP, naming it).

use std::path::Path;

use serde::Deserialize;

use crate::error::HarnessError;

/// The reference's data-root variable (not named by the contract).
pub const DEFAULT_DATA_ROOT_VAR: &str = "STOAT_HOME";
/// The reference's catalog variable (not named by the contract).
pub const DEFAULT_CATALOG_VAR: &str = "STOAT_CATALOG";
/// One image of the reference's catalog format.
pub const DEFAULT_CATALOG_ENTRY: &str = "[[image]]\nid = \"{id}\"\nos = \"{os}\"\nvariant = \"{variant}\"\nbackend = \"{backend}\"\nurl = \"{url}\"\nchecksum_url = \"{checksum_url}\"\nbytes = {bytes}\n\n";

/// A SUT profile. Every field is optional; `Profile::default()` is the reference's knobs.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The variable naming the data root; `""` when the implementation has none (its data
    /// root is then `$HOME/.stoat`, where the contract's examples place it).
    #[serde(default = "default_data_root_var")]
    pub data_root_var: String,
    /// Extra environment for every invocation (after the suite's own).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// How to point the SUT at the suite's image catalog.
    #[serde(default)]
    pub catalog: CatalogKnob,
    /// How to point `recipe search` at the suite's recipe index.
    #[serde(default)]
    pub recipe_index: RecipeIndexKnob,
    /// The knobs the file named (a default is assumed, not declared).
    #[serde(skip)]
    pub declared: Vec<crate::spec::Requirement>,
}

/// The reference's recipe-index variable (not named by the contract).
pub const DEFAULT_RECIPE_INDEX_VAR: &str = "STOAT_RECIPE_INDEX";
/// One entry of the reference's recipe-index format.
pub const DEFAULT_RECIPE_INDEX_ENTRY: &str = "[[recipe]]\nname = \"{name}\"\nsource = \"{source}\"\ndescription = \"{description}\"\nos = {os}\n\n";

/// How the SUT reads a recipe index the suite writes: `env` names the variable holding the
/// file's path; the file is `header`, one `entry` per recipe, then `footer`, with the
/// placeholders `{name} {source} {description}` and `{os}` (a list, written `["a","b"]`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RecipeIndexKnob {
    #[serde(default = "default_recipe_index_var")]
    pub env: String,
    #[serde(default)]
    pub header: String,
    #[serde(default = "default_recipe_index_entry")]
    pub entry: String,
    #[serde(default)]
    pub footer: String,
}

/// One recipe of the index the suite writes.
pub struct IndexRecipe<'a> {
    pub name: &'a str,
    pub source: &'a str,
    pub description: &'a str,
    pub os: &'a [&'a str],
}

fn default_recipe_index_var() -> String {
    DEFAULT_RECIPE_INDEX_VAR.to_string()
}

fn default_recipe_index_entry() -> String {
    DEFAULT_RECIPE_INDEX_ENTRY.to_string()
}

impl Default for RecipeIndexKnob {
    fn default() -> Self {
        RecipeIndexKnob {
            env: default_recipe_index_var(),
            header: String::new(),
            entry: default_recipe_index_entry(),
            footer: String::new(),
        }
    }
}

impl RecipeIndexKnob {
    /// The index file's text for these recipes (entries separated by nothing: a format
    /// that needs separators puts them in `entry`).
    pub fn render(&self, recipes: &[IndexRecipe<'_>]) -> String {
        let mut out = self.header.clone();
        for recipe in recipes {
            let os = serde_json::to_string(recipe.os).unwrap_or_else(|_| "[]".into());
            out.push_str(
                &self
                    .entry
                    .replace("{name}", recipe.name)
                    .replace("{source}", recipe.source)
                    .replace("{description}", recipe.description)
                    .replace("{os}", &os),
            );
        }
        out.push_str(&self.footer);
        out
    }
}

/// How the SUT reads an image catalog the suite writes: `env` names the variable holding
/// the file's path; the file is `header`, one `entry` per image, then `footer`, with the
/// placeholders `{id} {os} {variant} {backend} {url} {checksum_url} {sha256} {bytes} {file}`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CatalogKnob {
    #[serde(default = "default_catalog_var")]
    pub env: String,
    #[serde(default)]
    pub header: String,
    #[serde(default = "default_catalog_entry")]
    pub entry: String,
    #[serde(default)]
    pub footer: String,
}

/// One image of the catalog the suite serves.
pub struct CatalogImage<'a> {
    pub id: &'a str,
    pub os: &'a str,
    pub variant: &'a str,
    pub backend: &'a str,
    pub url: &'a str,
    pub checksum_url: &'a str,
    pub sha256: &'a str,
    pub bytes: usize,
    pub file: &'a str,
}

fn default_data_root_var() -> String {
    DEFAULT_DATA_ROOT_VAR.to_string()
}

fn default_catalog_var() -> String {
    DEFAULT_CATALOG_VAR.to_string()
}

fn default_catalog_entry() -> String {
    DEFAULT_CATALOG_ENTRY.to_string()
}

impl Default for CatalogKnob {
    fn default() -> Self {
        CatalogKnob {
            env: default_catalog_var(),
            header: String::new(),
            entry: default_catalog_entry(),
            footer: String::new(),
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            data_root_var: default_data_root_var(),
            env: Default::default(),
            catalog: CatalogKnob::default(),
            recipe_index: RecipeIndexKnob::default(),
            declared: Vec::new(),
        }
    }
}

impl Profile {
    pub fn load(path: &Path) -> Result<Self, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
        let bad = |e: toml::de::Error| HarnessError::BadInput {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let mut profile: Profile = toml::from_str(&text).map_err(bad)?;
        let table: toml::Table = toml::from_str(&text).map_err(bad)?;
        use crate::spec::Requirement;
        for requirement in [Requirement::DataRootVar, Requirement::Catalog] {
            let key = requirement.key().trim_matches(['[', ']']);
            if table.contains_key(key) {
                profile.declared.push(requirement);
            }
        }
        Ok(profile)
    }

    /// Whether the profile file declared this knob (rather than the reference's assumed).
    pub fn declares(&self, requirement: crate::spec::Requirement) -> bool {
        self.declared.contains(&requirement)
    }
}

impl CatalogKnob {
    /// The catalog file's text for these images.
    pub fn render(&self, images: &[CatalogImage<'_>]) -> String {
        let mut out = self.header.clone();
        for image in images {
            out.push_str(
                &self
                    .entry
                    .replace("{id}", image.id)
                    .replace("{os}", image.os)
                    .replace("{variant}", image.variant)
                    .replace("{backend}", image.backend)
                    .replace("{url}", image.url)
                    .replace("{checksum_url}", image.checksum_url)
                    .replace("{sha256}", image.sha256)
                    .replace("{bytes}", &image.bytes.to_string())
                    .replace("{file}", image.file),
            );
        }
        out.push_str(&self.footer);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_profile_is_the_reference_and_fields_override() {
        let empty: Profile = toml::from_str("").expect("empty");
        assert_eq!(empty, Profile::default());
        let custom: Profile = toml::from_str(
            "data_root_var = \"\"\n[env]\nX = \"1\"\n[catalog]\nenv = \"MY_CATALOG\"\nheader = \"[\"\nentry = \"{id}={url},\"\nfooter = \"]\"\n",
        )
        .expect("custom");
        assert_eq!(custom.data_root_var, "");
        assert_eq!(custom.env.get("X").map(String::as_str), Some("1"));
        let image = CatalogImage {
            id: "tiny",
            os: "debian",
            variant: "test",
            backend: "cloudinit",
            url: "http://h/tiny.img",
            checksum_url: "http://h/SHA256SUMS",
            sha256: "ab",
            bytes: 3,
            file: "tiny.img",
        };
        assert_eq!(custom.catalog.render(&[image]), "[tiny=http://h/tiny.img,]");
        assert!(toml::from_str::<Profile>("nonsense = 1").is_err());
    }
}
