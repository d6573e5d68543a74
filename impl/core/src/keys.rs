//! The client ssh key `<root>/id_stoat{,.pub}` and the apkovl guests' ssh host key
//! `<root>/guest_host_ed25519_key{,.pub}`, each made with `ssh-keygen` the first time a command
//! needs it (lazily: `ls` or `doctor` on a fresh host never needs ssh-keygen).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::{lock, Env, Error, Result, Root};

/// The host key every apkovl guest presents (upstream: one per data root).
pub const GUEST_HOST_KEY: &str = "guest_host_ed25519_key";

/// Makes sure the client key pair exists; returns the private key's path.
pub fn ensure(root: &Root, env: &Env) -> Result<PathBuf> {
    ensure_pair(root, env, root.key_file(), "stoat")
}

/// Makes sure the apkovl guests' host key pair exists; returns the private key's path.
pub fn ensure_guest_host(root: &Root, env: &Env) -> Result<PathBuf> {
    ensure_pair(root, env, root.dir().join(GUEST_HOST_KEY), "stoat-guest")
}

/// An ed25519 pair at `key` and `key.pub`, made under `<root>/.keys.lock` when either is missing.
fn ensure_pair(root: &Root, env: &Env, key: PathBuf, comment: &str) -> Result<PathBuf> {
    let public = key.with_extension("pub");
    if key.is_file() && public.is_file() {
        return Ok(key);
    }
    root.ensure()?;
    let _guard = lock::exclusive(&root.dir().join(".keys.lock"))?;
    if key.is_file() && public.is_file() {
        return Ok(key);
    }
    let _ = std::fs::remove_file(&key);
    let _ = std::fs::remove_file(&public);
    let keygen = env.require_tool("ssh-keygen", "openssh-client")?;
    let mut command = Command::new(keygen);
    command
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(&key)
        .env("PATH", env.path_var())
        .stdin(Stdio::null());
    // Through child.rs: a cancel stops ssh-keygen, waits for it and answers `canceled`,
    // with no half-written key pair left.
    let output = match crate::child::output(&mut command, crate::child::Group::Own) {
        Ok(output) => output,
        Err(stopped) => {
            let _ = std::fs::remove_file(&key);
            let _ = std::fs::remove_file(&public);
            return Err(stopped.into_error("run ssh-keygen"));
        }
    };
    if !output.status.success() || !key.is_file() || !public.is_file() {
        return Err(Error::Tool {
            tool: "ssh-keygen".into(),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(key)
}
