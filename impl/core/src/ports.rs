//! ssh port allocation: the first port in 2200-2299 that no VM claims (its ssh port or a
//! forward, broken VMs included) and that binds on 127.0.0.1 right now; and the check `up`
//! makes that every host port a VM needs binds before QEMU is asked to take them, moving a
//! VM's ssh port that stoat picked when another program (another data root's VM) took it, or
//! when the VM's network could not listen on it because another program took it in the moment
//! after the check.
//!
//! Callers hold the data-root lock from choosing a port until vm.toml is saved, which is what
//! makes concurrent `create`s get distinct ports. Across data roots (another user, another
//! `STOAT_HOME`, a test suite beside a run) a lock file cannot help, so `up` also claims each
//! port on the host while it starts (an abstract unix socket named after the port, which the
//! kernel releases with the process): another stoat's probe sees a claimed port as taken
//! before any QEMU or passt has bound it.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

use socket2::{Domain, SockAddr, Socket, Type};

use crate::hint::{Op, Said, Setting, Step, Value};
use crate::vm::{self, Loaded};
use crate::{Error, Result, Root};

/// The range new VMs' ssh ports come from.
pub const SSH_PORTS: std::ops::RangeInclusive<u16> = 2200..=2299;

/// Returns every host port some VM claims (ssh ports and forwards), skipping `except`.
pub fn claimed_ports(root: &Root, except: Option<&str>) -> Result<BTreeSet<u16>> {
    let mut claimed = BTreeSet::new();
    for loaded in vm::list(root)? {
        if Some(loaded.name()) == except {
            continue;
        }
        match loaded {
            Loaded::Ok(vm) => {
                claimed.insert(vm.config.sshport);
                claimed.extend(vm.config.forwards.iter().map(|f| f.hostport));
            }
            Loaded::Broken { dir, .. } => claimed.extend(broken_ssh_port(&dir)),
        }
    }
    claimed.remove(&0);
    Ok(claimed)
}

/// Reads a broken vm.toml's `sshport = N` line, if it has one.
pub fn broken_ssh_port(dir: &std::path::Path) -> Option<u16> {
    let text = crate::bounded::read_to_string(crate::vm::VmDir::at(dir).record()).ok()?;
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "sshport")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// Whether `port` can be taken on 127.0.0.1 now. The probe binds without listening, with
/// SO_REUSEADDR and SO_REUSEPORT: a listener that holds the port (a QEMU's hostfwd, any
/// server) still makes it fail, but another stoat's probe of the same port in the same
/// instant does not, so concurrent commands never see each other's probes as a taken port.
/// A port claimed by another stoat that is starting a VM on it counts as taken; the probe
/// only asks the claim ([`claimed`]), never holds it, so no probe makes a real claim fail.
fn probe(port: u16) -> std::io::Result<()> {
    if claimed(port) {
        return Err(std::io::ErrorKind::AddrInUse.into());
    }
    probe_socket(port).map(drop)
}

/// The abstract socket name that claims `port` on this host.
fn claim_name(port: u16) -> String {
    format!("stoat-port-{port}")
}

/// True while a stoat holds the claim on `port`: a connection to its socket is taken (or its
/// queue is full). A connection nobody listens for is refused. The claim is never accepted
/// from, so the connection only waits in its queue until the claim ends.
fn claimed(port: u16) -> bool {
    let mut name = vec![0u8];
    name.extend_from_slice(claim_name(port).as_bytes());
    let asked = SockAddr::unix(std::ffi::OsStr::from_bytes(&name)).and_then(|address| {
        let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        socket.set_nonblocking(true)?;
        socket.connect(&address)
    });
    match asked {
        Ok(()) => true,
        Err(error) => !matches!(
            error.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
        ),
    }
}

