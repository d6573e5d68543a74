//! Stored VMs: the vm.toml format, loading and atomic saving, running-state detection.

mod config;
mod state;
mod store;

pub use config::{describe_toml_error, AppliedRecipe, ForwardConfig, VmConfig};
pub use state::{pid_if_running, running_pid};
pub use store::{
    check_name, list, load, load_ok, save, save_new, write_atomically, Loaded, StoredVm,
};
