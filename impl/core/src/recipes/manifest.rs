//! The recipe manifest, `recipe.toml`: parsing, validation, OS matching, and the RecipeSchema
//! projection that `recipes` and `recipe show` report (json-v3#types, RecipeSchema).
//!
//! `schema = 3` manifests may declare `[params.<name>]`, `[outputs.<name>]` and `[health]`,
//! and unknown keys are refused (a typo must not pass silently). A manifest without `schema`
//! is schema 2 (the upstream v2 format): unknown keys are ignored and params, outputs and
//! health are refused. Every error names the reason, with `line L, column C` when the TOML
//! parser knows the position; `Manifest::load` adds the file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use stoat_wire::dto::{RecipeHealth, RecipeOutput, RecipeParam, RecipeSchema};

use crate::error::IoContext;
use crate::guests::{one_line, GuestDef};
use crate::vm::describe_toml_error;
use crate::{Error, Result};

/// The manifest file name inside a recipe directory.
pub const MANIFEST_FILE: &str = "recipe.toml";

/// The newest manifest schema this stoat reads.
pub const SCHEMA_LATEST: u32 = 3;

/// Keys a schema-3 manifest may have at its top level.
const KNOWN_KEYS: &[&str] = &[
    "schema",
    "name",
    "description",
    "version",
    "os",
    "requires",
    "stage",
    "runtime",
    "run",
    "reboot",
    "auto",
    "depends",
    "script",
    "scripts",
    "params",
    "outputs",
    "health",
];

/// When a recipe runs: provision (over ssh, after boot) or install (refused for now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Install,
    #[default]
    Provision,
}

/// What interprets the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    #[default]
    Sh,
    Python3,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Sh => "sh",
            Runtime::Python3 => "python3",
        }
    }
}

/// How often `apply` runs a recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Once per script content (re-runs when the script changes).
    #[default]
    Once,
    Always,
    /// Only when named with `apply --only`.
    Manual,
}

/// A param's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    #[default]
    String,
    Enum,
    Bool,
    Int,
    /// Stored and shown only as `<set>`/`<unset>`.
    Secret,
}

impl ParamType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Enum => "enum",
            ParamType::Bool => "bool",
            ParamType::Int => "int",
            ParamType::Secret => "secret",
        }
    }
}

/// Where a param's value comes from when the caller sets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefaultFrom {
    /// The VM's configured SSH account.
    SshUser,
    /// `.venv` under that account's home directory.
    SshVenvDir,
}

impl DefaultFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            DefaultFrom::SshUser => "ssh_user",
            DefaultFrom::SshVenvDir => "ssh_venv_dir",
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
    pub required: bool,
    /// The default as text (`true`, `3`, `stable`), if declared.
    pub default: Option<String>,
    pub default_from: Option<DefaultFrom>,
    /// The allowed values of an enum param.
    pub values: Vec<String>,
    pub help: String,
}

/// One declared output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub name: String,
    pub help: String,
}

/// A health check: a guest command that exits 0 when the recipe's work is healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub check: String,
    /// As written (`30s`, `2m`).
    pub timeout: String,
    pub timeout_secs: u64,
}

/// A parsed, validated `recipe.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub schema: u32,
    pub name: String,
    pub description: String,
    pub version: String,
    /// OS names this recipe is built for; empty means every OS.
    pub os: Vec<String>,
    /// Capabilities the guest must have (`systemd`, `apt`...).
    pub requires: Vec<String>,
    pub stage: Stage,
    pub runtime: Runtime,
    pub run: RunMode,
    pub reboot: bool,
    /// Parsed for compatibility; unused.
    pub auto: bool,
    pub depends: Vec<String>,
    /// The default script, relative to the recipe directory.
    pub script: String,
    /// Per-OS script overrides.
    pub scripts: BTreeMap<String, String>,
    /// Sorted by name.
    pub params: Vec<Param>,
    /// Sorted by name.
    pub outputs: Vec<Output>,
    pub health: Option<Health>,
}

