//! DISTRO tier: stoat's whole lifecycle on a real Debian cloud image (systemd, Debian's own
//! cloud-init with NoCloud, OpenSSH, growpart), built by `conformance/guest/distro/build.sh`
//! and named by STOAT_DISTRO_GUEST (its output directory). Ignored unless asked for
//! (`cargo test -- --include-ignored distro_`, or `make test-distro`); asked for without the
//! image, they fail rather than pass. Each boot under TCG takes a minute or two, so checks are
//! grouped per boot: three for the lifecycle (the third, a clone's, on a broken seed).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{free_port, timed, RealGuard};
use crate::common::{JsonRun, TestEnv};

/// The first-boot recipe and the one applied later over ssh.
const FIRST: &str = "firstboot";
const SECOND: &str = "later";
/// How long a boot of the distro image may take to answer ssh (TCG on a shared host).
const BOOT_TIMEOUT: &str = "900s";

/// The image, and this test's turn (real guests boot one at a time in this binary).
struct DistroGuest {
    image: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
}

fn distro_guest() -> DistroGuest {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let dir = std::env::var_os("STOAT_DISTRO_GUEST").unwrap_or_else(|| {
        panic!("set STOAT_DISTRO_GUEST to the output of conformance/guest/distro/build.sh")
    });
    let image = Path::new(&dir).join("stoat-testguest-cloud.qcow2");
    assert!(image.is_file(), "no distro image at {}", image.display());
    let image = std::fs::canonicalize(&image).unwrap();
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    DistroGuest { image, _turn: turn }
}

/// A recipe in the data root's `recipes/` (what `recipe new` scaffolds).
fn recipe(env: &TestEnv, name: &str, health: &str, script: &str) {
    env.write_recipe(
        name,
        &format!("schema = 3\nname = \"{name}\"\nversion = \"1.0\"\nos = [\"debian\"]\nscript = \"install.sh\"\n[outputs.marker]\n[health]\ncheck = \"{health}\"\n"),
        script,
    );
}

fn recipes(env: &TestEnv) {
    recipe(
        env,
        FIRST,
        "test -s /var/lib/firstboot-done",
        "set -eu\necho run >> /var/lib/firstboot-runs\nid -u > /var/lib/firstboot-done\necho \"marker=first boot\" >> \"$STOAT_OUTPUTS\"\n",
    );
    recipe(
        env,
        SECOND,
        "test -s /var/lib/later-done",
        "set -eu\necho later line one\necho later line two >&2\nid -u > /var/lib/later-done\necho \"marker=over ssh\" >> \"$STOAT_OUTPUTS\"\n",
    );
}

/// `exec` through stoat; returns the run (not asserted ok: the caller decides).
fn exec(env: &TestEnv, vm: &str, script: &str) -> JsonRun {
    env.json_raw(&["--json", "exec", vm, "sh", "-c", script])
}

/// stdout of a successful `exec`.
fn out(env: &TestEnv, vm: &str, script: &str) -> String {
    let run = exec(env, vm, script);
    assert_eq!(run.data()["exit_code"], 0, "{script}: {}", run.stdout);
    run.data()["stdout"].as_str().unwrap_or_default().to_owned()
}

/// Whether the guest runs a process whose command line is exactly `line`.
fn guest_runs(env: &TestEnv, vm: &str, line: &str) -> bool {
    out(env, vm, "ps -eo args")
        .lines()
        .any(|l| l.trim() == line)
}

