//! `stoat.lock`: the commits a project's remote recipes are pinned at, beside stoat.toml and
//! committed with it (json-v3#per-command-data: `lock_out_of_date`, `recipe lock` → `{recipes:[RecipeAdded]}`).
//!
//! ```toml
//! # stoat.lock: written by `stoat recipe lock --project`. Commit it.
//! version = 1
//!
//! [recipe.tailscale]
//! source = "https://github.com/x/stoat-tailscale"
//! ref = "v1.2"
//! commit = "9f3c1e2d4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d"
//! ```
//!
//! A remote recipe is one stoat.toml lists under `[recipes.<name>]`. A declaration that names
//! one is pinned when stoat.lock has that name with the same source and ref; otherwise the
//! fan-outs that run recipes (`up`, `apply`) refuse with `lock_out_of_date` before touching
//! any VM. The remote-recipes code (fetching at a pin) reads pins through [`LockFile::pin`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use stoat_wire::dto::RecipeAdded;

use super::file::{Project, RemoteRecipe};
use crate::git::resolve_commit;
use crate::hint::{Op, Said, Setting, Step};
use crate::{Env, Error, Result};

/// The lock file's name, beside stoat.toml.
pub const LOCK_FILE: &str = "stoat.lock";
/// The format version this build writes and reads.
pub const LOCK_VERSION: u32 = 1;

const HEADER: &str = "# stoat.lock: remote recipe pins for this project, written by\n# `stoat recipe lock --project`. Commit it with stoat.toml.\n";

/// One pinned remote recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub source: String,
    #[serde(rename = "ref", default)]
    pub git_ref: String,
    /// The full 40-hex commit.
    pub commit: String,
}

/// The whole stoat.lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockFile {
    pub version: u32,
    #[serde(default)]
    pub recipe: BTreeMap<String, Pin>,
}

impl Default for LockFile {
    fn default() -> Self {
        LockFile {
            version: LOCK_VERSION,
            recipe: BTreeMap::new(),
        }
    }
}

/// `<dir>/stoat.lock`.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

impl LockFile {
    /// Reads `<dir>/stoat.lock`; no file is an empty lock. A malformed one is `invalid_spec`
    /// naming the file and line.
    pub fn read(dir: &Path) -> Result<LockFile> {
        LockFile::read_file(&lock_path(dir))
    }

    /// Reads a pins file in this format at `path` (stoat.lock, or the global pins file of
    /// `recipes::remote`); no file is an empty lock.
    pub fn read_file(path: &Path) -> Result<LockFile> {
        let path = path.to_path_buf();
        let text = match crate::bounded::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
            Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
        };
        let lock: LockFile = toml::from_str(&text).map_err(|e| {
            Error::InvalidSpec(format!(
                "{}: {}",
                path.display(),
                crate::vm::describe_toml_error(&text, &e)
            ))
        })?;
        if lock.version != LOCK_VERSION {
            return Err(Error::InvalidSpec(format!(
                "{}: version {} is not {LOCK_VERSION}, the one this stoat reads",
                path.display(),
                lock.version
            )));
        }
        Ok(lock)
    }

    /// Writes `<dir>/stoat.lock` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        self.write_file(&lock_path(dir), HEADER)
    }

    /// Writes this lock to `path` atomically, `header` (comment lines) first.
    pub fn write_file(&self, path: &Path, header: &str) -> Result<()> {
        let body = toml::to_string(self)
            .map_err(|e| Error::Internal(format!("render {}: {e}", path.display())))?;
        crate::vm::write_atomically(path, format!("{header}{body}").as_bytes())
    }

    /// The pin of `name`, when there is one.
    pub fn pin(&self, name: &str) -> Option<&Pin> {
        self.recipe.get(name)
    }

    /// Whether `name` is pinned at this source and ref.
    pub fn pins(&self, name: &str, remote: &RemoteRecipe) -> bool {
        self.pin(name)
            .is_some_and(|pin| pin.source == remote.source && pin.git_ref == remote.git_ref)
    }
}

