//! Owns the files made from the grammar itself: shell completion scripts (`completions`,
//! clap_complete) and man pages (`man`, clap_mangen), so what a shell completes and what
//! man(1) shows are always the flags this binary parses. Human mode only: both write text
//! for another program, never JSON lines (refused under --json by `refused_under_json`).

use std::path::Path;

use clap::CommandFactory;
use stoat_core::{Error, Result};

use crate::grammar::{Cli, CompletionShell, ManArgs};
use crate::Reply;

/// The grammar, built (subcommands expanded and named `stoat-<cmd>` for man pages).
fn grammar() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// `completions <shell>`: the script on stdout.
pub fn completions(shell: CompletionShell) -> Reply {
    let mut command = Cli::command();
    let mut script = Vec::new();
    let name = "stoat";
    match shell {
        CompletionShell::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut command, name, &mut script)
        }
        CompletionShell::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut command, name, &mut script)
        }
        CompletionShell::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut command, name, &mut script)
        }
    }
    Reply::new(
        &serde_json::json!({}),
        String::from_utf8_lossy(&script).into_owned(),
    )
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

fn render(command: &clap::Command) -> std::io::Result<String> {
    let mut out = Vec::new();
    page(command).render(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
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
