//! Remote recipes: git repositories holding a recipe.toml, cloned, pinned to a full commit and
//! kept at it (json-v3#per-command-data: `recipe add|lock|sync|update|rm`, RecipeAdded, RecipeRemoved,
//! `in_use`, `git_required`; docs/decisions/recipes.md "Remote recipes").
//!
//! Two stores, one code path ([`Store`]):
//! - **global**: clones at `<root>/recipes/.remote/<name>/` (the `global` search root), pins in
//!   `<root>/recipes/.remote/pins.toml`;
//! - **project**: clones at `<project>/.stoat/recipes/<name>/` (per checkout, git-ignored; a
//!   `project` search root), pins in `stoat.lock` and the `[recipes.<name>]` table in
//!   stoat.toml (the project's declaration of the source and ref).
//!
//! Pins files share the stoat.lock format and code ([`LockFile`]); refs resolve through
//! [`resolve_commit`] (`git ls-remote`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stoat_wire::dto::{RecipeAdded, RecipeRemoved};

use super::catalog::{Scope, REMOTE_DIR};
use super::manifest::{Manifest, MANIFEST_FILE};
use super::scaffold::check_recipe_name;
use crate::git::resolve_commit;
use crate::git::{self, Git};
use crate::hint::{Op, Said, Setting, Step};
use crate::project::lock::{LockFile, Pin};
use crate::project::{Project, PROJECT_FILE};
use crate::vm::Loaded;
use crate::{Env, Error, Result, Root};

/// The global pins file, inside the global clones directory.
pub const PINS_FILE: &str = "pins.toml";

const PINS_HEADER: &str = "# pins.toml: the global remote recipes and the commits they are pinned at,\n# written by `stoat recipe add|lock|update|rm`. `stoat recipe sync` re-creates the clones.\n";

/// Where a project's remote recipes are cloned: `<project>/.stoat/recipes/` (stoat's
/// per-checkout directory, which `init` git-ignores).
pub fn project_clones(project_dir: &Path) -> PathBuf {
    project_dir.join(".stoat").join("recipes")
}

/// Where the global remote recipes are cloned.
pub fn global_clones(root: &Root) -> PathBuf {
    root.recipes().join(REMOTE_DIR)
}

/// One store of remote recipes: its clones, its pins, and (project) its stoat.toml.
pub struct Store {
    pub scope: Scope,
    pub clones: PathBuf,
    pins_path: PathBuf,
    project: Option<Project>,
}

impl Store {
    /// The global store under the data root.
    pub fn global(root: &Root) -> Store {
        let clones = global_clones(root);
        Store {
            scope: Scope::Global,
            pins_path: clones.join(PINS_FILE),
            clones,
            project: None,
        }
    }

    /// A project's store.
    pub fn project(project: Project) -> Store {
        Store {
            scope: Scope::Project,
            clones: project_clones(&project.dir),
            pins_path: crate::project::lock::lock_path(&project.dir),
            project: Some(project),
        }
    }

    fn read_pins(&self) -> Result<LockFile> {
        LockFile::read_file(&self.pins_path)
    }

    fn write_pins(&self, pins: &LockFile) -> Result<()> {
        match &self.project {
            Some(project) => pins.write(&project.dir),
            None => pins.write_file(&self.pins_path, PINS_HEADER),
        }
    }

    /// Serialises writers of this store (two `recipe add` at once must not race).
    fn lock(&self) -> Result<crate::lock::LockGuard> {
        std::fs::create_dir_all(&self.clones)
            .map_err(|e| Error::io(format!("create {}", self.clones.display()), e))?;
        crate::lock::exclusive(&self.clones.join(".lock"))
    }

    fn added(&self, name: &str, pin: &Pin) -> RecipeAdded {
        RecipeAdded {
            name: name.to_owned(),
            source: pin.source.clone(),
            git_ref: pin.git_ref.clone(),
            commit: pin.commit.clone(),
            scope: self.scope.as_str().to_owned(),
        }
    }

    /// The (source, ref) each name is declared with: stoat.toml for a project, the pins
    /// file for the global store.
    fn declared(&self, pins: &LockFile) -> BTreeMap<String, (String, String)> {
        match &self.project {
            Some(project) => project
                .remote_recipes
                .iter()
                .map(|(n, r)| (n.clone(), (r.source.clone(), r.git_ref.clone())))
                .collect(),
            None => pins
                .recipe
                .iter()
                .map(|(n, p)| (n.clone(), (p.source.clone(), p.git_ref.clone())))
                .collect(),
        }
    }
}

