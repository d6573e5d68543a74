//! The process-wide state a front end's signal handling reads and drives: the host tools
//! running now (stopped on a signal), whether the operation is still busy or finishing work
//! that decides its answer (docs/decisions/runtime.md "cancellation"), and the named pause
//! points the tests use to stop a process at a chosen moment.

pub use crate::child::{busy, finishing_now, stop_all};
pub use crate::fault::pause;
