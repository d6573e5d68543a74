//! Dev-only helpers for the reference stoat's tests (never a normal dependency, never
//! published): the sandboxed environment that runs the real binary ([`TestEnv`]), the checked
//! `--json` run ([`JsonRun`]), VMs made the usual ways ([`create_disk`]), fakes
//! ([`stoat_fake`], [`fake_qemu`], [`FakeRunningVm`]), a program run in the background and
//! its output read with deadlines ([`Spawned`]), a condition waited on with a deadline
//! ([`eventually`]), a time limit on the commands a stretch of a test runs ([`bounded`]),
//! local recipes ([`write_recipe_in`]), loopback servers ([`banner_port`],
//! [`LoopbackAcceptor`], [`http::Server`]) and the real tier's guest ([`real_guest`]). A helper
//! lives here once two test files need it.

#![forbid(unsafe_code)]

mod bound;
mod env;
mod fakes;
pub mod http;
mod json;
mod net;
mod real;
mod spawn;
mod vms;
mod wait;

pub use bound::bounded;
pub use env::{write_recipe_in, TestEnv, FAKE_HOST_TOOLS};
pub use fakes::{fake_booted_qemu, fake_qemu, stoat_fake, stub, FakeRunningVm, Reaper};
pub use json::JsonRun;
pub use net::{banner_port, free_port, free_ports, LoopbackAcceptor};
pub use real::{real_guest, real_guest_dir, timed, RealGuard, RealGuest};
pub use spawn::{pids_with_cmdline, Spawned, Stream};
pub use vms::{create_disk, create_disk_args, create_live, make_qcow2, qemu_img, qemu_info};
pub use wait::{eventually, Outcome};

/// The catalog's alpine-virt ISO file name, as `pull` stores it.
pub const ALPINE_VIRT: &str = "alpine-virt-3.24.1-x86_64.iso";

/// The catalog's debian-13 cloud image file name, as `pull` stores it.
pub const DEBIAN_CLOUD: &str = "debian-13-genericcloud-amd64.qcow2";

/// A console password planted in fixtures; it must never appear in any output.
/// The smallest file `create` takes as an installer ISO from a path: the ISO 9660 standard
/// identifier `CD001` at byte 32769, zeros elsewhere.
pub fn iso9660_placeholder() -> Vec<u8> {
    let mut bytes = vec![0u8; 32774];
    bytes[32768] = 1;
    bytes[32769..32774].copy_from_slice(b"CD001");
    bytes
}

pub const PLANTED_PASSWORD: &str = "planted-hunter2-c0ffee";
