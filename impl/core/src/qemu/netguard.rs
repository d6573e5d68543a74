//! The network guard: one small stoat process per boot (run as `stoat __net-guard
//! <vm>/n.sock <vm>/net-state`) between QEMU's `-netdev stream` and passt, which drops every
//! frame from the guest addressed to the host's own loopback, and notes in `net-state` how far
//! the guest's network has come ([`GuestNetwork`]).
//!
//! Why: passt opens a host socket to whatever address a guest frame names. `--no-map-gw` only
//! stops the gateway address from meaning the host; a guest's root that writes a raw frame
//! for 127.0.0.1 (or 0.0.0.0, which Linux also takes for the local host) still reaches every
//! service bound to the host's loopback, other VMs' ssh forwards included, and none of
//! passt's options stop it (measured: docs/decisions/runtime.md "raw frames for the host
//! itself"). So frames from the guest pass only when they are ARP, or IPv4/IPv6 to an
//! address that is not 127.0.0.0/8, 0.0.0.0/8, `::1`, `::` or those addresses written in
//! IPv6 form; everything else (other ethertypes, VLAN tags, cut frames) is dropped. Frames
//! from passt to the guest pass unread. A VM with the `host_loopback` opt-in has no guard.
//!
//! Why the note: a host connection to the guest's ssh port that passt cannot hand on (the
//! guest has no address yet, so nothing answers passt's SYN) and that the host client closes
//! first makes Debian 12's passt spin a core until its own 10 s handshake timeout (measured:
//! docs/decisions/runtime.md "reaching a booting guest"). The logins that wait for a booting
//! guest (ssh/login.rs) read the note and knock only once the guest can answer.
//!
//! The stream carries each frame after its length (4 bytes, big-endian), in both directions.
//! The guard's life is the console logger's (qemu/helper.rs): its socket is bound before QEMU
//! starts, it connects to passt once QEMU connected, and it ends when either side closes;
//! passt (`--one-off`) then ends too.

use std::ffi::OsStr;
use std::io::{BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::error::QemuError;
use super::helper::{self, Helper};

/// The first argument that makes the stoat binary the network guard (hidden: not a command).
pub const GUARD_ARG: &str = "__net-guard";

/// The longest frame the stream may carry (QEMU's own network buffer is 68 KiB); a longer
/// length means the stream is not what the guard reads, and it ends the boot's network.
const MAX_FRAME: usize = 1 << 20;

/// How much is copied from passt to QEMU per step.
const CHUNK: usize = 64 * 1024;

const ETHER_HEADER: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_IPV6: u16 = 0x86DD;

/// Binds `socket`, notes the guest [`Seen::Silent`] in `net_state`, and starts `program
/// __net-guard <passt_socket> <net_state>` with the socket on fd 3.
pub fn spawn(
    program: &Path,
    socket: &Path,
    passt_socket: &Path,
    net_state: &Path,
) -> Result<Helper, QemuError> {
    record(net_state, Seen::Silent)
        .map_err(|error| QemuError::io("note the guest's network", error))?;
    helper::spawn(
        "start the network guard",
        program,
        &[
            OsStr::new(GUARD_ARG),
            passt_socket.as_os_str(),
            net_state.as_os_str(),
        ],
        socket,
    )
}

/// The guard's body: waits for QEMU, connects to passt at `passt_socket`, then carries frames
/// both ways until one side closes, noting in `net_state` what the guest's frames show.
pub fn serve(passt_socket: &Path, net_state: &Path) -> std::io::Result<()> {
    let qemu = helper::accept_qemu()?;
    let passt = UnixStream::connect(passt_socket)?;
    let (qemu_in, mut passt_out) = (qemu.try_clone()?, passt.try_clone()?);
    let (mut passt_in, mut qemu_out) = (passt, qemu);
    // passt to the guest: passed as it comes. Its end is the guard's end.
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match passt_in.read(&mut buf) {
                Ok(0) => std::process::exit(0),
                Ok(n) => {
                    if qemu_out.write_all(&buf[..n]).is_err() {
                        std::process::exit(0);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => std::process::exit(0),
            }
        }
    });
    // The guest to passt: frame by frame, each whole frame in one write.
    let mut from_guest = BufReader::with_capacity(CHUNK, qemu_in);
    let mut frame = Vec::with_capacity(CHUNK);
    let mut seen = Seen::Silent;
    loop {
        let mut length = [0u8; 4];
        match from_guest.read_exact(&mut length) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let len = u32::from_be_bytes(length) as usize;
        if len > MAX_FRAME {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a frame of {len} bytes"),
            ));
        }
        frame.clear();
        frame.extend_from_slice(&length);
        frame.resize(4 + len, 0);
        from_guest.read_exact(&mut frame[4..])?;
        if seen != Seen::Addressed {
            let now = classify(&frame[4..]);
            if now > seen {
                seen = now;
                // A note that cannot be written only makes logins wait their fallback.
                let _ = record(net_state, seen);
            }
        }
        if passes(&frame[4..]) {
            passt_out.write_all(&frame)?;
        }
    }
}

