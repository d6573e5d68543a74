//! The QEMU command line, built purely from a [`LaunchSpec`]: no file system,
//! no environment, no process. It owns the argv shape (docs/contract.md behaviour#qemu) and
//! the quoting rules of QEMU's option parser; it must not decide policy (which
//! backend, whether a VM is installed, which accelerator is usable): the
//! caller says all of that in the spec.

use std::path::{Path, PathBuf};

use super::accel::Accel;
use super::error::QemuError;

/// The longest path a unix socket address can hold (sun_path is 108 bytes,
/// one of them the terminating NUL). QEMU refuses longer ones at start.
pub const MAX_SOCKET_PATH: usize = 107;

/// The files QEMU and passt use inside a VM directory: its disk and what they create. The
/// names are the VM directory's (vm/dir.rs builds this); here they are only paths, so the
/// argv, the launcher, state detection and the monitor agree without this room looking up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmPaths {
    /// `<root>/<name>`: every path below sits in it, and a QEMU of this VM names it.
    pub dir: PathBuf,
    /// The VM's qcow2 disk (disk and cloud mode).
    pub disk: PathBuf,
    pub pidfile: PathBuf,
    pub qmp_socket: PathBuf,
    pub monitor_socket: PathBuf,
    pub vnc_socket: PathBuf,
    pub console_log: PathBuf,
    /// The console logger's socket (qemu/console.rs).
    pub console_socket: PathBuf,
    /// passt's pidfile and the socket QEMU's netdev connects to (qemu/passt.rs).
    pub passt_pidfile: PathBuf,
    pub passt_socket: PathBuf,
    /// The network guard's socket, between QEMU and passt, and its note of how far the guest's
    /// network has come (qemu/netguard.rs).
    pub guard_socket: PathBuf,
    pub net_state: PathBuf,
}

impl VmPaths {
    /// The files of a VM in `dir` as the VM directory names them, for this room's tests
    /// (vm/dir.rs checks the two agree).
    #[cfg(test)]
    pub fn for_tests(dir: &Path) -> Self {
        VmPaths {
            dir: dir.to_path_buf(),
            disk: dir.join("disk.qcow2"),
            pidfile: dir.join("qemu.pid"),
            qmp_socket: dir.join("qmp.sock"),
            monitor_socket: dir.join("monitor.sock"),
            vnc_socket: dir.join("vnc.sock"),
            console_log: dir.join("console.log"),
            console_socket: dir.join("con.sock"),
            passt_pidfile: dir.join("passt.pid"),
            passt_socket: dir.join("n.sock"),
            guard_socket: dir.join("g.sock"),
            net_state: dir.join("net-state"),
        }
    }
}

/// How the guest's screen is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    /// Headless: VNC on `<vm_dir>/vnc.sock` (never a TCP port).
    Vnc,
    /// A GTK window with virtio-gpu and GL, for a graphical session.
    Window,
}