/// `recipe add <url> [--ref R]`: clones `source`, checks out the ref (default: the remote's
/// HEAD), requires a valid recipe.toml, and pins it under the manifest's name. Nothing is
/// left behind on any failure.
pub fn add(env: &Env, store: &Store, source: &str, git_ref: Option<&str>) -> Result<RecipeAdded> {
    let git = Git::find(env)?;
    let source = absolute_source(source.trim());
    let source = source.as_str();
    if source.is_empty() {
        return Err(Error::InvalidSpec("recipe add needs a git URL".into()));
    }
    let git_ref = git_ref.unwrap_or("").trim().to_owned();
    let commit = resolve_commit(env, source, &git_ref)?;
    let _guard = store.lock()?;
    let staging = stage_clone(&git, store, source, &commit)?;
    let manifest = valid_manifest(staging.path(), source, &commit)?;
    let name = manifest.name.clone();
    check_recipe_name(&name)?;
    let mut pins = store.read_pins()?;
    refuse_taken(store, &pins, &name)?;
    let pin = Pin {
        source: source.to_owned(),
        git_ref,
        commit,
    };
    let dest = store.clones.join(&name);
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &dest) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(Error::io(
            format!("move the clone to {}", dest.display()),
            e,
        ));
    }
    let previous = pins.clone();
    pins.recipe.insert(name.clone(), pin.clone());
    let recorded = store.write_pins(&pins).and_then(|()| match &store.project {
        Some(project) => declare_in_project(project, &name, &pin),
        None => Ok(()),
    });
    if let Err(err) = recorded {
        let _ = std::fs::remove_dir_all(&dest);
        let _ = store.write_pins(&previous);
        return Err(err);
    }
    Ok(store.added(&name, &pin))
}

/// A local repository path as an absolute one, so the pin works from any directory; URLs
/// (`scheme://`, `host:path`) are kept as given.
fn absolute_source(source: &str) -> String {
    let is_url =
        source.contains("://") || source.split('/').next().is_some_and(|h| h.contains(':'));
    if is_url {
        return source.to_owned();
    }
    std::fs::canonicalize(source)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| source.to_owned())
}

/// A fresh clone of `source` at `commit` in a hidden directory of the store (skipped by the
/// catalog, removed on drop unless kept).
fn stage_clone(git: &Git, store: &Store, source: &str, commit: &str) -> Result<tempfile::TempDir> {
    let staging = tempfile::Builder::new()
        .prefix(".clone-")
        .tempdir_in(&store.clones)
        .map_err(|e| Error::io(format!("make a directory in {}", store.clones.display()), e))?;
    git.clone_at(source, staging.path(), commit)?;
    Ok(staging)
}

/// The manifest at the top of a clone; its absence or invalidity is `invalid_spec`.
fn valid_manifest(dir: &Path, source: &str, commit: &str) -> Result<Manifest> {
    let short = &commit[..commit.len().min(7)];
    if !dir.join(MANIFEST_FILE).is_file() {
        return Err(Error::InvalidSpec(format!(
            "{source} at {short} has no {MANIFEST_FILE} at its top level, so it is not a recipe"
        )));
    }
    let invalid = |why: String| {
        Error::InvalidSpec(format!(
            "{source} at {short} is not a valid recipe: {}",
            relative_to_clone(&why, dir)
        ))
    };
    let manifest = Manifest::load(dir).map_err(|err| invalid(err.to_string()))?;
    super::manifest::check_recipe_files(dir, &manifest).map_err(|why| invalid(why.to_string()))?;
    Ok(manifest)
}

/// `text` with the staging clone's own path taken out: a file of the recipe is named by
/// its path inside the repository (`recipe.toml`, `scripts/x.sh`), never by where this
/// data root keeps a clone for a moment (docs/decisions/recipes.md).
fn relative_to_clone(text: &str, dir: &Path) -> String {
    let mut text = text.to_owned();
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(dir) {
        if real != dir {
            dirs.push(real);
        }
    }
    for dir in dirs {
        let shown = dir.display().to_string();
        text = text.replace(&format!("{shown}/"), "").replace(&shown, ".");
    }
    text
}

/// `name_taken` when the store already has `name` (pinned, cloned, or, in a project,
/// declared or hand-written in `<project>/recipes/`).
fn refuse_taken(store: &Store, pins: &LockFile, name: &str) -> Result<()> {
    let taken = |why: String| {
        Err(Error::NameTaken {
            name: format!("recipe {name} ({why})"),
        })
    };
    if let Some(pin) = pins.pin(name) {
        return taken(format!(
            "added from {}; `stoat recipe update {name}` moves it",
            pin.source
        ));
    }
    if store.clones.join(name).exists() {
        return taken(format!("{} exists", store.clones.join(name).display()));
    }
    if let Some(project) = &store.project {
        if project.remote_recipes.contains_key(name) {
            let sync = Step::alone(Op::RecipeSync).with(Setting::Project, None);
            return Err(Error::spelled(
                name_taken,
                Said::text(format!(
                    "recipe {name} ({PROJECT_FILE} already declares [recipes.{name}]; run "
                ))
                .step(sync)
                .then(")"),
            ));
        }
        let own = project.dir.join("recipes").join(name);
        if own.exists() {
            return taken(format!("the project has its own {}", own.display()));
        }
    }
    Ok(())
}

