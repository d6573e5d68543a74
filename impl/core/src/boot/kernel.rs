//! The apkovl backend's kernel extraction (docs/contract.md behaviour#qemu): find the one
//! `/boot/vmlinuz-*` and `/boot/initramfs-*` on an Alpine ISO with `xorriso`, copy them out as
//! `<vm>/vmlinuz` and `<vm>/initramfs` (cached: skipped while both exist and are non-empty), so
//! QEMU can boot them directly with `-kernel`/`-initrd`/`-append`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Env, Error, Result};

/// The kernel and initramfs a VM boots, as cached in its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootFiles {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
}

impl BootFiles {
    pub fn in_dir(vm_dir: &Path) -> BootFiles {
        let files = crate::vm::VmDir::at(vm_dir);
        BootFiles {
            kernel: files.kernel(),
            initrd: files.initrd(),
        }
    }

    /// Both files exist and are non-empty: extraction already happened.
    pub fn cached(&self) -> bool {
        [&self.kernel, &self.initrd]
            .iter()
            .all(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0))
    }
}

/// Makes sure `<vm>/vmlinuz` and `<vm>/initramfs` hold the ISO's kernel and initramfs.
pub fn ensure(env: &Env, iso: &Path, vm_dir: &Path) -> Result<BootFiles> {
    let files = BootFiles::in_dir(vm_dir);
    if files.cached() {
        return Ok(files);
    }
    let xorriso = env.require_tool("xorriso", "xorriso")?;
    if !iso.is_file() {
        return Err(Error::InvalidSpec(format!(
            "the VM's ISO {} is not an existing file",
            iso.display()
        )));
    }
    for (pattern, dst) in [("vmlinuz-*", &files.kernel), ("initramfs-*", &files.initrd)] {
        // xorriso fails the search on an ISO without /boot or a file that is no ISO at all:
        // the VM's image is wrong, not the host.
        let found = run(env, &xorriso, find_argv(iso, pattern)).map_err(|e| match e {
            Error::Tool { message, .. } => Error::InvalidSpec(format!(
                "{} is not a bootable Alpine ISO (no /boot/{pattern}): {message}",
                iso.display()
            )),
            other => other,
        })?;
        let src = one_boot_path(&found, pattern, iso)?;
        extract(env, &xorriso, iso, &src, dst)?;
    }
    Ok(files)
}

/// `xorriso -indev <iso> -find /boot -name <pattern>` (the pattern is xorriso's, not a shell's).
pub fn find_argv(iso: &Path, pattern: &str) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["-indev".into(), iso.into()];
    argv.extend(["-find", "/boot", "-name", pattern].map(OsString::from));
    argv
}

/// `xorriso -osirrox on -indev <iso> -extract <src> <dst>`.
pub fn extract_argv(iso: &Path, src: &str, dst: &Path) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["-osirrox".into(), "on".into(), "-indev".into()];
    argv.push(iso.into());
    argv.push("-extract".into());
    argv.push(src.into());
    argv.push(dst.into());
    argv
}

/// The single `/boot/...` path in `-find`'s output (lines trimmed of spaces and quotes);
/// none or several is an error naming what was found.
pub fn one_boot_path(output: &str, pattern: &str, iso: &Path) -> Result<String> {
    let matches: Vec<&str> = output
        .lines()
        .map(|line| line.trim().trim_matches(|c| c == '\'' || c == '"').trim())
        .filter(|line| line.starts_with("/boot/"))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Error::InvalidSpec(format!(
            "{} has no /boot/{pattern}: is it an Alpine ISO?",
            iso.display()
        ))),
        many => Err(Error::InvalidSpec(format!(
            "{} has more than one /boot/{pattern} ({}); stoat cannot tell which to boot",
            iso.display(),
            many.join(", ")
        ))),
    }
}

/// Extracts into a temporary name, then renames: a cut-short copy never counts as cached.
fn extract(env: &Env, xorriso: &Path, iso: &Path, src: &str, dst: &Path) -> Result<()> {
    let file_name = dst.file_name().map(|n| n.to_string_lossy().into_owned());
    let partial = dst.with_file_name(format!(".{}.partial", file_name.unwrap_or_default()));
    let _ = std::fs::remove_file(&partial);
    let extracted = run(env, xorriso, extract_argv(iso, src, &partial)).and_then(|_| {
        if !partial.is_file() {
            return Err(Error::Tool {
                tool: "xorriso".into(),
                message: format!("extracted no file from {src} in {}", iso.display()),
            });
        }
        std::fs::rename(&partial, dst)
            .map_err(|e| Error::io(format!("rename {}", dst.display()), e))
    });
    if extracted.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    extracted
}

