//! Images: the catalog (built in, or replaced by `STOAT_CATALOG`), which catalog images are
//! on disk, bring-your-own files, checksum files, `pull`, the host's `qemu-img` and the
//! snapshot table it prints.
//!
//! Implements json-v3#types (Image), the `images` and `pull` rows of "Per-command
//! data", and "Streaming" (progress); docs/contract.md behaviour#images for the catalog and matching rules.

pub mod catalog;
pub mod checksum;
pub mod infer;
pub mod inspect;
pub mod local;
pub mod part;
pub mod pull;
pub mod qemu_img;
pub mod reference;
pub mod snapshot_table;
pub mod store;