/// Whether a guest's Ethernet frame may go on to passt: ARP, and IPv4 or IPv6 for any
/// address but the host's own.
pub fn passes(frame: &[u8]) -> bool {
    let Some(l3) = frame.get(ETHER_HEADER..) else {
        return false;
    };
    match u16::from_be_bytes([frame[12], frame[13]]) {
        ETHERTYPE_ARP => true,
        ETHERTYPE_IPV4 => l3
            .get(16..20)
            .and_then(|d| <[u8; 4]>::try_from(d).ok())
            .is_some_and(|d| not_the_host_v4(Ipv4Addr::from(d))),
        ETHERTYPE_IPV6 => l3
            .get(24..40)
            .and_then(|d| <[u8; 16]>::try_from(d).ok())
            .is_some_and(|d| not_the_host_v6(Ipv6Addr::from(d))),
        _ => false,
    }
}

/// How far a guest's network has come, as its frames show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    /// No frame yet: its network interface is not up.
    Silent,
    /// Frames, none from an IPv4 address yet and no DHCP request (IPv6 link-local, ARP
    /// probes): a guest with a static address, or one whose DHCP client has not started.
    Link,
    /// A DHCP request from 0.0.0.0: the guest has no address until its lease comes.
    Leasing,
    /// A frame from an IPv4 address (its own ARP or any IPv4 packet): it answers passt now.
    Addressed,
}

impl Seen {
    fn word(self) -> &'static str {
        match self {
            Seen::Silent => "silent",
            Seen::Link => "link",
            Seen::Leasing => "leasing",
            Seen::Addressed => "addressed",
        }
    }
}

/// What one frame from the guest shows: [`Seen::Addressed`] for IPv4 or ARP sent from a
/// non-zero IPv4 address, [`Seen::Leasing`] for a DHCP request (UDP from port 68 to 67),
/// [`Seen::Link`] for anything else.
pub fn classify(frame: &[u8]) -> Seen {
    let Some(l3) = frame.get(ETHER_HEADER..) else {
        return Seen::Link;
    };
    // The sender's IPv4 address: bytes 12-15 of an IPv4 header, 14-17 of an ARP packet.
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let source = match ethertype {
        ETHERTYPE_IPV4 => l3.get(12..16),
        ETHERTYPE_ARP => l3.get(14..18),
        _ => None,
    };
    match source {
        Some(address) if address.iter().any(|b| *b != 0) => Seen::Addressed,
        Some(_) if ethertype == ETHERTYPE_IPV4 && is_dhcp_request(l3) => Seen::Leasing,
        _ => Seen::Link,
    }
}

