//! Real tier: boots the test guest that `conformance/guest/build.sh OUTDIR`
//! made, through `qemu::argv` + `qemu::launch`, under TCG, and drives it over
//! QMP. The tests are `#[ignore]`d: run them with `--include-ignored` and
//! `STOAT_REAL_GUEST=OUTDIR`; asked for without it, they fail. Every QEMU started here is killed by its PID (a
//! `KillOnDrop` guard) when a check fails.
//! Inside the crate because `qemu` is crate-private.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::qemu::{
    self, launch, Accel, KillOnDrop, LaunchSpec, QemuError, Qmp, ScreenFormat, VmPaths,
};
use stoat_testkit::{free_port, real_guest_dir};

fn run(program: &str, args: &[&OsStr]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("{program}: {error}"));
    assert!(
        output.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A data root laid out like stoat's: `<root>/vm` and `<root>/shared/vm`, with
/// the cloudinit backend's overlay and NoCloud seed ISO.
fn cloud_vm(root: &Path, guest: &Path) -> LaunchSpec {
    let vm_dir = root.join("vm");
    let work_share = root.join("shared").join("vm");
    let seed_dir = vm_dir.join("ovl").join("seed");
    std::fs::create_dir_all(&seed_dir).expect("mkdir seed");
    std::fs::create_dir_all(&work_share).expect("mkdir share");

    let image = guest.join("stoat-testguest-cloud.qcow2");
    assert!(
        image.is_file(),
        "{} missing: run conformance/guest/build.sh",
        image.display()
    );
    let disk = vm_dir.join("disk.qcow2");
    run(
        "qemu-img",
        &[
            "create".as_ref(),
            "-q".as_ref(),
            "-f".as_ref(),
            "qcow2".as_ref(),
            "-b".as_ref(),
            image.as_os_str(),
            "-F".as_ref(),
            "qcow2".as_ref(),
            disk.as_os_str(),
        ],
    );

    let key = std::fs::read_to_string(guest.join("id_ed25519.pub")).expect("client key");
    let user_data = format!(
        "#cloud-config\nusers:\n  - name: stoat\n    sudo: \"ALL=(ALL) NOPASSWD:ALL\"\n    shell: /bin/bash\n    ssh_authorized_keys:\n      - {}\nmounts:\n  - [ work, /mnt/work, 9p, \"trans=virtio,version=9p2000.L,rw,_netdev,nofail\", \"0\", \"0\" ]\n",
        key.trim()
    );
    std::fs::write(seed_dir.join("user-data"), user_data).expect("user-data");
    std::fs::write(
        seed_dir.join("meta-data"),
        "instance-id: \"stoat-vm\"\nlocal-hostname: \"vm\"\n",
    )
    .expect("meta-data");
    let seed_iso = vm_dir.join("ovl").join("seed.iso");
    run(
        "xorriso",
        &[
            "-as".as_ref(),
            "mkisofs".as_ref(),
            "-quiet".as_ref(),
            "-o".as_ref(),
            seed_iso.as_os_str(),
            "-V".as_ref(),
            "CIDATA".as_ref(),
            "-J".as_ref(),
            "-r".as_ref(),
            seed_dir.as_os_str(),
        ],
    );

    let mut spec = LaunchSpec::new(
        VmPaths::for_tests(Path::new(&vm_dir)),
        &work_share,
        Accel::Tcg,
    );
    spec.ram_mb = 256;
    spec.cpus = 1;
    spec.ssh_port = free_port();
    spec.disk = Some(disk);
    spec.seed_iso = Some(seed_iso);
    spec
}

fn wait_for_console(console: &Path, text: &str, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if std::fs::read(console)
            .is_ok_and(|log| log.windows(text.len()).any(|w| w == text.as_bytes()))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(16), word(20)))
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn cloud_guest_boots_answers_qmp_takes_a_png_and_powers_off() {
    let guest = real_guest_dir();
    let root = tempfile::tempdir().expect("tempdir");
    let spec = cloud_vm(root.path(), &guest);
    let paths = &spec.paths;

    let started = Instant::now();
    let pid = launch::start(
        OsStr::new(qemu::QEMU_BINARY),
        OsStr::new(qemu::PASST_BINARY),
        &spec,
    )
    .expect("QEMU starts");
    let mut guard = KillOnDrop::new(&spec.paths.dir, pid);
    eprintln!("QEMU daemonized as pid {pid} in {:?}", started.elapsed());
    assert_eq!(launch::running(&spec.paths), Some(pid));

    let mut qmp = Qmp::connect(&paths.qmp_socket, Duration::from_secs(10)).expect("QMP connects");
    assert!(
        qmp.qemu_version().starts_with(|c: char| c.is_ascii_digit()),
        "{}",
        qmp.qemu_version()
    );
    let status = qmp.query_status().expect("query-status");
    assert!(status.running, "{status:?}");
    assert_eq!(status.status, "running");
    assert!(qmp.hmp("info status").expect("hmp").contains("running"));

    let shot = spec.paths.dir.join("screen.png");
    qmp.screendump(&shot, ScreenFormat::Png)
        .expect("screendump");
    let png = std::fs::read(&shot).expect("screendump wrote a file");
    let (width, height) = png_size(&png).expect("a PNG");
    assert!(width > 0 && height > 0);
    eprintln!("screendump: {width}x{height}, {} bytes", png.len());

    match qmp.screendump(&root.path().join("no/such/dir.png"), ScreenFormat::Png) {
        Err(QemuError::MonitorRejected { class, .. }) => assert_eq!(class, "GenericError"),
        other => panic!("expected MonitorRejected, got {other:?}"),
    }

    // ACPI power-off works once the guest's acpid runs.
    let ready = wait_for_console(
        &paths.console_log,
        "STOAT-GUEST-READY",
        Duration::from_secs(180),
    );
    assert!(
        ready,
        "guest never ready; console:\n{}",
        String::from_utf8_lossy(&std::fs::read(&paths.console_log).unwrap_or_default())
    );
    eprintln!("guest ready {:?} after start", started.elapsed());

    let powerdown = Instant::now();
    qmp.system_powerdown().expect("system_powerdown");
    assert!(
        launch::wait_stopped(&spec.paths.dir, pid, Duration::from_secs(30)),
        "QEMU still running 30 s after system_powerdown"
    );
    guard.disarm();
    eprintln!(
        "QEMU exited {:?} after system_powerdown",
        powerdown.elapsed()
    );
    assert_eq!(launch::running(&spec.paths), None);
    assert!(!paths.pidfile.exists(), "stale pidfile not removed");
}

