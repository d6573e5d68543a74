//! Which display notice a VM's person has already been shown. `up` prints the `display:`
//! block only when it says something new for this VM: the first start, or a start after
//! the surface or the attach advice changed (vnc to a window, a viewer installed). The
//! block last shown is kept in `<vm>/display-notice`, written atomically; a VM without the
//! file (every VM made before it existed, every clone) gets the notice once more.

use std::path::{Path, PathBuf};

use super::VmDir;

/// A notice is a few lines; anything longer is not one of ours and reads as "not shown".
const MAX_NOTICE: u64 = 16 * 1024;

fn path(vm_dir: &Path) -> PathBuf {
    VmDir::at(vm_dir).display_notice()
}

/// Returns `lines` when they differ from the notice last shown for the VM in `vm_dir`, and
/// records them as shown; returns nothing when they were shown already. A notice that
/// cannot be recorded is shown again next time: it never fails the command that prints it.
pub fn unseen(vm_dir: &Path, lines: Vec<String>) -> Vec<String> {
    let text = lines.join("\n");
    let shown = crate::bounded::read_text(&path(vm_dir), MAX_NOTICE).ok();
    if shown.as_deref() == Some(text.as_str()) {
        return Vec::new();
    }
    let _ = super::write_atomically(&path(vm_dir), text.as_bytes());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn shown_once_until_it_says_something_else() {
        let dir = tempfile::tempdir().unwrap();
        let vnc = lines(&["display: no qemu window; the screen is on /v", "  attach"]);
        assert_eq!(unseen(dir.path(), vnc.clone()), vnc);
        assert!(unseen(dir.path(), vnc.clone()).is_empty());
        let window = lines(&["display: a qemu window"]);
        assert_eq!(unseen(dir.path(), window.clone()), window);
        assert!(unseen(dir.path(), window).is_empty());
        assert_eq!(unseen(dir.path(), vnc.clone()), vnc, "back to vnc is news");
    }

    #[test]
    fn a_notice_that_cannot_be_recorded_is_still_shown() {
        let missing = Path::new("/nonexistent/stoat-vm");
        let vnc = lines(&["display: no qemu window"]);
        assert_eq!(unseen(missing, vnc.clone()), vnc);
        assert_eq!(unseen(missing, vnc.clone()), vnc);
    }
}
