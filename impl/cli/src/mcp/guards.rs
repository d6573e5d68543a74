//! The MCP server's guards, pure where they can be: the agent_access level each tool class
//! needs (core's `app::mcp` checks a VM's level against it), VM name and image id shapes,
//! fields an agent may not set, and host-path confinement of the copy tools to
//! `<root>/shared/<vm>` (docs/contract.md behaviour#mcp; json-v3#per-command-data: agent_access).

use std::path::{Component, Path, PathBuf};

use stoat_core::{Env, Error, Result, Root};
use stoat_wire::dto::AgentAccess;

/// What a tool does, which decides its annotations and the access level it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    ReadOnly,
    Mutating,
    Destructive,
    Execution,
}

impl Class {
    /// The lowest agent_access level that allows this class on a VM.
    pub fn needs(self) -> AgentAccess {
        match self {
            Class::ReadOnly => AgentAccess::Observe,
            Class::Mutating | Class::Destructive => AgentAccess::Manage,
            Class::Execution => AgentAccess::Exec,
        }
    }
}

/// Fields `update` may never change through MCP: the upstream list plus the two that would let
/// an agent raise its own access.
pub const FORBIDDEN_UPDATE: &[&str] = &[
    "share",
    "image",
    "base",
    "iso",
    "console_password",
    "agent_access",
    "allow_exec",
];

/// Fields `create` may never set through MCP (a BYO image path is refused by the image id rule).
pub const FORBIDDEN_CREATE: &[&str] = &["share", "console_password", "base", "iso"];

/// Refuses with `access_denied` when `args` names a forbidden field.
pub fn refuse_forbidden(
    tool: &str,
    forbidden: &[&str],
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    match forbidden.iter().find(|field| args.contains_key(**field)) {
        Some(field) => Err(Error::AccessDenied(format!(
            "{tool} may not set {field} through MCP; a person can, with the stoat CLI"
        ))),
        None => Ok(()),
    }
}

/// True for `^[A-Za-z0-9][A-Za-z0-9._-]*$`: no whitespace, separators, NUL, `.` or `..`.
pub fn is_plain_name(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Refuses a VM name that is not a plain name (`invalid_spec`).
pub fn check_vm_name(name: &str) -> Result<()> {
    if is_plain_name(name) {
        return Ok(());
    }
    Err(Error::InvalidSpec(format!(
        "{name:?} is not a VM name: use letters, digits, '.', '_' and '-', starting with a letter or digit"
    )))
}

/// Refuses an image that is not a catalog id or a bare file name in isos/ (no paths, no `~`).
pub fn check_image_id(image: &str) -> Result<()> {
    if is_plain_name(image) {
        return Ok(());
    }
    Err(Error::InvalidSpec(format!(
        "{image:?} is not an image id: MCP takes a catalog id or a file name in isos/, never a path"
    )))
}

/// Checks a project tool's `dir`: an absolute path to an existing directory.
pub fn project_dir(dir: &str) -> Result<std::path::PathBuf> {
    let path = std::path::PathBuf::from(dir);
    if !path.is_absolute() {
        return Err(Error::Usage(format!(
            "dir {dir:?} must be an absolute path"
        )));
    }
    if !path.is_dir() {
        return Err(Error::NotFound {
            name: format!("project directory {dir}"),
        });
    }
    Ok(path)
}

/// Resolves a copy tool's host path and confines it to `<root>/shared/<vm>` (created when
/// missing). A relative path is relative to that directory. `..` is refused outright; the
/// path is resolved through the file system (an existing path in full, else its parent) and
/// compared by components, so neither a symlink nor `shared/<vm>-evil` escapes.
pub fn confine_host_path(env: &Env, root: &Root, vm: &str, raw: &str) -> Result<PathBuf> {
    if raw.is_empty() || raw.contains('\0') {
        return Err(Error::InvalidSpec(format!("{raw:?} is not a host path")));
    }
    let expanded = env.expand_tilde(raw)?;
    if expanded.components().any(|c| c == Component::ParentDir) {
        return Err(escape(raw, vm, "`..` is not allowed"));
    }
    let export = root.shared(vm);
    std::fs::create_dir_all(&export).map_err(|e| Error::io(format!("create shared/{vm}"), e))?;
    let export_real =
        std::fs::canonicalize(&export).map_err(|e| Error::io(format!("resolve shared/{vm}"), e))?;
    let candidate = if expanded.is_absolute() {
        expanded
    } else {
        export_real.join(expanded)
    };
    // Lexically outside: refuse before touching the file system (no existence oracle).
    if !candidate.starts_with(&export) && !candidate.starts_with(&export_real) {
        return Err(escape(raw, vm, "it is outside the VM's export"));
    }
    let resolved = resolve(&candidate, raw, vm)?;
    if !resolved.starts_with(&export_real) {
        return Err(escape(raw, vm, "it resolves outside the VM's export"));
    }
    Ok(resolved)
}

/// The real path of `candidate`, or of its parent joined with its file name when it does
/// not exist yet. A dangling symlink is refused: scp would write through it.
fn resolve(candidate: &Path, raw: &str, vm: &str) -> Result<PathBuf> {
    match std::fs::canonicalize(candidate) {
        Ok(real) => return Ok(real),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(format!("resolve {raw}"), e))
        }
        Err(_) => {}
    }
    if candidate.symlink_metadata().is_ok() {
        return Err(escape(raw, vm, "it is a symlink to nowhere"));
    }
    let (Some(parent), Some(file_name)) = (candidate.parent(), candidate.file_name()) else {
        return Err(Error::InvalidSpec(format!("{raw:?} names no file")));
    };
    let parent_real = std::fs::canonicalize(parent).map_err(|_| {
        Error::InvalidSpec(format!(
            "the directory holding {raw:?} does not exist in shared/{vm}"
        ))
    })?;
    Ok(parent_real.join(file_name))
}

