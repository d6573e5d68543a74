//! Guessing an image's OS and backend from its file name (upstream `iso.Infer`, docs/contract.md behaviour#images).

use crate::vm::Backend;

/// OS hints, checked in order; the first one that is a substring of the name wins.
/// (`arch` also matches "search": upstream behaves the same, and so do we.)
const OS_HINTS: &[&str] = &["alpine", "ubuntu", "debian", "fedora", "arch"];

/// Returns `(os, backend)` guessed from a file name, case-insensitively. `os` may be `""`.
pub fn infer(filename: &str) -> (String, Backend) {
    let name = filename.to_ascii_lowercase();
    let os = OS_HINTS
        .iter()
        .find(|hint| name.contains(*hint))
        .map(|hint| hint.to_string())
        .unwrap_or_default();
    let backend = if os == "alpine" && name.ends_with(".iso") {
        Backend::Apkovl
    } else if name.contains("cloudimg")
        || name.contains("genericcloud")
        || name.ends_with(".qcow2")
        || name.ends_with(".img")
    {
        Backend::Cloudinit
    } else {
        Backend::Ssh
    };
    (os, backend)
}

#[cfg(test)]
mod tests {
    use super::{infer, Backend};

    fn pair(os: &str, backend: &str) -> (String, Backend) {
        (os.to_owned(), Backend::parse(backend))
    }

    #[test]
    fn follows_upstream_rules() {
        assert_eq!(
            infer("alpine-virt-3.24.1-x86_64.iso"),
            pair("alpine", "apkovl")
        );
        assert_eq!(infer("ALPINE-VIRT.ISO"), pair("alpine", "apkovl"));
        assert_eq!(
            infer("generic_alpine-3.24.1-x86_64-bios-cloudinit-r0.qcow2"),
            pair("alpine", "cloudinit")
        );
        assert_eq!(
            infer("ubuntu-24.04-server-cloudimg-amd64.img"),
            pair("ubuntu", "cloudinit")
        );
        assert_eq!(
            infer("debian-13-genericcloud-amd64.raw"),
            pair("debian", "cloudinit")
        );
        assert_eq!(infer("mystery.qcow2"), pair("", "cloudinit"));
        assert_eq!(infer("research.iso"), pair("arch", "ssh"));
        assert_eq!(infer("freebsd.iso"), pair("", "ssh"));
    }
}
