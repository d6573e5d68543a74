//! Every DTO of contract v3's Types section and the `data` of every command.
//!
//! Every list is a `Vec`, so an empty list is `[]` by construction, never null. Optional
//! fields the contract marks "only when ..." are `Option` and skipped when `None`.

mod capabilities;
mod commands;
mod guest;
mod host;
mod image;
mod mcp;
mod project;
mod recipe;
mod vm;

pub use capabilities::*;
pub use commands::*;
pub use guest::*;
pub use host::*;
pub use image::*;
pub use mcp::*;
pub use project::*;
pub use recipe::*;
pub use vm::*;