/// On OpenSSH the login shell leads a process group and runs the command itself (core
/// exec.rs `captured_form`): a SIGKILLed exec (its guard on the host) and a canceled one (the
/// stop by mark) still take the command and the child it double-forked along, and a daemon
/// that a command which ended left behind, its output elsewhere, stays.
fn exec_is_stopped_with_stoat(env: &TestEnv, vm: &str) {
    use crate::common::{eventually, Spawned};
    use crate::test_cancel::ANSWER;
    use std::time::{Duration, Instant};
    for (signal, child, command) in [
        (libc::SIGKILL, "sleep 411", "sleep 413"),
        (libc::SIGTERM, "sleep 421", "sleep 423"),
    ] {
        let script = format!("( {child} & ); {command}; echo never");
        let mut run =
            Spawned::start_group(&mut env.std_cmd(&["--json", "exec", vm, "sh", "-c", &script]));
        eventually(Duration::from_secs(60), || {
            guest_runs(env, vm, child) && guest_runs(env, vm, command)
        });
        run.signal(signal);
        eventually(ANSWER, || run.try_status());
        eventually(Duration::from_secs(30), || {
            !guest_runs(env, vm, child) && !guest_runs(env, vm, command)
        });
    }
    let daemons = "setsid sleep 431 </dev/null >/dev/null 2>&1 & ( sleep 433 </dev/null >/dev/null 2>&1 & ); echo ok";
    assert_eq!(out(env, vm, daemons), "ok\n");
    // Looked at again and again for 3 s: the guard, had it fired, acts within that.
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(3) {
        for daemon in ["sleep 431", "sleep 433"] {
            assert!(guest_runs(env, vm, daemon), "{daemon} went away");
        }
    }
    out(env, vm, "kill $(pgrep -x -f 'sleep 43[13]')");
}

/// Why cloud-init did not finish cleanly, or Ok: `cloud-init status --long` must exit 0, say
/// `status: done` (a recoverable error exits 2 and says `degraded`, an error exits 1) and name
/// the NoCloud datasource (a seed cloud-init never found ends `done` on `DataSourceNone`).
fn cloud_init_clean(env: &TestEnv, vm: &str) -> Result<(), String> {
    // cloud-init restarts sshd once it has written its configuration, seconds after the banner
    // first answered: an exec in that window ends with ssh's own 255, which says nothing about
    // cloud-init. Ask again (bounded) until the command really ran.
    let run = crate::common::eventually(std::time::Duration::from_secs(120), || {
        let run = exec(env, vm, "cloud-init status --wait --long");
        if run.data()["exit_code"] != 255 {
            Ok(run)
        } else {
            Err(format!("ssh's own 255: {}", run.stdout))
        }
    });
    let data = run.data();
    let text = data["stdout"].as_str().unwrap_or_default();
    let done = text.lines().any(|l| l.trim() == "status: done");
    let nocloud = text.contains("DataSourceNoCloud");
    if data["exit_code"] == 0 && done && nocloud && !text.contains("degraded") {
        return Ok(());
    }
    let log = out(
        env,
        vm,
        "sudo grep -E 'WARNING|ERROR' /var/log/cloud-init.log | tail -n 20 || true",
    );
    Err(format!("exit {}: {text}\n{log}", data["exit_code"]))
}

/// The data of a run that must succeed; when it failed, the panic also shows the last lines
/// of the VM's console, so a boot that went wrong in CI says how far it got.
fn data_or_console(env: &TestEnv, vm: &str, run: &JsonRun) -> Value {
    if !run.ok() {
        let console = std::fs::read(env.root().join(vm).join("console.log")).unwrap_or_default();
        let console = String::from_utf8_lossy(&console);
        let lines: Vec<&str> = console.lines().collect();
        let tail = &lines[lines.len().saturating_sub(40)..];
        panic!(
            "expected ok: {}\nstderr: {}\nthe console's last lines:\n{}",
            run.stdout,
            run.stderr,
            tail.join("\n")
        );
    }
    run.data().clone()
}

fn detail<'a>(get: &'a Value, name: &str) -> &'a Value {
    get["vm"]["recipes_detail"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in recipes_detail: {get}"))
}

/// The last `down` line stoat logged for `vm`: how the stop went.
fn last_down(env: &TestEnv, vm: &str) -> String {
    let log = std::fs::read_to_string(env.root().join("logs/stoat.log")).unwrap();
    log.lines()
        .rev()
        .find(|l| l.contains(&format!(" down {vm} pid=")))
        .unwrap_or_else(|| panic!("no down line for {vm} in stoat.log:\n{log}"))
        .to_owned()
}

