//! `cp`: copy files and trees to or from the guest with the system `scp` (docs/contract.md
//! behaviour#ssh, docs/decisions/runtime.md "cp"). Local paths are made absolute (`~`
//! expanded, relative to the cwd, lexically cleaned) but never resolved through symlinks; guest
//! paths are passed as given. scp goes through the VM's reused connection when it can
//! (`ssh::mux`). What scp would do half of, or explain badly, stoat finds itself: a host
//! directory without `-r`, before anything runs; with several sources, a guest directory
//! without `-r` or a destination that is not a directory, by asking the guest first; with one
//! source, whether a failed scp (which copied nothing) met a guest directory.

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use stoat_wire::dto::{CopyDirection, CpData};

use crate::ssh::argv::{quote_remote_command, remote_spec, scp_args_with, ssh_args_with};
use crate::ssh::mux::Mux;
use crate::ssh::reach::{reach, FirstContact, Reached};
use crate::vm::StoredVm;
use crate::{vm, Cancel, Env, Error, Result, Root};

/// One copy of one source, already parsed (the MCP tools' and the flag form's request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRequest {
    pub vm: String,
    pub direction: CopyDirection,
    pub local: String,
    pub remote: String,
}

/// `cp [-r] SRC... DST`, already parsed: every source on one side, the destination on the
/// other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub vm: String,
    pub direction: CopyDirection,
    /// Host paths (to the guest) or guest paths (from it).
    pub sources: Vec<String>,
    /// A guest path (to the guest) or a host path (from it).
    pub destination: String,
    /// Copy directories and what they hold (scp's `-r`).
    pub recursive: bool,
}

impl From<&CopyRequest> for Transfer {
    fn from(request: &CopyRequest) -> Transfer {
        let (source, destination) = match request.direction {
            CopyDirection::ToGuest => (&request.local, &request.remote),
            CopyDirection::FromGuest => (&request.remote, &request.local),
        };
        Transfer {
            vm: request.vm.clone(),
            direction: request.direction,
            sources: vec![source.clone()],
            destination: destination.clone(),
            recursive: false,
        }
    }
}

/// Copies one source and returns the wire data (`local` absolute).
pub fn copy(
    root: &Root,
    env: &Env,
    cwd: &Path,
    request: &CopyRequest,
    reach_wait: std::time::Duration,
    cancel: &Cancel,
) -> Result<CpData> {
    let mut copied = transfer(root, env, cwd, &Transfer::from(request), reach_wait, cancel)?;
    copied
        .pop()
        .ok_or_else(|| Error::Internal("cp copied nothing".into()))
}

