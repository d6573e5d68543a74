//! The apkovl backend (docs/contract.md behaviour#qemu): Alpine boots its own ISO's kernel
//! and finds `<vm>/ovl/stoat.apkovl.tar.gz` on a FAT drive, an overlay that turns the live
//! system into a reachable VM (sshd with stoat's key, DHCP, the 9p `work`/`host` mounts) and,
//! in disk mode, installs Alpine onto `/dev/vda` on first boot and powers off.
//!
//! [`contents`] is pure (the overlay's entries from a few facts); [`build`] gathers the facts
//! (keys, share, release) and writes the tarball atomically; [`prepare`] is what `up` calls.

use std::path::{Path, PathBuf};

use super::kernel::{self, BootFiles};
use super::tarball::{self, Entry};
use crate::vm::Mode;
use crate::vm::StoredVm;
use crate::{keys, Env, Error, Result, Root};

/// The kernel command line upstream boots Alpine's ISO kernel with.
pub const KERNEL_APPEND: &str = "modules=loop,squashfs,sd-mod,usb-storage quiet";

/// Alpine's own package mirror, which the guest's `apk` uses. This is the one host name the
/// overlay writes: it is Alpine's package repository (what every Alpine image points at), not a
/// registry stoat itself talks to; stoat on the host never contacts it.
pub const ALPINE_MIRROR: &str = "https://dl-cdn.alpinelinux.org/alpine";

/// Where a disk VM's install script looks for its answers.
const ANSWERFILE: &str = "etc/stoat/answerfile";

/// The facts the overlay is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayFacts {
    /// The VM's name (its hostname in disk mode).
    pub name: String,
    /// stoat's client public key, one line.
    pub client_pubkey: String,
    /// The guest's ssh host key pair (private, public).
    pub host_key: (Vec<u8>, Vec<u8>),
    /// Whether the read-only `host` share is exported.
    pub share: bool,
    /// Disk mode: install onto /dev/vda on first boot.
    pub install: bool,
    /// The `vX.Y` repository branch, or `latest-stable`.
    pub release: String,
}

/// Where the kernel, initramfs and overlay drive come from for one boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub boot: BootFiles,
    /// `<vm>/ovl`, exposed to the guest as a FAT drive.
    pub overlay_dir: PathBuf,
}

/// Extracts the kernel (cached) and rebuilds the overlay: the key, the share and the mode may
/// have changed since the last boot.
pub fn prepare(root: &Root, env: &Env, stored: &StoredVm, iso: &Path) -> Result<Prepared> {
    let boot = kernel::ensure(env, iso, &stored.dir)?;
    let overlay = build(root, env, stored, iso)?;
    let overlay_dir = overlay
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| stored.files().overlay_dir());
    Ok(Prepared { boot, overlay_dir })
}

