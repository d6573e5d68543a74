//! Running QEMU: the command line (argv), the accelerator choice (accel),
//! starting it and detecting whether it runs (launch), the guest network (passt), and the QMP monitor
//! (qmp). Everything fails with [`QemuError`]. This module knows nothing of
//! vm.toml, images or the wire: callers translate VMs into a [`LaunchSpec`]
//! and errors into contract codes.

pub mod accel;
pub mod argv;
pub mod console;
pub mod error;
pub mod helper;
pub mod launch;
pub mod netguard;
pub mod passt;
pub mod qmp;
#[cfg(test)]
mod real_tests;

pub use accel::Accel;
pub use argv::{Display, LaunchSpec, VmPaths};
pub use error::QemuError;
#[cfg(test)]
pub use launch::KillOnDrop;
pub use launch::{running, start, QEMU_BINARY};
pub use passt::PASST_BINARY;
pub use qmp::{Qmp, ScreenFormat};
