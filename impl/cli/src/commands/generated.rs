//! Owns the files made from the grammar itself: shell completion scripts (`completions`,
//! registration for clap_complete's dynamic engine) and man pages (`man`, clap_mangen), so what a shell completes and what
//! man(1) shows are always the flags this binary parses. Human mode only: both write text
//! for another program, never JSON lines (refused under --json by `refused_under_json`).

use std::path::Path;

use clap::CommandFactory;
use stoat_core::{Error, Result};

use crate::grammar::{Cli, CompletionShell, ManArgs};
use crate::output::Reply;

/// The grammar, built (subcommands expanded and named `stoat-<cmd>` for man pages).
fn grammar() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// `completions <shell>`: the registration script on stdout; the shell then asks this
/// binary for each completion (`crate::complete`).
pub fn completions(shell: CompletionShell) -> Reply {
    Reply::new(&serde_json::json!({}), crate::complete::registration(shell))
}

/// `man [--dir DIR] [command...]`: one page on stdout, or every page written into DIR.
pub fn man(args: &ManArgs) -> Result<Reply> {
    let root = grammar();
    if let Some(dir) = &args.dir {
        if !args.command.is_empty() {
            return Err(Error::Usage(
                "man: give a command or --dir, not both".into(),
            ));
        }
        let written = write_all(&root, dir)?;
        let human = format!(
            "wrote {written} man pages to {} (stoat.1, stoat-<command>.1)\n",
            dir.display()
        );
        return Ok(Reply::new(&serde_json::json!({}), human));
    }
    let mut page = &root;
    for word in &args.command {
        page = page
            .get_subcommands()
            .find(|sub| sub.get_name() == word && !sub.is_hide_set())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "man: `{}` has no command `{word}`; see `stoat help`",
                    page.get_display_name().unwrap_or("stoat").replace('-', " ")
                ))
            })?;
    }
    let text = render(page).map_err(|e| Error::io("render the man page", e))?;
    Ok(Reply::new(&serde_json::json!({}), text))
}

fn page(command: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command.clone())
        .source(format!("stoat {}", env!("CARGO_PKG_VERSION")))
        .manual("stoat manual")
}

/// The page: clap_mangen's sections, then the command's examples (its `--help`'s
/// `Examples:` block) and, on stoat.1, ENVIRONMENT and FILES.
fn render(command: &clap::Command) -> std::io::Result<String> {
    let man = page(command);
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = roff::Roff::new();
    if let Some(after) = command.get_after_help() {
        let after = after.to_string();
        // An `Examples:` block, and what follows it after a blank line (stoat's own note
        // on --json) as NOTES.
        match after.strip_prefix("Examples:\n") {
            Some(rest) => {
                let (examples, notes) = rest.split_once("\n\n").unwrap_or((rest, ""));
                preformatted(&mut roff, "EXAMPLES", examples);
                if !notes.trim().is_empty() {
                    preformatted(&mut roff, "NOTES", notes);
                }
            }
            None => preformatted(&mut roff, "NOTES", &after),
        }
    }
    if command.get_name() == "stoat" {
        environment(&mut roff);
        files(&mut roff);
    }
    roff.to_writer(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn preformatted(roff: &mut roff::Roff, heading: &str, text: &str) {
    roff.control("SH", [heading]);
    roff.control("nf", []);
    for line in text.lines() {
        roff.text([roff::roman(line.trim_start())]);
    }
    roff.control("fi", []);
}

/// Every variable stoat reads, as core lists them.
fn environment(roff: &mut roff::Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in stoat_core::app::info::ENV_VARS {
        roff.control("TP", []);
        roff.text([roff::bold(*name)]);
        roff.text([roff::roman(*meaning)]);
    }
}

/// The data root's layout (docs/usage.md has the whole of it).
fn files(roff: &mut roff::Roff) {
    const FILES: &[(&str, &str)] = &[
        (
            "$STOAT_HOME (default ~/.stoat)",
            "the data root, owner-only (0700)",
        ),
        (
            "$STOAT_HOME/<vm>/vm.toml",
            "a VM's settings; its disk, seed, sockets and console.log sit beside it",
        ),
        (
            "$STOAT_HOME/isos/",
            "downloaded catalog images and your own image files",
        ),
        (
            "$STOAT_HOME/recipes/",
            "local and remote recipes (recipe new, recipe add)",
        ),
        ("$STOAT_HOME/guests/", "your own guest OS definitions"),
        ("$STOAT_HOME/logs/", "stoat's own log (stoat logs)"),
        (
            "stoat.toml, stoat.lock",
            "a project: its declared VMs and its pinned remote recipes",
        ),
    ];
    roff.control("SH", ["FILES"]);
    for (path, meaning) in FILES {
        roff.control("TP", []);
        roff.text([roff::italic(*path)]);
        roff.text([roff::roman(*meaning)]);
    }
}

/// Writes the page of `command` and of every visible command under it; returns how many.
fn write_all(command: &clap::Command, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    let path = dir.join(page(command).get_filename());
    let text = render(command).map_err(|e| Error::io("render a man page", e))?;
    std::fs::write(&path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        written += write_all(sub, dir)?;
    }
    Ok(written)
}