/// Fraction of pixels in an RGB or RGBA 8-bit PNG that differ from its most common colour,
/// decoded by python3's zlib (no PNG crate here): text on a console is a few percent.
fn png_ink(path: &Path) -> f64 {
    const DECODE: &str = r#"
import sys, zlib, struct, collections
b = open(sys.argv[1], 'rb').read()
pos, idat, w, h, ct = 8, b'', 0, 0, 0
while pos < len(b):
    n, kind = struct.unpack('>I4s', b[pos:pos + 8]); body = b[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ct = struct.unpack('>IIBB', body[:10])
    if kind == b'IDAT': idat += body
bpp = {2: 3, 6: 4}[ct]; raw = zlib.decompress(idat); stride = w * bpp
prev = bytearray(stride); rows = []; i = 0
for _ in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; up = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + up) & 255
        elif f == 3: line[x] = (line[x] + (a + up) // 2) & 255
        elif f == 4:
            p = a + up - c; pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
pixels = collections.Counter(r[x:x + 3] for r in rows for x in range(0, stride, bpp))
print(1 - pixels.most_common(1)[0][1] / (w * h))
"#;
    let run = std::process::Command::new("python3")
        .arg("-c")
        .arg(DECODE)
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stdout).trim().parse().unwrap()
}