/// UDP from port 68 to port 67, past an IPv4 header of any length.
fn is_dhcp_request(ipv4: &[u8]) -> bool {
    const UDP: u8 = 17;
    let header = usize::from(ipv4[0] & 0x0f) * 4;
    let ports = ipv4.get(header..header + 4);
    ipv4.get(9) == Some(&UDP) && ports == Some(&[0, 68, 0, 67][..])
}

/// Writes `seen` to `path` whole (a reader never sees half a word): a new file renamed over.
fn record(path: &Path, seen: Seen) -> std::io::Result<()> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, seen.word())?;
    std::fs::rename(&partial, path)
}

/// A running boot's network as its guard last noted it, with how long ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestNetwork {
    /// No note: the boot has no guard (`host_loopback`) or was started by an older stoat.
    Unwatched,
    Silent(Duration),
    Link(Duration),
    Leasing(Duration),
    Addressed,
}

impl GuestNetwork {
    /// Reads the note at `path`.
    pub fn read(path: &Path) -> GuestNetwork {
        let Ok(mut file) = std::fs::File::open(path) else {
            return GuestNetwork::Unwatched;
        };
        let age = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .unwrap_or_default();
        let mut word = String::new();
        // The note is one short word; anything longer is not one.
        let _ = Read::by_ref(&mut file).take(16).read_to_string(&mut word);
        match word.trim() {
            "silent" => GuestNetwork::Silent(age),
            "link" => GuestNetwork::Link(age),
            "leasing" => GuestNetwork::Leasing(age),
            "addressed" => GuestNetwork::Addressed,
            _ => GuestNetwork::Unwatched,
        }
    }
}

/// 127.0.0.0/8 is the host's loopback; 0.0.0.0/8 is taken for the local host when connected to.
fn not_the_host_v4(address: Ipv4Addr) -> bool {
    !matches!(address.octets()[0], 0 | 127)
}