#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn qemu_that_cannot_open_its_disk_reports_qemus_stderr() {
    let _guest = real_guest_dir();
    let root = tempfile::tempdir().expect("tempdir");
    let vm_dir = root.path().join("vm");
    std::fs::create_dir_all(&vm_dir).expect("mkdir");
    let mut spec = LaunchSpec::new(
        VmPaths::for_tests(Path::new(&vm_dir)),
        root.path(),
        Accel::Tcg,
    );
    spec.ram_mb = 64;
    spec.cpus = 1;
    spec.ssh_port = free_port();
    spec.disk = Some(vm_dir.join("missing,disk.qcow2"));
    match launch::start(
        OsStr::new(qemu::QEMU_BINARY),
        OsStr::new(qemu::PASST_BINARY),
        &spec,
    ) {
        Err(QemuError::QemuStartFailed { stderr, .. }) => {
            // The escaped comma reached QEMU as one file name.
            assert!(stderr.contains("missing,disk.qcow2"), "{stderr}");
        }
        Ok(pid) => {
            drop(KillOnDrop::new(&vm_dir, pid));
            panic!("QEMU started without its disk");
        }
        Err(other) => panic!("expected QemuStartFailed, got {other:?}"),
    }
    assert_eq!(launch::running(&VmPaths::for_tests(&vm_dir)), None);
}
