//! The guest OS registry: what stoat knows about each guest OS (init system, shell, package
//! manager, capabilities, backend defaults), as `guest ls`/`guest show` report it.
//!
//! Bundled definitions are embedded from `impl/core/bundled/guests/<os>.toml`. A user file
//! `<root>/guests/<name>.toml` is merged over the bundled one of that name (tables merge key by
//! key, any other value replaces), or adds a new guest. `Guest.source` says which: `bundled`,
//! `user` or `bundled+user` (json-v3#types, Guest). Order: bundled guests in the
//! registry order `alpine ubuntu debian fedora arch` (filename inference checks hints in this
//! order), then user-only guests sorted by name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use stoat_wire::dto::{Guest, GuestPkg};

use crate::error::IoContext;
use crate::vm::describe_toml_error;
use crate::{Error, Result, Root};

/// The embedded guest definitions, in registry order.
const BUNDLED: &[(&str, &str)] = &[
    ("alpine", include_str!("../../bundled/guests/alpine.toml")),
    ("ubuntu", include_str!("../../bundled/guests/ubuntu.toml")),
    ("debian", include_str!("../../bundled/guests/debian.toml")),
    ("fedora", include_str!("../../bundled/guests/fedora.toml")),
    ("arch", include_str!("../../bundled/guests/arch.toml")),
];

/// How a guest installs packages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PkgDef {
    /// A shell line run once before installing (refresh the index), or "".
    pub setup: String,
    /// The install command; package names are appended.
    pub install: Vec<String>,
    /// Environment for package commands.
    pub env: BTreeMap<String, String>,
    /// Runtime name (`python3`) to the package that provides it.
    pub runtime_packages: BTreeMap<String, String>,
}

/// One guest OS definition.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuestDef {
    pub name: String,
    pub init: String,
    pub shell: String,
    pub installer: String,
    pub default_backend: String,
    pub default_ssh_user: String,
    pub escalate: Vec<String>,
    pub capabilities: Vec<String>,
    pub aliases: Vec<String>,
    pub filename_hints: Vec<String>,
    pub seed_packages: Vec<String>,
    pub pkg: PkgDef,
    pub svc: BTreeMap<String, String>,
    pub cmd: BTreeMap<String, String>,
    /// Each `[backend.<name>]` table, opaque: only that backend defines its keys.
    pub backend: BTreeMap<String, toml::Table>,
    /// Filled by the registry, never read from a file.
    #[serde(skip)]
    pub source: Source,
}

/// Where a definition came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Source {
    #[default]
    Bundled,
    User,
    BundledAndUser,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Bundled => "bundled",
            Source::User => "user",
            Source::BundledAndUser => "bundled+user",
        }
    }
}

impl GuestDef {
    /// Returns whether this guest has capability `cap` (`systemd`, `apt`...).
    pub fn has_capability(&self, cap: &str) -> bool {
        self.capabilities.iter().any(|c| c == cap)
    }

    /// Returns the Guest DTO.
    pub fn to_wire(&self) -> Guest {
        Guest {
            name: self.name.clone(),
            init: self.init.clone(),
            shell: self.shell.clone(),
            installer: self.installer.clone(),
            default_backend: self.default_backend.clone(),
            default_ssh_user: self.default_ssh_user.clone(),
            escalate: self.escalate.clone(),
            capabilities: self.capabilities.clone(),
            aliases: self.aliases.clone(),
            filename_hints: self.filename_hints.clone(),
            seed_packages: self.seed_packages.clone(),
            pkg: GuestPkg {
                setup: self.pkg.setup.clone(),
                install: self.pkg.install.clone(),
                env: self.pkg.env.clone(),
                runtime_packages: self.pkg.runtime_packages.clone(),
            },
            svc: self.svc.clone(),
            cmd: self.cmd.clone(),
            backend: self
                .backend
                .iter()
                .map(|(name, table)| (name.clone(), table_to_json(table)))
                .collect(),
            source: self.source.as_str().to_owned(),
        }
    }
}

fn table_to_json(table: &toml::Table) -> serde_json::Value {
    serde_json::to_value(table).unwrap_or_else(|_| serde_json::Value::Object(Default::default()))
}

