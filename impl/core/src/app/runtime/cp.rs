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

use crate::ssh::argv::{remote_spec, scp_args_with, ssh_args_with};
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
    // From the guest, one source costs no extra round trip: scp fails on a directory or a
    // missing file without copying anything, and the guest is asked only then, to say why.
    // Several are checked first. (Into the guest, one source asks whether the destination is
    // a directory, below.)
    let several = request.sources.len() > 1;
    let guest_side = if several {
        check_guest_side(env, &key, &mux, &stored, request)?
    } else {
        GuestSide::Unasked
    };
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
    // Into the guest, likewise: each plain file goes to a hidden name beside its target, and
    // one ssh call at the end renames every one that arrived whole (and removes the others).
    // Where that target is depends on whether the destination is a guest directory: known
    // from the check above with several sources, else asked (one round trip).
    let into_guest: Vec<Option<GuestStaged>> = if to_guest && !request.recursive {
        // Only a guest that answered the question is trusted to rename at the end; one that
        // did not (no ssh, a guest that does not say) gets scp's own writes.
        let is_dir = match guest_side {
            GuestSide::Directory => Some(true),
            GuestSide::Unanswered => None,
            GuestSide::Unasked => guest_paths(
                env,
                &key,
                &mux,
                &stored,
                std::slice::from_ref(&request.destination),
            )
            .map(|answer| answer[0] == GuestPath::Directory),
        };
        locals
            .iter()
            .enumerate()
            .map(|(index, local)| {
                is_dir.and_then(|is_dir| {
                    GuestStaged::beside(&request.destination, is_dir, local, index)
                })
            })
            .collect()
    } else {
        request.sources.iter().map(|_| None).collect()
    };
    // Per batch: `None` when it copied, else what scp said.
    let mut outcomes: Vec<Option<String>> = Vec::new();
    for ((batch, staged), guest_staged) in batches.iter().zip(&staged).zip(&into_guest) {
        let run_scp = || -> Result<std::process::Output> {
            let route = mux.route();
            let mut command = Command::new(&scp);
            route.configure(&mut command);
            command.args(scp_args_with(&key, &stored, route.options()));
            if request.recursive {
                command.arg("-r");
            }
            command.args(batch);
            if let Some(guest_staged) = guest_staged {
                command.arg(remote_spec(&stored, &guest_staged.temporary));
            } else if to_guest {
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
        let copy_with_retry = || -> Result<std::process::Output> {
            let output = run_scp()?;
            if output.status.success() || request.recursive || !connection_dropped(&output.stderr) {
                return Ok(output);
            }
            // The session dropped under scp (a guest's sshd or a loaded host): plain files
            // copied again are the same files, so one more try cannot leave anything half
            // done that the first did not. A tree is not copied twice (scp -r would nest it).
            cancel.check()?;
            std::thread::sleep(std::time::Duration::from_millis(500));
            if !mux.answers() {
                crate::ssh::login::until_reachable(root, env, &stored, reach_wait, cancel)?;
            }
            run_scp()
        };
        let output = match copy_with_retry() {
            Ok(output) => output,
            Err(error) => {
                // A cancel (or an scp that could not run) after files went to hidden names:
                // they go, so neither side is left with a half file.
                let written: Vec<&GuestStaged> = into_guest.iter().flatten().collect();
                remove_in_guest(env, &key, &mux, &stored, &written);
                if let Some(staged) = staged {
                    let _ = std::fs::remove_file(&staged.temporary);
                }
                return Err(error);
            }
        };
        // Like one scp of every source: the others are still copied, then it fails.
        let mut outcome = (!output.status.success()).then(|| {
            let stderr = scp_words(&output.stderr);
            if stderr.is_empty() {
                output.status.to_string()
            } else {
                stderr
            }
        });
        if let Some(staged) = staged {
            outcome = staged.finish(outcome);
        }
        if let (Some(said), Some(guest_staged)) = (&mut outcome, guest_staged) {
            *said = said.replace(&guest_staged.temporary, &guest_staged.target);
        }
        outcomes.push(outcome);
    }
    if into_guest.iter().any(Option::is_some) {
        commit_in_guest(
            root,
            env,
            &key,
            &mux,
            &stored,
            &into_guest,
            &mut outcomes,
            reach_wait,
            cancel,
        )?;
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

/// A host file copied into the guest under a hidden name beside its target, renamed over it
/// by [`commit_in_guest`] once scp ended well (the guest's side of [`Staged`]). Guest paths
/// as scp takes them.
struct GuestStaged {
    temporary: String,
    target: String,
}

impl GuestStaged {
    /// Where the `index`th host file `local` lands under the guest `destination` (into it when
    /// it is a directory, else at it), and a hidden name in the same directory, so the rename
    /// is one step. None where the guest's own reading of the path decides (`~user`, a
    /// pattern) or the file's name is not UTF-8: scp then writes as it would.
    fn beside(destination: &str, is_dir: bool, local: &Path, index: usize) -> Option<GuestStaged> {
        let home_relative = destination == "~" || destination.starts_with("~/");
        if (destination.starts_with('~') && !home_relative) || destination.contains(['*', '?', '['])
        {
            return None;
        }
        let hidden = format!(".stoat-cp-{}-{index}", std::process::id());
        let join = |directory: &str, name: &str| {
            if directory.ends_with('/') {
                format!("{directory}{name}")
            } else {
                format!("{directory}/{name}")
            }
        };
        if is_dir {
            let directory = match destination.trim_end_matches('/') {
                "" => "/",
                trimmed => trimmed,
            };
            let name = local.file_name()?.to_str()?;
            return Some(GuestStaged {
                temporary: join(directory, &hidden),
                target: join(directory, name),
            });
        }
        let temporary = match destination.rfind('/') {
            Some(0) => join("/", &hidden),
            Some(at) => join(&destination[..at], &hidden),
            // Relative: scp and ssh both start in the login's home.
            None => hidden,
        };
        Some(GuestStaged {
            temporary,
            target: destination.to_owned(),
        })
    }
}

/// A guest path as one word for the guest's shell: quoted, but a leading `~` (alone or before
/// `/`) stays the login's home, as scp reads it.
fn guest_word(path: &str) -> String {
    if path == "~" {
        return "\"$HOME\"".to_owned();
    }
    match path.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", crate::shell::quote(rest)),
        None => crate::shell::quote(path),
    }
}

/// The one ssh call that ends a copy into the guest: every file that arrived whole under its
/// hidden name is renamed over its target, every other hidden name removed. Run to its end even
/// after a cancel (it is the moment the copy happens, and is quick), so a copy is either done
/// or not. A file whose rename failed, or that the guest did not confirm, becomes a failed
/// source in `outcomes`. A dropped connection is tried once more: a rename already done leaves
/// no hidden name behind, which the second run counts as done.
#[allow(clippy::too_many_arguments)]
fn commit_in_guest(
    root: &Root,
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    staged: &[Option<GuestStaged>],
    outcomes: &mut [Option<String>],
    reach_wait: std::time::Duration,
    cancel: &Cancel,
) -> Result<()> {
    let mut script = String::new();
    let mut renamed = Vec::new();
    for (index, (staged, outcome)) in staged.iter().zip(outcomes.iter()).enumerate() {
        let Some(staged) = staged else { continue };
        let (temporary, target) = (guest_word(&staged.temporary), guest_word(&staged.target));
        if outcome.is_some() {
            script.push_str(&format!("rm -f -- {temporary}\n"));
            continue;
        }
        renamed.push(index);
        script.push_str(&format!(
            "if [ ! -e {temporary} ]; then echo 'stoat-cp ok'; \
             elif [ -d {target} ]; then echo 'stoat-cp dir'; rm -f -- {temporary}; \
             elif e=$(mv -f -- {temporary} {target} 2>&1); then echo 'stoat-cp ok'; \
             else echo \"stoat-cp no $e\"; rm -f -- {temporary}; fi\n"
        ));
    }
    let run = || -> Option<std::process::Output> {
        let (_route, mut command) = guest_script(env, key, mux, stored, &script)?;
        crate::child::cleanup_output(&mut command, COMMIT_LIMIT).ok()
    };
    let mut output = run();
    if output
        .as_ref()
        .is_some_and(|out| !out.status.success() && connection_dropped(&out.stderr))
    {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if !mux.answers() && !cancel.is_cancelled() {
            crate::ssh::login::until_reachable(root, env, stored, reach_wait, cancel)?;
        }
        output = run();
    }
    let answers = output.as_ref().and_then(|out| commit_answers(&out.stdout));
    for (position, index) in renamed.iter().enumerate() {
        let target = staged[*index].as_ref().map_or("", |s| s.target.as_str());
        let temporary = staged[*index].as_ref().map_or("", |s| s.temporary.as_str());
        outcomes[*index] = match answers.as_ref().filter(|a| a.len() == renamed.len()) {
            Some(answers) => answers[position].as_ref().map(|said| match said {
                // mv would move the file into it; scp refuses to write over a directory.
                CommitRefusal::Directory => format!("{target}: Is a directory"),
                CommitRefusal::Said(said) => said.replace(temporary, target),
            }),
            None => {
                let said = output
                    .as_ref()
                    .map(|out| {
                        String::from_utf8_lossy(&out.stderr)
                            .trim()
                            .replace('\n', "; ")
                    })
                    .filter(|said| !said.is_empty())
                    .unwrap_or_else(|| "no answer".to_owned());
                Some(format!(
                    "{target} arrived as {temporary} but the guest did not confirm its rename ({said})"
                ))
            }
        };
    }
    Ok(())
}

/// How long the closing rename may take before it is given up (a guest that stopped answering).
const COMMIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the guest did not rename a file that arrived.
#[derive(Debug, PartialEq, Eq)]
enum CommitRefusal {
    /// The target is a directory.
    Directory,
    /// mv failed, in its words.
    Said(String),
}

/// The commit's answer, one entry per renamed file: `None` when done.
fn commit_answers(stdout: &[u8]) -> Option<Vec<Option<CommitRefusal>>> {
    let mut answers: Vec<Option<CommitRefusal>> = Vec::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        if line == "stoat-cp ok" {
            answers.push(None);
        } else if line == "stoat-cp dir" {
            answers.push(Some(CommitRefusal::Directory));
        } else if let Some(said) = line.strip_prefix("stoat-cp no") {
            answers.push(Some(CommitRefusal::Said(said.trim().to_owned())));
        } else {
            // mv's words ran over a line: they belong to the last failure.
            match answers.last_mut() {
                Some(Some(CommitRefusal::Said(said))) => {
                    said.push_str("; ");
                    said.push_str(line.trim());
                }
                _ => return None,
            }
        }
    }
    Some(answers)
}

/// Removes the hidden names a stopped copy may have written (best effort, after a cancel).
fn remove_in_guest(env: &Env, key: &Path, mux: &Mux, stored: &StoredVm, staged: &[&GuestStaged]) {
    if staged.is_empty() {
        return;
    }
    let words: Vec<String> = staged.iter().map(|s| guest_word(&s.temporary)).collect();
    let script = format!("rm -f -- {}", words.join(" "));
    if let Some((_route, mut command)) = guest_script(env, key, mux, stored, &script) {
        let _ = crate::child::cleanup_output(&mut command, std::time::Duration::from_secs(10));
    }
}

/// ssh running `script` in the guest through the VM's reused connection, stdin closed. The
/// route is returned beside the command: it must outlive the run. `None` without ssh on PATH.
fn guest_script(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    script: &str,
) -> Option<(crate::ssh::mux::Route, Command)> {
    let ssh = env.which("ssh")?;
    let route = mux.route();
    let mut command = Command::new(ssh);
    route.configure(&mut command);
    command
        .args(ssh_args_with(key, stored, route.options()))
        .arg(script)
        .env("PATH", env.path_var())
        .stdin(Stdio::null());
    Some((route, command))
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

/// scp's stderr as one message: each line without the program name scp puts before it (the
/// guest's `/usr/bin/scp: `, the host's `scp: `), which the error's own `scp: ` already says.
fn scp_words(stderr: &[u8]) -> String {
    let said = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| match line.split_once(": ") {
            Some((program, rest))
                if (program == "scp" || program.ends_with("/scp")) && !rest.is_empty() =>
            {
                rest
            }
            _ => line,
        })
        .collect();
    lines.join("; ")
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
/// and names a guest directory "not a regular file"): a guest source that is not there; a
/// guest directory without `-r`; several sources into a guest path that is not a directory;
/// one source into a guest directory that is not there.
fn check_guest_side(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    request: &Transfer,
) -> Result<GuestSide> {
    let to_guest = request.direction == CopyDirection::ToGuest;
    let asked: &[String] = match to_guest {
        false => &request.sources,
        true if request.sources.len() > 1 => std::slice::from_ref(&request.destination),
        // One source, asked after scp failed: the directory it was to land in.
        true => {
            return check_landing(env, key, mux, stored, &request.destination)
                .map(|()| GuestSide::Unasked)
        }
    };
    // Unanswered (no ssh, a guest that does not say): scp runs and reports what it finds.
    let Some(kinds) = guest_paths(env, key, mux, stored, asked) else {
        return Ok(GuestSide::Unanswered);
    };
    if to_guest {
        if kinds[0] != GuestPath::Directory {
            return Err(Error::InvalidSpec(format!(
                "{}:{} is not a directory in the guest; several sources are copied into an existing directory",
                stored.name, request.destination
            )));
        }
        return Ok(GuestSide::Directory);
    }
    // As on the host: a source that is not there copies nothing (with several, before any
    // is copied; with one, said in place of scp's words).
    if let Some((path, _)) = asked
        .iter()
        .zip(&kinds)
        .find(|(_, kind)| **kind == GuestPath::Missing)
    {
        return Err(missing_in_guest(stored, path));
    }
    if let Some((path, _)) = asked
        .iter()
        .zip(&kinds)
        .find(|(_, kind)| **kind == GuestPath::Directory && !request.recursive)
    {
        return Err(Error::InvalidSpec(format!(
            "{}:{path} is a directory; use -r to copy it and what it holds",
            stored.name
        )));
    }
    Ok(GuestSide::Unasked)
}

/// `invalid_spec` when the guest directory a copy to `destination` lands in is not there.
fn check_landing(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    destination: &str,
) -> Result<()> {
    let landing = landing_directory(destination);
    let asked = std::slice::from_ref(&landing);
    if guest_paths(env, key, mux, stored, asked) == Some(vec![GuestPath::Missing]) {
        return Err(missing_in_guest(stored, &landing));
    }
    Ok(())
}

/// The refusal of a copy that names a guest path that is not there.
fn missing_in_guest(stored: &StoredVm, path: &str) -> Error {
    Error::InvalidSpec(format!(
        "{}:{path} does not exist in the guest; nothing was copied",
        stored.name
    ))
}

/// The guest directory a copy to `destination` writes in: the destination itself when it
/// ends in `/`, else the directory that holds it (`.`, the user's home, for a bare name).
fn landing_directory(destination: &str) -> String {
    if destination.ends_with('/') {
        let trimmed = destination.trim_end_matches('/');
        return if trimmed.is_empty() { "/" } else { trimmed }.to_owned();
    }
    match destination.rsplit_once('/') {
        Some(("", _)) => "/".to_owned(),
        Some((parent, _)) => parent.to_owned(),
        None => ".".to_owned(),
    }
}

/// What [`check_guest_side`] learned of a destination in the guest.
enum GuestSide {
    /// Not asked (one source, or a copy from the guest).
    Unasked,
    /// Asked, and the guest gave no answer of the right shape.
    Unanswered,
    /// The guest says it is a directory (it must be, with several sources).
    Directory,
}

/// What the guest says a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GuestPath {
    Directory,
    /// There, and not a directory.
    Other,
    Missing,
    /// Not seen, behind a directory the user may not search.
    Unknown,
}

/// Asks the guest what each of `paths` is (one ssh call through the VM's reused connection).
/// `None` when the guest gave no answer of the right shape.
fn guest_paths(
    env: &Env,
    key: &Path,
    mux: &Mux,
    stored: &StoredVm,
    paths: &[String],
) -> Option<Vec<GuestPath>> {
    let words: Vec<String> = paths.iter().map(|path| guest_word(path)).collect();
    // A path that is not there is `-` only when its nearest existing ancestor is a directory
    // the user may search; behind one it may not (`/root/x` for a plain user) it is `?`:
    // perhaps there, unreadable, which scp's own words say better.
    let script = format!(
        "for p in {}; do if [ -d \"$p\" ]; then echo d; elif [ -e \"$p\" ] || [ -h \"$p\" ]; then echo f; else \
q=$p; while :; do case $q in */*) q=${{q%/*}};; *) q=.;; esac; [ -n \"$q\" ] || q=/; [ -e \"$q\" ] && break; done; \
if [ -d \"$q\" ] && [ -x \"$q\" ]; then echo -; else echo '?'; fi; fi; done",
        words.join(" ")
    );
    let (_route, mut command) = guest_script(env, key, mux, stored, &script)?;
    let output = crate::child::output(&mut command, crate::child::Group::Own).ok()?;
    if !output.status.success() {
        return None;
    }
    let answers = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| match line {
            "d" => Some(GuestPath::Directory),
            "f" => Some(GuestPath::Other),
            "-" => Some(GuestPath::Missing),
            "?" => Some(GuestPath::Unknown),
            _ => None,
        })
        .collect::<Option<Vec<GuestPath>>>()?;
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
    fn scp_words_drop_the_program_name_on_each_line() {
        let said = b"/usr/bin/scp: dest open \"/x/\": No such file or directory\nscp: failed to upload file /f to /x/\n";
        assert_eq!(
            scp_words(said),
            "dest open \"/x/\": No such file or directory; failed to upload file /f to /x/"
        );
        assert_eq!(
            scp_words(b"ssh: connect to host: refused\n"),
            "ssh: connect to host: refused"
        );
    }

    #[test]
    fn a_copy_lands_in_the_destination_or_the_directory_holding_it() {
        for (destination, landing) in [
            ("/tmp/x/", "/tmp/x"),
            ("/tmp/x", "/tmp"),
            ("/x", "/"),
            ("/", "/"),
            ("notes.txt", "."),
            ("sub/notes.txt", "sub"),
        ] {
            assert_eq!(landing_directory(destination), landing, "{destination}");
        }
    }

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

    #[test]
    fn a_file_into_the_guest_is_staged_beside_its_target() {
        let pid = std::process::id();
        let staged = |destination, is_dir| {
            GuestStaged::beside(destination, is_dir, Path::new("/h/notes.txt"), 3)
                .map(|s| (s.temporary, s.target))
        };
        let hidden = format!(".stoat-cp-{pid}-3");
        assert_eq!(
            staged("/tmp", true),
            Some((format!("/tmp/{hidden}"), "/tmp/notes.txt".into()))
        );
        assert_eq!(
            staged("/tmp/", true),
            Some((format!("/tmp/{hidden}"), "/tmp/notes.txt".into()))
        );
        assert_eq!(
            staged("/", true),
            Some((format!("/{hidden}"), "/notes.txt".into()))
        );
        assert_eq!(
            staged("/etc/motd", false),
            Some((format!("/etc/{hidden}"), "/etc/motd".into()))
        );
        assert_eq!(
            staged("/motd", false),
            Some((format!("/{hidden}"), "/motd".into()))
        );
        assert_eq!(staged("motd", false), Some((hidden.clone(), "motd".into())));
        assert_eq!(
            staged("~/in", true),
            Some((format!("~/in/{hidden}"), "~/in/notes.txt".into()))
        );
        assert_eq!(
            staged("~", true),
            Some((format!("~/{hidden}"), "~/notes.txt".into()))
        );
        // The guest's own reading decides: scp writes as it would.
        assert_eq!(staged("~other/x", false), None);
        assert_eq!(staged("/tmp/*.txt", false), None);
    }

    #[test]
    fn a_guest_path_is_one_word_with_home_kept() {
        assert_eq!(guest_word("/tmp/it's"), r"'/tmp/it'\''s'");
        assert_eq!(guest_word("~"), "\"$HOME\"");
        assert_eq!(guest_word("~/a b"), "\"$HOME\"/'a b'");
        assert_eq!(guest_word("~x"), "'~x'");
    }

    #[test]
    fn the_guest_answers_each_rename() {
        assert_eq!(
            commit_answers(b"stoat-cp ok\nstoat-cp dir\nstoat-cp no mv: can't rename\nmore\n"),
            Some(vec![
                None,
                Some(CommitRefusal::Directory),
                Some(CommitRefusal::Said("mv: can't rename; more".into())),
            ])
        );
        assert_eq!(commit_answers(b""), Some(vec![]));
        // Anything else is not the script's answer.
        assert_eq!(commit_answers(b"Welcome!\nstoat-cp ok\n"), None);
    }
}