#[derive(Deserialize)]
struct RawManifest {
    schema: Option<i64>,
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    os: Vec<String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    stage: Stage,
    #[serde(default)]
    runtime: Runtime,
    #[serde(default)]
    run: RunMode,
    #[serde(default)]
    reboot: bool,
    #[serde(default)]
    auto: bool,
    #[serde(default)]
    depends: Vec<String>,
    script: Option<String>,
    #[serde(default)]
    scripts: BTreeMap<String, String>,
    params: Option<BTreeMap<String, RawParam>>,
    outputs: Option<BTreeMap<String, RawOutput>>,
    health: Option<RawHealth>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParam {
    #[serde(rename = "type", default)]
    kind: ParamType,
    #[serde(default)]
    required: bool,
    default: Option<toml::Value>,
    default_from: Option<DefaultFrom>,
    #[serde(default)]
    values: Vec<String>,
    #[serde(default)]
    help: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    #[serde(default)]
    help: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHealth {
    check: String,
    timeout: Option<String>,
}

/// The health timeout when a manifest names none.
pub const DEFAULT_HEALTH_TIMEOUT: &str = "30s";

impl Manifest {
    /// Parses and validates manifest text; the error is the reason alone (no file name).
    pub fn parse(text: &str) -> std::result::Result<Manifest, String> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| one_line(&describe_toml_error(text, &e)))?;
        let raw: RawManifest =
            toml::from_str(text).map_err(|e| one_line(&describe_toml_error(text, &e)))?;
        let schema = match raw.schema {
            None => 2,
            Some(n @ 2..=3) => n as u32,
            Some(n) => {
                return Err(format!(
                    "schema = {n} is not supported (this stoat reads schema 2 and {SCHEMA_LATEST})"
                ))
            }
        };
        if schema >= 3 {
            if let Some(key) = table.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                return Err(format!("unknown key {key:?}"));
            }
        } else if let Some(key) = ["params", "outputs", "health"]
            .into_iter()
            .find(|k| table.contains_key(*k))
        {
            return Err(format!("{key} needs schema = 3 at the top of the manifest"));
        }
        raw.validate(schema)
    }

    /// Loads `<dir>/recipe.toml` and checks that its scripts exist. Errors are `broken`
    /// ([`Error::BadManifest`]) naming the file; a missing manifest is an I/O error.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let text =
            crate::bounded::read_to_string(&path).context(|| format!("read {}", path.display()))?;
        let broken = |reason: String| Error::BadManifest {
            file: path.display().to_string(),
            reason,
        };
        let manifest = Manifest::parse(&text).map_err(broken)?;
        for script in manifest.all_scripts() {
            if !dir.join(script).is_file() {
                return Err(broken(format!("script {script:?} does not exist")));
            }
        }
        Ok(manifest)
    }

    /// Every script file the manifest names (the default first).
    pub fn all_scripts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.script.as_str()).chain(self.scripts.values().map(String::as_str))
    }

    /// The script to run on `os`: its `[scripts]` entry, else `script`.
    pub fn script_for(&self, os: &str) -> &str {
        self.scripts
            .get(os)
            .map(String::as_str)
            .unwrap_or(&self.script)
    }

    /// Why this recipe is not offered to `guest`, or `None` when it is (upstream MatchReason).
    pub fn match_reason(&self, guest: &GuestDef) -> Option<String> {
        if !self.os.is_empty() && !self.os.iter().any(|os| os == &guest.name) {
            return Some(format!(
                "built for {}, not {}",
                self.os.join(", "),
                guest.name
            ));
        }
        self.requires
            .iter()
            .find(|cap| !guest.has_capability(cap))
            .map(|cap| format!("requires {cap}, which {} does not have", guest.name))
    }

    /// Returns the param called `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The RecipeSchema projection (params and outputs already sorted by name).
    pub fn to_schema(&self) -> RecipeSchema {
        RecipeSchema {
            name: self.name.clone(),
            description: self.description.clone(),
            schema: self.schema,
            runtime: self.runtime.as_str().to_owned(),
            reboot: self.reboot,
            depends: self.depends.clone(),
            params: self.params.iter().map(Param::to_wire).collect(),
            outputs: self
                .outputs
                .iter()
                .map(|o| RecipeOutput {
                    name: o.name.clone(),
                    help: o.help.clone(),
                })
                .collect(),
            health: self.health.as_ref().map(|h| RecipeHealth {
                check: h.check.clone(),
                timeout: h.timeout.clone(),
            }),
        }
    }
}

