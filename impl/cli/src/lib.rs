//! The `stoat` binary: scan `--json`, parse, dispatch to a command, and answer, in prose or
//! in contract v3 JSON lines.
//!
//! The exit status is decided in exactly one place ([`output::Output::finish`]). Under `--json` every
//! path ends with exactly one result line: usage errors, SIGINT/SIGTERM (`canceled`) and
//! panics (`internal`) included.

// Unsafe code is allowed only on the function that sets the signal mask
// (docs/decisions/unsafe.md).
#![deny(unsafe_code)]

mod candidates;
mod commands;
mod complete;
mod ctx;
mod examples;
mod exec_args;
mod grammar;
mod human;
mod mcp;
mod output;
mod parse;
mod progress;
pub mod scan;
mod signals;
mod spelling;
mod version;

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};

use stoat_core::{Cancel, Env};
use stoat_wire::{Emitter, WireError};

pub use output::Reply;
use parse::{non_utf8_argument, parse, Parsed};

pub use version::VERSION;

/// Holds SIGINT and SIGTERM until [`main`] has its handler in place (the binary calls it
/// before `main`).
pub fn hold_signals() {
    signals::hold();
}

/// The exit status of a helper, when the argv is exactly `<console logger arg> <log>`,
/// `<network guard arg> <passt socket> <note>`, `<ssh relay arg> <host> <port>` or
/// `<exec guard arg> <ssh argv…>`.
fn serve_boot_helper() -> Option<i32> {
    use std::path::Path;
    use stoat_core::app::process;
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let served = match argv.as_slice() {
        [mode, log] if mode == process::CONSOLE_LOGGER_ARG => {
            process::serve_console_log(Path::new(log))
        }
        [mode, passt, note] if mode == process::NET_GUARD_ARG => {
            process::serve_net_guard(Path::new(passt), Path::new(note))
        }
        [mode, host, port] if mode == process::SSH_RELAY_ARG => {
            process::serve_ssh_relay(&host.to_string_lossy(), &port.to_string_lossy())
        }
        [mode, stop @ ..] if mode == process::EXEC_GUARD_ARG => process::serve_exec_guard(stop),
        _ => return None,
    };
    Some(i32::from(served.is_err()))
}

/// Runs stoat with the process's argv and environment; returns the exit status.
pub fn main() -> i32 {
    // `up` runs this binary again as the boot's console logger and network guard (core
    // qemu/helper.rs), ssh runs it as the VM master's relay (core ssh/relay.rs), and exec
    // as its guard (core app/runtime/exec_guard.rs).
    if let Some(status) = serve_boot_helper() {
        return status;
    }
    complete::answer_if_asked();
    // The raw argv is kept for exec: the guest's words reach it byte for byte.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let args: Vec<String> = raw
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let scanned = scan::split_json_flag(args);
    let env = Env::capture();
    let cancel = Cancel::default();
    let first_token = scanned
        .args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(|t| grammar::wire_name_of_token(t))
        .unwrap_or_default();
    let emitter = scanned
        .json
        .then(|| Emitter::new(Box::new(std::io::stdout()), first_token.clone()));
    if let Some(emitter) = &emitter {
        install_json_panic_hook(emitter.terminator());
    }
    signals::install(cancel.clone(), emitter.as_ref().map(Emitter::terminator));

    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        run(
            scanned.json,
            &scanned.args,
            &raw,
            env,
            cancel,
            emitter,
            &first_token,
        )
    }));
    outcome.unwrap_or(1)
}