/// `::1` and `::`, and an IPv4 address of the host written as an IPv6 one (`::ffff:a.b.c.d`
/// or the old `::a.b.c.d`).
fn not_the_host_v6(address: Ipv6Addr) -> bool {
    let octets = address.octets();
    let embedded = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    let compatible = octets[..12].iter().all(|b| *b == 0);
    if compatible || address.to_ipv4_mapped().is_some() {
        return not_the_host_v4(embedded);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ethernet(ethertype: u16, l3: &[u8]) -> Vec<u8> {
        let mut frame = vec![0xff; 6];
        frame.extend_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        frame.extend_from_slice(&ethertype.to_be_bytes());
        frame.extend_from_slice(l3);
        frame
    }

    fn ipv4_to(dst: [u8; 4]) -> Vec<u8> {
        let mut header = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 15];
        header.extend_from_slice(&dst);
        header.extend_from_slice(&[0; 20]);
        ethernet(ETHERTYPE_IPV4, &header)
    }

    fn ipv6_to(dst: Ipv6Addr) -> Vec<u8> {
        let mut header = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        header.extend_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        header.extend_from_slice(&dst.octets());
        header.extend_from_slice(&[0; 20]);
        ethernet(ETHERTYPE_IPV6, &header)
    }

    #[test]
    fn frames_for_the_outside_and_arp_pass() {
        assert!(passes(&ipv4_to([10, 0, 2, 2])));
        assert!(passes(&ipv4_to([93, 184, 216, 34])));
        assert!(passes(&ipv4_to([255, 255, 255, 255])));
        assert!(passes(&ipv6_to("2001:db8::1".parse().unwrap())));
        assert!(passes(&ipv6_to("ff02::2".parse().unwrap())));
        assert!(passes(&ethernet(ETHERTYPE_ARP, &[0; 28])));
    }

    #[test]
    fn frames_for_the_host_itself_are_dropped() {
        for dst in [[127, 0, 0, 1], [127, 1, 2, 3], [0, 0, 0, 0], [0, 9, 9, 9]] {
            assert!(!passes(&ipv4_to(dst)), "{dst:?}");
        }
        for dst in [
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::ffff:0.0.0.0",
        ] {
            assert!(!passes(&ipv6_to(dst.parse().unwrap())), "{dst}");
        }
    }

    fn ipv4_from(src: [u8; 4]) -> Vec<u8> {
        let mut frame = ipv4_to([10, 0, 2, 2]);
        frame[ETHER_HEADER + 12..ETHER_HEADER + 16].copy_from_slice(&src);
        frame
    }

    fn arp_from(sender: [u8; 4]) -> Vec<u8> {
        let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
        arp.extend_from_slice(&[0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        arp.extend_from_slice(&sender);
        arp.extend_from_slice(&[0; 6]);
        arp.extend_from_slice(&[10, 0, 2, 15]);
        ethernet(ETHERTYPE_ARP, &arp)
    }

    #[test]
    fn a_frame_from_an_ipv4_address_shows_the_guest_addressed() {
        assert_eq!(classify(&ipv4_from([10, 0, 2, 15])), Seen::Addressed);
        assert_eq!(classify(&arp_from([10, 0, 2, 15])), Seen::Addressed);
        // An ARP probe, IPv6 link-local, a cut frame: link only; DHCP before the lease: leasing.
        assert_eq!(classify(&ipv4_from([0, 0, 0, 0])), Seen::Link);
        let mut dhcp = ipv4_from([0, 0, 0, 0]);
        dhcp[ETHER_HEADER + 9] = 17;
        dhcp[ETHER_HEADER + 20..ETHER_HEADER + 24].copy_from_slice(&[0, 68, 0, 67]);
        assert_eq!(classify(&dhcp), Seen::Leasing);
        dhcp[ETHER_HEADER + 9] = 6;
        assert_eq!(classify(&dhcp), Seen::Link);
        assert_eq!(classify(&arp_from([0, 0, 0, 0])), Seen::Link);
        assert_eq!(classify(&ipv6_to("ff02::2".parse().unwrap())), Seen::Link);
        assert_eq!(classify(&ipv4_from([10, 0, 2, 15])[..20]), Seen::Link);
        assert_eq!(classify(&[]), Seen::Link);
    }

    #[test]
    fn the_note_reads_back_with_its_age_and_a_missing_one_is_unwatched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net-state");
        assert_eq!(GuestNetwork::read(&path), GuestNetwork::Unwatched);
        record(&path, Seen::Silent).unwrap();
        assert!(
            matches!(GuestNetwork::read(&path), GuestNetwork::Silent(age) if age < Duration::from_secs(60))
        );
        record(&path, Seen::Link).unwrap();
        assert!(matches!(GuestNetwork::read(&path), GuestNetwork::Link(_)));
        record(&path, Seen::Leasing).unwrap();
        assert!(matches!(
            GuestNetwork::read(&path),
            GuestNetwork::Leasing(_)
        ));
        record(&path, Seen::Addressed).unwrap();
        assert_eq!(GuestNetwork::read(&path), GuestNetwork::Addressed);
        std::fs::write(&path, "garbage").unwrap();
        assert_eq!(GuestNetwork::read(&path), GuestNetwork::Unwatched);
    }

    #[test]
    fn cut_frames_and_other_ethertypes_are_dropped() {
        assert!(!passes(&[]));
        assert!(!passes(&ipv4_to([10, 0, 2, 2])[..ETHER_HEADER + 19]));
        assert!(!passes(
            &ipv6_to("2001:db8::1".parse().unwrap())[..ETHER_HEADER + 39]
        ));
        // A VLAN tag would hide the address behind four more bytes.
        assert!(!passes(&ethernet(0x8100, &ipv4_to([127, 0, 0, 1])[12..])));
        assert!(!passes(&ethernet(0x88cc, &[0; 40])));
    }
}
