//! Hand parsing of `stoat [flags] exec [flags] <vm> [--] <cmd>...`: clap must not touch the
//! guest's argv, which is passed on verbatim (`exec work -la` gives the guest `-la`).

use std::ffi::OsString;

/// A parsed exec request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecArgs {
    pub vm: String,
    /// The guest's words as the kernel handed them to stoat (not necessarily UTF-8).
    pub command: Vec<OsString>,
    pub quiet: bool,
    /// How long to wait for a running VM's ssh to answer (`--timeout D` before the VM name).
    pub timeout: Option<std::time::Duration>,
    /// `-t`: the command gets a terminal (human mode; stoat becomes the ssh session).
    pub tty: bool,
}

const QUIET: &[&str] = &["-q", "--quiet", "--no-interactive"];

/// An exec argv, parsed: the command to run, or exec's help.
pub(crate) enum ExecParsed {
    Run(ExecArgs),
    Help(String),
}

/// Returns `Some` when argv is an exec invocation (or its help), `None` when it is not exec.
/// `args` is the scanned argv (lossy UTF-8); `raw` the process's argv, whose tail is the
/// guest's command verbatim (the `--json` scan never touches what follows exec's VM name).
pub(crate) fn parse(args: &[String], raw: &[OsString]) -> Result<Option<ExecParsed>, String> {
    let mut quiet = false;
    let mut rest = args.iter();
    let mut saw_exec = false;
    for token in rest.by_ref() {
        if QUIET.contains(&token.as_str()) {
            quiet = true;
        } else if token == "exec" {
            saw_exec = true;
            break;
        } else {
            return Ok(None);
        }
    }
    if !saw_exec {
        return Ok(None);
    }
    let mut vm = None;
    let mut timeout = None;
    let mut tty = false;
    while let Some(token) = rest.next() {
        if QUIET.contains(&token.as_str()) {
            quiet = true;
        } else if token == "-t" || token == "--tty" {
            tty = true;
        } else if token == "--timeout" || token.starts_with("--timeout=") {
            let text = match token.strip_prefix("--timeout=") {
                Some(text) => text.to_owned(),
                None => rest
                    .next()
                    .cloned()
                    .ok_or("exec: --timeout needs a value, e.g. 30s or 2m")?,
            };
            timeout = Some(crate::grammar::parse_positive_duration(&text)?);
        } else if token == "-h" || token == "--help" {
            return Ok(Some(ExecParsed::Help(format!(
                "{HELP}\n{}\n",
                crate::examples::EXEC
            ))));
        } else {
            vm = Some(token.clone());
            break;
        }
    }
    let vm = vm.ok_or("exec: missing VM name: stoat exec <vm> [--] <cmd>...")?;
    let mut command: Vec<String> = rest.cloned().collect();
    if command.first().map(String::as_str) == Some("--") {
        command.remove(0);
    }
    if command.is_empty() {
        return Err(format!(
            "exec: missing command: stoat exec {vm} [--] <cmd>..."
        ));
    }
    let command = match raw.len().checked_sub(command.len()) {
        Some(start) => raw[start..].to_vec(),
        None => command.into_iter().map(OsString::from).collect(),
    };
    Ok(Some(ExecParsed::Run(ExecArgs {
        vm,
        command,
        quiet,
        timeout,
        tty,
    })))
}

const HELP: &str = "Run a command in a VM over ssh\n\nUsage: stoat exec [OPTIONS] <VM> [--] <CMD>...\n\nArguments:\n  <VM>      The running VM\n  <CMD>...  The command and its arguments, passed to the guest byte for byte\n\nOptions:\n      --timeout <D>  How long to wait for a booting VM's ssh to answer [default: 2m]\n  -t, --tty          Give the command a terminal (not under --json: stoat becomes ssh)\n  -q, --quiet        Suppress progress chatter\n  -h, --help         Print help\n\nEverything after the VM name goes to the guest unchanged, --json included.\nThe guest's stdout and stderr stream to stoat's, and its exit status becomes stoat's.\nUnder --json, stoat exits 0 whenever the command ran; the guest's status is data.exit_code.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(args: &[&str]) -> Result<Option<ExecArgs>, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let raw: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&args, &raw).map(|p| match p {
            Some(ExecParsed::Run(e)) => Some(e),
            _ => None,
        })
    }

    #[test]
    fn verbatim_guest_argv() {
        let parsed = exec(&["exec", "work", "-la"]).unwrap().unwrap();
        assert_eq!(parsed.command, vec!["-la"]);
        let parsed = exec(&["-q", "exec", "work", "--", "--quiet", "--"])
            .unwrap()
            .unwrap();
        assert_eq!(parsed.command, vec!["--quiet", "--"]);
        assert!(parsed.quiet);
        let parsed = exec(&["exec", "--timeout", "5s", "work", "--timeout", "1s"])
            .unwrap()
            .unwrap();
        assert_eq!(parsed.timeout, Some(std::time::Duration::from_secs(5)));
        assert_eq!(parsed.command, vec!["--timeout", "1s"]);
        let parsed = exec(&["exec", "-t", "work", "top", "-t"]).unwrap().unwrap();
        assert!(parsed.tty);
        assert_eq!(parsed.command, vec!["top", "-t"]);
        assert!(!exec(&["exec", "work", "-t"]).unwrap().unwrap().tty);
    }

    #[test]
    fn missing_parts_are_usage_errors() {
        assert!(exec(&["exec"]).is_err());
        assert!(exec(&["exec", "work"]).is_err());
        assert!(exec(&["exec", "work", "--"]).is_err());
        assert_eq!(exec(&["ls"]).unwrap(), None);
    }
}
