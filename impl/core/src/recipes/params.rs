//! Recipe params: the settings a request carries (per recipe, typed; the front ends own their
//! text forms), validation against each manifest's
//! `[params.<name>]`, resolution (given → default → `default_from`), how a script receives
//! them (`STOAT_PARAM_<NAME>` exported at the top of the script), and how they are recorded
//! (a secret only as `<set>`/`<unset>`). json-v3#per-command-data: RecipeParam, RecipeDetail.
//!
//! Every problem with a param is `invalid_spec`: the request is what is wrong, not the recipe.

use std::collections::BTreeMap;

use super::manifest::{DefaultFrom, Manifest, ParamType, Runtime};
use crate::hint::{Said, Setting, Value};
use crate::vm::VmConfig;
use crate::{Error, Result};

/// Param values per recipe, as given or stored (`[recipe_params.<recipe>]`).
pub type ParamTables = BTreeMap<String, BTreeMap<String, String>>;

/// How a set secret is recorded and shown.
pub const SECRET_SET: &str = "<set>";
/// How an unset secret is recorded and shown.
pub const SECRET_UNSET: &str = "<unset>";

/// One recipe parameter set by a request: for which recipe (`None`: the VM's only one), which
/// parameter, and its value. The CLI reads it from `--param recipe.name=value`, a project from
/// its `params.<recipe>` tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSetting {
    pub recipe: Option<String>,
    pub name: String,
    pub value: String,
}

/// Sorts `settings` into a table per recipe: a setting that names no recipe belongs to the
/// only one in `recipes`, and every recipe it names must be one of `recipes`.
pub fn tables_of(settings: &[ParamSetting], recipes: &[String]) -> Result<ParamTables> {
    let mut tables = ParamTables::new();
    for setting in settings {
        let name = setting.name.trim();
        if name.is_empty() {
            return Err(Error::InvalidSpec(
                "a recipe parameter's name is empty".into(),
            ));
        }
        let recipe = match &setting.recipe {
            Some(recipe) => recipe.trim().to_owned(),
            None if recipes.len() == 1 => recipes[0].clone(),
            None => {
                return Err(Error::InvalidSpec(format!(
                    "parameter {name}: say which recipe it is for (the VM has {} recipes)",
                    recipes.len()
                )))
            }
        };
        if !recipes.contains(&recipe) {
            return Err(Error::InvalidSpec(format!(
                "parameter {recipe}.{name}: {recipe} is not one of the VM's recipes"
            )));
        }
        tables
            .entry(recipe)
            .or_default()
            .insert(name.to_owned(), setting.value.clone());
    }
    Ok(tables)
}

/// `create`'s params: sorted per recipe and checked against each recipe's manifest
/// (declared names, types, required params present). `recipes` were already found applicable.
pub fn for_create(
    root: &crate::Root,
    recipes: &[String],
    settings: &[ParamSetting],
) -> Result<ParamTables> {
    let tables = tables_of(settings, recipes)?;
    if recipes.is_empty() {
        return Ok(tables);
    }
    let catalog = super::load_catalog(root)?;
    let empty = BTreeMap::new();
    for recipe in recipes {
        let Some(manifest) = catalog
            .lookup(recipe)
            .and_then(|f| f.manifest.as_ref().ok())
        else {
            continue;
        };
        resolve(
            recipe,
            manifest,
            &VmConfig::default(),
            tables.get(recipe).unwrap_or(&empty),
        )?;
    }
    Ok(tables)
}

/// Checks given values against a manifest: each name declared, each value of its type.
pub fn check_given(
    recipe: &str,
    manifest: &Manifest,
    given: &BTreeMap<String, String>,
) -> Result<()> {
    for (name, value) in given {
        let param = manifest.param(name).ok_or_else(|| {
            let declared: Vec<&str> = manifest.params.iter().map(|p| p.name.as_str()).collect();
            let known = if declared.is_empty() {
                "it declares no params".to_owned()
            } else {
                format!("its params: {}", declared.join(", "))
            };
            Error::InvalidSpec(format!("recipe {recipe} has no param {name:?} ({known})"))
        })?;
        param
            .check_value(value)
            .map_err(|why| Error::InvalidSpec(format!("recipe {recipe}: {why}")))?;
    }
    Ok(())
}

/// One param after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: String,
    pub secret: bool,
    /// `None` when nothing sets it (an optional param without a default).
    pub value: Option<String>,
}

