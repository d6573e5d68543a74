//! The CLI adapters of the operations that run a VM or reach into a running one: up, down,
//! wait, exec, screenshot (`stoat_core::app::runtime`; json-v3#per-command-data; `cp` has its
//! own module). Each parses its args into a typed request and renders the answer for a human.

use stoat_core::app::runtime::{self, Streams, Until, REACH_WAIT};
use stoat_core::app::vms;
use stoat_core::{Error, Result};

use crate::ctx::Ctx;
use crate::exec_args::ExecArgs;
use crate::grammar::{ScreenshotArgs, UpArgs, WaitArgs};
use crate::output::GuestOutput;
use crate::output::Reply;

/// `up <vm> [--no-apply] [--no-wait] [--timeout D]`: boot, wait until ssh answers (unless
/// `--no-wait`), then (unless `--no-apply`) apply the VM's recipes, whose `stage`/`log`
/// events stream with `cmd:"up"` before the `{vm}` result, re-read last.
pub fn up(ctx: &Ctx, args: &UpArgs) -> Result<Reply> {
    let name = required_vm("up", args.vm.as_deref())?;
    let reach_wait = (!args.no_wait).then_some(args.timeout);
    let outcome = match runtime::up(ctx, name, !args.no_apply, reach_wait) {
        // A person asking for a running VM gets what they want: it converges (exit 0). A
        // program reads `already_running` from --json (docs/decisions/cli.md).
        Err(Error::AlreadyRunning { .. }) if !ctx.is_json() => {
            let data = vms::vm(ctx, name)?;
            let human = format!("{name} is already running (ssh :{})", data.vm.ssh_port);
            return Ok(Reply::new(&data, human));
        }
        other => other?,
    };
    let vm = &outcome.data.vm;
    let mut human = if outcome.reachable {
        format!("{} is up (ssh :{})\n", vm.name, vm.ssh_port)
    } else {
        format!("{} started (ssh :{})\n", vm.name, vm.ssh_port)
    };
    if outcome.installing {
        human.push_str(&installing_note(name));
    }
    human.push_str(&display_lines(ctx, name)?);
    let mut human = human.trim_end().to_owned();
    if let Some(applied) = &outcome.applied {
        human.push('\n');
        human.push_str(&super::apply::apply_human(applied));
    }
    Ok(Reply::new(&outcome.data, human))
}

/// What a human sees after `up` on a disk VM that boots its installer (upstream waited for
/// the install and restarted; stoat returns at once and says what to do).
fn installing_note(name: &str) -> String {
    format!(
        "installing onto the disk: the VM powers off when done (progress: `stoat logs {name} \
         --which console`); then `stoat up {name}` boots the installed disk\n"
    )
}

/// The `display:` notice of docs/contract.md behaviour#cli, one per line with a trailing
/// newline, when this VM's person has not seen it yet (docs/decisions/cli.md "display
/// notice"). Asked for only when it is printed: `-q` and `--json` (which implies it) neither
/// show it nor mark it shown. The socket path never reaches `--json`.
fn display_lines(ctx: &Ctx, name: &str) -> Result<String> {
    if ctx.is_quiet() {
        return Ok(String::new());
    }
    Ok(vms::display_notice(ctx, name)?
        .iter()
        .map(|line| format!("{line}\n"))
        .collect())
}

/// `down <vm>`.
pub fn down(ctx: &Ctx, vm: Option<&str>) -> Result<Reply> {
    let name = required_vm("down", vm)?;
    let data = match runtime::down(ctx, name) {
        // Converges for a person, like `up` (docs/decisions/cli.md); --json gets `not_running`.
        Err(Error::NotRunning { .. }) if !ctx.is_json() => {
            let data = vms::vm(ctx, name)?;
            return Ok(Reply::new(&data, format!("{name} is already stopped")));
        }
        other => other?,
    };
    let vm = &data.vm;
    let human = if vm.state == stoat_wire::dto::VmState::Running {
        format!("{} is still stopping", vm.name)
    } else {
        format!("{} stopped", vm.name)
    };
    Ok(Reply::new(&data, human))
}

/// `wait <vm> --until X --timeout D`.
pub fn wait(ctx: &Ctx, args: &WaitArgs) -> Result<Reply> {
    let name = required_vm("wait", args.vm.as_deref())?;
    let until = until(&args.until)?;
    let data = runtime::wait(ctx, name, until, args.timeout)?;
    let state = match data.until.as_str() {
        "applied" => "has its recipes applied",
        "stopped" => "is stopped",
        _ => "is reachable",
    };
    let human = format!(
        "{} {state} (after {:.1}s)",
        data.vm,
        data.waited_ms as f64 / 1000.0
    );
    Ok(Reply::new(&data, human))
}

/// `exec <vm> <cmd>...`: under --json exit 0 whenever the command ran; in human mode the
/// guest's bytes go to our stdout/stderr and its status becomes ours.
pub fn exec(ctx: &Ctx, args: ExecArgs) -> Result<Reply> {
    if args.tty {
        if ctx.is_json() {
            return Err(Error::Usage(
                "exec -t gives the command a terminal, which a JSON answer cannot carry; drop -t, or --json".into(),
            ));
        }
        return super::host::ssh(ctx, &args.vm, &args.command, true);
    }
    let streams = if ctx.hands_stdin_to_guest() {
        Streams::Inherit
    } else {
        Streams::Capture
    };
    let reach_wait = args.timeout.unwrap_or(REACH_WAIT);
    let out = runtime::exec(ctx, &args.vm, &args.command, streams, reach_wait)?;
    // Captured bytes (--json) ride in the reply; inherited streams already reached the user.
    let guest = GuestOutput {
        stdout: out.stdout.to_bytes(),
        stderr: out.stderr.to_bytes(),
    };
    let exit_code = out.exit_code;
    Ok(Reply::new(&out, "")
        .with_guest_output(guest)
        .with_human_exit(exit_code))
}

/// `screenshot <vm> [-o PATH]`.
pub fn screenshot(ctx: &Ctx, args: &ScreenshotArgs) -> Result<Reply> {
    let output = match &args.output {
        Some(path) => {
            let cwd =
                std::env::current_dir().map_err(|e| Error::io("read the current directory", e))?;
            let absolute = runtime::absolute_local(&ctx.env, &cwd, path)?;
            // `-o shots/` names a directory: never a file called `shots`.
            if path.ends_with('/') && !absolute.is_dir() {
                return Err(Error::InvalidSpec(format!(
                    "screenshot -o {path}: no such directory (make it first: mkdir -p {path})"
                )));
            }
            Some(absolute)
        }
        None => None,
    };
    let data = runtime::screenshot(ctx, &args.vm, output.as_deref())?;
    let human = format!(
        "{} ({}x{}, {} bytes)",
        data.path, data.width, data.height, data.bytes
    );
    Ok(Reply::new(&data, human))
}

/// `--until`'s value as core's [`Until`].
pub fn until(text: &str) -> Result<Until> {
    Until::parse(text).ok_or_else(|| {
        Error::Usage(format!(
            "wait: --until must be reachable, stopped or applied, not {text:?}"
        ))
    })
}

fn required_vm<'a>(cmd: &str, vm: Option<&'a str>) -> Result<&'a str> {
    vm.ok_or_else(|| Error::Usage(format!("{cmd} needs a VM name")))
}
