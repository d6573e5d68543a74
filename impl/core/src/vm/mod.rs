//! Stored VMs: the layout of a VM directory ([`VmDir`]), the vm.toml format, loading and
//! atomic saving, running-state detection, a running VM's monitor and a VM's
//! `shared/<name>` export.

mod config;
pub mod copy;
mod dir;
pub mod display_notice;
mod quick;
pub mod resize_note;
mod running;
pub mod shared;
pub mod spec;
pub mod staging;
mod store;

pub use config::{describe_toml_error, AppliedRecipe, Backend, ForwardConfig, Mode, VmConfig};
pub use dir::VmDir;
pub use running::{connect_qmp, load_running, running_pid};
pub use store::{
    check_name, list, load, load_ok, own_dir, save, save_new, write_atomically, Loaded, StoredVm,
};
