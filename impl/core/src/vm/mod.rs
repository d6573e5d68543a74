//! Stored VMs: the vm.toml format, loading and atomic saving, running-state detection, a
//! running VM's monitor and a VM's `shared/<name>` export.

mod config;
pub mod copy;
pub mod display_notice;
mod quick;
pub mod resize_note;
mod running;
pub mod shared;
pub mod spec;
pub mod staging;
mod store;

/// Whether a VM is running: one implementation, shared with the QEMU launcher.
pub use crate::qemu::launch::running as running_pid;
pub use config::{describe_toml_error, AppliedRecipe, Backend, ForwardConfig, Mode, VmConfig};
pub use running::{connect_qmp, load_running};
pub use store::{
    check_name, list, load, load_ok, own_dir, save, save_new, write_atomically, Loaded, StoredVm,
};