/// Writes `<vm>/ovl/stoat.apkovl.tar.gz` (temporary name, then rename); returns its path.
pub fn build(root: &Root, env: &Env, stored: &StoredVm, iso: &Path) -> Result<PathBuf> {
    let client_key = keys::ensure(root, env)?;
    let host_key = keys::ensure_guest_host(root, env)?;
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| Error::io(format!("read {}", path.display()), e))
    };
    let client_pubkey = String::from_utf8_lossy(&read(&client_key.with_extension("pub"))?)
        .trim()
        .to_owned();
    let facts = OverlayFacts {
        name: stored.name.clone(),
        client_pubkey,
        host_key: (read(&host_key)?, read(&host_key.with_extension("pub"))?),
        share: !stored.config.share.trim().is_empty(),
        install: stored.config.mode == Mode::Disk && !stored.config.installed,
        release: release_for(iso),
    };
    let bytes = tarball::tar_gz(&contents(&facts)).map_err(Error::Internal)?;
    let files = stored.files();
    let dir = files.overlay_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    let temp = files.apkovl_partial();
    let path = files.apkovl();
    let written = write_private(&temp, &bytes).and_then(|()| {
        std::fs::rename(&temp, &path)
            .map_err(|e| Error::io(format!("rename {}", path.display()), e))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map(|()| path)
}

/// The overlay holds the guest's private host key: only the owner reads the tarball.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// `v3.20` from an ISO named like `alpine-virt-3.20.3-x86_64.iso`, else `latest-stable`.
pub fn release_for(iso: &Path) -> String {
    let name = iso
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.starts_with("alpine-") {
        return "latest-stable".into();
    }
    name.split('-')
        .find_map(major_minor)
        .map(|(major, minor)| format!("v{major}.{minor}"))
        .unwrap_or_else(|| "latest-stable".into())
}

/// `3.20.3` → (3, 20); anything not starting with `<digits>.<digits>` → None.
fn major_minor(segment: &str) -> Option<(u32, u32)> {
    let mut parts = segment.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?;
    let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
    Some((major, digits.parse().ok()?))
}

/// Every entry of the overlay, sorted by path (parents before children).
pub fn contents(facts: &OverlayFacts) -> Vec<Entry> {
    let mut entries = vec![
        Entry::dir("etc", 0o755),
        Entry::file("etc/.default_boot_services", 0o644, ""),
        Entry::dir("etc/apk", 0o755),
        Entry::file("etc/apk/repositories", 0o644, repositories(&facts.release)),
        Entry::file("etc/apk/world", 0o644, "alpine-base\nopenssh\n"),
        Entry::dir("etc/network", 0o755),
        Entry::file("etc/network/interfaces", 0o644, INTERFACES),
        Entry::dir("etc/runlevels", 0o755),
        Entry::dir("etc/runlevels/boot", 0o755),
        Entry::symlink("etc/runlevels/boot/networking", "/etc/init.d/networking"),
        Entry::symlink("etc/runlevels/boot/localmount", "/etc/init.d/localmount"),
        Entry::dir("etc/runlevels/default", 0o755),
        Entry::symlink("etc/runlevels/default/sshd", "/etc/init.d/sshd"),
        Entry::dir("etc/ssh", 0o755),
        Entry::file(
            "etc/ssh/ssh_host_ed25519_key",
            0o600,
            facts.host_key.0.clone(),
        ),
        Entry::file(
            "etc/ssh/ssh_host_ed25519_key.pub",
            0o644,
            facts.host_key.1.clone(),
        ),
        Entry::file("etc/fstab", 0o644, fstab(facts.share)),
        Entry::dir("root", 0o700),
        Entry::dir("root/.ssh", 0o700),
        Entry::file(
            "root/.ssh/authorized_keys",
            0o600,
            format!("{}\n", facts.client_pubkey),
        ),
        Entry::dir("mnt", 0o755),
        Entry::dir("mnt/work", 0o755),
        Entry::dir("mnt/host", 0o755),
    ];
    if facts.install {
        entries.extend([
            Entry::dir("etc/stoat", 0o755),
            Entry::file(
                ANSWERFILE,
                0o600,
                answerfile(&facts.name, &facts.client_pubkey),
            ),
            Entry::dir("etc/local.d", 0o755),
            Entry::file("etc/local.d/stoat-install.start", 0o755, INSTALL_SCRIPT),
            Entry::symlink("etc/runlevels/default/local", "/etc/init.d/local"),
            Entry::file("etc/issue", 0o644, ISSUE),
        ]);
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries
}

fn repositories(release: &str) -> String {
    format!("{ALPINE_MIRROR}/{release}/main\n{ALPINE_MIRROR}/{release}/community\n")
}

const INTERFACES: &str = "auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet dhcp\n";

/// The live CD line, then the 9p exports (`nofail`: a missing tag never blocks the boot).
fn fstab(share: bool) -> String {
    let mut text = String::from("/dev/cdrom\t/media/cdrom\tiso9660\tnoauto,ro\t0 0\n");
    text.push_str("work\t/mnt/work\t9p\ttrans=virtio,version=9p2000.L,rw,nofail\t0 0\n");
    if share {
        text.push_str("host\t/mnt/host\t9p\ttrans=virtio,version=9p2000.L,ro,nofail\t0 0\n");
    }
    text
}

/// setup-alpine's answers (the file is sourced by sh, so values are shell-quoted).
fn answerfile(name: &str, pubkey: &str) -> String {
    let pairs = [
        ("KEYMAPOPTS", "us us".to_owned()),
        ("HOSTNAMEOPTS", format!("-n {name}")),
        ("INTERFACESOPTS", INTERFACES.to_owned()),
        ("DNSOPTS", "-d local".to_owned()),
        ("TIMEZONEOPTS", "-z UTC".to_owned()),
        ("PROXYOPTS", "none".to_owned()),
        ("APKREPOSOPTS", "-1".to_owned()),
        ("SSHDOPTS", "-c openssh".to_owned()),
        ("ROOTSSHKEY", pubkey.to_owned()),
        ("USEROPTS", "none".to_owned()),
        ("NTPOPTS", "-c chrony".to_owned()),
        ("DISKOPTS", "-m sys /dev/vda".to_owned()),
        ("ERASE_DISKS", "/dev/vda".to_owned()),
        ("LBUOPTS", "none".to_owned()),
        ("APKCACHEOPTS", "/var/cache/apk".to_owned()),
    ];
    pairs
        .iter()
        .map(|(key, value)| format!("{key}={}\n", crate::shell::quote(value)))
        .collect()
}

/// Runs from the `local` service on the live system: installs onto /dev/vda once, records it in
/// the work share, then powers off (QEMU's `-no-reboot` turns that into an exit).
const INSTALL_SCRIPT: &str = r#"#!/bin/sh
# stoat: install Alpine onto /dev/vda on the first live boot, then power off.
exec >/dev/ttyS0 2>&1
root_fs=$(awk '$2 == "/" { fs = $3 } END { print fs }' /proc/mounts)
case "$root_fs" in
  tmpfs|overlay) ;;
  *) exit 0 ;;