fn escape(raw: &str, vm: &str, why: &str) -> Error {
    Error::AccessDenied(format!(
        "host path {raw:?} refused: {why}; copy tools only reach <stoat home>/shared/{vm}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names() {
        for good in ["work", "a", "web-1", "x_y.z", "9lives", "debian-12.qcow2"] {
            assert!(is_plain_name(good), "{good}");
        }
        for bad in [
            "", ".", "..", "-x", ".hidden", "a/b", "/abs", "~/img", " work", "work ", "a\0b",
            "a b", "../x", "é",
        ] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
        assert_eq!(
            check_image_id("/tmp/x.qcow2").unwrap_err().code(),
            stoat_wire::ErrorCode::InvalidSpec
        );
    }

    #[test]
    fn classes_map_to_levels() {
        use AgentAccess::*;
        assert_eq!(Class::ReadOnly.needs(), Observe);
        assert_eq!(Class::Mutating.needs(), Manage);
        assert_eq!(Class::Destructive.needs(), Manage);
        assert_eq!(Class::Execution.needs(), Exec);
    }

    #[test]
    fn forbidden_fields_are_refused() {
        let args: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"vm":"w","share":"/etc"}"#).unwrap();
        let err = refuse_forbidden("update", FORBIDDEN_UPDATE, &args).unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::AccessDenied);
        for field in [
            "image",
            "base",
            "iso",
            "console_password",
            "agent_access",
            "allow_exec",
        ] {
            let mut args = serde_json::Map::new();
            args.insert(field.into(), serde_json::Value::Null);
            assert!(refuse_forbidden("update", FORBIDDEN_UPDATE, &args).is_err());
        }
        let ok: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"vm":"w","cpus":2}"#).unwrap();
        assert!(refuse_forbidden("update", FORBIDDEN_UPDATE, &ok).is_ok());
    }

    fn fixture() -> (tempfile::TempDir, Root, Env) {
        let temp = tempfile::tempdir().unwrap();
        let root = Root::at(temp.path().join("stoat"));
        root.ensure().unwrap();
        let env = Env::from_pairs([("HOME", temp.path().to_str().unwrap())]);
        (temp, root, env)
    }

    #[test]
    fn host_paths_stay_in_the_export() {
        let (temp, root, env) = fixture();
        let export = std::fs::canonicalize({
            std::fs::create_dir_all(root.shared("work")).unwrap();
            root.shared("work")
        })
        .unwrap();
        std::fs::write(export.join("in.txt"), "x").unwrap();
        let inside = confine_host_path(&env, &root, "work", "in.txt").unwrap();
        assert_eq!(inside, export.join("in.txt"));
        let new_file = export.join("new.txt");
        assert_eq!(
            confine_host_path(&env, &root, "work", new_file.to_str().unwrap()).unwrap(),
            new_file
        );
        let denied = |raw: &str| {
            confine_host_path(&env, &root, "work", raw)
                .unwrap_err()
                .code()
        };
        use stoat_wire::ErrorCode::{AccessDenied, InvalidSpec};
        assert_eq!(denied("../other/x"), AccessDenied);
        assert_eq!(
            denied(&format!("{}/../../etc/passwd", export.display())),
            AccessDenied
        );
        assert_eq!(denied("/etc/passwd"), AccessDenied);
        assert_eq!(denied("~/secret"), AccessDenied);
        // a sibling whose name merely starts with the VM's name
        std::fs::create_dir_all(root.shared("work-evil")).unwrap();
        assert_eq!(
            denied(root.shared("work-evil").join("x").to_str().unwrap()),
            AccessDenied
        );
        // symlinks out, to a file, a directory, and nowhere
        let outside = temp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), export.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, export.join("dir")).unwrap();
        std::os::unix::fs::symlink(outside.join("nope"), export.join("dangling")).unwrap();
        assert_eq!(denied("link"), AccessDenied);
        assert_eq!(denied("dir/secret"), AccessDenied);
        assert_eq!(denied("dir/new"), AccessDenied);
        assert_eq!(denied("dangling"), AccessDenied);
        assert_eq!(denied(""), InvalidSpec);
        assert_eq!(denied("missing-dir/x"), InvalidSpec);
    }
}
