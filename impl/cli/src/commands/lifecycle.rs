//! Commands that act on a running VM: exec (so far).

use stoat_core::{Error, Result};

use crate::ctx::Ctx;
use crate::{ExecArgs, Reply};

/// `exec`.
pub fn exec(_ctx: &Ctx, args: ExecArgs) -> Result<Reply> {
    Err(Error::Internal(format!(
        "`stoat exec {}` is not implemented in this build yet",
        args.vm
    )))
}
