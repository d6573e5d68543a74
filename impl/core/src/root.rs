//! The data root: where it is, what lives in it, and which names are reserved.
//!
//! `$STOAT_HOME`, else `$HOME/.stoat`. VMs live directly under it as `<root>/<name>/vm.toml`;
//! `isos recipes shared logs guests` are reserved (design#data-root; `guests` holds user
//! guest OS definitions).

use std::path::{Path, PathBuf};

use crate::error::IoContext;
use crate::{Env, Error, Result};

/// Directory names under the root that are never VMs.
pub const RESERVED: &[&str] = &["isos", "recipes", "shared", "logs", "guests"];

/// The resolved data root.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// Resolves the data root from the environment (it need not exist yet).
    pub fn resolve(env: &Env) -> Result<Root> {
        let dir = match (env.get("STOAT_HOME"), env.home()) {
            (Some(dir), _) => PathBuf::from(dir),
            (None, Some(home)) => home.join(".stoat"),
            (None, None) => {
                return Err(Error::InvalidSpec(
                    "neither STOAT_HOME nor HOME is set".into(),
                ))
            }
        };
        let dir = if dir.is_absolute() {
            dir
        } else {
            std::env::current_dir()
                .context(|| "resolve the data root".into())?
                .join(dir)
        };
        Ok(Root { dir })
    }

    /// Returns a root at `dir` (for tests and tools).
    pub fn at(dir: impl Into<PathBuf>) -> Root {
        Root { dir: dir.into() }
    }

    /// Creates the root and its reserved directories when missing.
    pub fn ensure(&self) -> Result<()> {
        for sub in ["isos", "recipes", "logs"] {
            let dir = self.dir.join(sub);
            std::fs::create_dir_all(&dir).context(|| format!("create {}", dir.display()))?;
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn isos(&self) -> PathBuf {
        self.dir.join("isos")
    }
    pub fn recipes(&self) -> PathBuf {
        self.dir.join("recipes")
    }
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
    /// User guest OS definitions, `<name>.toml` each (made by the user, never by stoat).
    pub fn guests(&self) -> PathBuf {
        self.dir.join("guests")
    }
    /// The writable 9p `work` export of one VM.
    pub fn shared(&self, name: &str) -> PathBuf {
        self.dir.join("shared").join(name)
    }
    pub fn vm_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join(".lock")
    }
    pub fn key_file(&self) -> PathBuf {
        self.dir.join("id_stoat")
    }

    /// Returns whether `name` can never be a VM.
    pub fn is_reserved(name: &str) -> bool {
        RESERVED.contains(&name)
    }
}