/// A host port this process is about to hand to QEMU and passt, kept from every other stoat
/// on the host until dropped (the socket is held, never read).
#[derive(Debug)]
struct Claim(#[allow(dead_code)] UnixListener);

/// The ports one `up` holds while it starts and waits for its guest.
#[derive(Debug)]
pub struct Claims(#[allow(dead_code)] Vec<Claim>);

/// Claims `port` (fails with "address in use" while another stoat holds it), then probes it.
fn take(port: u16) -> std::io::Result<Claim> {
    let name = claim_name(port);
    let claim = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
    probe_socket(port)?;
    Ok(Claim(claim))
}

fn probe_socket(port: u16) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into())?;
    Ok(socket)
}

/// Picks a free ssh port for a new VM, never one of `avoid` (the host ports of the
/// forwards it is created with).
pub fn free_ssh_port(root: &Root, avoid: &[u16]) -> Result<u16> {
    free_ssh_port_except(root, None, avoid)
}

/// Picks a free ssh port, ignoring the ports `except` (a VM about to move) claims and never
/// one of `avoid`.
fn free_ssh_port_except(root: &Root, except: Option<&str>, avoid: &[u16]) -> Result<u16> {
    let claimed = claimed_ports(root, except)?;
    SSH_PORTS
        .filter(|port| !claimed.contains(port) && !avoid.contains(port))
        .find(|port| probe(*port).is_ok())
        .ok_or_else(|| Error::Internal("no free port in 2200-2299".into()))
}

/// A VM's ssh port that `up` moved because something else held it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub from: u16,
    pub to: u16,
}

/// Before `up`: a stopped VM whose ssh port stoat picked (not pinned by the user) and that
/// something else holds now (another data root's VM, any server) gets a free one, saved in
/// vm.toml, so two stoats on one host never fail each other's start. A pinned port is left
/// as it is ([`ensure_free`] then names it). Takes the data-root lock to choose, as create
/// does, so two VMs of one root never move onto the same port.
pub fn settle_ssh_port(root: &Root, name: &str) -> Result<Option<Moved>> {
    move_ssh_port_when(root, name, ssh_port_lost, &[])
}

/// After a start whose network could not listen on the VM's ssh port `lost` (another program
/// took it after the check, and may have let it go since): a port stoat picked moves to a
/// free one other than `lost` and `avoid`, whether `lost` looks taken now or not. A pinned
/// port, or one that is no longer `lost` (another command changed it), stays.
pub fn move_lost_ssh_port(
    root: &Root,
    name: &str,
    lost: u16,
    avoid: &[u16],
) -> Result<Option<Moved>> {
    let mut avoid = avoid.to_vec();
    avoid.push(lost);
    let still_lost =
        |vm: &crate::vm::StoredVm| !vm.config.sshport_pinned && vm.config.sshport == lost;
    move_ssh_port_when(root, name, still_lost, &avoid)
}

/// Moves the ssh port of the stopped VM `name` when `condition` holds for it, to a free port
/// none of `avoid`: saved in vm.toml and logged. `condition` is asked again under the
/// data-root lock, which is held from the choice until vm.toml is saved, and the VM's own
/// lock: a VM another `up` is starting on its claimed port is not stopped yet, only not
/// running yet, and moving its port then would leave it running on a port its record no
/// longer names.
fn move_ssh_port_when(
    root: &Root,
    name: &str,
    condition: impl Fn(&crate::vm::StoredVm) -> bool,
    avoid: &[u16],
) -> Result<Option<Moved>> {
    let movable = |vm: &crate::vm::StoredVm| vm.running_pid().is_none() && condition(vm);
    if !movable(&vm::load_ok(root, name)?) {
        return Ok(None);
    }
    let _locks = crate::lock::root_and_vm(root, name)?;
    let mut stored = vm::load_ok(root, name)?;
    if !movable(&stored) {
        return Ok(None);
    }
    let from = stored.config.sshport;
    let to = free_ssh_port_except(root, Some(name), avoid)?;
    stored.config.sshport = to;
    vm::save(&stored)?;
    crate::log::append(
        root,
        "info",
        &format!("up {name}: ssh port {from} is taken; moved to {to}"),
    );
    Ok(Some(Moved { from, to }))
}

