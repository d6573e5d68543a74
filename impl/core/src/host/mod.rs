//! Host-side commands that need no running guest: the ssh argv and the reused ssh connection
//! (ssh_mux), doctor, prune, offline snapshots, logs and the capability report (stoat-json-v3 "ssh-command", "doctor", "prune",
//! "snapshot", "logs", "Capability discovery"; upstream facts §5.1 and §7).

pub mod capabilities;
pub mod doctor;
pub mod logs;
pub mod prune;
pub mod snapshot;
pub mod ssh_argv;
pub mod ssh_mux;
