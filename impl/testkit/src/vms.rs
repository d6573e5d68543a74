//! VMs made through the real binary the way most tests need them, and what their disks hold
//! as the real `qemu-img` reads it.

use std::path::Path;

use serde_json::Value;

use crate::{TestEnv, ALPINE_VIRT};

/// `create NAME --image alpine-virt --mode disk --disk 64M`: a disk-mode VM with a real,
/// small qcow2 disk.
pub fn create_disk_args(name: &str) -> [&str; 8] {
    [
        "create",
        name,
        "--image",
        "alpine-virt",
        "--mode",
        "disk",
        "--disk",
        "64M",
    ]
}

/// Creates a live alpine VM (over a planted placeholder ISO); returns its VM object.
pub fn create_live(env: &TestEnv, name: &str) -> Value {
    env.plant_image(ALPINE_VIRT);
    env.json(&["create", name, "--image", "alpine-virt"]).data()["vm"].clone()
}

/// Creates a disk-mode VM with a real (small) qcow2 disk ([`create_disk_args`]); returns its
/// VM object.
pub fn create_disk(env: &TestEnv, name: &str) -> Value {
    env.plant_image(ALPINE_VIRT);
    env.json(&create_disk_args(name)).data()["vm"].clone()
}

/// Runs `qemu-img ARGS` and asserts it succeeded; returns its stdout.
pub fn qemu_img(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = std::process::Command::new("qemu-img")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "qemu-img {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Makes a real, small qcow2 at `path` (`size` as qemu-img reads it, e.g. `64M`).
pub fn make_qcow2(path: &Path, size: &str) {
    qemu_img(&[
        "create".as_ref(),
        "-q".as_ref(),
        "-f".as_ref(),
        "qcow2".as_ref(),
        path.as_os_str(),
        size.as_ref(),
    ]);
}

/// Returns `qemu-img info --output=json` of a disk (`-U`: a running VM may hold its lock).
pub fn qemu_info(path: &Path) -> Value {
    let out = qemu_img(&[
        "info".as_ref(),
        "--output=json".as_ref(),
        "-U".as_ref(),
        path.as_os_str(),
    ]);
    serde_json::from_slice(&out).unwrap()
}
