//! Handshakes passt began before the guest could hear them, sent again once it can.
//!
//! Why: passt sends a forwarded connection's SYN to the guest once and never again, and until
//! it has seen a frame from the guest it does not know the guest's MAC, so that one SYN goes to
//! the Ethernet broadcast address. A guest whose interface is not up yet, or whose TCP drops a
//! segment not addressed to its own MAC, never answers it, and passt resets the connection
//! after its 10 s handshake bound. A Debian cloud image under TCG sends its first frame 35-40 s
//! into its boot, so every login stoat started before then waited those 10 s for nothing
//! (measured: docs/benchmarks.md "passt's one SYN"). QEMU's user network, a whole TCP stack,
//! sends its SYN again; this is the guard doing the same for passt.
//!
//! The guard notes each SYN passt sends the guest ([`Handshakes::passt_sent`]) and what the
//! guest's frames show ([`Handshakes::guest_sent`]); [`Handshakes::due`] hands back the SYNs to
//! send again, each addressed to the guest's own MAC: at once when the guest's network has
//! come further (its first frame, its DHCP request, its address), else at most once a second
//! and only while the guest sends frames. A connection is forgotten at the guest's first
//! segment of it, at passt's reset or FIN, or [`GIVE_UP`] after passt's SYN. Nothing here
//! does I/O: the guard's one writer to QEMU sends what `due` returns.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::netguard::{ETHERTYPE_IPV4, ETHER_HEADER};

/// passt resets a connection the guest has not answered after 10 s; a SYN sent again later
/// would only draw an answer passt no longer wants.
pub(super) const GIVE_UP: Duration = Duration::from_secs(11);

/// The least time between two sends of one SYN without an advance of the guest's network.
const AGAIN: Duration = Duration::from_secs(1);

/// At most this many connections are noted at once, so a host program that loops connections
/// at a silent guest cannot grow the guard; more are passed on unnoted.
pub(super) const MOST_WAITING: usize = 1024;

const TCP: u8 = 6;
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;

/// One TCP connection between passt (the host's side) and the guest: addresses and ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Connection {
    host: ([u8; 4], u16),
    guest: ([u8; 4], u16),
}

struct Waiting {
    /// passt's SYN as it sent it: the Ethernet frame, without the stream's length.
    syn: Vec<u8>,
    first_sent: Instant,
    last_sent: Instant,
    /// The guest's network came further since the last send.
    advanced: bool,
    /// The guest sent a frame since the last send.
    heard: bool,
}

/// The SYNs passt sent the guest that the guest has not answered, and the guest's MAC.
#[derive(Default)]
pub(super) struct Handshakes {
    waiting: HashMap<Connection, Waiting>,
    guest_mac: Option<[u8; 6]>,
}

/// A TCP segment's connection and flags, read from an Ethernet frame carrying IPv4.
struct Segment {
    source: ([u8; 4], u16),
    destination: ([u8; 4], u16),
    flags: u8,
}

fn segment(frame: &[u8]) -> Option<Segment> {
    if frame.get(12..14)? != ETHERTYPE_IPV4.to_be_bytes() {
        return None;
    }
    let ip = frame.get(ETHER_HEADER..)?;
    if *ip.get(9)? != TCP {
        return None;
    }
    let header = usize::from(ip[0] & 0x0f) * 4;
    let tcp = ip.get(header..header + 14)?;
    let address = |at: usize| <[u8; 4]>::try_from(&ip[at..at + 4]).ok();
    let port = |at: usize| u16::from_be_bytes([tcp[at], tcp[at + 1]]);
    Some(Segment {
        source: (address(12)?, port(0)),
        destination: (address(16)?, port(2)),
        flags: tcp[13],
    })
}