/// The lifecycle on the Debian image: create with every first-boot input, then two boots and
/// a clone's boot.
#[test]
#[ignore = "needs STOAT_DISTRO_GUEST"]
fn distro_lifecycle_on_a_debian_cloud_image() {
    let guest = distro_guest();
    let mut env = TestEnv::new();
    // Only a guest that ignores ACPI takes this long; the test asserts it was not needed.
    env.set_env("STOAT_DOWN_TIMEOUT_SECS", "300");
    recipes(&env);
    let share = env.tmp().join("share");
    std::fs::create_dir(&share).unwrap();
    std::fs::write(share.join("from-host.txt"), "hello from the host\n").unwrap();
    let image = guest.image.display().to_string();
    let create = env.json(&[
        "create",
        "deb",
        "--image",
        &image,
        "--os",
        "debian",
        "--ram",
        "1024",
        "--cpus",
        "2",
        "--disk",
        "4G",
        "--share",
        &share.display().to_string(),
        "--console-password",
        "console-pw-1",
        "--recipes",
        FIRST,
    ]);
    assert_eq!(
        create.data()["vm"]["backend"],
        "cloudinit",
        "{}",
        create.stdout
    );
    let _guard = RealGuard(env.root().join("deb"));
    // Away from the 2200+ range that the fake tier's listeners use on a shared host.
    let port = free_port().to_string();
    env.json(&["update", "deb", "--ssh-port", &port]);

    // ---- first boot: cloud-init does everything the seed asks.
    let up = timed("distro up (first boot)", || {
        let up = env.json(&["up", "deb", "--timeout", BOOT_TIMEOUT]);
        data_or_console(&env, "deb", &up)
    });
    assert_eq!(up["vm"]["state"], "running", "{up}");
    let wait = timed("distro wait reachable (first boot)", || {
        env.json(&[
            "wait",
            "deb",
            "--until",
            "reachable",
            "--timeout",
            BOOT_TIMEOUT,
        ])
    });
    assert_eq!(wait.data()["reached"], true);
    timed("cloud-init status --wait", || {
        cloud_init_clean(&env, "deb").unwrap_or_else(|why| panic!("cloud-init: {why}"))
    });
    assert_eq!(out(&env, "deb", "hostname"), "deb\n");
    assert_eq!(out(&env, "deb", "id -un"), "stoat\n");
    assert_eq!(out(&env, "deb", "sudo -n id -un"), "root\n");
    assert_eq!(
        out(&env, "deb", "sudo -n true 2>&1; getent hosts deb | wc -l"),
        "1\n",
        "the guest resolves its own name, so sudo says nothing"
    );
    assert_eq!(
        out(
            &env,
            "deb",
            "grep -c ^ID=debian /etc/os-release; systemctl is-system-running --wait || true"
        ),
        "1\nrunning\n",
        "a Debian guest whose systemd units all started"
    );
    // growpart + resize2fs: the 2 GiB image's root now fills the 4 GiB disk.
    let size: u64 = out(&env, "deb", "df -B1 --output=size / | tail -n 1")
        .trim()
        .parse()
        .unwrap();
    assert!(size > 3_700_000_000, "root filesystem is {size} bytes");
    assert_eq!(
        out(&env, "deb", "findmnt -n -o FSTYPE /mnt/host; cat /mnt/host/from-host.txt; findmnt -n -o FSTYPE /mnt/work"),
        "9p\nhello from the host\n9p\n"
    );
    let readonly = exec(&env, "deb", "sudo touch /mnt/host/x");
    assert_ne!(readonly.data()["exit_code"], 0, "the share is read-only");
    // The console password reached the account (cloud-init's set-passwords).
    assert_eq!(
        out(&env, "deb", "sudo passwd -S stoat | cut -d' ' -f2"),
        "P\n"
    );

    // The first-boot recipe ran under cloud-init, as root, and up recorded it.
    assert_eq!(out(&env, "deb", "cat /var/lib/firstboot-done"), "0\n");
    env.json(&["wait", "deb", "--until", "applied", "--timeout", "120s"]);
    let get = env.json(&["get", "deb"]);
    let first = detail(get.data(), FIRST);
    assert_eq!(first["applied"], true, "{first}");
    assert_eq!(first["outputs"]["marker"], "first boot");
    assert_eq!(first["health"], "ok");

    // exec: UTF-8 and binary, exit codes.
    let utf8 = env.json_raw(&["--json", "exec", "deb", "echo", "grüße, stoat"]);
    assert_eq!(utf8.data()["stdout"], "grüße, stoat\n");
    let bin = exec(&env, "deb", "printf '\\377\\376'; exit 7");
    assert_eq!(bin.data()["stdout_base64"], "//4=");
    assert_eq!(bin.data()["exit_code"], 7);
    exec_is_stopped_with_stoat(&env, "deb");

    // cp both ways, byte-exact.
    let local = env.tmp().join("in.bin");
    let payload: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    std::fs::write(&local, &payload).unwrap();
    env.json(&["cp", &local.display().to_string(), "deb:/tmp/in.bin"]);
    assert_eq!(
        out(&env, "deb", "sha256sum < /tmp/in.bin | cut -c1-16"),
        format!("{}\n", &sha256_hex(&payload)[..16])
    );
    let back = env.tmp().join("back.bin");
    env.json(&["cp", "deb:/tmp/in.bin", &back.display().to_string()]);
    assert_eq!(std::fs::read(&back).unwrap(), payload);

    // A second recipe, applied over ssh: stage and log events, recorded.
    env.json(&["update", "deb", "--recipes", &format!("{FIRST},{SECOND}")]);
    let apply = timed("apply (over ssh)", || env.json(&["apply", "deb"]));
    assert_eq!(
        apply.data()["applied"],
        serde_json::json!([SECOND]),
        "{}",
        apply.stdout
    );
    let events: Vec<(&str, &str)> = apply.lines[..apply.lines.len() - 1]
        .iter()
        .map(|l| {
            let kind = l["type"].as_str().unwrap();
            let text = match kind {
                "stage" => l["data"]["recipe"].as_str().unwrap(),
                _ => l["data"]["line"].as_str().unwrap_or_default(),
            };
            (kind, text)
        })
        .collect();
    assert!(events.contains(&("stage", SECOND)), "{}", apply.stdout);
    for line in [
        "later line one",
        "later line two",
        "health later: ok",
        "done",
    ] {
        assert!(events.contains(&("log", line)), "{line}: {}", apply.stdout);
    }
    let get = env.json(&["get", "deb"]);
    assert_eq!(detail(get.data(), SECOND)["outputs"]["marker"], "over ssh");
    assert_eq!(out(&env, "deb", "cat /var/lib/later-done"), "0\n");

    // The console: getty's login prompt on the screen.
    let shot = env.json(&["screenshot", "deb"]);
    let path = PathBuf::from(shot.data()["path"].as_str().unwrap());
    let ink = png_ink(&path);
    assert!(
        ink > 0.0002,
        "the screenshot is blank ({ink} of pixels differ)"
    );

    // Online snapshot: QEMU refuses while 9p is mounted, so unmount both shares first.
    assert_eq!(
        exec(
            &env,
            "deb",
            "sudo umount /mnt/work /mnt/host && echo before | sudo tee /var/lib/mark"
        )
        .data()["exit_code"],
        0
    );
    timed("snapshot save", || {
        env.json(&["snapshot", "deb", "s1"]).data().clone()
    });
    out(&env, "deb", "echo after | sudo tee /var/lib/mark");
    timed("snapshot restore", || {
        env.json(&["snapshot", "deb", "s1", "--restore"])
            .data()
            .clone()
    });
    env.json(&["wait", "deb", "--until", "reachable", "--timeout", "120s"]);
    assert_eq!(out(&env, "deb", "cat /var/lib/mark"), "before\n");
    env.json(&["snapshot", "deb", "s1", "--delete"]);

    // down: systemd honours the ACPI power button; no quit or SIGTERM was needed.
    let down = timed("distro down (ACPI)", || env.json(&["down", "deb"]));
    assert_eq!(down.data()["vm"]["state"], "stopped");
    let how = last_down(&env, "deb");
    assert!(how.ends_with(": powered off"), "{how}");

    // ---- second boot: same instance, so cloud-init's per-instance work is skipped.
    let port = free_port().to_string();
    env.json(&["update", "deb", "--ssh-port", &port]);
    timed("distro up (second boot)", || {
        data_or_console(&env, "deb", &env.json(&["up", "deb"]))
    });
    timed("distro wait reachable (second boot)", || {
        env.json(&[
            "wait",
            "deb",
            "--until",
            "reachable",
            "--timeout",
            BOOT_TIMEOUT,
        ])
    });
    cloud_init_clean(&env, "deb").unwrap_or_else(|why| panic!("second boot: {why}"));
    assert_eq!(
        out(
            &env,
            "deb",
            "cat /var/lib/firstboot-runs; findmnt -n -o FSTYPE /mnt/host"
        ),
        "run\n9p\n",
        "the first-boot recipe ran once; the share is mounted again"
    );
    assert_eq!(out(&env, "deb", "cat /var/lib/mark"), "before\n");
    let machine_id = out(&env, "deb", "cat /etc/machine-id");
    let down = timed("distro down (second)", || env.json(&["down", "deb"]));
    assert_eq!(down.data()["vm"]["state"], "stopped");
    assert!(last_down(&env, "deb").ends_with(": powered off"));

    // ---- a clone: the source's files, its own identity. Its seed's mounts document is broken
    // before its first boot (a new instance, so cloud-init reads the seed again): the tier's
    // cloud-init check must fail on it, for that reason, or it proves nothing on the others.
    timed("distro clone", || env.json(&["clone", "deb", "deb2"]));
    let _clone_guard = RealGuard(env.root().join("deb2"));
    env.json(&["update", "deb2", "--ssh-port", &free_port().to_string()]);
    break_the_mounts_document(&env, "deb2");
    timed("distro up (clone, broken seed)", || {
        data_or_console(&env, "deb2", &env.json(&["up", "deb2"]))
    });
    env.json(&[
        "wait",
        "deb2",
        "--until",
        "reachable",
        "--timeout",
        BOOT_TIMEOUT,
    ]);
    assert_eq!(out(&env, "deb2", "cat /var/lib/mark"), "before\n");
    let clone_id = out(&env, "deb2", "cat /etc/machine-id");
    assert_eq!(clone_id.trim().len(), 32, "{clone_id:?}");
    assert_ne!(
        clone_id, machine_id,
        "a clone keeps its source's machine-id"
    );
    assert_eq!(out(&env, "deb2", "hostname"), "deb2\n");
    let why = cloud_init_clean(&env, "deb2").expect_err("a broken seed must fail the check");
    // The right reason: cloud-init read stoat's seed (not DataSourceNone, not an ssh failure)
    // and could not load the mounts part.
    assert!(why.contains("DataSourceNoCloud"), "{why}");
    assert!(why.contains("Failed loading yaml blob"), "{why}");
    assert!(
        !why.starts_with("exit 0:") && !why.starts_with("exit 255:"),
        "{why}"
    );
    env.json(&["down", "deb2"]);
    env.json(&["rm", "deb2", "-y"]);
    let rm = env.json(&["rm", "deb", "-y"]);
    assert!(rm.ok(), "{}", rm.stdout);
    assert!(!env.root().join("deb").exists());
}

