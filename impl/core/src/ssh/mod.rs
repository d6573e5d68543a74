//! Reaching a guest over the system ssh: the argv and remote-command quoting (`argv`), the
//! VM's reused connection (`mux`), learning readiness by logging in (`login`), the session
//! mark that tells a run that never started from one that failed (`session_mark`), a running
//! VM made ready for one ssh or scp call (`reach`), the master's way to the guest's port
//! (`relay`), and shell text run in the guest for apply
//! and live snapshots (`guest_shell`)
//! (docs/contract.md behaviour#ssh).

pub mod argv;
pub mod guest_shell;
pub mod login;
pub mod mux;
pub mod reach;
pub mod relay;
pub mod session_mark;
