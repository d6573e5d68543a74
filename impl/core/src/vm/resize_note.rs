//! A disk grow that a kill can interrupt between `qemu-img resize` and the vm.toml that
//! records it. Update writes the size it is about to set into `<vm>/.disk-resize` before it
//! resizes; whoever loads the VM while that note exists takes the qcow2's own virtual size
//! as the truth: the noted size once the qcow2 has grown past the recorded one, the recorded
//! size otherwise. The next save of vm.toml records the truth and removes the note.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::VmDir;
use crate::Result;

/// A size string is a few bytes; anything longer is not a note of ours.
const MAX_NOTE: u64 = 64;

fn note_path(vm_dir: &Path) -> PathBuf {
    VmDir::at(vm_dir).resize_note()
}

/// Records, before the resize starts, the size the disk is about to get.
pub fn begin(vm_dir: &Path, size: &str) -> Result<()> {
    super::write_atomically(&note_path(vm_dir), size.as_bytes())
}

/// Removes the note once vm.toml records the disk's real size.
pub fn clear(vm_dir: &Path) {
    let _ = std::fs::remove_file(note_path(vm_dir));
}

/// The disk size a loaded VM really has: `recorded`, unless an interrupted resize has
/// already grown the qcow2, in which case the size that resize was asked for.
pub fn reconcile(vm_dir: &Path, recorded: &str) -> Option<String> {
    let noted = crate::bounded::read_text(&note_path(vm_dir), MAX_NOTE).ok()?;
    let noted = noted.trim();
    let recorded_bytes = crate::size::parse_size(recorded).ok()?;
    let virtual_bytes = qcow2_virtual_size(&VmDir::at(vm_dir).disk())?;
    // Update only grows, so a qcow2 larger than the record has taken the noted resize.
    (virtual_bytes > recorded_bytes && crate::size::parse_size(noted).is_ok())
        .then(|| noted.to_owned())
}

/// The virtual size in a qcow2 header (the number `qemu-img info` reports), or `None`
/// when the file is missing or not a qcow2.
pub(crate) fn qcow2_virtual_size(disk: &Path) -> Option<u64> {
    let mut header = [0u8; 32];
    std::fs::File::open(disk)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    if &header[..4] != b"QFI\xfb" {
        return None;
    }
    Some(u64::from_be_bytes(header[24..32].try_into().ok()?))
}
