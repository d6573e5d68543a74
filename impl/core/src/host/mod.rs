//! What stoat knows of the host and its data root as a whole: doctor's checks, the
//! capability report, prune's leftovers, and stoat's and a VM's logs, read or followed
//! (json-v3#per-command-data, json-v3#capabilities; docs/contract.md behaviour#host-commands).
//! The operations that answer with them are `app::host`'s.

pub mod capabilities;
pub mod doctor;
pub mod log_follow;
pub mod logs;
pub mod prune;