impl Param {
    /// The RecipeParam DTO: `default` is `""` when none is declared.
    pub fn to_wire(&self) -> RecipeParam {
        RecipeParam {
            name: self.name.clone(),
            kind: self.kind.as_str().to_owned(),
            required: self.required,
            default: self.default.clone().unwrap_or_default(),
            default_from: self.default_from.map(|d| d.as_str().to_owned()),
            values: self.values.clone(),
            help: self.help.clone(),
        }
    }

    /// Checks a caller-given value against this param's type.
    pub fn check_value(&self, value: &str) -> std::result::Result<(), String> {
        check_typed(self.kind, &self.values, value)
            .map_err(|why| format!("param {}: {why}", self.name))
    }
}

fn check_typed(kind: ParamType, values: &[String], value: &str) -> std::result::Result<(), String> {
    match kind {
        ParamType::String | ParamType::Secret => Ok(()),
        ParamType::Bool if matches!(value, "true" | "false") => Ok(()),
        ParamType::Bool => Err(format!("{value:?} is not true or false")),
        ParamType::Int if value.parse::<i64>().is_ok() => Ok(()),
        ParamType::Int => Err(format!("{value:?} is not an integer")),
        ParamType::Enum if values.iter().any(|v| v == value) => Ok(()),
        ParamType::Enum => Err(format!("{value:?} is not one of {}", values.join(", "))),
    }
}

impl RawManifest {
    fn validate(self, schema: u32) -> std::result::Result<Manifest, String> {
        let name = self.name.unwrap_or_default();
        if name.trim().is_empty() {
            return Err("name is required".into());
        }
        let script = self.script.unwrap_or_default();
        check_script_path("script", &script)?;
        for (os, file) in &self.scripts {
            check_script_path(&format!("scripts.{os}"), file)?;
        }
        if self.depends.iter().any(|d| d == &name) {
            return Err(format!("{name} depends on itself"));
        }
        let params = self
            .params
            .unwrap_or_default()
            .into_iter()
            .map(|(param_name, raw)| raw.validate(param_name))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let outputs = self
            .outputs
            .unwrap_or_default()
            .into_iter()
            .map(|(output_name, raw)| {
                check_ident("outputs", &output_name)?;
                Ok(Output {
                    name: output_name,
                    help: raw.help,
                })
            })
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let health = self.health.map(RawHealth::validate).transpose()?;
        Ok(Manifest {
            schema,
            name,
            description: self.description,
            version: self.version,
            os: self.os,
            requires: self.requires,
            stage: self.stage,
            runtime: self.runtime,
            run: self.run,
            reboot: self.reboot,
            auto: self.auto,
            depends: self.depends,
            script,
            scripts: self.scripts,
            params,
            outputs,
            health,
        })
    }
}

