//! Projects: a `stoat.toml` that declares a repository's VMs, the `status` that compares them
//! with what exists, the fan-out that runs one command over all of them, and `stoat.lock`
//! (json-v3#per-command-data: `init`, `status`, `ls --project`, ProjectRun, `lock_out_of_date`).
//!
//! docs/projects.md walks through a project; docs/decisions/project.md records the choices.

pub mod fanout;
pub mod file;
pub mod lock;
pub mod status;

pub use file::{find, Declaration, Project, PROJECT_FILE};
pub use lock::Pin;
