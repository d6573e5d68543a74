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

/// Makes a file owner-only (0600), whatever the umask it was made under.
pub fn make_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        Error::io(
            format!(
                "chmod {}",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
            e,
        )
    })
}

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

    /// Creates the root (owner-only) and its reserved directories when missing. A root this
    /// user cannot write (a read-only mount, another user's directory), or cannot even create,
    /// is left as it is, so commands that only read still work (a root that does not exist
    /// holds nothing); a command that writes fails where it writes.
    pub fn ensure(&self) -> Result<()> {
        if let Err(e) = self.ensure_dir() {
            let uncreatable =
                matches!(std::fs::create_dir_all(&self.dir), Err(ref e) if cannot_write(e));
            return if self.dir.is_dir() || uncreatable {
                Ok(())
            } else {
                Err(e)
            };
        }
        for sub in ["isos", "recipes", "logs"] {
            let dir = self.dir.join(sub);
            match std::fs::create_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if cannot_write(&e) => {}
                Err(e) => return Err(Error::io(format!("create {}", dir.display()), e)),
            }
        }
        Ok(())
    }

    /// Creates the root directory itself when missing and keeps it owner-only (0700), whatever
    /// the umask: it holds VM disks, seeds with passwords, and the ssh key.
    pub fn ensure_dir(&self) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.dir).context(|| format!("create {}", self.dir.display()))?;
        let meta =
            std::fs::metadata(&self.dir).context(|| format!("inspect {}", self.dir.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .context(|| format!("make {} owner-only", self.dir.display()))?;
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

    /// Returns whether `name` can never be a VM: a reserved directory, or a hidden name
    /// (stoat's own `.lock`, `.staging`, ...).
    pub fn is_reserved(name: &str) -> bool {
        RESERVED.contains(&name) || name.starts_with('.')
    }
}

/// Errors that mean "this user may not write here", as opposed to a real failure.
fn cannot_write(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}