/// `name_taken` with its text, as [`Error::spelled`] builds it.
fn name_taken(name: String) -> Error {
    Error::NameTaken { name }
}

/// Adds `[recipes.<name>] source, ref` to stoat.toml, keeping the rest of the file as is.
fn declare_in_project(project: &Project, name: &str, pin: &Pin) -> Result<()> {
    edit_project_file(project, |doc| {
        let recipes = doc
            .entry("recipes")
            .or_insert_with(|| {
                let mut table = toml_edit::Table::new();
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            })
            .as_table_mut()
            .ok_or_else(|| {
                Error::InvalidSpec(format!("{PROJECT_FILE}: `recipes` is not a table"))
            })?;
        let mut table = toml_edit::Table::new();
        table.insert("source", toml_edit::value(pin.source.as_str()));
        if !pin.git_ref.is_empty() {
            table.insert("ref", toml_edit::value(pin.git_ref.as_str()));
        }
        recipes.insert(name, toml_edit::Item::Table(table));
        Ok(())
    })
}

/// Removes `[recipes.<name>]` from stoat.toml.
fn undeclare_in_project(project: &Project, name: &str) -> Result<()> {
    edit_project_file(project, |doc| {
        if let Some(recipes) = doc.get_mut("recipes").and_then(|i| i.as_table_like_mut()) {
            recipes.remove(name);
            if recipes.is_empty() {
                doc.remove("recipes");
            }
        }
        Ok(())
    })
}

/// Edits stoat.toml through `toml_edit` (comments and order kept), checks that the result
/// still parses as a project, and writes it atomically.
fn edit_project_file(
    project: &Project,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<()>,
) -> Result<()> {
    let path = project.dir.join(PROJECT_FILE);
    let text = crate::bounded::read_to_string(&path)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| Error::InvalidSpec(format!("{}: {e}", path.display())))?;
    edit(&mut doc)?;
    let edited = doc.to_string();
    Project::parse(&edited, &project.dir)?;
    crate::vm::write_atomically(&path, edited.as_bytes())
}

/// `recipe sync`: every pinned recipe cloned (when missing) and checked out at its pin.
pub fn sync(env: &Env, store: &Store) -> Result<Vec<RecipeAdded>> {
    let pins = store.read_pins()?;
    if pins.recipe.is_empty() {
        return Ok(Vec::new());
    }
    let git = Git::find(env)?;
    let _guard = store.lock()?;
    pins.recipe
        .iter()
        .map(|(name, pin)| {
            ensure_at(&git, store, name, pin)?;
            Ok(store.added(name, pin))
        })
        .collect()
}

/// Puts the clone of `name` at `pin.commit`: a new clone when it is missing.
fn ensure_at(git: &Git, store: &Store, name: &str, pin: &Pin) -> Result<()> {
    check_recipe_name(name)?;
    let dest = store.clones.join(name);
    if dest.exists() {
        return git.move_to(&dest, &pin.source, &pin.commit);
    }
    let staging = stage_clone(git, store, &pin.source, &pin.commit)?;
    valid_manifest(staging.path(), &pin.source, &pin.commit)?;
    let staged = staging.keep();
    std::fs::rename(&staged, &dest).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io(format!("move the clone to {}", dest.display()), e)
    })
}

/// `recipe lock` for the global store: each pin's ref re-resolved to its newest commit and
/// recorded. The clones are not moved (`recipe sync` does that). The project form is
/// `project::lock::lock_project`.
pub fn lock_global(env: &Env, store: &Store) -> Result<Vec<RecipeAdded>> {
    let _guard = store.lock()?;
    let mut pins = store.read_pins()?;
    for pin in pins.recipe.values_mut() {
        pin.commit = resolve_commit(env, &pin.source, &pin.git_ref)?;
    }
    store.write_pins(&pins)?;
    Ok(pins
        .recipe
        .iter()
        .map(|(name, pin)| store.added(name, pin))
        .collect())
}

