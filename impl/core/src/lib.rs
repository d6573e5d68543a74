//! stoat-core

pub mod qemu;