/// Resolves every declared param of `manifest` for the VM: the given value, else `default`,
/// else `default_from`. A required param with no value is `invalid_spec`.
pub fn resolve(
    recipe: &str,
    manifest: &Manifest,
    config: &VmConfig,
    given: &BTreeMap<String, String>,
) -> Result<Vec<Resolved>> {
    check_given(recipe, manifest, given)?;
    manifest
        .params
        .iter()
        .map(|param| {
            let value = given
                .get(&param.name)
                .cloned()
                .or_else(|| param.default.clone())
                .or_else(|| param.default_from.map(|from| default_from(from, config)));
            if param.required && value.is_none() {
                return Err(Error::spelled(
                    Error::InvalidSpec,
                    Said::text(format!(
                        "recipe {recipe} needs param {} (required); give it with ",
                        param.name
                    ))
                    .set(
                        Setting::Param,
                        Value::Placeholder(format!("{recipe}.{}=VALUE", param.name)),
                    ),
                ));
            }
            Ok(Resolved {
                name: param.name.clone(),
                secret: param.kind == ParamType::Secret,
                value,
            })
        })
        .collect()
}

/// The value a `default_from` source gives on this VM. The home directory is the
/// conventional one (`/root` for root, `/home/<user>` otherwise), computed host-side so that
/// a dry run can show it without reaching the guest.
pub fn default_from(from: DefaultFrom, config: &VmConfig) -> String {
    let user = config.ssh_user();
    match from {
        DefaultFrom::SshUser => user.to_owned(),
        DefaultFrom::SshVenvDir => format!("{}/.venv", home_of(user)),
    }
}

fn home_of(user: &str) -> String {
    if user == "root" {
        "/root".to_owned()
    } else {
        format!("/home/{user}")
    }
}

/// What vm.toml records under `[applied.<recipe>].params`: set values as they are, a secret
/// only as `<set>`/`<unset>`, unset non-secrets left out.
pub fn recorded(params: &[Resolved]) -> BTreeMap<String, String> {
    params
        .iter()
        .filter_map(|p| match (p.secret, &p.value) {
            (true, Some(_)) => Some((p.name.clone(), SECRET_SET.to_owned())),
            (true, None) => Some((p.name.clone(), SECRET_UNSET.to_owned())),
            (false, Some(v)) => Some((p.name.clone(), v.clone())),
            (false, None) => None,
        })
        .collect()
}

/// The environment variable a param reaches the script as: `STOAT_PARAM_<NAME>`, upper case.
pub fn env_name(param: &str) -> String {
    format!("STOAT_PARAM_{}", param.to_ascii_uppercase())
}

/// The environment variable naming the file a script appends `name=value` output lines to.
pub const OUTPUTS_ENV: &str = "STOAT_OUTPUTS";

/// The lines put before a script body: the params (only those with a value) and
/// `STOAT_OUTPUTS`, exported in the runtime's own syntax. A `#!` line of the body becomes an
/// ordinary comment, which is harmless for both runtimes.
pub fn prelude(runtime: Runtime, params: &[Resolved], outputs_file: &str) -> String {
    let mut vars: Vec<(String, String)> = params
        .iter()
        .filter_map(|p| Some((env_name(&p.name), p.value.clone()?)))
        .collect();
    vars.push((OUTPUTS_ENV.to_owned(), outputs_file.to_owned()));
    match runtime {
        Runtime::Sh => {
            let mut out = String::new();
            for (name, value) in &vars {
                out.push_str(&format!(
                    "{name}={}; export {name}\n",
                    crate::shell::quote(value)
                ));
            }
            out.push_str(&format!(": > \"${OUTPUTS_ENV}\"\n"));
            out
        }
        Runtime::Python3 => {
            // A JSON string literal is a valid Python string literal.
            let mut out = String::from("import os as _stoat_os\n");
            for (name, value) in &vars {
                out.push_str(&format!(
                    "_stoat_os.environ[{}] = {}\n",
                    json_str(name),
                    json_str(value)
                ));
            }
            out.push_str(&format!(
                "open(_stoat_os.environ[{}], \"w\").close()\n",
                json_str(OUTPUTS_ENV)
            ));
            out
        }
    }
}