impl Handshakes {
    /// Notes a frame passt sends the guest: a SYN opens a wait, a reset or FIN ends one.
    pub(super) fn passt_sent(&mut self, frame: &[u8], now: Instant) {
        let Some(segment) = segment(frame) else {
            return;
        };
        let connection = Connection {
            host: segment.source,
            guest: segment.destination,
        };
        if segment.flags & (RST | FIN) != 0 {
            self.waiting.remove(&connection);
        } else if segment.flags & (SYN | ACK) == SYN
            && self.waiting.len() < MOST_WAITING
            && !self.waiting.contains_key(&connection)
        {
            self.waiting.insert(
                connection,
                Waiting {
                    syn: frame.to_vec(),
                    first_sent: now,
                    last_sent: now,
                    advanced: false,
                    heard: false,
                },
            );
        }
    }

    /// Notes a frame from the guest: its MAC, its answer to a waiting connection, and whether
    /// it shows the guest's network further on than before (`advanced`).
    pub(super) fn guest_sent(&mut self, frame: &[u8], advanced: bool) {
        if self.waiting.is_empty() {
            // Only the MAC is kept while nothing waits: the cheap path of every frame.
            self.learn_mac(frame);
            return;
        }
        self.learn_mac(frame);
        if let Some(segment) = segment(frame) {
            self.waiting.remove(&Connection {
                host: segment.destination,
                guest: segment.source,
            });
        }
        for waiting in self.waiting.values_mut() {
            waiting.heard = true;
            waiting.advanced |= advanced;
        }
    }

    /// The guest's own MAC is the source of its frames; a multicast source is not one.
    fn learn_mac(&mut self, frame: &[u8]) {
        if let Some(source) = frame.get(6..12) {
            if source[0] & 1 == 0 && source.iter().any(|b| *b != 0) {
                let mac = self.guest_mac.get_or_insert([0; 6]);
                mac.copy_from_slice(source);
            }
        }
    }

    /// Whether a connection waits (the guard then wakes to call [`Handshakes::due`]).
    pub(super) fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The SYNs to send the guest again now, each addressed to its MAC; forgets those passt
    /// has given up on.
    pub(super) fn due(&mut self, now: Instant) -> Vec<Vec<u8>> {
        self.waiting
            .retain(|_, w| now.saturating_duration_since(w.first_sent) < GIVE_UP);
        let Some(mac) = self.guest_mac else {
            return Vec::new();
        };
        let mut frames = Vec::new();
        for waiting in self.waiting.values_mut() {
            let again = waiting.heard && now.saturating_duration_since(waiting.last_sent) >= AGAIN;
            if waiting.advanced || again {
                let mut frame = waiting.syn.clone();
                frame[..6].copy_from_slice(&mac);
                frames.push(frame);
                waiting.last_sent = now;
                waiting.advanced = false;
                waiting.heard = false;
            }
        }
        frames
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    const GUEST_MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
    const PASST_MAC: [u8; 6] = [0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55];
    const HOST: ([u8; 4], u16) = ([10, 0, 2, 2], 40000);
    const GUEST: ([u8; 4], u16) = ([10, 0, 2, 15], 22);

    pub(crate) fn tcp_frame(
        destination_mac: [u8; 6],
        source_mac: [u8; 6],
        from: ([u8; 4], u16),
        to: ([u8; 4], u16),
        flags: u8,
    ) -> Vec<u8> {
        let mut frame = destination_mac.to_vec();
        frame.extend_from_slice(&source_mac);
        frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        frame.extend_from_slice(&[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, TCP, 0, 0]);
        frame.extend_from_slice(&from.0);
        frame.extend_from_slice(&to.0);
        frame.extend_from_slice(&from.1.to_be_bytes());
        frame.extend_from_slice(&to.1.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        frame
    }

    fn passt_syn(port: u16) -> Vec<u8> {
        tcp_frame([0xff; 6], PASST_MAC, (HOST.0, port), GUEST, SYN)
    }

    /// An IPv6 frame from the guest: shows its MAC, answers nothing.
    fn guest_link_frame() -> Vec<u8> {
        let mut frame = PASST_MAC.to_vec();
        frame.extend_from_slice(&GUEST_MAC);
        frame.extend_from_slice(&[0x86, 0xdd]);
        frame.extend_from_slice(&[0; 40]);
        frame
    }

    #[test]
    fn an_unheard_syn_goes_again_to_the_guests_mac_at_once_on_an_advance_then_once_a_second() {
        let start = Instant::now();
        let mut handshakes = Handshakes::default();
        handshakes.passt_sent(&passt_syn(40000), start);
        assert!(handshakes.any_waiting());
        // Before the guest has sent anything its MAC is not known: nothing to send.
        assert!(handshakes.due(start + Duration::from_secs(2)).is_empty());
        handshakes.guest_sent(&guest_link_frame(), true);
        let at = start + Duration::from_secs(3);
        let frames = handshakes.due(at);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0][..6], GUEST_MAC);
        assert_eq!(frames[0][6..], passt_syn(40000)[6..]);
        // Nothing new: nothing again.
        assert!(handshakes.due(at + Duration::from_secs(2)).is_empty());
        // The guest speaks without advancing: again, but not within the second.
        handshakes.guest_sent(&guest_link_frame(), false);
        assert!(handshakes.due(at + Duration::from_millis(500)).is_empty());
        assert_eq!(handshakes.due(at + Duration::from_millis(1000)).len(), 1);
        // Every advance sends it at once.
        handshakes.guest_sent(&guest_link_frame(), true);
        assert_eq!(handshakes.due(at + Duration::from_millis(1100)).len(), 1);
        // passt gives up after its bound, and so does the guard.
        handshakes.guest_sent(&guest_link_frame(), true);
        assert!(handshakes.due(start + GIVE_UP).is_empty());
        assert!(!handshakes.any_waiting());
    }

