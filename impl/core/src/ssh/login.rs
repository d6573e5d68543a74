//! Learning that a guest is reachable by logging in to it, never by knocking. OpenSSH 9.8 and
//! later penalise a source address that opens connections without authenticating
//! (`PerSourcePenalties`), and every host connection reaches a user-mode-networked guest from
//! the same address, so a loop of banner probes gets the host itself shut out. Each attempt
//! here is a whole login (`ssh … true` with stoat's key, batch mode): before the guest's sshd
//! listens QEMU refuses it without the guest seeing anything, and once sshd listens it
//! succeeds, and (through [`Mux::route`]) becomes the VM's reused connection, so the calls
//! that follow (exec, cp, `stoat ssh`, a live snapshot's unmount and remount) open no
//! connection of their own. apply's scripts still connect afresh (`ssh::guest_shell`
//! says why).
//!
//! A booting guest is knocked on only once it can answer, as the boot's network guard notes
//! it ([`GuestNetwork`]), and an attempt never gives up on a connection before passt does:
//! Debian 12's passt spins a host core while a connection it could not hand on to a guest
//! without an address waits out its 10 s handshake, if the host client closed it first
//! (docs/decisions/runtime.md "reaching a booting guest").

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::child;
use crate::hint::{Op, Said, Setting, Step, Value};
use crate::qemu::netguard::GuestNetwork;
use crate::ssh::argv::ssh_args_with;
use crate::ssh::mux::Mux;
use crate::vm::StoredVm;
use crate::{keys, Cancel, Env, Error, Result, Root};

/// The pause between two attempts that QEMU or the guest's network refused.
const RETRY: Duration = Duration::from_millis(300);
/// The pause after a login the guest's sshd refused: each one counts against the host in
/// sshd's penalties, so they are spaced out (sshd may answer before cloud-init installed
/// stoat's key).
const RETRY_AFTER_REFUSAL: Duration = Duration::from_secs(3);
/// How long one attempt may take in all; ssh's own connect and banner bound is shorter.
const ATTEMPT_LIMIT: Duration = Duration::from_secs(20);
/// ssh's bound on the TCP connect and the banner exchange of one attempt: longer than
/// passt's own 10 s handshake timeout, so passt ends a connection it cannot hand on first.
const CONNECT_TIMEOUT_SECS: u64 = 12;
/// A guest that has sent frames but no DHCP request and none from an IPv4 address (a static
/// address sends nothing until spoken to) is knocked on after this long: a DHCP client
/// started with the link asks well within it (measured: 0.15 s on the Debian image).
const LINK_GRACE: Duration = Duration::from_millis(500);
/// A guest whose DHCP request got no lease it uses, after this long (passt answers at once).
const LEASE_GRACE: Duration = Duration::from_secs(10);
/// A guest that has sent no frame at all (one that never speaks first), after this long.
const SILENT_GRACE: Duration = Duration::from_secs(15);

/// How one login attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Logged in (and the VM's master, if this attempt became it, stays up).
    In,
    /// Not yet: nothing listens, or the connection closed before sshd spoke.
    NotYet(String),
    /// sshd answered and refused the login.
    Refused(String),
}

/// What logging in to one VM needs.
pub(crate) struct Login {
    ssh: PathBuf,
    key: PathBuf,
    mux: Mux,
    path_var: String,
}

impl Login {
    /// The login to `stored` with the data root's key and the host's `ssh`.
    pub(crate) fn new(root: &Root, env: &Env, stored: &StoredVm) -> Result<Login> {
        let key = keys::ensure(root, env)?;
        let ssh = env.require_tool("ssh", "openssh-client")?;
        Ok(Login {
            mux: Mux::for_vm(&key, stored),
            ssh,
            key,
            path_var: env.path_var().to_owned(),
        })
    }

    /// One login attempt, through the VM's master when one answers (then nothing is opened),
    /// taking at most about `left` (the caller's deadline). A guest that cannot answer yet is
    /// not knocked on.
    pub(crate) fn attempt(&self, stored: &StoredVm, left: Duration) -> Result<Attempt> {
        if self.mux.answers() {
            return Ok(Attempt::In);
        }
        if !guest_may_answer(GuestNetwork::read(&stored.files().net_state())) {
            return Ok(Attempt::NotYet(
                "the guest has not come up on its network yet".into(),
            ));
        }
        let route = self.mux.route();
        let connect = CONNECT_TIMEOUT_SECS.min(left.as_secs()).max(1);
        let mut command = Command::new(&self.ssh);
        route.configure(&mut command);
        command
            .args(login_args(&self.key, stored, connect, route.options()))
            .arg("true")
            .env("PATH", &self.path_var)
            .stdin(Stdio::null());
        let out = child::output_within(&mut command, ATTEMPT_LIMIT)
            .map_err(|e| e.into_error(&format!("{}: ssh", stored.name)))?;
        drop(route);
        if out.status.success() {
            return Ok(Attempt::In);
        }
        let said = last_line(&out.stderr);
        // ssh's words for a server that answered and said no.
        if said.contains("Permission denied") || said.contains("Too many authentication") {
            Ok(Attempt::Refused(said))
        } else {
            Ok(Attempt::NotYet(said))
        }
    }
}

/// A login attempt's ssh arguments: `route`'s options and a connect and banner bound of
/// `connect_secs`, which overrides the common options' shorter one.
fn login_args(key: &Path, stored: &StoredVm, connect_secs: u64, route: &[String]) -> Vec<String> {
    let mut options = vec!["-o".to_owned(), format!("ConnectTimeout={connect_secs}")];
    options.extend(route.iter().cloned());
    ssh_args_with(key, stored, &options)
}