/// Every known guest OS.
#[derive(Debug, Clone)]
pub struct Registry {
    guests: Vec<GuestDef>,
}

impl Registry {
    /// Returns the guest called `name_or_alias` (exact name first, then aliases).
    pub fn get(&self, name_or_alias: &str) -> Option<&GuestDef> {
        self.guests
            .iter()
            .find(|g| g.name == name_or_alias)
            .or_else(|| {
                self.guests
                    .iter()
                    .find(|g| g.aliases.iter().any(|a| a == name_or_alias))
            })
    }

    /// Returns every guest in registry order.
    pub fn all(&self) -> &[GuestDef] {
        &self.guests
    }

    /// Returns every guest's name in registry order.
    pub fn names(&self) -> Vec<&str> {
        self.guests.iter().map(|g| g.name.as_str()).collect()
    }

    /// Returns `get` or a `not_found` error that lists the known names.
    pub fn require(&self, name_or_alias: &str) -> Result<&GuestDef> {
        self.get(name_or_alias).ok_or_else(|| Error::UnknownName {
            kind: "guest OS",
            name: name_or_alias.to_owned(),
            known: self.names().join(", "),
        })
    }

    /// The bundled definitions alone (no data root involved).
    pub fn bundled() -> Registry {
        let guests = BUNDLED
            .iter()
            .map(|(name, text)| {
                parse_def(name, &toml_table(text).unwrap_or_default()).unwrap_or_else(|reason| {
                    panic!("bundled guest {name}.toml is invalid: {reason}")
                })
            })
            .collect();
        Registry { guests }
    }
}

/// Loads the registry: bundled definitions with `<root>/guests/*.toml` merged over them.
/// A user file that does not parse fails with `broken`, naming the file and the reason.
pub fn registry(root: &Root) -> Result<Registry> {
    let mut guests = Registry::bundled().guests;
    let mut user_only = Vec::new();
    for (name, path) in user_files(&root.guests())? {
        let text =
            crate::bounded::read_to_string(&path).context(|| format!("read {}", path.display()))?;
        let broken = |reason: String| Error::BadManifest {
            file: path.display().to_string(),
            reason,
        };
        let user_table = toml_table(&text).map_err(broken)?;
        let bundled_text = BUNDLED.iter().find(|(b, _)| *b == name).map(|(_, t)| *t);
        let (table, source) = match bundled_text {
            Some(bundled) => {
                let mut merged = toml_table(bundled).unwrap_or_default();
                merge(&mut merged, user_table);
                (merged, Source::BundledAndUser)
            }
            None => (user_table, Source::User),
        };
        let mut def = parse_def(&name, &table).map_err(broken)?;
        def.source = source;
        match guests.iter_mut().find(|g| g.name == name) {
            Some(slot) => *slot = def,
            None => user_only.push(def),
        }
    }
    user_only.sort_by(|a, b| a.name.cmp(&b.name));
    guests.extend(user_only);
    check_aliases(&guests)?;
    Ok(Registry { guests })
}

/// Returns `(name, path)` of each `*.toml` in the user guests directory, sorted by name.
fn user_files(dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("read {}", dir.display()), e)),
    };
    let mut files: Vec<(String, std::path::PathBuf)> = entries
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "toml"))
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_owned();
            (!stem.starts_with('.')).then_some((stem, path))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Parses TOML text into a table, with a one-line `line L, column C: ...` reason.
fn toml_table(text: &str) -> std::result::Result<toml::Table, String> {
    toml::from_str::<toml::Table>(text).map_err(|e| one_line(&describe_toml_error(text, &e)))
}

/// Joins a multi-line parser message into one line.
pub(crate) fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Builds a definition from a (merged) table whose file is called `<file_name>.toml`.
fn parse_def(file_name: &str, table: &toml::Table) -> std::result::Result<GuestDef, String> {
    let mut def: GuestDef = toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| one_line(e.message()))?;
    if def.name.is_empty() {
        def.name = file_name.to_owned();
    }
    if def.name != file_name {
        return Err(format!(
            "name = {:?} does not match the file name {file_name}.toml",
            def.name
        ));
    }
    if !valid_guest_name(&def.name) {
        return Err(format!(
            "{:?} is not a valid guest name (letters, digits, '-' and '_')",
            def.name
        ));
    }
    Ok(def)
}

