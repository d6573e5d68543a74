//! The commands that change VMs: create, update, rm, clone and forward (docs/contract.md:
//! behaviour#data-root, behaviour#images, behaviour#host-commands, json-v3#per-command-data).
//!
//! Every operation that chooses a port or writes a vm.toml holds the data-root lock from its
//! checks to its save, so concurrent invocations see each other's results.

pub mod clone;
pub mod create;
pub mod forward;
pub mod recipe_check;
pub mod remove;
pub mod update;