esac
[ -e /mnt/work/.installed ] && exit 0
echo "stoat: installing Alpine onto /dev/vda"
export ERASE_DISKS=/dev/vda
if setup-alpine -e -f /etc/stoat/answerfile; then
  date > /mnt/work/.installed
  echo "stoat: install finished; powering off"
  poweroff
else
  echo "stoat: install failed; see the lines above"
fi
"#;

const ISSUE: &str = "stoat: this VM is installing Alpine onto its disk and powers off when done.\n\
Progress is in the VM's console.log; run `stoat up` again afterwards.\n\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boot::tarball::EntryKind;

    fn facts(share: bool, install: bool) -> OverlayFacts {
        OverlayFacts {
            name: "web".into(),
            client_pubkey: "ssh-ed25519 AAAAclient stoat".into(),
            host_key: (
                b"PRIVATE\n".to_vec(),
                b"ssh-ed25519 AAAAhost stoat-guest\n".to_vec(),
            ),
            share,
            install,
            release: "v3.20".into(),
        }
    }

    fn listing(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| match &e.kind {
                EntryKind::Dir => format!("{:o} {}/", e.mode, e.path),
                EntryKind::File(_) => format!("{:o} {}", e.mode, e.path),
                EntryKind::Symlink(t) => format!("link {} -> {t}", e.path),
            })
            .collect()
    }

    fn text<'a>(entries: &'a [Entry], path: &str) -> &'a str {
        let entry = entries.iter().find(|e| e.path == path).expect(path);
        match &entry.kind {
            EntryKind::File(body) => std::str::from_utf8(body).expect("utf-8"),
            other => panic!("{path} is {other:?}"),
        }
    }

    #[test]
    fn live_overlay_lists_upstreams_files() {
        insta::assert_snapshot!(listing(&contents(&facts(false, false))).join("\n"), @r"
        755 etc/
        644 etc/.default_boot_services
        755 etc/apk/
        644 etc/apk/repositories
        644 etc/apk/world
        644 etc/fstab
        755 etc/network/
        644 etc/network/interfaces
        755 etc/runlevels/
        755 etc/runlevels/boot/
        link etc/runlevels/boot/localmount -> /etc/init.d/localmount
        link etc/runlevels/boot/networking -> /etc/init.d/networking
        755 etc/runlevels/default/
        link etc/runlevels/default/sshd -> /etc/init.d/sshd
        755 etc/ssh/
        600 etc/ssh/ssh_host_ed25519_key
        644 etc/ssh/ssh_host_ed25519_key.pub
        755 mnt/
        755 mnt/host/
        755 mnt/work/
        700 root/
        700 root/.ssh/
        600 root/.ssh/authorized_keys
        ");
    }

    #[test]
    fn disk_overlay_adds_the_installer() {
        let live = listing(&contents(&facts(false, false)));
        let disk = listing(&contents(&facts(false, true)));
        let added: Vec<&String> = disk.iter().filter(|e| !live.contains(e)).collect();
        insta::assert_debug_snapshot!(added, @r#"
        [
            "644 etc/issue",
            "755 etc/local.d/",
            "755 etc/local.d/stoat-install.start",
            "link etc/runlevels/default/local -> /etc/init.d/local",
            "755 etc/stoat/",
            "600 etc/stoat/answerfile",
        ]
        "#);
    }

    #[test]
    fn file_texts() {
        let entries = contents(&facts(true, true));
        assert_eq!(
            text(&entries, "root/.ssh/authorized_keys"),
            "ssh-ed25519 AAAAclient stoat\n"
        );
        assert_eq!(text(&entries, "etc/apk/world"), "alpine-base\nopenssh\n");
        assert_eq!(
            text(&entries, "etc/apk/repositories"),
            format!("{ALPINE_MIRROR}/v3.20/main\n{ALPINE_MIRROR}/v3.20/community\n")
        );
        assert_eq!(text(&entries, "etc/.default_boot_services"), "");
        assert_eq!(
            text(&entries, "etc/ssh/ssh_host_ed25519_key.pub"),
            "ssh-ed25519 AAAAhost stoat-guest\n"
        );
        let fstab = text(&entries, "etc/fstab");
        assert!(
            fstab.contains("work\t/mnt/work\t9p\ttrans=virtio,version=9p2000.L,rw,nofail\t0 0\n")
        );
        assert!(
            fstab.contains("host\t/mnt/host\t9p\ttrans=virtio,version=9p2000.L,ro,nofail\t0 0\n")
        );
        let unshared = contents(&facts(false, false));
        assert!(!text(&unshared, "etc/fstab").contains("/mnt/host"));
        let answers = text(&entries, ANSWERFILE);
        for line in [
            "HOSTNAMEOPTS='-n web'\n",
            "ROOTSSHKEY='ssh-ed25519 AAAAclient stoat'\n",
            "DISKOPTS='-m sys /dev/vda'\n",
            "ERASE_DISKS='/dev/vda'\n",
            "APKREPOSOPTS='-1'\n",
            "SSHDOPTS='-c openssh'\n",
            "NTPOPTS='-c chrony'\n",
        ] {
            assert!(answers.contains(line), "{line} missing from\n{answers}");
        }
        let script = text(&entries, "etc/local.d/stoat-install.start");
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(script.contains("setup-alpine -e -f /etc/stoat/answerfile"));
        assert!(script.contains("/mnt/work/.installed"));
    }

    #[test]
    fn install_script_and_answerfile_parse_as_shell() {
        let entries = contents(&facts(true, true));
        for path in [ANSWERFILE, "etc/local.d/stoat-install.start"] {
            let status = std::process::Command::new("sh")
                .args(["-n", "-c", text(&entries, path)])
                .status()
                .expect("sh runs");
            assert!(status.success(), "{path} is not valid sh");
        }
    }

    #[test]
    fn release_comes_from_the_iso_name() {
        let r = |name: &str| release_for(Path::new(name));
        assert_eq!(r("/r/isos/alpine-virt-3.20.3-x86_64.iso"), "v3.20");
        assert_eq!(r("alpine-standard-3.19.1-x86_64.iso"), "v3.19");
        assert_eq!(r("alpine-extended-3.21.0_rc1-x86_64.iso"), "v3.21");
        assert_eq!(r("/byo/my-alpine.iso"), "latest-stable");
        assert_eq!(r("alpine-virt-edge.iso"), "latest-stable");
    }
}
