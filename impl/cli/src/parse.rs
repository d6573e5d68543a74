//! The command line, parsed: exec's own argv (exec_args.rs), clap's grammar for every other
//! command, and usage errors as one line for the wire with clap's whole text for a person.

use clap::Parser;

use crate::exec_args::{self, ExecArgs, ExecParsed};
use crate::{commands, grammar};

/// What the command line asked for once parsed.
// Built once per process: the size gap between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Parsed {
    /// A command, and whether `-q` was given.
    Command(grammar::Command, bool),
    Exec(ExecArgs),
    Help(String),
}

/// Names the first argument that is not UTF-8, without echoing it (it may be a password):
/// the flag it belongs to, or its position.
pub(crate) fn non_utf8_argument(raw: &[std::ffi::OsString]) -> Option<String> {
    let index = raw.iter().position(|arg| arg.to_str().is_none())?;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(raw[index].as_os_str());
    let flag_of = |text: &[u8]| {
        let end = text.iter().position(|b| *b == b'=').unwrap_or(text.len());
        String::from_utf8_lossy(&text[..end]).into_owned()
    };
    if bytes.starts_with(b"--") {
        return Some(format!("the value of {}", flag_of(bytes)));
    }
    match index.checked_sub(1).and_then(|i| raw[i].to_str()) {
        Some(previous) if previous.starts_with('-') && !previous.contains('=') => {
            Some(format!("the value of {previous}"))
        }
        _ => Some(format!("argument {}", index + 1)),
    }
}

/// A usage error: one line for the wire, and clap's whole text for a human when clap said it.
pub(crate) struct UsageError {
    pub(crate) line: String,
    pub(crate) full: Option<String>,
}

impl From<String> for UsageError {
    fn from(line: String) -> UsageError {
        UsageError { line, full: None }
    }
}

impl From<&str> for UsageError {
    fn from(line: &str) -> UsageError {
        UsageError::from(line.to_owned())
    }
}

/// Parses the scanned argv (`raw` is the process's, for exec's guest words).
pub(crate) fn parse(args: &[String], raw: &[std::ffi::OsString]) -> Result<Parsed, UsageError> {
    // `stoat help <cmd>...` is `stoat <cmd>... --help`.
    if args.first().map(String::as_str) == Some("help") && args.len() > 1 {
        let mut rewritten: Vec<String> = args[1..].to_vec();
        rewritten.push("--help".into());
        return parse(&rewritten, &[]);
    }
    match exec_args::parse(args, raw)? {
        Some(ExecParsed::Run(exec)) => return Ok(Parsed::Exec(exec)),
        Some(ExecParsed::Help(text)) => return Ok(Parsed::Help(text)),
        None => {}
    }
    let argv = std::iter::once("stoat".to_owned()).chain(args.iter().cloned());
    match grammar::Cli::try_parse_from(argv) {
        Ok(cli) if cli.version => Ok(Parsed::Command(grammar::Command::Version, cli.quiet)),
        Ok(cli) => match cli.command {
            Some(grammar::Command::Help) => Ok(Parsed::Help(commands::info::usage_text())),
            Some(command) => Ok(Parsed::Command(command, cli.quiet)),
            None if args.is_empty() => Err("no command given; run `stoat help`".into()),
            None => Err("no command given".into()),
        },
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => {
            Ok(Parsed::Help(err.render().to_string()))
        }
        Err(err) => {
            let habit = (err.kind() == clap::error::ErrorKind::InvalidSubcommand)
                .then(|| args.iter().find(|a| !a.starts_with('-')))
                .flatten()
                .and_then(|verb| Some((verb, other_tools_verb(verb)?)));
            match habit {
                Some((verb, way)) => Err(format!("{verb} is not a stoat command; {way}").into()),
                None => Err(UsageError {
                    line: clap_message(&err),
                    full: Some(err.render().to_string()),
                }),
            }
        }
    }
}

