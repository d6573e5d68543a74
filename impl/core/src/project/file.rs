//! `stoat.toml`: the project file. Its model, its parser (every error names the file and the
//! line) and the walk up from the working directory that finds it.
//!
//! ```toml
//! [project]
//! name = "myrepo"            # optional: the directory's name
//!
//! [vm.dev]                   # one table per VM, in the order they are brought up
//! image = "debian-13"        # required: a catalog id, a file in isos/, or an absolute path
//! cpus = 2
//! ram = 2048                 # MB
//! disk = "16G"
//! share = "."                # relative to the project directory
//! recipes = ["docker"]
//! forwards = ["8080:80"]     # HOST:GUEST
//! [vm.dev.params.docker]
//! user = "stoat"
//!
//! [recipes.tailscale]        # a remote recipe the declarations may name; pinned in stoat.lock
//! source = "https://github.com/x/stoat-tailscale"
//! ref = "v1.2"
//! ```
//!
//! A declaration `<key>` makes the VM `<project>-<key>` (json-v3#types: VM.project,
//! VM.key; ProjectStatusVM.name).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use crate::vm::spec::{parse_pair, port_in_range, refuse_privileged};
use crate::vm::{describe_toml_error, ForwardConfig};
use crate::vm::{Backend, Mode};
use crate::{Error, Result};

/// The file that marks a project directory.
pub const PROJECT_FILE: &str = "stoat.toml";

/// Returns the nearest directory at or above `start` holding a `stoat.toml`.
pub fn find(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(PROJECT_FILE).is_file())
        .map(Path::to_path_buf)
}

/// A parsed project file.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// `[project] name`, or the directory's name.
    pub name: String,
    /// The absolute directory holding stoat.toml (what VM.project records).
    pub dir: PathBuf,
    /// The VM declarations, in file order (the fan-out order).
    pub vms: Vec<Declaration>,
    /// `[recipes.<name>]`: remote recipes this project uses, by name.
    pub remote_recipes: BTreeMap<String, RemoteRecipe>,
}

/// One `[vm.<key>]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Declaration {
    pub key: String,
    /// `<project>-<key>`.
    pub name: String,
    pub image: String,
    pub os: Option<String>,
    pub backend: Option<Backend>,
    pub mode: Option<Mode>,
    pub cpus: Option<u32>,
    pub ram_mb: Option<u32>,
    pub disk: Option<String>,
    /// Absolute (resolved against the project directory); `Some("")` declares no share.
    pub share: Option<String>,
    /// `None`: not declared, so not managed (status compares only what is declared).
    pub recipes: Option<Vec<String>>,
    /// recipe → param → value.
    pub params: BTreeMap<String, BTreeMap<String, String>>,
    pub forwards: Option<Vec<ForwardConfig>>,
}

/// One `[recipes.<name>]` table: where a remote recipe comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRecipe {
    pub source: String,
    /// The branch, tag or commit asked for; `""` means the remote's default branch.
    pub git_ref: String,
}

impl Project {
    /// Loads `<dir>/stoat.toml`.
    pub fn load(dir: &Path) -> Result<Project> {
        let path = dir.join(PROJECT_FILE);
        let text = crate::bounded::read_to_string(&path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        Project::parse(&text, dir)
    }

    /// Finds and loads the project at or above `cwd`; `None` outside a project.
    pub fn find_and_load(cwd: &Path) -> Result<Option<Project>> {
        find(cwd).map(|dir| Project::load(&dir)).transpose()
    }

    /// Parses stoat.toml text for the project in `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Project> {
        let file = dir.join(PROJECT_FILE);
        let fail = |detail: String| Error::InvalidSpec(format!("{}: {detail}", file.display()));
        let raw: RawFile = toml::from_str(text).map_err(|e| fail(describe_toml_error(text, &e)))?;
        let at = |offset: usize, message: String| {
            fail(format!("line {}: {message}", line_of(text, offset)))
        };
        let name = match &raw.project.and_then(|p| p.name) {
            Some(name) => {
                let trimmed = name.get_ref().trim();
                if trimmed.is_empty() {
                    return Err(at(name.span().start, "project name is empty".into()));
                }
                trimmed.to_owned()
            }
            None => dir_name(dir).ok_or_else(|| {
                fail("the directory has no usable name; set [project] name".into())
            })?,
        };
        let mut remote_recipes = BTreeMap::new();
        for (recipe, spanned) in raw.recipes {
            let remote = spanned.get_ref();
            if remote.source.trim().is_empty() {
                return Err(at(
                    spanned.span().start,
                    format!("recipes.{recipe}: source is empty"),
                ));
            }
            remote_recipes.insert(
                recipe,
                RemoteRecipe {
                    source: remote.source.trim().to_owned(),
                    git_ref: remote.git_ref.clone().unwrap_or_default().trim().to_owned(),
                },
            );
        }
        let mut vms = Vec::new();
        for (key, spanned) in raw.vm.0 {
            let decl =
                declaration(&name, dir, &key, spanned.get_ref()).map_err(|(offset, message)| {
                    at(
                        offset.unwrap_or(spanned.span().start),
                        format!("vm.{key}: {message}"),
                    )
                })?;
            vms.push(decl);
        }
        Ok(Project {
            name,
            dir: dir.to_path_buf(),
            vms,
            remote_recipes,
        })
    }