/// `lock_out_of_date` when a declaration names a remote recipe stoat.lock does not pin.
pub fn check(project: &Project, lock: &LockFile) -> Result<()> {
    for decl in &project.vms {
        for recipe in decl.recipes.iter().flatten() {
            let Some(remote) = project.remote_recipes.get(recipe) else {
                continue;
            };
            if !lock.pins(recipe, remote) {
                let lock = Step::alone(Op::RecipeLock).with(Setting::Project, None);
                return Err(Error::spelled(
                    Error::LockOutOfDate,
                    Said::text(format!(
                        "vm.{} uses the remote recipe {recipe} ({} {}), which stoat.lock does not pin; run ",
                        decl.key,
                        remote.source,
                        if remote.git_ref.is_empty() { "default branch" } else { &remote.git_ref }
                    ))
                    .step(lock),
                ));
            }
        }
    }
    Ok(())
}

/// Resolves every `[recipes.*]` of the project to a commit and writes stoat.lock. Pins of
/// recipes no longer listed are dropped. Returns the pins, sorted by name.
pub fn lock_project(env: &Env, project: &Project) -> Result<Vec<RecipeAdded>> {
    let mut lock = LockFile::default();
    for (name, remote) in &project.remote_recipes {
        let commit = resolve_commit(env, &remote.source, &remote.git_ref)?;
        lock.recipe.insert(
            name.clone(),
            Pin {
                source: remote.source.clone(),
                git_ref: remote.git_ref.clone(),
                commit,
            },
        );
    }
    lock.write(&project.dir)?;
    Ok(lock
        .recipe
        .iter()
        .map(|(name, pin)| RecipeAdded {
            name: name.clone(),
            source: pin.source.clone(),
            git_ref: pin.git_ref.clone(),
            commit: pin.commit.clone(),
            scope: "project".into(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::file::Project;

    fn project() -> Project {
        Project::parse(
            "[vm.dev]\nimage = \"x\"\nrecipes = [\"docker\", \"tailscale\"]\n[recipes.tailscale]\nsource = \"https://example.invalid/ts\"\nref = \"v1.2\"\n",
            Path::new("/p"),
        )
        .unwrap()
    }

    #[test]
    fn unpinned_remote_recipes_are_lock_out_of_date() {
        let mut lock = LockFile::default();
        let err = check(&project(), &lock).unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::LockOutOfDate);
        assert!(err.to_string().contains("tailscale"), "{err}");
        let pin = Pin {
            source: "https://example.invalid/ts".into(),
            git_ref: "v1.1".into(),
            commit: "a".repeat(40),
        };
        lock.recipe.insert("tailscale".into(), pin.clone());
        assert!(
            check(&project(), &lock).is_err(),
            "a pin at another ref is stale"
        );
        lock.recipe.insert(
            "tailscale".into(),
            Pin {
                git_ref: "v1.2".into(),
                ..pin
            },
        );
        check(&project(), &lock).unwrap();
    }

    #[test]
    fn round_trips_and_absent_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(LockFile::read(tmp.path()).unwrap(), LockFile::default());
        let mut lock = LockFile::default();
        lock.recipe.insert(
            "ts".into(),
            Pin {
                source: "s".into(),
                git_ref: "".into(),
                commit: "c".repeat(40),
            },
        );
        lock.write(tmp.path()).unwrap();
        let text = crate::bounded::read_to_string(lock_path(tmp.path())).unwrap();
        assert!(text.starts_with("# stoat.lock"), "{text}");
        assert_eq!(LockFile::read(tmp.path()).unwrap(), lock);
        std::fs::write(
            lock_path(tmp.path()),
            "version = 1\n[recipe.x]\nsource = 3\n",
        )
        .unwrap();
        let err = LockFile::read(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("stoat.lock") && err.contains("line 3"),
            "{err}"
        );
    }
}