/// Breaks the mounts document of the seed `vm` boots next (cloud-init cannot parse it): `up`
/// runs once with a QEMU that exits at once, which leaves the disk and the seed; the seed's
/// user-data is edited and repacked as stoat packs it. (A plain script: the distro tier needs
/// no fake-tier binary.)
fn break_the_mounts_document(env: &TestEnv, vm: &str) {
    let stub = env.bin().join("qemu-system-x86_64");
    std::fs::write(&stub, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.json(&["up", vm]).error("qemu_start_failed");
    std::fs::remove_file(&stub).unwrap();
    let seed = env.root().join(vm).join("ovl/seed");
    let user_data = std::fs::read_to_string(seed.join("user-data")).unwrap();
    assert!(user_data.contains("    mounts:\n"), "{user_data}");
    let broken = user_data.replace("    mounts:\n", "    mounts: [[unclosed\n");
    std::fs::write(seed.join("user-data"), broken).unwrap();
    let iso = env.root().join(vm).join("ovl/seed.iso");
    std::fs::remove_file(&iso).unwrap();
    let packed = std::process::Command::new("xorriso")
        .args(["-as", "mkisofs", "-o"])
        .arg(&iso)
        .args(["-V", "CIDATA", "-J", "-r"])
        .arg(&seed)
        .output()
        .unwrap();
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Every `example=distro` block (the README's "Using stoat"), verbatim, with `debian-13`
/// served on loopback as the Debian image and its real sha256, so `pull` downloads and
/// verifies it and the VM the block creates boots it. Whatever the block leaves running is
/// stopped (down, then by PID) when the test ends, pass or fail.
#[test]
#[ignore = "needs STOAT_DISTRO_GUEST"]
fn distro_doc_examples_run_verbatim() {
    let guest = distro_guest();
    crate::test_doc_examples::run_booting_tier("distro", &guest.image);
}

/// The lines of the guest's sshd journal that say OpenSSH penalised or dropped a source
/// (`PerSourcePenalties`), or met a connection that never spoke (what a banner probe leaves).
fn penalty_lines(journal: &str) -> Vec<&str> {
    journal
        .lines()
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            lower.contains("penalty")
                || lower.contains("drop connection")
                || lower.contains("connections dropped")
                || lower.contains("kex_exchange_identification")
                || lower.contains("not allowing new connection")
        })
        .collect()
}

#[test]
#[ignore = "needs STOAT_DISTRO_GUEST"]
fn distro_a_session_of_fifty_mixed_commands_gets_no_sshd_penalty() {
    let guest = distro_guest();
    let journal = mixed_session(&guest.image, true);
    let penalties = penalty_lines(&journal);
    assert!(
        penalties.is_empty(),
        "sshd penalised the host:\n{}",
        penalties.join("\n")
    );
}

/// Fifty-odd commands as a person's session makes them, right from the first `up` (the
/// window in which a cloud image's sshd restarts): cp both ways, exec, wait, the pasted
/// `ssh-command`, forward, a live snapshot, down. Every one must succeed. Returns the
/// guest's sshd journal when `journal` (a systemd guest), read before `down`.
pub(crate) fn mixed_session(image: &Path, journal: bool) -> String {
    let env = TestEnv::new();
    let image = image.display().to_string();
    env.json(&[
        "create", "s", "--image", &image, "--os", "debian", "--ram", "1024", "--cpus", "2",
        "--disk", "4G",
    ])
    .data();
    let _guard = RealGuard(env.root().join("s"));
    let port = free_port().to_string();
    env.json(&["update", "s", "--ssh-port", &port]).data();
    let local = env.tmp().join("f.txt");
    std::fs::write(&local, "from the host\n").unwrap();
    let back = env.tmp().join("back.txt");
    let commands = std::cell::Cell::new(0);
    // `--json` first: after exec's VM name every word is the guest's.
    let run = |args: &[&str]| {
        commands.set(commands.get() + 1);
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        data_or_console(&env, "s", &env.json_raw(&all))
    };
    timed("session up", || {
        run(&["up", "s", "--timeout", BOOT_TIMEOUT])
    });
    run(&["cp", &local.display().to_string(), "s:/tmp/"]);
    let ssh_command = run(&["ssh-command", "s"]);
    let argv: Vec<String> = ssh_command["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|word| word.as_str().unwrap().to_owned())
        .collect();
    for round in 0..8 {
        let exec = run(&[
            "exec",
            "s",
            "--",
            "sh",
            "-c",
            &format!("echo {round} >> /tmp/rounds"),
        ]);
        assert_eq!(exec["exit_code"], 0, "{exec}");
        run(&[
            "cp",
            &local.display().to_string(),
            &format!("s:/tmp/f{round}.txt"),
        ]);
        run(&[
            "cp",
            &format!("s:/tmp/f{round}.txt"),
            &back.display().to_string(),
        ]);
        assert_eq!(std::fs::read_to_string(&back).unwrap(), "from the host\n");
        run(&["wait", "s", "--until", "reachable", "--timeout", "60s"]);
        // The pasted ssh-command, a login of its own each time.
        let pasted = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .arg("true")
            .output()
            .unwrap();
        commands.set(commands.get() + 1);
        assert!(pasted.status.success(), "ssh-command's argv: {pasted:?}");
    }
    run(&["forward", "s", "--add", &format!("{}:80", free_port())]);
    run(&["forward", "s"]);
    // A live snapshot unmounts the shares over ssh, then mounts them again.
    timed("session live snapshot", || run(&["snapshot", "s", "live1"]));
    run(&["snapshot", "s"]);
    run(&["snapshot", "s", "live1", "--delete"]);
    let rounds = run(&["exec", "s", "--", "cat", "/tmp/rounds"]);
    assert_eq!(
        rounds["stdout"].as_str().unwrap().lines().count(),
        8,
        "{rounds}"
    );
    if journal {
        // The Debian image's bash reaches TCP through /dev/tcp: a server on the host's
        // loopback is out of the guest's reach through its gateway, while one on the host's
        // outbound address answers (the guest's network works; only the loopback is kept out).
        let fetch = |addr: &str, port: u16| {
            let script = format!(
                "exec 3<>/dev/tcp/{addr}/{port} || exit 7; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
            );
            let answer = run(&["exec", "s", "--", "timeout", "8", "bash", "-c", &script]);
            answer["stdout"].as_str().unwrap_or_default().to_owned()
        };
        let loopback = crate::test_network::http_server([127, 0, 0, 1].into(), "host-loopback");
        let reached = fetch("10.0.2.2", loopback);
        assert!(
            !reached.contains("host-loopback"),
            "the guest reached the host's loopback: {reached}"
        );
        let outbound = crate::test_network::host_outbound_address()
            .expect("this host has a non-loopback address");
        let public = crate::test_network::http_server(outbound, "host-public");
        let reached = fetch(&outbound.to_string(), public);
        assert!(
            reached.ends_with("host-public"),
            "the guest's way out: {reached}"
        );
        // A VM's forwards are listeners on the host's loopback too (its network process
        // holds them there), so a neighbour's ssh forward is out of reach the same way; this
        // VM's own ssh port stands in for one (the fast guest's network test boots a real
        // neighbour): no sshd greets through the gateway.
        let reached = fetch("10.0.2.2", port.parse().unwrap());
        assert!(
            !reached.contains("SSH-"),
            "the guest reached a forward on the host's loopback: {reached}"
        );
        // Nor by a raw frame the guest's root writes for the host's loopback itself.
        crate::test_network::put_raw_syn(&env, "s");
        crate::test_network::raw_frames_reach_the_outside_but_not_the_host_loopback(
            &env, "s", outbound,
        );
    }
    let said = if journal {
        let read = run(&[
            "exec",
            "s",
            "--",
            "sudo",
            "-n",
            "journalctl",
            "-u",
            "ssh",
            "--no-pager",
            "-o",
            "cat",
        ]);
        assert_eq!(read["exit_code"], 0, "{read}");
        read["stdout"].as_str().unwrap_or_default().to_owned()
    } else {
        run(&["exec", "s", "--", "true"]);
        String::new()
    };
    run(&["down", "s"]);
    assert!(commands.get() >= 50, "{} commands", commands.get());
    said
}