fn run(
    json: bool,
    args: &[String],
    raw: &[std::ffi::OsString],
    env: Env,
    cancel: Cancel,
    emitter: Option<Emitter>,
    first_token: &str,
) -> i32 {
    let parsed = match parse(args, raw) {
        Ok(parsed) => parsed,
        Err(usage) => {
            if !json {
                if let Some(full) = &usage.full {
                    // clap's own rendering: the missing argument, the allowed values, the
                    // suggestion for a typo, and the usage line.
                    let _ = write!(std::io::stderr(), "{full}");
                    return 2;
                }
            }
            return output::Output::new(emitter)
                .finish(first_token, Err(stoat_core::Error::Usage(usage.line)));
        }
    };
    // Everything a command stores (names, paths, passwords, recipe params) is UTF-8 text;
    // only exec's guest words travel as raw bytes.
    if let (Parsed::Command(command, _), Some(which)) = (&parsed, non_utf8_argument(raw)) {
        return output::Output::new(emitter).finish(
            command.wire_name(),
            Err(stoat_core::Error::InvalidSpec(format!(
                "{which} is not valid UTF-8; stoat keeps names, paths and passwords as UTF-8 text"
            ))),
        );
    }
    let (cmd, quiet) = match &parsed {
        Parsed::Command(command, quiet) => (command.wire_name(), *quiet),
        Parsed::Exec(exec) => ("exec", exec.quiet),
        Parsed::Help(_) => ("help", false),
    };
    if let Some(emitter) = &emitter {
        emitter.set_cmd(cmd);
    }
    let ctx = ctx::Ctx::new(
        json,
        quiet,
        env,
        cancel,
        emitter.as_ref().map(Emitter::stream),
        cmd,
    );
    // Debug builds only: lets the tests prove a panic still ends in one `internal` result.
    #[cfg(debug_assertions)]
    if ctx.env.get("STOAT_DEBUG_PANIC").is_some() {
        panic!("STOAT_DEBUG_PANIC is set");
    }
    let result = match parsed {
        Parsed::Help(usage) => Ok(commands::info::help(usage)),
        Parsed::Exec(exec) => commands::runtime::exec(&ctx, exec),
        Parsed::Command(command, _) => match json.then(|| commands::refused_under_json(&command)) {
            Some(Some(refusal)) => Err(refusal),
            _ => commands::dispatch(&ctx, command),
        },
    };
    ctx.finish_progress();
    let did_you_mean = |near: Option<String>| near.map(|near| format!("did you mean {near}?"));
    let hint = match &result {
        Err(_) if json => None,
        // `snapshot list work`, as Vagrant orders it: stoat takes the VM first.
        Err(stoat_core::Error::NotFound { name })
            if cmd == "snapshot" && commands::host::snapshot_word(name).is_some() =>
        {
            Some("stoat snapshot takes the VM first: `stoat snapshot VM` lists, `stoat snapshot VM TAG` saves".into())
        }
        Err(stoat_core::Error::NotFound { name }) => did_you_mean(nearest(
            name,
            stoat_core::app::complete::vm_names(&ctx.env).into_iter(),
        )),
        // `create --image`: a catalog id or a file in isos/; `pull`: the catalog alone.
        Err(stoat_core::Error::ImageNotFound { id }) => did_you_mean(nearest(
            id,
            stoat_core::app::complete::image_ids(&ctx.env).into_iter(),
        )),
        Err(stoat_core::Error::NoSuchImage { id }) => did_you_mean(nearest(
            id,
            stoat_core::app::complete::catalog_ids(&ctx.env).into_iter(),
        )),
        _ => None,
    };
    output::Output::new(emitter).finish_hinted(cmd, result, hint)
}

fn install_json_panic_hook(terminator: stoat_wire::Terminator) {
    panic::set_hook(Box::new(move |info| {
        let message = format!("panic: {info}");
        let _ = writeln!(std::io::stderr(), "{message}");
        terminator.terminate(&WireError::internal(message));
    }));
}

/// The name closest to a mistyped one among `known` (at most two edits away, or one for
/// short names), for a person's `not found`: a VM name, an image id.
fn nearest(typed: &str, known: impl Iterator<Item = String>) -> Option<String> {
    let limit = if typed.chars().count() <= 4 { 1 } else { 2 };
    known
        .filter(|name| name != typed)
        .map(|name| (strsim::damerau_levenshtein(typed, &name), name))
        .filter(|(distance, _)| *distance <= limit)
        .min()
        .map(|(_, name)| name)
}
