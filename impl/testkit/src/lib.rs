//! Dev-only helpers for the reference stoat's tests (never a normal dependency, never
//! published): the sandboxed environment that runs the real binary ([`TestEnv`]), the checked
//! `--json` run ([`JsonRun`]), fakes ([`stoat_fake`], [`FAKE_QEMU`], [`FakeRunningVm`]) and loopback servers
//! ([`banner_port`], [`LoopbackAcceptor`]) and the real tier's guest ([`real_guest`]). A helper lives here once two test suites, or two
//! files of one, need it.

mod env;
mod fakes;
mod json;
mod net;
mod real;
mod vms;

pub use env::TestEnv;
pub use fakes::{stoat_fake, stub, FakeRunningVm, Reaper, FAKE_QEMU};
pub use json::JsonRun;
pub use net::{banner_port, free_port, LoopbackAcceptor};
pub use real::{real_guest, real_guest_dir, timed, RealGuard, RealGuest};
pub use vms::{create_disk, create_disk_args, create_live, qemu_info};

/// The catalog's alpine-virt ISO file name, as `pull` stores it.
pub const ALPINE_VIRT: &str = "alpine-virt-3.24.1-x86_64.iso";

/// A console password planted in fixtures; it must never appear in any output.
pub const PLANTED_PASSWORD: &str = "planted-hunter2-c0ffee";