fn valid_guest_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Merges `over` into `base`: tables merge key by key; anything else replaces.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(over_table)) => {
                merge(base_table, over_table)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// An alias must not name another guest or be claimed twice.
fn check_aliases(guests: &[GuestDef]) -> Result<()> {
    let mut seen: BTreeMap<&str, &str> = guests
        .iter()
        .map(|g| (g.name.as_str(), g.name.as_str()))
        .collect();
    for guest in guests {
        for alias in &guest.aliases {
            if let Some(owner) = seen.insert(alias, &guest.name) {
                if owner != guest.name {
                    return Err(Error::BadManifest {
                        file: format!("guests/{}.toml", guest.name),
                        reason: format!(
                            "alias {alias:?} is already the name or an alias of {owner}"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path());
        std::fs::create_dir_all(root.guests()).unwrap();
        for (name, text) in files {
            std::fs::write(root.guests().join(name), text).unwrap();
        }
        (temp, root)
    }

    #[test]
    fn bundled_registry_has_five_guests_in_order_with_capabilities() {
        let registry = Registry::bundled();
        assert_eq!(
            registry.names(),
            ["alpine", "ubuntu", "debian", "fedora", "arch"]
        );
        let caps = |os: &str| registry.get(os).unwrap().capabilities.clone();
        assert_eq!(caps("alpine"), ["apk", "openrc"]);
        assert_eq!(caps("ubuntu"), ["apt", "systemd"]);
        assert_eq!(caps("debian"), ["apt", "systemd"]);
        assert_eq!(caps("fedora"), ["dnf", "systemd"]);
        assert_eq!(caps("arch"), ["pacman", "systemd"]);
        assert!(registry.all().iter().all(|g| g.source == Source::Bundled));
    }

    #[test]
    fn aliases_resolve_and_names_win() {
        let registry = Registry::bundled();
        assert_eq!(registry.get("rpm-family").unwrap().name, "fedora");
        assert!(registry.get("plan9").is_none());
        assert_eq!(
            registry.require("plan9").unwrap_err().code(),
            stoat_wire::ErrorCode::NotFound
        );
    }

    #[test]
    fn user_file_merges_over_bundled_and_adds_new_guests() {
        let (_t, root) = root_with(&[
            (
                "alpine.toml",
                "default_ssh_user = \"stoat\"\n[pkg]\nsetup = \"apk update -q\"\n",
            ),
            ("void.toml", "init = \"runit\"\ncapabilities = [\"xbps\"]\n"),
        ]);
        let registry = registry(&root).unwrap();
        let alpine = registry.get("alpine").unwrap();
        assert_eq!(alpine.source, Source::BundledAndUser);
        assert_eq!(alpine.default_ssh_user, "stoat");
        assert_eq!(alpine.pkg.setup, "apk update -q");
        assert_eq!(
            alpine.pkg.install[0], "apk",
            "untouched keys of a merged table stay"
        );
        let void = registry.get("void").unwrap();
        assert_eq!(void.source, Source::User);
        assert_eq!(registry.names().last(), Some(&"void"));
    }

    #[test]
    fn broken_user_file_names_the_file_and_position() {
        let (_t, root) = root_with(&[("debian.toml", "init = \n")]);
        let err = registry(&root).unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::Broken);
        let text = err.to_string();
        assert!(
            text.contains("debian.toml") && text.contains("line 1"),
            "{text}"
        );
    }

    #[test]
    fn unknown_keys_and_mismatched_names_are_refused() {
        let (_t, root) = root_with(&[("debian.toml", "inti = \"systemd\"\n")]);
        assert!(registry(&root).unwrap_err().to_string().contains("inti"));
        let (_t, root) = root_with(&[("mine.toml", "name = \"other\"\n")]);
        assert!(registry(&root)
            .unwrap_err()
            .to_string()
            .contains("does not match"));
        let (_t, root) = root_with(&[("mine.toml", "aliases = [\"debian\"]\n")]);
        assert!(registry(&root).unwrap_err().to_string().contains("alias"));
    }
}
