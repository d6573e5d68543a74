//! Owns the hermetic sandbox one scenario runs in: a temp root with HOME, STOAT_HOME,
//! TMPDIR, a work dir and a PATH of fake tools; the pinned environment; fixture writers;
//! fake running VMs; and cleanup (by PID) even when the scenario fails.

mod fixtures;
pub mod http;
mod imp;
mod running;

pub use fixtures::{Forward, VmFixture};
pub use http::{HttpServer, ImageFiles, Route};
pub(crate) use imp::set_mode;
pub use imp::{changes_between, Sandbox, SandboxOptions, TreeSnapshot, FAKE_TOOLS, PINNED_ENV};
pub use running::RunningVm;