/// Copies every source (one scp run each) and returns one wire record per source, in order: its
/// local path (absolute) and its guest path.
pub fn transfer(
    root: &Root,
    env: &Env,
    cwd: &Path,
    request: &Transfer,
    reach_wait: std::time::Duration,
    cancel: &Cancel,
) -> Result<Vec<CpData>> {
    let to_guest = request.direction == CopyDirection::ToGuest;
    if request.sources.is_empty() {
        return Err(Error::InvalidSpec("cp needs a source".into()));
    }
    let (locals, remotes) = if to_guest {
        (
            request.sources.clone(),
            std::slice::from_ref(&request.destination),
        )
    } else {
        (vec![request.destination.clone()], &request.sources[..])
    };
    if locals.iter().any(String::is_empty) {
        return Err(Error::InvalidSpec("cp: the local path is empty".into()));
    }
    if remotes.iter().any(String::is_empty) {
        return Err(Error::InvalidSpec("cp: the guest path is empty".into()));
    }
    vm::check_name(&request.vm).map_err(|_| Error::NotFound {
        name: request.vm.clone(),
    })?;
    let locals = locals
        .iter()
        .map(|local| absolute_local(env, cwd, local))
        .collect::<Result<Vec<_>>>()?;
    check_host_side(request, &locals)?;
    let Reached {
        stored,
        key,
        client: scp,
        mux,
    } = reach(
        root,
        env,
        &request.vm,
        "scp",
        FirstContact::LogIn,
        reach_wait,
        cancel,
    )?;
    // One source costs no extra round trip: scp fails on a directory without copying
    // anything, and the guest is asked only then, to say why. Several are checked first.
    let several = request.sources.len() > 1;
    if several {
        check_guest_side(env, &key, &mux, &stored, request)?;
    }
    // One scp per source, each way: scp opens a session per remote source anyway, and a
    // dropbear guest closes a session that opens while the last one is still closing (about
    // one two-source copy in four through a reused connection), which an scp of its own per
    // source never does: it ends only once its session has. Per source, too, a failure names
    // exactly what was copied and what was not, and a dropped connection is retried for the
    // one file it cut, not for every source.
    // Local paths stay OsStrings: a file name that is not UTF-8 reaches scp as it is.
    let batches: Vec<Vec<std::ffi::OsString>> = if to_guest {
        locals
            .iter()
            .map(|local| vec![local.clone().into_os_string()])
            .collect()
    } else {
        request
            .sources
            .iter()
            .map(|path| vec![remote_spec(&stored, path).into()])
            .collect()
    };
    // From the guest, a plain file is written under a temporary name beside its target and
    // renamed over it once scp has ended well: a copy that fails leaves no half-written file
    // and the target as it was. (Trees keep scp's own `-r`: scp merges into a directory that
    // exists, which no rename can do at once.)
    let staged: Vec<Option<Staged>> = request
        .sources
        .iter()
        .enumerate()
        .map(|(index, source)| {
            (!to_guest && !request.recursive)
                .then(|| Staged::beside(&locals[0], source, index))
                .flatten()
        })
        .collect();
    // Per batch: `None` when it copied, else what scp said.
    let mut outcomes: Vec<Option<String>> = Vec::new();
    for (batch, staged) in batches.iter().zip(&staged) {
        let run_scp = || -> Result<std::process::Output> {
            let route = mux.route();
            let mut command = Command::new(&scp);
            route.configure(&mut command);
            command.args(scp_args_with(&key, &stored, route.options()));
            if request.recursive {
                command.arg("-r");
            }
            command.args(batch);
            if to_guest {
                command.arg(remote_spec(&stored, &request.destination));
            } else if let Some(staged) = staged {
                command.arg(&staged.temporary);
            } else {
                command.arg(&locals[0]);
            }
            command.env("PATH", env.path_var()).stdin(Stdio::null());
            crate::child::output(&mut command, crate::child::Group::Own)
                .map_err(|e| e.into_error(&format!("{}: scp", stored.name)))
        };
        let mut output = run_scp()?;
        if !output.status.success() && !request.recursive && connection_dropped(&output.stderr) {
            // The session dropped under scp (a guest's sshd or a loaded host): plain files
            // copied again are the same files, so one more try cannot leave anything half done
            // that the first did not. A tree is not copied twice (scp -r would nest it).
            cancel.check()?;
            std::thread::sleep(std::time::Duration::from_millis(500));
            if !mux.answers() {
                crate::ssh::login::until_reachable(root, env, &stored, reach_wait, cancel)?;
            }
            output = run_scp()?;
        }
        // Like one scp of every source: the others are still copied, then it fails.
        let mut outcome = (!output.status.success()).then(|| {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            if stderr.is_empty() {
                output.status.to_string()
            } else {
                stderr
            }
        });
        if let Some(staged) = staged {
            outcome = staged.finish(outcome);
        }
        outcomes.push(outcome);
    }
    if outcomes.iter().any(Option::is_some) {
        if !several {
            check_guest_side(env, &key, &mux, &stored, request)?;
        }
        let labels: Vec<String> = if to_guest {
            locals.iter().map(|l| l.display().to_string()).collect()
        } else {
            let vm = &stored.name;
            request
                .sources
                .iter()
                .map(|s| format!("{vm}:{s}"))
                .collect()
        };
        return Err(Error::Tool {
            tool: "scp".into(),
            message: failure_message(&stored.name, &labels, &outcomes),
        });
    }
    let record = |local: &Path, remote: &str| CpData {
        vm: stored.name.clone(),
        direction: request.direction,
        local: local.to_string_lossy().into_owned(),
        remote: remote.to_owned(),
    };
    Ok(if to_guest {
        locals
            .iter()
            .map(|local| record(local, &request.destination))
            .collect()
    } else {
        request
            .sources
            .iter()
            .map(|remote| record(&locals[0], remote))
            .collect()
    })
}

/// A file copied from the guest under a temporary name, renamed over its target at the end.
struct Staged {
    temporary: PathBuf,
    target: PathBuf,
}

impl Staged {
    /// Where the `index`th guest `source` lands under `destination` (into it when it is a
    /// directory, else at it), and a hidden name beside that, in the same directory so the
    /// rename is one step. None when the guest path names no file (`/`, a trailing slash):
    /// scp then copies as it would, as it does for a glob the guest expands.
    fn beside(destination: &Path, source: &str, index: usize) -> Option<Staged> {
        let target = if destination.is_dir() {
            let name = source.rsplit('/').next().filter(|name| {
                !name.is_empty() && *name != "." && *name != ".." && !name.contains(['*', '?', '['])
            })?;
            destination.join(name)
        } else {
            destination.to_path_buf()
        };
        let temporary = target
            .parent()?
            .join(format!(".stoat-cp-{}-{index}", std::process::id()));
        Some(Staged { temporary, target })
    }

    /// After scp: on success the temporary file takes the target's name (a failed rename is
    /// the copy's failure); on failure it goes.
    fn finish(&self, outcome: Option<String>) -> Option<String> {
        if let Some(said) = outcome {
            let _ = std::fs::remove_file(&self.temporary);
            // scp named the file it wrote; the person knows the target.
            let temporary = self.temporary.display().to_string();
            return Some(said.replace(&temporary, &self.target.display().to_string()));
        }
        match std::fs::rename(&self.temporary, &self.target) {
            Ok(()) => None,
            Err(error) => {
                let _ = std::fs::remove_file(&self.temporary);
                Some(format!("{}: {error}", self.target.display()))
            }
        }
    }
}