/// Everything the argv depends on. Paths must be absolute: QEMU's
/// `-daemonize` changes its working directory to `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// The VM directory and its files: pidfile, sockets and console.log live there.
    pub paths: VmPaths,
    /// `<root>/shared/<name>`: exported read-write as 9p tag `work`.
    pub work_share_dir: PathBuf,
    /// Optional host directory exported read-only as 9p tag `host`.
    pub host_share_dir: Option<PathBuf>,
    pub ram_mb: u32,
    pub cpus: u32,
    pub accel: Accel,
    /// Host port on 127.0.0.1 forwarded to the guest's port 22.
    pub ssh_port: u16,
    /// Extra (host port, guest port) TCP forwards, also on 127.0.0.1.
    pub forwards: Vec<(u16, u16)>,
    /// The guest reaches the host's loopback services through its gateway (the opt-in;
    /// off by default). The network itself is passt's (qemu/passt.rs).
    pub host_loopback: bool,
    pub display: Display,
    /// The VM's virtio disk (`<vm_dir>/disk.qcow2` in disk and cloud mode).
    pub disk: Option<PathBuf>,
    /// An installer or live ISO, attached with `-cdrom`.
    pub cdrom: Option<PathBuf>,
    /// Boot from the cdrom (`-boot d`): live mode, or disk mode before install.
    pub boot_from_cdrom: bool,
    /// NoCloud seed ISO (cloudinit backend), attached as a second cdrom.
    pub seed_iso: Option<PathBuf>,
    /// Direct kernel boot (apkovl backend, or a test guest's vmlinux).
    pub kernel: Option<PathBuf>,
    pub initrd: Option<PathBuf>,
    pub append: Option<String>,
    /// A host directory exposed as a FAT virtio disk (`fat:rw:`), the apkovl overlay.
    pub fat_overlay_dir: Option<PathBuf>,
    /// `-no-reboot`: the guest's reboot ends QEMU (the apkovl installer's signal).
    pub no_reboot: bool,
    /// The stoat binary that runs the boot's helpers (qemu/helper.rs): the console logger
    /// (the serial console then goes to its socket, capped per boot) and, without the
    /// `host_loopback` opt-in, the network guard before passt (qemu/netguard.rs). None: QEMU
    /// appends to console.log itself and connects to passt directly.
    pub helper_program: Option<PathBuf>,
}

impl LaunchSpec {
    /// A spec with the fields every VM has; everything optional is off.
    pub fn new(paths: VmPaths, work_share_dir: impl Into<PathBuf>, accel: Accel) -> Self {
        LaunchSpec {
            paths,
            work_share_dir: work_share_dir.into(),
            host_share_dir: None,
            ram_mb: 4096,
            cpus: 4,
            accel,
            ssh_port: 2200,
            forwards: Vec::new(),
            host_loopback: false,
            display: Display::Vnc,
            disk: None,
            cdrom: None,
            boot_from_cdrom: false,
            seed_iso: None,
            kernel: None,
            initrd: None,
            append: None,
            fat_overlay_dir: None,
            no_reboot: false,
            helper_program: None,
        }
    }

    /// The network guard stands between QEMU and passt.
    pub fn guarded(&self) -> bool {
        self.helper_program.is_some() && !self.host_loopback
    }

    /// The socket QEMU's netdev connects to: the guard's, or passt's own.
    pub fn netdev_socket(&self) -> PathBuf {
        if self.guarded() {
            self.paths.guard_socket.clone()
        } else {
            self.paths.passt_socket.clone()
        }
    }
}