/// Runs xorriso; its stdout on success, its stderr in a `Tool` error otherwise.
fn run(env: &Env, xorriso: &Path, argv: Vec<OsString>) -> Result<String> {
    let mut command = Command::new(xorriso);
    command
        .args(argv)
        .env("PATH", env.path_var())
        .stdin(Stdio::null());
    let output = crate::child::output(&mut command, crate::child::Group::Own)
        .map_err(|e| e.into_error("run xorriso"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // xorriso's stderr opens with a banner; its last lines say what went wrong.
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Tool {
            tool: "xorriso".into(),
            message: tail.join("; "),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(argv: Vec<OsString>) -> Vec<String> {
        argv.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn argv_is_upstreams() {
        let iso = Path::new("/r/isos/alpine-virt-3.20.3-x86_64.iso");
        assert_eq!(
            strings(find_argv(iso, "vmlinuz-*")),
            [
                "-indev",
                "/r/isos/alpine-virt-3.20.3-x86_64.iso",
                "-find",
                "/boot",
                "-name",
                "vmlinuz-*"
            ]
        );
        assert_eq!(
            strings(extract_argv(
                iso,
                "/boot/vmlinuz-virt",
                Path::new("/r/w/.vmlinuz.partial")
            )),
            [
                "-osirrox",
                "on",
                "-indev",
                "/r/isos/alpine-virt-3.20.3-x86_64.iso",
                "-extract",
                "/boot/vmlinuz-virt",
                "/r/w/.vmlinuz.partial"
            ]
        );
    }

    #[test]
    fn exactly_one_quoted_boot_path_is_taken() {
        let iso = Path::new("/x.iso");
        assert_eq!(
            one_boot_path("'/boot/vmlinuz-virt'\n", "vmlinuz-*", iso).expect("one"),
            "/boot/vmlinuz-virt"
        );
        assert_eq!(
            one_boot_path(
                "  \"/boot/initramfs-lts\"  \nxorriso : NOTE : noise\n",
                "initramfs-*",
                iso
            )
            .expect("one"),
            "/boot/initramfs-lts"
        );
        let none = one_boot_path("xorriso : NOTE : nothing\n", "vmlinuz-*", iso).unwrap_err();
        assert!(none.to_string().contains("no /boot/vmlinuz-*"), "{none}");
        let two = one_boot_path(
            "'/boot/vmlinuz-virt'\n'/boot/vmlinuz-lts'\n",
            "vmlinuz-*",
            iso,
        )
        .unwrap_err();
        assert!(
            two.to_string()
                .contains("/boot/vmlinuz-virt, /boot/vmlinuz-lts"),
            "{two}"
        );
        assert_eq!(two.code(), stoat_wire::ErrorCode::InvalidSpec);
    }

    #[test]
    fn cached_needs_both_files_non_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = BootFiles::in_dir(dir.path());
        assert!(!files.cached());
        std::fs::write(&files.kernel, "k").expect("write");
        std::fs::write(&files.initrd, "").expect("write");
        assert!(!files.cached());
        std::fs::write(&files.initrd, "i").expect("write");
        assert!(files.cached());
    }

    #[test]
    #[ignore = "needs xorriso (make setup installs it)"]
    fn extracts_from_a_real_iso() {
        let env = Env::from_pairs([("PATH", "/usr/bin:/bin")]);
        let xorriso = env.which("xorriso").expect("xorriso on /usr/bin:/bin");
        let dir = tempfile::tempdir().expect("tempdir");
        let boot = dir.path().join("src/boot");
        std::fs::create_dir_all(&boot).expect("mkdir");
        std::fs::write(boot.join("vmlinuz-virt"), "kernel bytes").expect("write");
        std::fs::write(boot.join("initramfs-virt"), "initramfs bytes").expect("write");
        std::fs::write(boot.join("config-virt"), "config").expect("write");
        let iso = dir.path().join("a.iso");
        let made = Command::new(xorriso)
            .args(["-as", "mkisofs", "-r", "-o"])
            .arg(&iso)
            .arg(dir.path().join("src"))
            .output()
            .expect("xorriso runs");
        assert!(made.status.success());
        let vm = dir.path().join("vm");
        std::fs::create_dir(&vm).expect("mkdir");
        let files = ensure(&env, &iso, &vm).expect("extracted");
        assert_eq!(std::fs::read(&files.kernel).expect("read"), b"kernel bytes");
        assert_eq!(
            std::fs::read(&files.initrd).expect("read"),
            b"initramfs bytes"
        );
        // Cached: a second call does not need the ISO any more.
        std::fs::remove_file(&iso).expect("rm");
        assert_eq!(ensure(&env, &iso, &vm).expect("cached"), files);
    }
}