    /// The declaration with this key.
    pub fn declaration(&self, key: &str) -> Option<&Declaration> {
        self.vms.iter().find(|d| d.key == key)
    }

    /// The project directory as VM.project records it.
    pub fn dir_text(&self) -> String {
        self.dir.display().to_string()
    }
}

/// The 1-based line holding byte `offset` of `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn dir_name(dir: &Path) -> Option<String> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .filter(|n| !n.is_empty())
}

/// A field's problem: where (a byte offset, when known) and what.
type FieldError = (Option<usize>, String);

/// Validates one raw declaration.
fn declaration(
    project: &str,
    dir: &Path,
    key: &str,
    raw: &RawVm,
) -> std::result::Result<Declaration, FieldError> {
    let name = format!("{project}-{key}");
    crate::vm::check_name(&name)
        .map_err(|e| (None, format!("VM name {name:?}: {}", bare_message(e))))?;
    let spanned_err = |start: usize| move |e: Error| (Some(start), bare_message(e));
    let image = raw.image.get_ref().trim().to_owned();
    if image.is_empty() {
        return Err((Some(raw.image.span().start), "image is empty".into()));
    }
    if let Some(cpus) = &raw.cpus {
        crate::vm::spec::check_cpus(*cpus.get_ref()).map_err(spanned_err(cpus.span().start))?;
    }
    if let Some(ram) = &raw.ram {
        crate::vm::spec::check_ram(*ram.get_ref()).map_err(spanned_err(ram.span().start))?;
    }
    if let Some(disk) = &raw.disk {
        crate::size::parse_size(disk.get_ref().trim()).map_err(spanned_err(disk.span().start))?;
    }
    let share = raw
        .share
        .as_ref()
        .map(|share| resolve_share(dir, share.get_ref()));
    let recipes = crate::vm::spec::split_recipes(raw.recipes.as_deref().unwrap_or_default());
    let mut params = BTreeMap::new();
    for (recipe, table) in &raw.params {
        if !recipes.contains(recipe) {
            return Err((
                None,
                format!("params.{recipe}: {recipe} is not one of this VM's recipes"),
            ));
        }
        let values = table
            .iter()
            .map(|(k, v)| scalar_text(v).map(|text| (k.clone(), text)))
            .collect::<std::result::Result<BTreeMap<_, _>, _>>()
            .map_err(|why| (None, format!("params.{recipe}: {why}")))?;
        params.insert(recipe.clone(), values);
    }
    let mut forwards: Vec<ForwardConfig> = Vec::new();
    for pair in raw.forwards.iter().flatten() {
        let forward = forward(pair.get_ref()).map_err(spanned_err(pair.span().start))?;
        if forwards.iter().any(|f| f.hostport == forward.hostport) {
            return Err((
                Some(pair.span().start),
                format!("host port {} is forwarded twice", forward.hostport),
            ));
        }
        forwards.push(forward);
    }
    let text = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(Declaration {
        key: key.to_owned(),
        name,
        image,
        os: text(&raw.os),
        backend: raw.backend.as_deref().and_then(Backend::given),
        mode: raw.mode.as_deref().and_then(Mode::given),
        cpus: raw.cpus.as_ref().map(|c| *c.get_ref()),
        ram_mb: raw.ram.as_ref().map(|r| *r.get_ref()),
        disk: raw.disk.as_ref().map(|d| d.get_ref().trim().to_owned()),
        share,
        recipes: raw.recipes.as_ref().map(|_| recipes),
        params,
        forwards: raw.forwards.as_ref().map(|_| forwards),
    })
}

/// A share as stored: absolute, `.` and `..` resolved lexically against the project directory.
fn resolve_share(dir: &Path, share: &str) -> String {
    let share = share.trim();
    if share.is_empty() {
        return String::new();
    }
    let joined = dir.join(share);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.display().to_string()
}

/// An error's text without the `invalid spec:` prefix (the whole message gets one).
fn bare_message(err: Error) -> String {
    match err {
        Error::InvalidSpec(message) => message,
        other => other.to_string(),
    }
}

fn forward(text: &str) -> Result<ForwardConfig> {
    let pair = parse_pair(text).map_err(|_| {
        Error::InvalidSpec(format!(
            "forward {text:?} is not \"HOST:GUEST\" (two port numbers)"
        ))
    })?;
    let hostport = port_in_range(pair.host, "host")?;
    refuse_privileged(hostport)?;
    let guestport = port_in_range(pair.guest, "guest")?;
    Ok(ForwardConfig {
        hostport,
        guestport,
    })
}

