//! A running VM made ready for one ssh or scp call: loaded, stoat's key at hand, the client
//! found, and (for a call that must not start half its work on a guest that cannot take it)
//! a login made first unless the VM's reused connection answers. What exec, cp and `cp -`
//! share.

use std::path::PathBuf;
use std::time::Duration;

use crate::ssh::mux::Mux;
use crate::vm::{self, StoredVm};
use crate::{Cancel, Env, Result, Root};

/// A running VM made ready for one ssh or scp call.
pub(crate) struct Reached {
    pub stored: StoredVm,
    /// stoat's private key for the guest.
    pub key: PathBuf,
    /// The client's path (ssh or scp).
    pub client: PathBuf,
    pub mux: Mux,
}

/// How a call that reaches into the guest first learns the guest can take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstContact {
    /// Log in first (`login`), unless the VM's master answers: for a call that may do half
    /// its work before a connection drops (scp).
    LogIn,
    /// The call's own login is the check: it tells a failure before any session apart and
    /// tries again (exec).
    ItsOwnLogin,
}

/// Loads `name`, which must be running, finds `client` (ssh or scp), and, for
/// [`FirstContact::LogIn`], waits up to `reach_wait` until stoat can log in, unless the VM's
/// reused connection's master answers (it holds a live login). A login made here becomes
/// that master, so the call that follows goes through it.
pub(crate) fn reach(
    root: &Root,
    env: &Env,
    name: &str,
    client: &str,
    first: FirstContact,
    reach_wait: Duration,
    cancel: &Cancel,
) -> Result<Reached> {
    let (stored, _pid) = vm::load_running(root, name)?;
    let key = crate::keys::ensure(root, env)?;
    let client = env.require_tool(client, "openssh-client")?;
    let mux = Mux::for_vm(&key, &stored);
    if first == FirstContact::LogIn && !mux.answers() {
        super::login::until_reachable(root, env, &stored, reach_wait, cancel)?;
    }
    Ok(Reached {
        stored,
        key,
        client,
        mux,
    })
}