/// The arguments after `qemu-system-x86_64`, in upstream's order.
pub fn build_argv(spec: &LaunchSpec) -> Result<Vec<String>, QemuError> {
    let paths = &spec.paths;
    let vm_dir = absolute_utf8("the VM directory", &paths.dir)?;
    if vm_dir.contains(',') || vm_dir.contains('=') {
        // The sockets below sit inside vm_dir and go through QEMU's implied-key
        // parser; refusing here gives one clear message instead of three.
        return Err(invalid(
            "the VM directory",
            vm_dir,
            "contains ',' or '=', which QEMU's option parser cannot take in socket paths",
        ));
    }
    let mut argv: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| argv.extend(items.iter().map(|item| item.to_string()));

    push(&["-accel", spec.accel.as_str()]);
    if spec.accel == Accel::Tcg {
        // Every feature TCG can emulate (RDRAND for early entropy, x2apic...);
        // the default qemu64 model lacks them and is no faster here.
        push(&["-cpu", "max"]);
    }
    push(&[
        "-m",
        &spec.ram_mb.to_string(),
        "-smp",
        &spec.cpus.to_string(),
    ]);
    push(&[
        "-daemonize",
        "-pidfile",
        &absolute_utf8("the pidfile", &paths.pidfile)?,
    ]);
    push(&[
        "-monitor",
        &unix_socket_chardev("the monitor socket", &paths.monitor_socket)?,
    ]);
    push(&[
        "-qmp",
        &unix_socket_chardev("the QMP socket", &paths.qmp_socket)?,
    ]);
    let console = if spec.helper_program.is_some() {
        format!(
            "socket,id=con0,path={},server=off",
            implied_value("the console socket", &paths.console_socket, true)?
        )
    } else {
        format!(
            "file,id=con0,path={},append=on",
            opt_value("the console log", &paths.console_log)?
        )
    };
    push(&["-chardev", &console, "-serial", "chardev:con0"]);

    // The network is a passt process (qemu/passt.rs), reached through the network guard
    // (qemu/netguard.rs) or directly; passt holds the ssh port and the forwards, so they are
    // not in QEMU's argv.
    let netdev = format!(
        "stream,id=n0,server=off,addr.type=unix,addr.path={}",
        implied_value("the network socket", &spec.netdev_socket(), true)?
    );
    push(&["-netdev", &netdev, "-device", "virtio-net,netdev=n0"]);

    match spec.display {
        Display::Window => push(&["-vga", "virtio", "-display", "gtk,gl=on"]),
        Display::Vnc => {
            let vnc = implied_value("the VNC socket", &paths.vnc_socket, true)?;
            push(&["-display", "none", "-vnc", &format!("unix:{vnc}")]);
        }
    }
    push(&["-device", "qemu-xhci,id=xhci", "-device", "usb-tablet"]);

    if let Some(host_share) = &spec.host_share_dir {
        let path = opt_value("the share directory", host_share)?;
        push(&[
            "-virtfs",
            &format!("local,path={path},mount_tag=host,security_model=mapped-xattr,readonly=on"),
        ]);
    }
    let work = opt_value("the work share directory", &spec.work_share_dir)?;
    push(&[
        "-virtfs",
        &format!("local,path={work},mount_tag=work,security_model=mapped-xattr"),
    ]);

    if let Some(disk) = &spec.disk {
        push(&[
            "-drive",
            // The format is always given: a probed format lets a file claim to be what it is not.
            &format!(
                "file={},format=qcow2,if=virtio",
                opt_value("the disk image", disk)?
            ),
        ]);
    }
    if spec.boot_from_cdrom {
        push(&["-boot", "d"]);
    }
    if let Some(kernel) = &spec.kernel {
        push(&["-kernel", &absolute_utf8("the kernel", kernel)?]);
    }
    if let Some(initrd) = &spec.initrd {
        push(&["-initrd", &absolute_utf8("the initramfs", initrd)?]);
    }
    if let Some(append) = &spec.append {
        push(&["-append", append]);
    }
    if let Some(overlay) = &spec.fat_overlay_dir {
        let dir = opt_value("the overlay directory", overlay)?;
        push(&["-drive", &format!("file=fat:rw:{dir},format=raw,if=virtio")]);
    }
    if spec.no_reboot {
        push(&["-no-reboot"]);
    }
    if let Some(iso) = &spec.cdrom {
        // After the virtio drives (their order names /dev/vd*). Not -cdrom: it probes the format, and a qcow2 named .iso could name host files.
        absolute_utf8("the ISO image", iso)?;
        push(&[
            "-drive",
            &format!(
                "file={},media=cdrom,format=raw,readonly=on",
                opt_value("the ISO image", iso)?
            ),
        ]);
    }
    if let Some(seed) = &spec.seed_iso {
        push(&[
            "-drive",
            &format!(
                "file={},media=cdrom,format=raw,readonly=on",
                opt_value("the seed ISO", seed)?
            ),
        ]);
    }
    Ok(argv)
}

/// `unix:<path>,server=on,wait=off` for -monitor and -qmp.
fn unix_socket_chardev(what: &'static str, socket: &Path) -> Result<String, QemuError> {
    Ok(format!(
        "unix:{},server=on,wait=off",
        implied_value(what, socket, true)?
    ))
}