/// What a failed copy says: scp's words, and with several sources (one scp each) which of
/// them failed and which were copied, so a person knows what to copy again. `labels` name
/// the sources as the user wrote them (absolute host paths, or `vm:path`).
fn failure_message(vm: &str, labels: &[String], outcomes: &[Option<String>]) -> String {
    let failed: Vec<&String> = outcomes.iter().flatten().collect();
    if outcomes.len() < 2 {
        return format!(
            "{vm}: {}",
            failed
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let mut failures = Vec::new();
    let mut copied = Vec::new();
    for (source, outcome) in labels.iter().zip(outcomes) {
        match outcome {
            Some(said) => failures.push(format!("{source} ({said})")),
            None => copied.push(source.clone()),
        }
    }
    let copied = if copied.is_empty() {
        "nothing was copied".to_owned()
    } else {
        format!("copied: {}", copied.join(", "))
    };
    format!(
        "{vm}: {} of {} sources failed: {}; {copied}",
        failures.len(),
        outcomes.len(),
        failures.join("; ")
    )
}

/// True when scp says its connection went away (not that a file was refused).
fn connection_dropped(stderr: &[u8]) -> bool {
    let said = String::from_utf8_lossy(stderr);
    said.contains("Connection closed") || said.contains("Connection reset")
}

/// What the host alone can tell is wrong: a local source that does not exist; a local
/// directory without `-r`; several sources from the guest into a local path that is not a
/// directory.
fn check_host_side(request: &Transfer, locals: &[PathBuf]) -> Result<()> {
    if request.direction == CopyDirection::ToGuest {
        // A source that is not there copies nothing; with several, scp would copy the others
        // first and fail after. Other errors (a file stoat may not read) are scp's to say.
        let missing = |local: &&PathBuf| {
            std::fs::symlink_metadata(local)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        };
        if let Some(local) = locals.iter().find(missing) {
            return Err(Error::InvalidSpec(format!(
                "{} does not exist; nothing was copied",
                local.display()
            )));
        }
    }
    match request.direction {
        CopyDirection::ToGuest if !request.recursive => {
            if let Some(dir) = locals.iter().find(|local| local.is_dir()) {
                return Err(Error::InvalidSpec(format!(
                    "{} is a directory; use -r to copy it and what it holds",
                    dir.display()
                )));
            }
        }
        CopyDirection::FromGuest if request.sources.len() > 1 && !locals[0].is_dir() => {
            return Err(Error::InvalidSpec(format!(
                "{} is not a directory; several sources are copied into an existing directory",
                locals[0].display()
            )));
        }
        _ => {}
    }
    Ok(())
}

/// What only the guest can tell, asked in one ssh call (scp copies the other sources first,
/// and names a guest directory "not a regular file", as it does a missing file): a guest
/// directory without `-r`; several sources into a guest path that is not a directory.
fn check_guest_side(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    request: &Transfer,
) -> Result<()> {
    let to_guest = request.direction == CopyDirection::ToGuest;
    let asked: &[String] = match (to_guest, request.recursive) {
        (false, false) => &request.sources,
        (true, _) if request.sources.len() > 1 => std::slice::from_ref(&request.destination),
        _ => return Ok(()),
    };
    // Unanswered (no ssh, a guest that does not say): scp runs and reports what it finds.
    let Some(directories) = guest_directories(env, key, mux, stored, asked) else {
        return Ok(());
    };
    if to_guest {
        if !directories[0] {
            return Err(Error::InvalidSpec(format!(
                "{}:{} is not a directory in the guest; several sources are copied into an existing directory",
                stored.name, request.destination
            )));
        }
    } else if let Some((path, _)) = asked.iter().zip(&directories).find(|(_, dir)| **dir) {
        return Err(Error::InvalidSpec(format!(
            "{}:{path} is a directory; use -r to copy it and what it holds",
            stored.name
        )));
    }
    Ok(())
}

/// Asks the guest which of `paths` are directories (one ssh call through the VM's reused
/// connection). `None` when the guest gave no answer of the right shape.
fn guest_directories(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    paths: &[String],
) -> Option<Vec<bool>> {
    let ssh = env.which("ssh")?;
    let script = format!(
        "for p in {}; do if [ -d \"$p\" ]; then echo d; else echo -; fi; done",
        quote_remote_command(paths)
    );
    let route = mux.route();
    let mut command = Command::new(ssh);
    route.configure(&mut command);
    command
        .args(ssh_args_with(key, stored, route.options()))
        .arg(script)
        .env("PATH", env.path_var())
        .stdin(Stdio::null());
    let output = crate::child::output(&mut command, crate::child::Group::Own).ok()?;
    if !output.status.success() {
        return None;
    }
    let answers = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| match line {
            "d" => Some(true),
            "-" => Some(false),
            _ => None,
        })
        .collect::<Option<Vec<bool>>>()?;
    (answers.len() == paths.len()).then_some(answers)
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
