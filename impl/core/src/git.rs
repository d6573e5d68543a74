//! The system `git`, as remote recipes use it: clone, fetch and check out a pinned commit
//! (json-v3#per-command-data: `git_required`; docs/decisions/recipes.md "Remote recipes").
//!
//! [`resolve_commit`] turns a ref into a commit (`git ls-remote`): one implementation for
//! stoat.lock and the global pins.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Env, Error, Result};

/// `git` found on PATH, with the environment every call gets.
pub struct Git {
    exe: PathBuf,
    path_var: String,
}

impl Git {
    /// `git_required` when git is not on PATH.
    pub fn find(env: &Env) -> Result<Git> {
        let exe = env.require_tool_as("git", "git", Error::GitRequired)?;
        Ok(Git {
            exe,
            path_var: env.path_var().to_owned(),
        })
    }

    /// Runs `git <args>` (in `dir` when given) and returns its stdout. A failure is
    /// `invalid_spec` quoting git's own words: the source or ref the user gave is wrong.
    fn run(&self, dir: Option<&Path>, args: &[&str]) -> Result<String> {
        let mut command = Command::new(&self.exe);
        if let Some(dir) = dir {
            command.arg("-C").arg(dir);
        }
        command
            .args(args)
            .env("PATH", &self.path_var)
            // Never ask for credentials: stoat may be running under --json with no terminal.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        // Through child.rs, so a cancel stops git and is answered once git has ended.
        let output = crate::child::output(&mut command, crate::child::Group::Own)
            .map_err(|e| e.into_error("run git"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(Error::InvalidSpec(format!(
                "git {} failed: {}",
                args.first().copied().unwrap_or(""),
                one_line(&stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Clones `source` into the empty directory `dir` and checks out `commit`.
    pub fn clone_at(&self, source: &str, dir: &Path, commit: &str) -> Result<()> {
        let target = dir.to_string_lossy();
        self.run(
            None,
            &["clone", "--quiet", "--no-checkout", "--", source, &target],
        )?;
        self.checkout(dir, source, commit)
    }

    /// Moves an existing clone to `commit`, fetching from `source` only when the commit is
    /// not there yet (a clone already at its pin needs no network).
    pub fn move_to(&self, dir: &Path, source: &str, commit: &str) -> Result<()> {
        if head(dir).as_deref() == Some(commit) {
            return Ok(());
        }
        if !dir.join(".git").exists() {
            return Err(Error::InvalidSpec(format!(
                "{} is not a git clone; remove it and run `stoat recipe sync`",
                dir.display()
            )));
        }
        if !self.has_commit(dir, commit) {
            self.run(Some(dir), &["remote", "set-url", "origin", source])?;
            // Tags move (that is what `recipe update` follows), so they are fetched forcibly.
            self.run(
                Some(dir),
                &[
                    "fetch",
                    "--quiet",
                    "--force",
                    "--tags",
                    "origin",
                    "+refs/heads/*:refs/remotes/origin/*",
                ],
            )?;
        }
        self.checkout(dir, source, commit)
    }

    fn has_commit(&self, dir: &Path, commit: &str) -> bool {
        let object = format!("{commit}^{{commit}}");
        self.run(Some(dir), &["cat-file", "-e", &object]).is_ok()
    }

    fn checkout(&self, dir: &Path, source: &str, commit: &str) -> Result<()> {
        if !self.has_commit(dir, commit) {
            return Err(Error::InvalidSpec(format!(
                "{source} has no commit {commit} (was its history rewritten?)"
            )));
        }
        self.run(
            Some(dir),
            &[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                "--detach",
                commit,
            ],
        )
        .map_err(|err| {
            Error::InvalidSpec(format!(
                "cannot check out {commit} in {}: {err}",
                dir.display()
            ))
        })?;
        Ok(())
    }
}

/// The commit a clone has checked out, read from `.git/HEAD` without running git (so
/// `recipe list` needs no git). `None` when it is not a detached 40-hex HEAD.
pub fn head(dir: &Path) -> Option<String> {
    let text = crate::bounded::read_to_string(dir.join(".git").join("HEAD")).ok()?;
    let text = text.trim();
    is_full_commit(text).then(|| text.to_ascii_lowercase())
}

/// git's stderr on one line, its `fatal:`/`error:` prefixes kept (they say what went wrong).
pub fn one_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        "no message".into()
    } else {
        lines.join("; ")
    }
}

/// The commit `git_ref` names at `source` (`""`: the remote's HEAD). A full commit id is its
/// own answer; a tag wins over a branch of the same name, and an annotated tag is peeled.
pub fn resolve_commit(env: &Env, source: &str, git_ref: &str) -> Result<String> {
    if is_full_commit(git_ref) {
        return Ok(git_ref.to_ascii_lowercase());
    }
    let git = Git::find(env)?;
    let wanted = if git_ref.is_empty() { "HEAD" } else { git_ref };
    let mut command = Command::new(&git.exe);
    command
        .args(["ls-remote", "--", source, wanted])
        .env("PATH", &git.path_var)
        .stdin(std::process::Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0");
    // Through child.rs, so a cancel stops git and is answered once git has ended.
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error("run git ls-remote"))?;
    if !output.status.success() {
        return Err(Error::InvalidSpec(format!(
            "git ls-remote {source} failed: {}",
            one_line(&String::from_utf8_lossy(&output.stderr))
        )));
    }
    let listing = String::from_utf8_lossy(&output.stdout);
    pick_commit(&listing, wanted)
        .ok_or_else(|| Error::InvalidSpec(format!("{source} has no branch or tag called {wanted}")))
}

/// Whether `text` is a full 40-hex commit id.
pub fn is_full_commit(text: &str) -> bool {
    text.len() == 40 && text.chars().all(|c| c.is_ascii_hexdigit())
}

/// Picks from `git ls-remote` output: the peeled tag, the tag, the branch, then anything.
fn pick_commit(listing: &str, wanted: &str) -> Option<String> {
    let rows: Vec<(&str, &str)> = listing
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .collect();
    let preferred = [
        format!("refs/tags/{wanted}^{{}}"),
        format!("refs/tags/{wanted}"),
        format!("refs/heads/{wanted}"),
        wanted.to_owned(),
    ];
    preferred
        .iter()
        .find_map(|name| rows.iter().find(|(_, r)| r == name))
        .or_else(|| rows.first())
        .map(|(commit, _)| commit.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_reads_a_detached_commit_only() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(head(tmp.path()), None);
        std::fs::create_dir(tmp.path().join(".git")).unwrap();
        std::fs::write(tmp.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(head(tmp.path()), None);
        std::fs::write(
            tmp.path().join(".git/HEAD"),
            format!("{}\n", "A".repeat(40)),
        )
        .unwrap();
        assert_eq!(head(tmp.path()), Some("a".repeat(40)));
    }

    #[test]
    fn git_missing_is_git_required() {
        let env = Env::from_pairs([("PATH", "/nonexistent")]);
        let err = Git::find(&env).err().unwrap();
        assert_eq!(err.code(), stoat_wire::ErrorCode::GitRequired);
    }

    #[test]
    fn picks_peeled_tags_first() {
        let listing = "1111111111111111111111111111111111111111\trefs/heads/v1\n2222222222222222222222222222222222222222\trefs/tags/v1\n3333333333333333333333333333333333333333\trefs/tags/v1^{}\n";
        assert_eq!(pick_commit(listing, "v1").unwrap(), "3".repeat(40));
        assert_eq!(pick_commit("", "v1"), None);
        assert!(is_full_commit(&"ab".repeat(20)));
    }
}
