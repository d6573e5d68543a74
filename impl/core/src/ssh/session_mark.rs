//! How `exec` tells the guest's stderr from ssh's own. The remote command's first act is to
//! write [`MARK`] to stderr, so a session that opened shows it and one that did not cannot:
//! ssh exiting 255 without it never ran the command (an sshd restarting under cloud-init, a
//! key not installed yet), which makes trying again safe and makes "never connected" an error
//! rather than a guest status, whatever ssh's wording. The mark is cut out of what the user and
//! the JSON result see; what came before it is ssh's own talk (warnings), kept as before.

/// Bytes no guest program writes by chance: ASCII record and unit separators around a name.
pub const MARK: &[u8] = b"\x1e\x1fstoat-session\x1f\x1e";

/// The shell that writes [`MARK`] (octal escapes: POSIX printf, busybox's included).
pub const WRITE_MARK: &str = r"printf '\036\037stoat-session\037\036' >&2; ";

/// Past this many bytes without the mark, stderr is passed on as it is: ssh's own talk
/// before a session is a few lines, so this much is not it.
const HOLD_LIMIT: usize = 64 * 1024;

/// Splits a stderr stream at [`MARK`] as it arrives.
#[derive(Debug, Default)]
pub struct MarkFilter {
    /// The mark went by (or the stream was passed on past [`HOLD_LIMIT`]).
    opened: bool,
    /// What came before the mark, held until the mark says a session opened.
    held: Vec<u8>,
}

impl MarkFilter {
    /// Takes the next bytes of stderr; returns those now known to be for the user.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.opened {
            return chunk.to_vec();
        }
        self.held.extend_from_slice(chunk);
        if let Some(at) = find(&self.held, MARK) {
            self.opened = true;
            let mut out = std::mem::take(&mut self.held);
            out.drain(at..at + MARK.len());
            return out;
        }
        if self.held.len() > HOLD_LIMIT {
            self.opened = true;
            return std::mem::take(&mut self.held);
        }
        Vec::new()
    }

    /// True once a session opened: the remote command started.
    pub fn opened(&self) -> bool {
        self.opened
    }

    /// What is still held: ssh's own talk when no session opened.
    pub fn into_held(self) -> Vec<u8> {
        self.held
    }
}

/// The whole of a captured stderr through a [`MarkFilter`]: whether a session opened, and the
/// bytes without the mark.
pub fn split(stderr: &[u8]) -> (bool, Vec<u8>) {
    let mut filter = MarkFilter::default();
    let mut out = filter.feed(stderr);
    let opened = filter.opened();
    out.extend(filter.into_held());
    (opened, out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_cut_out_and_what_came_before_kept() {
        let mut stream = b"Warning: added key\n".to_vec();
        stream.extend_from_slice(MARK);
        stream.extend_from_slice(b"guest says\n");
        assert_eq!(
            split(&stream),
            (true, b"Warning: added key\nguest says\n".to_vec())
        );
    }

    #[test]
    fn a_mark_split_across_reads_is_found() {
        let mut filter = MarkFilter::default();
        assert!(filter.feed(&MARK[..5]).is_empty());
        assert!(!filter.opened());
        let mut rest = MARK[5..].to_vec();
        rest.extend_from_slice(b"\xff\xfe");
        assert_eq!(filter.feed(&rest), b"\xff\xfe");
        assert!(filter.opened());
        assert_eq!(filter.feed(b"more"), b"more");
    }

    #[test]
    fn no_mark_means_no_session_and_everything_is_held() {
        let said = b"kex_exchange_identification: Connection closed by remote host\n";
        assert_eq!(split(said), (false, said.to_vec()));
    }

    #[test]
    fn a_long_stream_without_the_mark_is_passed_on() {
        let mut filter = MarkFilter::default();
        let out = filter.feed(&vec![b'x'; HOLD_LIMIT + 1]);
        assert_eq!(out.len(), HOLD_LIMIT + 1);
        assert!(filter.opened());
    }

    #[test]
    fn the_shell_writes_exactly_the_mark() {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{WRITE_MARK}printf done >&2"))
            .output()
            .unwrap();
        let mut want = MARK.to_vec();
        want.extend_from_slice(b"done");
        assert_eq!(out.stderr, want);
    }
}
