//! The network guard: one small stoat process per boot (run as `stoat __net-guard
//! <vm>/n.sock`) between QEMU's `-netdev stream` and passt, which drops every frame from the
//! guest addressed to the host's own loopback.
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
//! The stream carries each frame after its length (4 bytes, big-endian), in both directions.
//! The guard's life is the console logger's (qemu/helper.rs): its socket is bound before QEMU
//! starts, it connects to passt once QEMU connected, and it ends when either side closes;
//! passt (`--one-off`) then ends too.

use std::ffi::OsStr;
use std::io::{BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::net::UnixStream;
use std::path::Path;

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

/// Binds `socket` and starts `program __net-guard <passt_socket>` with it on fd 3.
pub fn spawn(program: &Path, socket: &Path, passt_socket: &Path) -> Result<Helper, QemuError> {
    helper::spawn(
        "start the network guard",
        program,
        &[OsStr::new(GUARD_ARG), passt_socket.as_os_str()],
        socket,
    )
}

/// The guard's body: waits for QEMU, connects to passt at `passt_socket`, then carries frames
/// both ways until one side closes.
pub fn serve(passt_socket: &Path) -> std::io::Result<()> {
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