/// `recipe update [name]`: each (or the named) recipe moved to its ref's newest commit and
/// re-pinned. In a project the source and ref come from stoat.toml.
pub fn update(env: &Env, store: &Store, only: Option<&str>) -> Result<Vec<RecipeAdded>> {
    let git = Git::find(env)?;
    let _guard = store.lock()?;
    let mut pins = store.read_pins()?;
    let declared = store.declared(&pins);
    if let Some(name) = only {
        if !declared.contains_key(name) {
            return Err(unknown(store, name, declared.keys()));
        }
    }
    let mut updated = Vec::new();
    for (name, (source, git_ref)) in &declared {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let pin = Pin {
            source: source.clone(),
            git_ref: git_ref.clone(),
            commit: resolve_commit(env, source, git_ref)?,
        };
        ensure_at(&git, store, name, &pin)?;
        pins.recipe.insert(name.clone(), pin.clone());
        // Written after each recipe: one that fails later leaves the earlier ones recorded.
        store.write_pins(&pins)?;
        updated.push(store.added(name, &pin));
    }
    Ok(updated)
}

/// `recipe rm <name>`: `in_use` while a VM (or, in a project, a declaration) lists it;
/// otherwise the clone, the pin and (project) the `[recipes.<name>]` table go.
pub fn rm(root: &Root, store: &Store, name: &str) -> Result<RecipeRemoved> {
    let _guard = store.lock()?;
    let mut pins = store.read_pins()?;
    let dest = store.clones.join(name);
    let declared_in_project = store
        .project
        .as_ref()
        .is_some_and(|p| p.remote_recipes.contains_key(name));
    let known = pins.pin(name).is_some() || declared_in_project;
    if check_recipe_name(name).is_err() || !(known || dest.join(MANIFEST_FILE).is_file()) {
        return Err(unknown(store, name, pins.recipe.keys()));
    }
    let users = users_of(root, store, name)?;
    if !users.is_empty() {
        return Err(Error::InUse(format!(
            "recipe {name} is still listed by {}; remove it from them first",
            users.join(", ")
        )));
    }
    if dest.exists() {
        std::fs::remove_dir_all(&dest)
            .map_err(|e| Error::io(format!("remove {}", dest.display()), e))?;
    }
    if pins.recipe.remove(name).is_some() {
        store.write_pins(&pins)?;
    }
    if let (Some(project), true) = (&store.project, declared_in_project) {
        undeclare_in_project(project, name)?;
    }
    Ok(RecipeRemoved {
        name: name.to_owned(),
        scope: store.scope.as_str().to_owned(),
    })
}

/// Who lists `name`: `VM <name>` for every VM whose vm.toml lists it, and in a project
/// `vm.<key> in stoat.toml` for every declaration that does.
fn users_of(root: &Root, store: &Store, name: &str) -> Result<Vec<String>> {
    let mut users: Vec<String> = crate::vm::list(root)?
        .into_iter()
        .filter_map(|loaded| match loaded {
            Loaded::Ok(vm) if vm.config.recipes.iter().any(|r| r == name) => {
                Some(format!("VM {}", vm.name))
            }
            _ => None,
        })
        .collect();
    if let Some(project) = &store.project {
        users.extend(
            project
                .vms
                .iter()
                .filter(|d| d.recipes.iter().flatten().any(|r| r == name))
                .map(|d| format!("vm.{} in {PROJECT_FILE}", d.key)),
        );
    }
    Ok(users)
}

fn unknown<'a>(store: &Store, name: &str, known: impl Iterator<Item = &'a String>) -> Error {
    let known: Vec<&str> = known.map(String::as_str).collect();
    Error::UnknownName {
        kind: match store.scope {
            Scope::Project => "project remote recipe",
            _ => "global remote recipe",
        },
        name: name.to_owned(),
        known: if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        },
    }
}

/// The pins of every remote clone directory the catalog may list, by clone directory, for
/// `recipe list`'s source/ref/commit. A pins file that does not read is skipped (listing
/// must not fail on it; the commands that write pins report it).
pub fn pins_by_dir(root: &Root, project_dir: Option<&Path>) -> BTreeMap<PathBuf, Pin> {
    let mut stores = vec![(global_clones(root), global_clones(root).join(PINS_FILE))];
    if let Some(dir) = project_dir {
        stores.push((project_clones(dir), crate::project::lock::lock_path(dir)));
    }
    let mut out = BTreeMap::new();
    for (clones, pins_path) in stores {
        let Ok(pins) = LockFile::read_file(&pins_path) else {
            continue;
        };
        for (name, mut pin) in pins.recipe {
            let dir = clones.join(&name);
            // What is checked out is what runs; the pin is the fallback.
            if let Some(head) = git::head(&dir) {
                pin.commit = head;
            }
            out.insert(dir, pin);
        }
    }
    out
}