impl RawParam {
    fn validate(self, name: String) -> std::result::Result<Param, String> {
        check_ident("params", &name)?;
        let at = |why: String| format!("params.{name}: {why}");
        let default = self
            .default
            .map(|v| value_text(&v))
            .transpose()
            .map_err(at)?;
        if default.is_some() && self.default_from.is_some() {
            return Err(at("declares both default and default_from; pick one".into()));
        }
        if self.required && (default.is_some() || self.default_from.is_some()) {
            return Err(at("a required param cannot have a default".into()));
        }
        if self.default_from.is_some() && self.kind != ParamType::String {
            return Err(at("default_from needs type = \"string\"".into()));
        }
        match self.kind {
            ParamType::Enum if self.values.is_empty() => {
                return Err(at("type enum needs a non-empty values list".into()))
            }
            ParamType::Enum => {}
            _ if !self.values.is_empty() => return Err(at("values is only for type enum".into())),
            ParamType::Secret if default.is_some() => {
                return Err(at(
                    "a secret cannot have a default (it would not be secret)".into(),
                ))
            }
            _ => {}
        }
        if let Some(value) = &default {
            check_typed(self.kind, &self.values, value)
                .map_err(|why| at(format!("default {why}")))?;
        }
        Ok(Param {
            name,
            kind: self.kind,
            required: self.required,
            default,
            default_from: self.default_from,
            values: self.values,
            help: self.help,
        })
    }
}

impl RawHealth {
    fn validate(self) -> std::result::Result<Health, String> {
        if self.check.trim().is_empty() {
            return Err("health.check is empty".into());
        }
        let timeout = self
            .timeout
            .unwrap_or_else(|| DEFAULT_HEALTH_TIMEOUT.to_owned());
        let timeout_secs = parse_timeout(&timeout).ok_or_else(|| {
            format!("health.timeout {timeout:?} is not a duration like 30s, 2m or 1h")
        })?;
        Ok(Health {
            check: self.check,
            timeout,
            timeout_secs,
        })
    }
}

/// Parses `30s`, `2m`, `1h` (or bare seconds) into seconds; zero is refused.
pub fn parse_timeout(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = digits.parse().ok()?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    number.checked_mul(scale).filter(|secs| *secs > 0)
}

/// A TOML default as text: strings as is, booleans and integers in their TOML spelling.
fn value_text(value: &toml::Value) -> std::result::Result<String, String> {
    match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        other => Err(format!(
            "default must be a string, a boolean or an integer, not {}",
            other.type_str()
        )),
    }
}

/// Param and output names become environment variable suffixes: keep them plain.
fn check_ident(table: &str, name: &str) -> std::result::Result<(), String> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(format!(
            "{table}.{name}: a name is a letter then letters, digits or '_'"
        ))
    }
}

/// A script path stays inside the recipe directory.
/// Reads a recipe file named by its manifest, only as a regular file inside the recipe's own
/// directory: a symlink (at any component) that resolves outside it, a FIFO or a device is
/// refused, so a recipe can never carry a host file into a guest. The error completes
/// "<recipe>: ...".
pub fn read_recipe_file(dir: &Path, relative: &str) -> std::result::Result<String, String> {
    let inside = |real: &Path| {
        dir.canonicalize()
            .map(|own| real.starts_with(own))
            .unwrap_or(false)
    };
    let real = dir
        .join(relative)
        .canonicalize()
        .map_err(|e| format!("{relative}: {e}"))?;
    if !inside(&real) {
        return Err(format!(
            "{relative} resolves outside the recipe directory; a recipe reads only its own files"
        ));
    }
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&real)
        .map_err(|e| format!("{relative}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{relative}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{relative} is not a regular file"));
    }
    crate::bounded::read_to_string(&real).map_err(|e| format!("{relative}: {e}"))
}

/// Checks every script the manifest names with [`read_recipe_file`] (for `recipe add`).
pub fn check_recipe_files(dir: &Path, manifest: &Manifest) -> std::result::Result<(), String> {
    std::iter::once(&manifest.script)
        .chain(manifest.scripts.values())
        .filter(|file| !file.is_empty())
        .try_for_each(|file| read_recipe_file(dir, file).map(|_| ()))
}