fn json_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Parses what a script appended to `$STOAT_OUTPUTS`: `name=value` lines, later lines win.
/// Only declared outputs are kept; other lines are ignored.
pub fn parse_outputs(manifest: &Manifest, text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.trim(), value.trim_end_matches('\r')))
        .filter(|(name, _)| manifest.outputs.iter().any(|o| o.name == *name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest::parse(
            r#"schema = 3
name = "r"
script = "a.sh"
[params.user]
default_from = "ssh_user"
[params.venv]
default_from = "ssh_venv_dir"
[params.level]
type = "int"
default = 2
[params.mode]
type = "enum"
values = ["fast", "slow"]
[params.token]
type = "secret"
[params.name]
required = true
[outputs.addr]
"#,
        )
        .unwrap()
    }

    fn given(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn config(user: &str) -> VmConfig {
        VmConfig {
            sshuser: user.into(),
            ..VmConfig::default()
        }
    }

    fn setting(recipe: Option<&str>, name: &str, value: &str) -> ParamSetting {
        ParamSetting {
            recipe: recipe.map(str::to_owned),
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_setting_needs_a_recipe_unless_there_is_one() {
        let one = vec!["r".to_owned()];
        let two = vec!["r".to_owned(), "s".to_owned()];
        let t = tables_of(
            &[setting(None, "x", "1"), setting(Some("r"), "y", "a=b")],
            &one,
        )
        .unwrap();
        assert_eq!(t["r"]["x"], "1");
        assert_eq!(t["r"]["y"], "a=b");
        assert!(tables_of(&[setting(None, "x", "1")], &two).is_err());
        assert!(tables_of(&[setting(Some("q"), "x", "1")], &two).is_err());
        assert!(tables_of(&[setting(Some("r"), " ", "1")], &one).is_err());
    }

    #[test]
    fn resolve_applies_defaults_and_checks() {
        let m = manifest();
        let resolved = resolve("r", &m, &config("stoat"), &given(&[("name", "n")])).unwrap();
        let value = |n: &str| resolved.iter().find(|p| p.name == n).unwrap().value.clone();
        assert_eq!(value("user").as_deref(), Some("stoat"));
        assert_eq!(value("venv").as_deref(), Some("/home/stoat/.venv"));
        assert_eq!(value("level").as_deref(), Some("2"));
        assert_eq!(value("mode"), None);
        let root = resolve("r", &m, &config(""), &given(&[("name", "n")])).unwrap();
        let venv = root.iter().find(|p| p.name == "venv").unwrap();
        assert_eq!(venv.value.as_deref(), Some("/root/.venv"));

        let code = |g: &[(&str, &str)]| resolve("r", &m, &config("s"), &given(g)).unwrap_err();
        assert!(code(&[]).to_string().contains("needs param name"));
        assert!(code(&[("name", "n"), ("nope", "1")])
            .to_string()
            .contains("no param"));
        assert!(code(&[("name", "n"), ("level", "x")])
            .to_string()
            .contains("integer"));
        assert!(code(&[("name", "n"), ("mode", "x")])
            .to_string()
            .contains("fast, slow"));
        assert_eq!(code(&[]).code(), stoat_wire::ErrorCode::InvalidSpec);
    }

    #[test]
    fn secrets_are_recorded_as_markers() {
        let m = manifest();
        let set = resolve(
            "r",
            &m,
            &config("s"),
            &given(&[("name", "n"), ("token", "hunter2")]),
        )
        .unwrap();
        let rec = recorded(&set);
        assert_eq!(rec["token"], SECRET_SET);
        assert!(!rec.values().any(|v| v == "hunter2"));
        assert!(!rec.contains_key("mode"));
        let unset = resolve("r", &m, &config("s"), &given(&[("name", "n")])).unwrap();
        assert_eq!(recorded(&unset)["token"], SECRET_UNSET);
    }

    #[test]
    fn prelude_exports_quoted_values() {
        let params = vec![Resolved {
            name: "user".into(),
            secret: false,
            value: Some("it's".into()),
        }];
        let sh = prelude(Runtime::Sh, &params, "/tmp/o");
        assert!(
            sh.contains("STOAT_PARAM_USER='it'\\''s'; export STOAT_PARAM_USER\n"),
            "{sh}"
        );
        assert!(sh.contains("STOAT_OUTPUTS='/tmp/o'; export STOAT_OUTPUTS\n"));
        let py = prelude(Runtime::Python3, &params, "/tmp/o");
        assert!(
            py.contains("_stoat_os.environ[\"STOAT_PARAM_USER\"] = \"it's\"\n"),
            "{py}"
        );
    }

    #[test]
    fn outputs_keep_declared_names() {
        let out = parse_outputs(
            &manifest(),
            "addr=1.2.3.4\nother=x\nnoise\naddr=5.6.7.8\r\n",
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out["addr"], "5.6.7.8");
    }
}