/// stoat's way to do what another VM tool's verb does, for the verbs that are not hidden
/// aliases of a stoat command (those mean the same thing and just run). clap's own guess for
/// these is a command spelled alike, which misleads (`suspend` → `up`, `console` → `clone`).
fn other_tools_verb(token: &str) -> Option<&'static str> {
    Some(match token {
        "restart" | "reload" | "reboot" => "stop and start the VM: `stoat down VM && stoat up VM`",
        "suspend" | "pause" | "resume" | "unpause" => {
            "stoat does not suspend VMs: `stoat down VM` stops one, `stoat up VM` starts it again"
        }
        "info" | "show" | "inspect" | "describe" => "`stoat get VM` shows a VM",
        "run" => "`stoat exec VM -- CMD` runs a command in a VM",
        "console" => {
            "`stoat logs VM --which console` shows a VM's serial console, `stoat ssh VM` opens a shell"
        }
        "new" => "`stoat create NAME --image ID` makes a VM",
        "port" | "ports" | "port-forward" => {
            "`stoat forward VM` shows a VM's port forwards, `stoat forward VM --add 8080:80` adds one"
        }
        "edit" | "set" | "config" | "configure" | "modify" => {
            "`stoat update VM --cpus 2 --ram 2G` changes a VM's settings"
        }
        "download" | "fetch" => "`stoat pull ID` downloads a catalog image",
        _ => return None,
    })
}

/// Returns clap's whole error as one line: its `error:` prefix and "try --help" footer
/// dropped, the rest joined with "; " (the missing argument, the allowed values, a
/// suggestion, the usage line).
fn clap_message(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for raw_line in rendered.lines() {
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        let line = match line.strip_prefix("Usage: ") {
            Some(usage) => format!("usage: {usage}"),
            None => line.to_owned(),
        };
        // An indented line continues the one before (a list of missing arguments, the
        // possible values), except a tip, which stands on its own.
        let continues = raw_line.starts_with(' ') && !line.starts_with("tip:");
        match parts.last_mut() {
            Some(last) if continues => {
                let joiner = if last.ends_with(':') || line.starts_with('[') {
                    " "
                } else {
                    ", "
                };
                last.push_str(joiner);
                last.push_str(&line);
            }
            _ => parts.push(line),
        }
    }
    if parts.is_empty() {
        return "invalid arguments".into();
    }
    parts.join("; ")
}

/// The examples every `--help` shows parse as a run parses them (examples.rs).
#[cfg(test)]
mod example_tests {
    use clap::CommandFactory;

    use crate::examples::ALL;
    use crate::grammar::Cli;

    /// An example line's words: up to its description (two spaces), without a shell
    /// redirection or pipe, without `--json` (taken out before clap parses, crate::scan).
    fn words(line: &str) -> Vec<String> {
        let command = line.trim().split("  ").next().unwrap_or_default();
        let command = command
            .split([' '])
            .take_while(|w| !matches!(*w, "<" | ">" | "|"))
            .collect::<Vec<_>>()
            .join(" ");
        shlex::split(&command)
            .unwrap_or_default()
            .into_iter()
            .filter(|w| w != "--json")
            .collect()
    }

    #[test]
    fn every_example_parses_and_belongs_to_its_command() {
        for (name, block) in ALL {
            let mut seen = 0;
            let path: Vec<&str> = name.split_whitespace().collect();
            for line in block.lines().skip(1) {
                let words = words(line);
                if words.first().map(String::as_str) != Some("stoat") {
                    continue;
                }
                seen += 1;
                let subs: Vec<&str> = words
                    .iter()
                    .skip(1)
                    .filter(|w| !w.starts_with('-'))
                    .take(path.len())
                    .map(String::as_str)
                    .collect();
                assert_eq!(subs, path, "{line}");
                // The whole parse, as a run does it: `help <cmd>` rewritten, exec by hand.
                let raw: Vec<std::ffi::OsString> = words[1..].iter().map(Into::into).collect();
                if let Err(e) = super::parse(&words[1..], &raw) {
                    panic!("{line}: {}", e.line);
                }
            }
            assert!(seen > 0, "{name} has no example");
        }
    }

    /// Every command a person can find (`--help`, a man page) has its block, nested ones too,
    /// and the block its `--help` shows is the one listed here.
    #[test]
    fn every_visible_command_has_its_examples() {
        fn walk(command: &clap::Command, path: &str) {
            let listed = ALL.iter().find(|(name, _)| *name == path);
            let after = command.get_after_help().map(|a| a.to_string());
            match listed {
                Some((_, block)) => assert_eq!(after.as_deref(), Some(*block), "{path}"),
                None => panic!("`stoat {path}` has no examples"),
            }
            for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
                let path = format!("{path} {}", sub.get_name());
                walk(sub, path.trim());
            }
        }
        walk(&Cli::command(), "");
    }
}
