//! Dispatch: one match arm per command, each calling `commands::<area>::<cmd>`.

pub mod images;
pub mod info;
pub mod lifecycle;
pub mod vmops;
pub mod vms;

use stoat_core::{Error, Result};

use crate::ctx::Ctx;
use crate::grammar::Command;
use crate::Reply;

/// Runs one parsed command.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<Reply> {
    match command {
        Command::Version => Ok(info::version()),
        Command::Help => Ok(info::help(info::usage_text())),
        Command::Schema(args) => info::schema(&args),
        Command::Ls(args) => vms::ls(ctx, &args),
        Command::Get(args) => vms::get(ctx, &args.vm),
        Command::Create(args) => vmops::create(ctx, args),
        Command::Update(args) => vmops::update(ctx, args),
        Command::Rm(args) => vmops::rm(ctx, args),
        Command::Clone(args) => vmops::clone(ctx, args),
        Command::Forward(args) => vmops::forward(ctx, args),
        Command::Images => images::images(ctx),
        Command::Pull(args) => images::pull(ctx, &args.id),
        Command::Ssh(_) if ctx.json => Err(Error::Usage(
            "ssh replaces the stoat process, so it cannot answer in JSON; use `stoat exec <vm> <cmd>` or `stoat ssh-command <vm>`".into(),
        )),
        other => Err(Error::Internal(format!(
            "`stoat {}` is not implemented in this build yet",
            other.wire_name()
        ))),
    }
}