/// A value after `key=` in a QEMU option string: `,` ends the value unless
/// doubled, so every `,` is doubled. `=` is fine there.
pub fn escape_opt_value(value: &str) -> String {
    value.replace(',', ",,")
}

/// A path given as `key=<path>`: absolute, UTF-8, commas doubled.
fn opt_value(what: &'static str, path: &Path) -> Result<String, QemuError> {
    Ok(escape_opt_value(&absolute_utf8(what, path)?))
}

/// A path in the first, key-less position of an option string (`unix:<path>`
/// of -qmp, -monitor, -vnc). QEMU reads `name=value` there as soon as the text
/// holds `=`, and no escape exists for it, so `=` is refused. Commas are
/// refused as well: `,,` works for -qmp but not for -vnc, and a path that
/// only some options accept would be a trap.
fn implied_value(what: &'static str, path: &Path, is_socket: bool) -> Result<String, QemuError> {
    let text = absolute_utf8(what, path)?;
    if text.contains('=') || text.contains(',') {
        return Err(invalid(
            what,
            text,
            "contains ',' or '=', which QEMU's option parser cannot take here",
        ));
    }
    if is_socket && text.len() > MAX_SOCKET_PATH {
        return Err(invalid(
            what,
            text,
            "is longer than the 107 bytes a unix socket path may have (use a shorter STOAT_HOME)",
        ));
    }
    Ok(text)
}

fn absolute_utf8(what: &'static str, path: &Path) -> Result<String, QemuError> {
    let Some(text) = path.to_str() else {
        return Err(invalid(
            what,
            path.to_string_lossy().into_owned(),
            "is not valid UTF-8",
        ));
    };
    if !path.is_absolute() {
        return Err(invalid(
            what,
            text.to_string(),
            "is not absolute (QEMU daemonizes into /)",
        ));
    }
    Ok(text.to_string())
}

fn invalid(what: &'static str, value: impl Into<String>, reason: &'static str) -> QemuError {
    QemuError::InvalidOptionValue {
        what,
        value: value.into(),
        reason,
    }
}