fn scalar_text(value: &toml::Value) -> std::result::Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!(
            "a parameter is a string, number or boolean, not {}",
            other.type_str()
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    project: Option<RawProject>,
    #[serde(default)]
    vm: Ordered<Spanned<RawVm>>,
    #[serde(default)]
    recipes: BTreeMap<String, Spanned<RawRemote>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    name: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRemote {
    source: String,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVm {
    image: Spanned<String>,
    os: Option<String>,
    backend: Option<String>,
    mode: Option<String>,
    cpus: Option<Spanned<u32>>,
    ram: Option<Spanned<u32>>,
    disk: Option<Spanned<String>>,
    share: Option<Spanned<String>>,
    recipes: Option<Vec<String>>,
    #[serde(default)]
    params: BTreeMap<String, BTreeMap<String, toml::Value>>,
    forwards: Option<Vec<Spanned<String>>>,
}

/// A TOML table read in document order (the fan-out order is the file's order).
struct Ordered<T>(Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct OrderedVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OrderedVisitor<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of VM declarations")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stoat_wire::ErrorCode;

    fn parse(text: &str) -> Result<Project> {
        Project::parse(text, Path::new("/home/u/myrepo"))
    }

    fn message(text: &str) -> String {
        let err = parse(text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidSpec, "{err}");
        err.to_string()
    }

    #[test]
    fn full_file_parses_in_declaration_order() {
        let project = parse(
            r#"
[project]
name = "demo"

[vm.web]
image = "debian-12"
cpus = 2
ram = 2048
disk = "16G"
share = "./src/.."
recipes = ["docker"]
forwards = ["8080:80"]
[vm.web.params.docker]
channel = "stable"
debug = true

[vm.db]
image = "/srv/img.qcow2"

[vm.api]
image = "alpine-virt"

[recipes.tailscale]
source = "https://example.invalid/x/stoat-tailscale"
ref = "v1.2"
"#,
        )
        .unwrap();
        assert_eq!(project.name, "demo");
        let keys: Vec<&str> = project.vms.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["web", "db", "api"], "file order, not sorted");
        let web = &project.vms[0];
        assert_eq!(web.name, "demo-web");
        assert_eq!(web.share.as_deref(), Some("/home/u/myrepo"));
        assert_eq!(web.params["docker"]["debug"], "true");
        assert_eq!(
            web.forwards,
            Some(vec![ForwardConfig {
                hostport: 8080,
                guestport: 80
            }])
        );
        assert_eq!(project.vms[1].recipes, None, "undeclared, so unmanaged");
        assert_eq!(project.remote_recipes["tailscale"].git_ref, "v1.2");
        assert_eq!(project.vms[1].cpus, None);
    }

    #[test]
    fn project_name_defaults_to_the_directory() {
        let project = parse("[vm.dev]\nimage = \"x\"\n").unwrap();
        assert_eq!(project.name, "myrepo");
        assert_eq!(project.vms[0].name, "myrepo-dev");
        assert!(parse("").unwrap().vms.is_empty());
    }

    #[test]
    fn errors_name_the_file_and_the_line() {
        let text = "[project]\nname = \"p\"\n\n[vm.dev]\nimage = \"x\"\ncpus = \"four\"\n";
        let msg = message(text);
        assert!(msg.contains("/home/u/myrepo/stoat.toml"), "{msg}");
        assert!(msg.contains("line 6"), "{msg}");

        let msg = message("[vm.dev]\nimage = \"x\"\nram = 100\n");
        assert!(msg.contains("line 3") && msg.contains("ram"), "{msg}");

        let msg = message("[vm.dev]\nimage = \"x\"\n\nforwards = [\"80:80\"]\n");
        assert!(msg.contains("line 4"), "{msg}");

        let msg = message("[vm.dev]\nimage = \"x\"\nforwards = [\"nope\"]\n");
        assert!(
            msg.contains("line 3") && msg.contains("HOST:GUEST"),
            "{msg}"
        );

        let msg = message("[vm.dev]\nimage = \"x\"\ndisk = \"8 potatoes\"\n");
        assert!(msg.contains("line 3"), "{msg}");

        let msg = message("[vm.dev]\nimage = \"x\"\ncolour = \"red\"\n");
        assert!(msg.contains("line 3") && msg.contains("colour"), "{msg}");

        let msg = message("[vm.dev]\ncpus = 2\n");
        assert!(msg.contains("image"), "{msg}");

        let msg = message("[vm.dev\nimage = \"x\"\n");
        assert!(msg.contains("line 1"), "{msg}");

        let msg = message("[vms.dev]\nimage = \"x\"\n");
        assert!(msg.contains("vms"), "{msg}");

        let msg = message("[vm.\"bad key\"]\nimage = \"x\"\n");
        assert!(msg.contains("bad key"), "{msg}");

        let msg = message("[vm.dev]\nimage = \"x\"\nrecipes = [\"a\"]\n[vm.dev.params.b]\nx = 1\n");
        assert!(msg.contains("params.b"), "{msg}");
    }

    #[test]
    fn find_walks_up() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find(&deep), None);
        std::fs::write(tmp.path().join("a").join(PROJECT_FILE), "").unwrap();
        assert_eq!(find(&deep), Some(tmp.path().join("a")));
    }
}