fn check_script_path(key: &str, path: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err(format!("{key} is required"));
    }
    let escapes = Path::new(path).is_absolute()
        || Path::new(path)
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if escapes {
        return Err(format!(
            "{key} = {path:?} must be a path inside the recipe directory"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guests::Registry;

    const V2: &str = "name = \"old\"\nscript = \"install.sh\"\nlabel = \"ignored in v2\"\n";

    fn err(text: &str) -> String {
        Manifest::parse(text).unwrap_err()
    }

    #[test]
    fn v2_manifest_without_schema_loads_as_schema_2_with_defaults() {
        let m = Manifest::parse(V2).unwrap();
        assert_eq!(m.schema, 2);
        assert_eq!(
            (m.stage, m.runtime, m.run),
            (Stage::Provision, Runtime::Sh, RunMode::Once)
        );
        assert!(m.params.is_empty() && m.health.is_none() && m.os.is_empty());
        let schema = m.to_schema();
        assert_eq!(schema.schema, 2);
        assert_eq!(schema.health, None);
    }

    #[test]
    fn v2_manifest_cannot_declare_params() {
        assert!(err("name = \"x\"\nscript = \"a.sh\"\n[params.a]\n").contains("schema = 3"));
    }

    #[test]
    fn schema_3_full_manifest_projects_sorted_params_and_outputs() {
        let text = r#"
schema = 3
name = "docker"
runtime = "python3"
run = "always"
reboot = true
depends = ["base"]
script = "install.sh"
[scripts]
alpine = "install-alpine.sh"
[params.zeta]
type = "int"
default = 3
[params.alpha]
type = "enum"
values = ["stable", "test"]
default = "stable"
help = "channel"
[params.user]
default_from = "ssh_user"
[params.token]
type = "secret"
required = true
[outputs.socket]
help = "path of the socket"
[outputs.addr]
[health]
check = "docker info"
"#;
        let m = Manifest::parse(text).unwrap();
        let schema = m.to_schema();
        let names: Vec<&str> = schema.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["alpha", "token", "user", "zeta"]);
        assert_eq!(schema.params[3].default, "3");
        assert_eq!(schema.params[2].default_from.as_deref(), Some("ssh_user"));
        assert_eq!(schema.params[2].default, "");
        assert_eq!(schema.outputs[0].name, "addr");
        assert_eq!(schema.health.unwrap().timeout, "30s");
        assert_eq!(schema.runtime, "python3");
        assert_eq!(m.script_for("alpine"), "install-alpine.sh");
        assert_eq!(m.script_for("debian"), "install.sh");
        assert_eq!(m.param("token").unwrap().kind, ParamType::Secret);
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let reason = err("schema = 3\nname = \"x\"\nscript = \n");
        assert!(reason.starts_with("line 3, column"), "{reason}");
        let reason = err("schema = 3\nname = \"x\"\nscript = \"a.sh\"\nruntime = \"bash\"\n");
        assert!(
            reason.contains("line 4") && reason.contains("bash"),
            "{reason}"
        );
    }

    #[test]
    fn invalid_manifests_say_why() {
        let base = "schema = 3\nname = \"x\"\nscript = \"a.sh\"\n";
        let cases: &[(&str, &str)] = &[
            ("schema = 3\nscript = \"a.sh\"\n", "name is required"),
            ("schema = 3\nname = \"x\"\n", "script is required"),
            (
                "schema = 9\nname = \"x\"\nscript = \"a.sh\"\n",
                "not supported",
            ),
            (
                "schema = 3\nname = \"x\"\nscript = \"../a.sh\"\n",
                "inside the recipe",
            ),
            (
                "schema = 3\nname = \"x\"\nscript = \"/a.sh\"\n",
                "inside the recipe",
            ),
            (
                "schema = 3\nname = \"x\"\nscript = \"a.sh\"\ndepends = [\"x\"]\n",
                "itself",
            ),
            (
                "schema = 3\nname = \"x\"\nscript = \"a.sh\"\nlable = 1\n",
                "unknown key \"lable\"",
            ),
        ];
        for (text, want) in cases {
            let reason = err(text);
            assert!(reason.contains(want), "{text:?}: {reason}");
        }
        let params: &[(&str, &str)] = &[
            (
                "[params.a]\ndefault = \"x\"\ndefault_from = \"ssh_user\"\n",
                "both default and default_from",
            ),
            ("[params.a]\ntype = \"enum\"\n", "non-empty values"),
            ("[params.a]\nvalues = [\"a\"]\n", "only for type enum"),
            (
                "[params.a]\ntype = \"enum\"\nvalues = [\"a\"]\ndefault = \"b\"\n",
                "not one of a",
            ),
            (
                "[params.a]\ntype = \"bool\"\ndefault = \"yes\"\n",
                "true or false",
            ),
            (
                "[params.a]\ntype = \"int\"\ndefault = \"x\"\n",
                "not an integer",
            ),
            ("[params.a]\ntype = \"secret\"\ndefault = \"x\"\n", "secret"),
            ("[params.a]\nrequired = true\ndefault = \"x\"\n", "required"),
            (
                "[params.a]\ntype = \"int\"\ndefault_from = \"ssh_user\"\n",
                "needs type",
            ),
            ("[params.a]\ndefault_from = \"home\"\n", "home"),
            ("[params.a]\ntype = \"float\"\n", "float"),
            ("[params.a]\ndefualt = \"x\"\n", "defualt"),
            ("[params.1a]\n", "a name is a letter"),
            ("[health]\ncheck = \"\"\n", "health.check"),
            (
                "[health]\ncheck = \"true\"\ntimeout = \"soon\"\n",
                "duration",
            ),
        ];
        for (tail, want) in params {
            let reason = err(&format!("{base}{tail}"));
            assert!(reason.contains(want), "{tail:?}: {reason}");
        }
    }

    #[test]
    fn bool_defaults_may_be_toml_booleans() {
        let m = Manifest::parse(
            "schema = 3\nname = \"x\"\nscript = \"a.sh\"\n[params.a]\ntype = \"bool\"\ndefault = true\n",
        )
        .unwrap();
        assert_eq!(m.params[0].default.as_deref(), Some("true"));
        assert!(m.params[0].check_value("false").is_ok());
        assert!(m.params[0].check_value("1").is_err());
    }

    #[test]
    fn timeouts_parse() {
        assert_eq!(parse_timeout("30s"), Some(30));
        assert_eq!(parse_timeout("2m"), Some(120));
        assert_eq!(parse_timeout("1h"), Some(3600));
        assert_eq!(parse_timeout("45"), Some(45));
        assert_eq!(parse_timeout("0s"), None);
        assert_eq!(parse_timeout("1d"), None);
        assert_eq!(parse_timeout(""), None);
    }

    #[test]
    fn match_reason_names_the_os_list_then_the_first_missing_capability() {
        let registry = Registry::bundled();
        let mut m =
            Manifest::parse("name = \"x\"\nscript = \"a.sh\"\nos = [\"alpine\", \"debian\"]\n")
                .unwrap();
        let fedora = registry.get("fedora").unwrap();
        assert_eq!(
            m.match_reason(fedora).unwrap(),
            "built for alpine, debian, not fedora"
        );
        assert_eq!(m.match_reason(registry.get("debian").unwrap()), None);
        m.os.clear();
        m.requires = vec!["systemd".into(), "apt".into()];
        assert_eq!(
            m.match_reason(fedora).unwrap(),
            "requires apt, which fedora does not have"
        );
        assert_eq!(
            m.match_reason(registry.get("alpine").unwrap()).unwrap(),
            "requires systemd, which alpine does not have"
        );
        m.requires = vec!["warp-drive".into()];
        assert!(m.match_reason(registry.get("ubuntu").unwrap()).is_some());
    }
}
