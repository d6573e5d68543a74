//! Dispatch: one match arm per command, each calling `commands::<area>::<cmd>`.

pub mod apply;
pub mod cp;
pub mod generated;
pub mod host;
pub mod images;
pub mod info;
pub mod mcp;
pub mod params;
pub mod project;
pub mod recipes;
pub mod runtime;
pub mod vmops;
pub mod vms;

use stoat_core::{Error, Result};

use crate::ctx::Ctx;
use crate::grammar::{Command, RecipeCommand};
use crate::output::Reply;

/// The commands that cannot answer in JSON lines, refused under --json before they run:
/// `ssh` replaces the process (json-v3#ssh-refused), a bare `mcp` owns stdout, `cp` with
/// `-` or several sources has no JSON answer (docs/decisions/runtime.md "cp"), and `logs -f`
/// never ends, so no result line could close it (docs/decisions/cli.md "logs -f").
pub fn refused_under_json(command: &Command) -> Option<Error> {
    match command {
        Command::Ssh(_) => Some(Error::Usage(
            "ssh replaces the stoat process, so it cannot answer in JSON; use `stoat exec <vm> <cmd>` or `stoat ssh-command <vm>`".into(),
        )),
        Command::Mcp(args) if args.action.is_none() => Some(Error::Usage(
            "`stoat mcp` speaks MCP (JSON-RPC) on stdin/stdout, not JSON lines; run it without --json".into(),
        )),
        Command::Logs(args) if args.follow => Some(Error::Usage(
            "logs -f has no end, so it cannot answer in JSON lines; run it without --json, or poll `stoat --json logs <vm> -n N`".into(),
        )),
        Command::Completions(_) | Command::Man(_) => Some(Error::Usage(
            "completions and man write files for a shell or man(1), not JSON lines; run it without --json".into(),
        )),
        Command::Cp(args) => cp::refused_under_json(args),
        _ => None,
    }
}

/// Runs one parsed command.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<Reply> {
    match command {
        Command::Version => Ok(info::version()),
        Command::Help => Ok(info::help(info::usage_text())),
        Command::Schema(args) => info::schema(&args),
        Command::Completions(args) => Ok(generated::completions(args.shell)),
        Command::Man(args) => generated::man(&args),
        Command::Init => project::init(ctx),
        Command::Status => project::status(ctx),
        Command::Ls(args) if args.project => project::ls(ctx),
        Command::Up(args) if args.vm.is_none() => project::up(ctx, args),
        Command::Down(args) if args.vm.is_none() => project::down(ctx, args),
        Command::Wait(args) if args.vm.is_none() => project::wait(ctx, args),
        Command::Apply(args) | Command::Provision(args) if args.vm.is_none() => {
            project::apply(ctx, args)
        }
        Command::Rm(args) if args.vm.is_none() => project::rm(ctx, args),
        Command::Recipe(RecipeCommand::Lock(flag)) if flag.project => project::recipe_lock(ctx),
        Command::Ls(args) => vms::ls(ctx, &args),
        Command::Get(args) => vms::get(ctx, &args.vm),
        Command::Recipes(args) => recipes::recipes(ctx, &args),
        Command::CheckRecipes(args) => recipes::check_recipes(ctx, &args),
        Command::Recipe(sub) => recipes::recipe(ctx, &sub),
        Command::Guest(sub) => recipes::guest(ctx, &sub),
        Command::Create(args) => vmops::create(ctx, args),
        Command::Update(args) => vmops::update(ctx, args),
        Command::Rm(args) => vmops::rm(ctx, args),
        Command::Clone(args) => vmops::clone(ctx, args),
        Command::Forward(args) => vmops::forward(ctx, args),
        Command::Images => images::images(ctx),
        Command::Pull(args) => images::pull(ctx, &args.id),
        Command::Ssh(args) => {
            let command: Vec<std::ffi::OsString> = args.command.iter().map(Into::into).collect();
            host::ssh(ctx, &args.vm, &command, false)
        }
        Command::SshCommand(args) => host::ssh_command(ctx, &args.vm),
        Command::Logs(args) => host::logs(ctx, &args),
        Command::Doctor => host::doctor(ctx),
        Command::Prune(args) => host::prune(ctx, &args),
        Command::Snapshot(args) => host::snapshot(ctx, &args),
        Command::Capabilities(args) => host::capabilities(ctx, args.vm.as_deref()),
        Command::Up(args) => runtime::up(ctx, &args),
        Command::Down(args) => runtime::down(ctx, args.vm.as_deref()),
        Command::Wait(args) => runtime::wait(ctx, &args),
        Command::Cp(args) => cp::cp(ctx, &args),
        Command::Screenshot(args) => runtime::screenshot(ctx, &args),
        Command::Mcp(args) => mcp::mcp(ctx, &args),
        Command::Apply(args) | Command::Provision(args) => apply::apply(ctx, &args),
        other => Err(Error::Internal(format!(
            "`stoat {}` is not implemented in this build yet",
            other.wire_name()
        ))),
    }
}