/// True when `up` may move this VM's ssh port and the port is taken now (a start that failed
/// because something took it in the moment before QEMU bound it).
pub fn ssh_port_lost(vm: &crate::vm::StoredVm) -> bool {
    !vm.config.sshport_pinned && probe(vm.config.sshport).is_err()
}

/// Fails with [`Error::PortBusy`] on the first of the VM's host ports (its ssh port, then its
/// forwards) that cannot be bound on 127.0.0.1 now or that another stoat has claimed: QEMU
/// would refuse it with a raw hostfwd error after creating sockets and files, and passt skips
/// a port it cannot bind without a word. Returns the claims, which the caller holds until its
/// VM's network has bound the ports; a program other than stoat that takes a port in the
/// moment before passt binds it is not kept out.
pub fn ensure_free(vm: &crate::vm::StoredVm) -> Result<Claims> {
    let wanted = std::iter::once((vm.config.sshport, "its ssh port"))
        .chain(vm.config.forwards.iter().map(|f| (f.hostport, "a forward")));
    let mut claims = Vec::new();
    for (port, what) in wanted {
        let error = match take(port) {
            Ok(claim) => {
                claims.push(claim);
                continue;
            }
            Err(error) => error,
        };
        let fix = if what == "a forward" {
            let remove = Step::on(Op::Forward, &vm.name)
                .with(Setting::Remove, Some(Value::Number(u64::from(port))));
            Said::text("stop what listens there, or ").step(remove)
        } else {
            let another = Step::on(Op::Update, &vm.name)
                .with(Setting::SshPort, Some(Value::Placeholder("PORT".into())));
            Said::text("stop what listens there, or pick another with ").step(another)
        };
        return Err(Error::PortBusy {
            vm: vm.name.clone(),
            port,
            what,
            reason: error.kind().to_string(),
            fix,
        });
    }
    Ok(Claims(claims))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_fails_the_probe_and_another_probe_does_not() {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let held = listener.local_addr().unwrap().port();
        assert!(probe(held).is_err(), "a listening port probes as taken");
        // Another command's probe, open at this very moment (on a port of its own: a port a
        // dropped listener had may still be held by a child a parallel test forks).
        let other = probe_socket(0).unwrap();
        let port = other.local_addr().unwrap().as_socket().unwrap().port();
        assert!(
            probe(port).is_ok(),
            "a concurrent probe is not a taken port"
        );
        drop((other, listener));
    }

    /// A port the kernel found free a moment ago.
    fn free_port() -> u16 {
        probe_socket(0)
            .unwrap()
            .local_addr()
            .unwrap()
            .as_socket()
            .unwrap()
            .port()
    }

    #[test]
    fn a_port_another_up_has_claimed_probes_as_taken_until_released() {
        let port = free_port();
        let claim = take(port).unwrap();
        let error = probe(port).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
        drop(claim);
        assert!(probe(port).is_ok(), "a released claim leaves the port free");
    }

    /// Set in the process [`a_probe_never_makes_a_claim_fail`] runs itself in.
    const ALONE: &str = "STOAT_PORTS_TEST_ALONE";

    #[test]
    fn a_probe_never_makes_a_claim_fail() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        // In a process of its own: here, a claim just dropped can live on for an instant in a
        // child another test forks (until that child execs), and the next claim would fail
        // for a reason that is not a probe's.
        if std::env::var_os(ALONE).is_none() {
            let name = "ports::tests::a_probe_never_makes_a_claim_fail";
            let alone = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&alone.stdout);
            assert!(alone.status.success(), "{said}");
            assert!(said.contains("1 passed"), "{said}");
            return;
        }
        let port = free_port();
        let done = Arc::new(AtomicBool::new(false));
        let prober = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let _ = probe(port);
                }
            })
        };
        let failed = (0..2000).filter(|_| take(port).is_err()).count();
        done.store(true, Ordering::Relaxed);
        prober.join().unwrap();
        assert_eq!(
            failed, 0,
            "claims that failed while another command probed the port"
        );
    }
}