/// Whether a booting guest can answer a connection passt hands on, as its guard saw it.
fn guest_may_answer(network: GuestNetwork) -> bool {
    match network {
        GuestNetwork::Unwatched | GuestNetwork::Addressed => true,
        GuestNetwork::Link(age) => age >= LINK_GRACE,
        GuestNetwork::Leasing(age) => age >= LEASE_GRACE,
        GuestNetwork::Silent(age) => age >= SILENT_GRACE,
    }
}

/// Waits until stoat can log in to a running VM (`up` by default, `wait --until reachable`,
/// exec, cp and apply before they run). Returns how long it took. `timeout` at the deadline
/// (the VM keeps running; the message quotes ssh and the console's last line),
/// `qemu_start_failed` when QEMU exits first, `canceled` on Ctrl-C.
pub fn until_reachable(
    root: &Root,
    env: &Env,
    stored: &StoredVm,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Duration> {
    until_reachable_telling(root, env, stored, timeout, cancel, &|_| {})
}

/// How often a long wait says it is still waiting.
const STILL_WAITING: Duration = Duration::from_secs(20);

/// [`until_reachable`] that calls `still` with the time waited so far every
/// [`STILL_WAITING`] (a person watching a slow boot learns it is not stuck).
pub fn until_reachable_telling(
    root: &Root,
    env: &Env,
    stored: &StoredVm,
    timeout: Duration,
    cancel: &Cancel,
    still: &dyn Fn(Duration),
) -> Result<Duration> {
    let login = Login::new(root, env, stored)?;
    let started = Instant::now();
    let deadline = started + timeout;
    let name = &stored.name;
    let mut next_word = started + STILL_WAITING;
    loop {
        cancel.check()?;
        if Instant::now() >= next_word {
            still(started.elapsed());
            next_word += STILL_WAITING;
        }
        if stored.running_pid().is_none() {
            return Err(Error::spelled(
                Error::QemuStartFailed,
                Said::text(format!("{name} stopped while booting; "))
                    .step(console_log(name))
                    .then(" shows how far it got"),
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let pause = match login.attempt(stored, left)? {
            Attempt::In => return Ok(started.elapsed()),
            Attempt::NotYet(said) => (RETRY, said),
            Attempt::Refused(said) => (RETRY_AFTER_REFUSAL, said),
        };
        cancel.check()?;
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::spelled(
                Error::Timeout,
                not_reached(stored, timeout, &pause.1),
            ));
        }
        std::thread::sleep(pause.0.min(deadline - now));
    }
}

/// The timeout message: what ssh said last and how far the console got.
fn not_reached(stored: &StoredVm, timeout: Duration, said: &str) -> Said {
    let name = &stored.name;
    let console = crate::qemu::console::last_line(&stored.files().console_log())
        .map(|line| format!("; the console's last line: {line:?}"))
        .unwrap_or_default();
    Said::text(format!(
        "{name} is running but stoat could not log in over ssh (port {}) within {} ({said}){console}; ",
        stored.config.sshport,
        humantime::format_duration(timeout)
    ))
    .step(console_log(name))
    .then(" shows the boot, ")
    .step(Step::on(Op::Down, name))
    .then(" stops it")
}

/// Where a VM's boot can be read.
fn console_log(name: &str) -> Step {
    Step::on(Op::Logs, name).with(Setting::Which, Some(Value::Text("console".into())))
}

/// The last line ssh wrote, for a message.
pub(crate) fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("ssh gave no reason")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_s_connect_bound_is_the_one_ssh_keeps() {
        let config = crate::vm::VmConfig::parse(
            "name = \"w\"\nmode = \"cloud\"\nsshport = 2201\nsshuser = \"stoat\"\n",
        )
        .unwrap();
        let stored = StoredVm {
            name: "w".into(),
            dir: PathBuf::from("/r/w"),
            config,
        };
        let route = ["-o".to_owned(), "ControlMaster=auto".to_owned()];
        let args = login_args(Path::new("/r/id_stoat"), &stored, 12, &route);
        // ssh keeps the first value of an option: the login's, not the common 5 s.
        let first = args.iter().find(|a| a.starts_with("ConnectTimeout="));
        assert_eq!(first.map(String::as_str), Some("ConnectTimeout=12"));
        assert!(args.contains(&"ControlMaster=auto".to_owned()));
        assert_eq!(args.last().map(String::as_str), Some("stoat@127.0.0.1"));
    }

    #[test]
    fn a_guest_is_knocked_on_once_it_can_answer_or_its_grace_is_over() {
        let secs = Duration::from_secs_f64;
        assert!(guest_may_answer(GuestNetwork::Unwatched));
        assert!(guest_may_answer(GuestNetwork::Addressed));
        assert!(!guest_may_answer(GuestNetwork::Link(secs(0.2))));
        assert!(guest_may_answer(GuestNetwork::Link(secs(0.5))));
        assert!(!guest_may_answer(GuestNetwork::Leasing(secs(9.0))));
        assert!(guest_may_answer(GuestNetwork::Leasing(secs(10.0))));
        assert!(!guest_may_answer(GuestNetwork::Silent(secs(14.0))));
        assert!(guest_may_answer(GuestNetwork::Silent(secs(15.0))));
    }
}
