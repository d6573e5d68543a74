//! Host-side commands: doctor, prune, snapshots (offline, and live with the share paused
//! around them), logs and the capability report
//! (json-v3#per-command-data, json-v3#capabilities; docs/contract.md behaviour#ssh and
//! behaviour#host-commands).

pub mod capabilities;
pub mod doctor;
pub mod log_follow;
pub mod logs;
pub mod prune;
pub mod share_pause;
pub mod snapshot;
