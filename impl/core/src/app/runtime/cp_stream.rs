//! `cp - <vm>:<path>` and `cp <vm>:<path> -`: one guest file's bytes from stoat's stdin, or to
//! its stdout, untouched (docs/decisions/runtime.md "cp"). ssh runs `cat` in the guest with
//! the path single-quoted, through the same reused connection and wait as exec; no pty, so no
//! byte is translated. Human mode only: under `--json` stdout carries JSON lines alone.

use std::process::{Command, Stdio};

use stoat_wire::dto::CopyDirection;

use crate::child::{self, Group};
use crate::ssh::argv::{quote_remote_command, ssh_args_with};
use crate::ssh::reach::{reach, FirstContact, Reached};
use crate::{vm, Cancel, Env, Error, Result, Root};

/// One guest file streamed to stdout (`FromGuest`) or filled from stdin (`ToGuest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRequest {
    pub vm: String,
    pub direction: CopyDirection,
    pub remote: String,
}

/// Streams the bytes; returns once the guest's `cat` has ended well.
pub fn stream(
    root: &Root,
    env: &Env,
    request: &StreamRequest,
    reach_wait: std::time::Duration,
    cancel: &Cancel,
) -> Result<()> {
    if request.remote.is_empty() {
        return Err(Error::InvalidSpec("cp: the guest path is empty".into()));
    }
    vm::check_name(&request.vm).map_err(|_| Error::NotFound {
        name: request.vm.clone(),
    })?;
    let Reached {
        stored,
        key,
        client: ssh,
        mux,
    } = reach(
        root,
        env,
        &request.vm,
        "ssh",
        FirstContact::LogIn,
        reach_wait,
        cancel,
    )?;
    let route = mux.route();
    let mut command = Command::new(ssh);
    route.configure(&mut command);
    command
        .args(ssh_args_with(&key, &stored, route.options()))
        .arg(remote_command(request))
        .env("PATH", env.path_var());
    let group = match request.direction {
        CopyDirection::FromGuest => {
            command.stdin(Stdio::null());
            Group::Own
        }
        // stdin may be the terminal, which only the foreground group can read.
        CopyDirection::ToGuest => {
            command.stdout(Stdio::null());
            Group::Shared
        }
    };
    let ran = child::status_and_stderr(&mut command, group);
    drop(route);
    let (status, stderr) = match ran {
        Ok(_) if cancel.is_cancelled() => return Err(Error::Canceled),
        Ok(ran) => ran,
        Err(e) => return Err(e.into_error(&format!("{}: ssh", stored.name))),
    };
    if status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&stderr).trim().replace('\n', "; ");
    Err(Error::Tool {
        tool: "ssh".into(),
        message: format!(
            "{}: {}",
            stored.name,
            if stderr.is_empty() {
                status.to_string()
            } else {
                stderr
            }
        ),
    })
}

/// `cat -- '<path>'` (to stdout) or `cat > '<path>'` (from stdin), the path quoted for the
/// guest's shell byte for byte.
fn remote_command(request: &StreamRequest) -> String {
    let path = quote_remote_command(std::slice::from_ref(&request.remote));
    match request.direction {
        CopyDirection::FromGuest => format!("cat -- {path}"),
        CopyDirection::ToGuest => format!("cat > {path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_path_is_one_quoted_word() {
        let request = |direction| StreamRequest {
            vm: "w".into(),
            direction,
            remote: "/tmp/it's $HOME".into(),
        };
        assert_eq!(
            remote_command(&request(CopyDirection::FromGuest)),
            r"cat -- '/tmp/it'\''s $HOME'"
        );
        assert_eq!(
            remote_command(&request(CopyDirection::ToGuest)),
            r"cat > '/tmp/it'\''s $HOME'"
        );
    }
}
