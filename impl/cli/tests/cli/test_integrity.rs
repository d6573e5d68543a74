//! Nothing lost, nothing exposed: clones that share nothing writable, kills at any point that
//! leave a command done or not done, owner-only files, untrusted images refused, listings
//! that survive unreadable entries, and bad input refused at the door. Through the real
//! binary; fault points (`STOAT_FAULT`, debug builds) put the kills at exact moments.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::TestEnv;

const ALPINE_VIRT: &str = "alpine-virt-3.24.1-x86_64.iso";

fn plant_image(env: &TestEnv, file: &str) {
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    std::fs::write(env.root().join("isos").join(file), b"image").unwrap();
}

/// Creates a disk-mode VM with a real (small) qcow2 disk.
fn create_disk(env: &TestEnv, name: &str) -> Value {
    plant_image(env, ALPINE_VIRT);
    let args = [
        "create",
        name,
        "--image",
        "alpine-virt",
        "--mode",
        "disk",
        "--disk",
        "64M",
    ];
    env.json(&args).data()["vm"].clone()
}

fn disk(env: &TestEnv, name: &str) -> PathBuf {
    env.root().join(name).join("disk.qcow2")
}

/// Runs one qemu-io command on a disk; returns whether it succeeded (a failed pattern
/// check is a failure).
fn qemu_io(disk: &Path, command: &str) -> bool {
    let out = std::process::Command::new("qemu-io")
        .args(["-f", "qcow2", "-c", command])
        .arg(disk)
        .output()
        .expect("qemu-io runs (apt install qemu-utils)");
    out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("failed")
}

fn qemu_info(path: &Path) -> Value {
    let out = std::process::Command::new("qemu-img")
        .args(["info", "--output=json", "-U"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

// ---------------------------------------------------------------- clone

#[test]
fn a_clone_shares_nothing_writable_with_its_source() {
    let env = TestEnv::new();
    create_disk(&env, "src");
    assert!(qemu_io(&disk(&env, "src"), "write -P 0x11 0 1M"));
    env.json(&["clone", "src", "copy"]).data();
    // The source boots and writes over the block the clone was made with.
    assert!(qemu_io(&disk(&env, "src"), "write -P 0x22 0 1M"));
    assert!(
        qemu_io(&disk(&env, "copy"), "read -P 0x11 0 1M"),
        "the clone still holds what the source had when it was cloned"
    );
    assert!(qemu_io(&disk(&env, "copy"), "write -P 0x33 1M 1M"));
    assert!(
        qemu_io(&disk(&env, "src"), "read -P 0 1M 1M"),
        "a write to the clone never reaches the source"
    );
    env.json(&["rm", "src", "-y"]).data();
    let copy = env.json(&["get", "copy"]).data().clone();
    assert_eq!(copy["vm"]["state"], "stopped", "{copy}");
    let info = qemu_info(&disk(&env, "copy"));
    assert!(info.get("backing-filename").is_none(), "{info}");
    assert!(qemu_io(&disk(&env, "copy"), "read -P 0x11 0 1M"));
    assert_eq!(mode(&disk(&env, "copy")), 0o600);
}
