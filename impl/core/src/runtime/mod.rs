//! The runtime: starting and stopping a VM's QEMU, waiting for it, and reaching into a running
//! guest (exec, cp, screenshot). Implements json-v3#per-command-data with the behaviour of docs/contract.md behaviour#qemu and behaviour#ssh and behaviour#host-commands

pub mod cp;
pub mod cp_stream;
pub mod down;
pub mod exec;
pub mod screenshot;
pub mod up;
pub mod wait;
