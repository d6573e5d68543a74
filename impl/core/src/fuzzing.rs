//! The internal parsers the fuzz targets (`fuzz/fuzz_targets/`) drive, re-exported for them
//! alone. Compiled only with the `fuzzing` feature, which `fuzz/Cargo.toml` turns on, and
//! hidden from the docs: it is no part of core's public face, which is [`crate::app`].

pub use crate::images::checksum::{find, Expected};
pub use crate::images::snapshot_table::parse_table;
pub use crate::project::Project;
pub use crate::qemu::Qmp;
pub use crate::recipes::manifest::{parse_timeout, Manifest};
pub use crate::vm::VmConfig;