    #[test]
    fn an_answered_or_abandoned_syn_is_not_sent_again() {
        let now = Instant::now();
        let mut handshakes = Handshakes::default();
        handshakes.passt_sent(&passt_syn(40000), now);
        handshakes.passt_sent(&passt_syn(40001), now);
        handshakes.passt_sent(&passt_syn(40002), now);
        // The guest answers the first (a reset counts), passt resets the second.
        handshakes.guest_sent(
            &tcp_frame(PASST_MAC, GUEST_MAC, GUEST, (HOST.0, 40000), RST | ACK),
            true,
        );
        handshakes.passt_sent(
            &tcp_frame([0xff; 6], PASST_MAC, (HOST.0, 40001), GUEST, RST),
            now,
        );
        let frames = handshakes.due(now + Duration::from_secs(1));
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0][6..], passt_syn(40002)[6..]);
        // passt's FIN ends the last.
        handshakes.passt_sent(
            &tcp_frame(GUEST_MAC, PASST_MAC, (HOST.0, 40002), GUEST, FIN | ACK),
            now,
        );
        assert!(!handshakes.any_waiting());
    }

    #[test]
    fn only_passts_syns_wait_and_no_more_than_the_bound() {
        let now = Instant::now();
        let mut handshakes = Handshakes::default();
        // A SYN-ACK, a plain ACK, an IPv6 frame, a cut frame: none is a handshake to wait on.
        handshakes.passt_sent(
            &tcp_frame([0xff; 6], PASST_MAC, HOST, GUEST, SYN | ACK),
            now,
        );
        handshakes.passt_sent(&tcp_frame([0xff; 6], PASST_MAC, HOST, GUEST, ACK), now);
        handshakes.passt_sent(&guest_link_frame(), now);
        handshakes.passt_sent(&passt_syn(40000)[..40], now);
        assert!(!handshakes.any_waiting());
        for port in 0..(MOST_WAITING as u16 + 10) {
            handshakes.passt_sent(&passt_syn(port), now);
        }
        assert_eq!(handshakes.waiting.len(), MOST_WAITING);
        // A multicast source is not the guest's MAC.
        let mut multicast = guest_link_frame();
        multicast[6] |= 1;
        handshakes.guest_sent(&multicast, true);
        assert!(handshakes.due(now).is_empty());
    }
}
