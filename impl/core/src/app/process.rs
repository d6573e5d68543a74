//! The process-wide state a front end's signal handling reads and drives: the host tools
//! running now (stopped on a signal), whether the operation is still busy or finishing work
//! that decides its answer (docs/decisions/runtime.md "cancellation"), the named pause
//! points the tests use to stop a process at a chosen moment, and the hidden mode in which
//! `up` runs the binary again as a boot's console logger or network guard, ssh runs it as
//! the master connection's relay, and exec as its guard.

pub use super::runtime::exec_guard::{serve as serve_exec_guard, GUARD_ARG as EXEC_GUARD_ARG};
pub use crate::child::{busy, finishing_now, stop_all};
pub use crate::fault::pause;
pub use crate::qemu::console::{serve as serve_console_log, LOGGER_ARG as CONSOLE_LOGGER_ARG};
pub use crate::qemu::netguard::{serve as serve_net_guard, GUARD_ARG as NET_GUARD_ARG};
pub use crate::ssh::relay::{serve as serve_ssh_relay, RELAY_ARG as SSH_RELAY_ARG};