/// The user forwards of a QEMU argv with a user netdev (what stoat built before the network
/// moved to passt: a VM started then may still run), as (host, guest) pairs in order: every
/// `hostfwd` after the first, which is the ssh port's. Empty for an argv with no such netdev.
pub fn forwards_of_argv(argv: &[String]) -> Vec<(u16, u16)> {
    let Some(netdev) = argv
        .windows(2)
        .find(|pair| pair[0] == "-netdev" && pair[1].starts_with("user,"))
        .map(|pair| pair[1].as_str())
    else {
        return Vec::new();
    };
    let parse = |option: &str| -> Option<(u16, u16)> {
        let rule = option.strip_prefix("hostfwd=tcp:127.0.0.1:")?;
        let (host, guest) = rule.split_once("-:")?;
        Some((host.parse().ok()?, guest.parse().ok()?))
    };
    netdev
        .split(',')
        .filter(|option| option.starts_with("hostfwd="))
        .skip(1)
        .filter_map(parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(accel: Accel) -> LaunchSpec {
        let mut spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new("/home/u/.stoat/web")),
            "/home/u/.stoat/shared/web",
            accel,
        );
        spec.ram_mb = 2048;
        spec.cpus = 2;
        spec.ssh_port = 2201;
        spec
    }

    fn cloud_spec() -> LaunchSpec {
        let mut spec = base(Accel::Tcg);
        spec.forwards = vec![(8080, 80), (5432, 5432)];
        spec.disk = Some("/home/u/.stoat/web/disk.qcow2".into());
        spec.seed_iso = Some("/home/u/.stoat/web/ovl/seed.iso".into());
        spec.host_share_dir = Some("/home/u/src".into());
        spec
    }

    fn live_apkovl_spec() -> LaunchSpec {
        let mut spec = base(Accel::Kvm);
        spec.cdrom = Some("/home/u/.stoat/isos/alpine-virt-3.20.3-x86_64.iso".into());
        spec.boot_from_cdrom = true;
        spec.kernel = Some("/home/u/.stoat/web/vmlinuz".into());
        spec.initrd = Some("/home/u/.stoat/web/initramfs".into());
        spec.append = Some("modules=loop,squashfs,sd-mod,usb-storage quiet".into());
        spec.fat_overlay_dir = Some("/home/u/.stoat/web/ovl".into());
        spec
    }

    fn disk_install_spec() -> LaunchSpec {
        let mut spec = live_apkovl_spec();
        spec.disk = Some("/home/u/.stoat/web/disk.qcow2".into());
        spec.display = Display::Window;
        spec.no_reboot = true;
        spec
    }

    #[test]
    fn cloud_profile() {
        insta::assert_snapshot!(build_argv(&cloud_spec()).expect("valid spec").join("\n"));
    }

    #[test]
    fn live_apkovl_profile() {
        insta::assert_snapshot!(build_argv(&live_apkovl_spec())
            .expect("valid spec")
            .join("\n"));
    }

    #[test]
    fn disk_install_profile() {
        insta::assert_snapshot!(build_argv(&disk_install_spec())
            .expect("valid spec")
            .join("\n"));
    }

    fn argv_of(spec: &LaunchSpec) -> Vec<String> {
        build_argv(spec).expect("valid spec")
    }

    fn value_after<'a>(argv: &'a [String], flag: &str) -> Vec<&'a str> {
        argv.windows(2)
            .filter(|pair| pair[0] == flag)
            .map(|pair| pair[1].as_str())
            .collect()
    }

    #[test]
    fn kvm_uses_accel_kvm_and_no_cpu_model_while_tcg_asks_for_max() {
        let kvm = argv_of(&base(Accel::Kvm));
        assert_eq!(value_after(&kvm, "-accel"), ["kvm"]);
        assert!(value_after(&kvm, "-cpu").is_empty());
        assert!(!kvm.iter().any(|arg| arg == "-enable-kvm"));
        let tcg = argv_of(&base(Accel::Tcg));
        assert_eq!(value_after(&tcg, "-accel"), ["tcg"]);
        assert_eq!(value_after(&tcg, "-cpu"), ["max"]);
    }

    #[test]
    fn the_one_netdev_is_passt_s_socket_and_no_forward_is_in_qemu_s_argv() {
        let argv = argv_of(&cloud_spec());
        let netdevs = value_after(&argv, "-netdev");
        assert_eq!(
            netdevs,
            ["stream,id=n0,server=off,addr.type=unix,addr.path=/home/u/.stoat/web/n.sock"]
        );
        assert!(!argv.iter().any(|arg| arg.contains("hostfwd")), "{argv:?}");
        assert_eq!(
            value_after(&argv, "-device")
                .iter()
                .filter(|d| d.starts_with("virtio-net"))
                .count(),
            1
        );
    }

    #[test]
    fn with_a_helper_program_the_netdev_is_the_guard_s_unless_the_vm_opted_in() {
        let mut spec = cloud_spec();
        spec.helper_program = Some("/usr/bin/stoat".into());
        assert_eq!(
            value_after(&argv_of(&spec), "-netdev"),
            ["stream,id=n0,server=off,addr.type=unix,addr.path=/home/u/.stoat/web/g.sock"]
        );
        spec.host_loopback = true;
        assert_eq!(
            value_after(&argv_of(&spec), "-netdev"),
            ["stream,id=n0,server=off,addr.type=unix,addr.path=/home/u/.stoat/web/n.sock"]
        );
    }

    #[test]
    fn the_forwards_of_a_user_netdev_argv_read_back_in_order() {
        let argv: Vec<String> = [
            "-netdev",
            "user,id=n0,hostfwd=tcp:127.0.0.1:2201-:22,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=tcp:127.0.0.1:5432-:5432",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(forwards_of_argv(&argv), [(8080, 80), (5432, 5432)]);
        assert!(forwards_of_argv(&argv_of(&cloud_spec())).is_empty());
        assert!(forwards_of_argv(&["sleep".into(), "300".into()]).is_empty());
    }

    #[test]
    fn commas_in_key_value_paths_are_doubled() {
        let mut spec = cloud_spec();
        spec.work_share_dir = "/data/a,b/shared/web".into();
        spec.disk = Some("/data/x,y.qcow2".into());
        let argv = argv_of(&spec);
        assert!(value_after(&argv, "-virtfs").contains(
            &"local,path=/data/a,,b/shared/web,mount_tag=work,security_model=mapped-xattr"
        ));
        assert_eq!(
            value_after(&argv, "-drive")[0],
            "file=/data/x,,y.qcow2,format=qcow2,if=virtio"
        );
    }

    #[test]
    fn equals_sign_is_fine_after_a_key_but_refused_in_socket_paths() {
        let mut spec = cloud_spec();
        spec.host_share_dir = Some("/src/a=b".into());
        assert!(build_argv(&spec).is_ok());
        let spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new("/tmp/x=y/web")),
            "/tmp/shared/web",
            Accel::Tcg,
        );
        match build_argv(&spec) {
            Err(QemuError::InvalidOptionValue { what, .. }) => assert_eq!(what, "the VM directory"),
            other => panic!("expected InvalidOptionValue, got {other:?}"),
        }
    }

    #[test]
    fn relative_paths_are_refused_because_qemu_daemonizes_into_root() {
        let spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new("relative/web")),
            "/tmp/shared/web",
            Accel::Tcg,
        );
        assert!(matches!(
            build_argv(&spec),
            Err(QemuError::InvalidOptionValue { .. })
        ));
        let mut spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new("/tmp/web")),
            "/tmp/shared/web",
            Accel::Tcg,
        );
        spec.kernel = Some("vmlinux".into());
        assert!(matches!(
            build_argv(&spec),
            Err(QemuError::InvalidOptionValue {
                what: "the kernel",
                ..
            })
        ));
    }

    #[test]
    fn socket_paths_longer_than_sun_path_are_refused() {
        let long_dir = format!("/{}", "d".repeat(100));
        let spec = LaunchSpec::new(
            VmPaths::for_tests(Path::new(&long_dir)),
            "/tmp/shared/web",
            Accel::Tcg,
        );
        match build_argv(&spec) {
            Err(QemuError::InvalidOptionValue { reason, .. }) => {
                assert!(reason.contains("107 bytes"))
            }
            other => panic!("expected a too-long socket path, got {other:?}"),
        }
    }

    #[test]
    fn cdrom_is_raw_with_its_commas_doubled_and_append_is_verbatim() {
        let mut spec = live_apkovl_spec();
        spec.cdrom = Some("/isos/a,b.iso".into());
        let argv = argv_of(&spec);
        assert!(
            value_after(&argv, "-cdrom").is_empty(),
            "-cdrom probes the format"
        );
        assert!(value_after(&argv, "-drive")
            .contains(&"file=/isos/a,,b.iso,media=cdrom,format=raw,readonly=on"));
        assert_eq!(
            value_after(&argv, "-append"),
            ["modules=loop,squashfs,sd-mod,usb-storage quiet"]
        );
    }

    #[test]
    fn without_options_there_is_no_disk_cdrom_kernel_or_host_share() {
        let argv = argv_of(&base(Accel::Tcg));
        for flag in [
            "-drive",
            "-cdrom",
            "-boot",
            "-kernel",
            "-initrd",
            "-append",
            "-no-reboot",
        ] {
            assert!(!argv.iter().any(|arg| arg == flag), "{flag} present");
        }
        assert_eq!(value_after(&argv, "-virtfs").len(), 1);
    }
}
