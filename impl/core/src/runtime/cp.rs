//! `cp`: copy a file to or from the guest with the system `scp` (docs/contract.md behaviour#ssh). The
//! local path is made absolute (`~` expanded, relative to the cwd, lexically cleaned) but
//! never resolved through symlinks; the remote path is passed as given. scp goes through the
//! VM's reused connection when it can (`host::ssh_mux`).

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use stoat_wire::dto::{CopyDirection, CpData};

use super::{load_running, tool, wait};
use crate::host::ssh_argv::{remote_spec, scp_args_with};
use crate::host::ssh_mux::Mux;
use crate::{keys, vm, Cancel, Env, Error, Result, Root};

/// One copy request, already parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRequest {
    pub vm: String,
    pub direction: CopyDirection,
    pub local: String,
    pub remote: String,
}

/// Copies and returns the wire data (`local` absolute).
pub fn copy(
    root: &Root,
    env: &Env,
    cwd: &Path,
    request: &CopyRequest,
    reach_wait: std::time::Duration,
    cancel: &Cancel,
) -> Result<CpData> {
    if request.local.is_empty() {
        return Err(Error::InvalidSpec("cp: the local path is empty".into()));
    }
    if request.remote.is_empty() {
        return Err(Error::InvalidSpec("cp: the guest path is empty".into()));
    }
    vm::check_name(&request.vm).map_err(|_| Error::NotFound {
        name: request.vm.clone(),
    })?;
    let local = absolute_local(env, cwd, &request.local)?;
    let (stored, _pid) = load_running(root, &request.vm)?;
    let key = keys::ensure(root, env)?;
    let scp = tool(env, "scp", "openssh-client")?;
    let mux = Mux::for_vm(&key, &stored);
    // A master that answers holds a live login to the guest: no need to probe its sshd.
    if !mux.answers() {
        wait::until_reachable(&stored, reach_wait, cancel)?;
    }
    let remote = remote_spec(&stored, &request.remote);
    let route = mux.route();
    let mut command = Command::new(scp);
    route.configure(&mut command);
    command.args(scp_args_with(&key, &stored, route.options()));
    match request.direction {
        CopyDirection::ToGuest => command.arg(&local).arg(&remote),
        CopyDirection::FromGuest => command.arg(&remote).arg(&local),
    };
    command.env("PATH", env.path_var()).stdin(Stdio::null());
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error(&format!("{}: scp", stored.name)))?;
    drop(route);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(Error::Tool {
            tool: "scp".into(),
            message: format!(
                "{}: {}",
                stored.name,
                if stderr.is_empty() {
                    output.status.to_string()
                } else {
                    stderr
                }
            ),
        });
    }
    Ok(CpData {
        vm: stored.name,
        direction: request.direction,
        local: local.to_string_lossy().into_owned(),
        remote: request.remote.clone(),
    })
}

/// `~` against HOME, relative against `cwd`, `.` and `..` removed lexically (like Go's
/// filepath.Abs), never through the file system.
pub fn absolute_local(env: &Env, cwd: &Path, local: &str) -> Result<PathBuf> {
    let expanded = env.expand_tilde(local)?;
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    let mut clean = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                clean.pop();
            }
            Component::Normal(part) => clean.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_become_absolute_lexically() {
        let env = Env::from_pairs([("HOME", "/home/u")]);
        let cwd = Path::new("/work/dir");
        assert_eq!(
            absolute_local(&env, cwd, "a.txt").unwrap(),
            PathBuf::from("/work/dir/a.txt")
        );
        assert_eq!(
            absolute_local(&env, cwd, "../b/./c").unwrap(),
            PathBuf::from("/work/b/c")
        );
        assert_eq!(
            absolute_local(&env, cwd, "~/x").unwrap(),
            PathBuf::from("/home/u/x")
        );
        let homeless = Env::from_pairs([]);
        assert!(absolute_local(&homeless, cwd, "~/x").is_err());
        assert_eq!(
            absolute_local(&homeless, cwd, "~x").unwrap(),
            PathBuf::from("/work/dir/~x")
        );
        assert_eq!(
            absolute_local(&env, cwd, "/abs").unwrap(),
            PathBuf::from("/abs")
        );
    }
}
