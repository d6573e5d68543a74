//! Hand parsing of `stoat [flags] exec [flags] <vm> [--] <cmd>...`: clap must not touch the
//! guest's argv, which is passed on verbatim (`exec work -la` gives the guest `-la`).

use crate::Parsed;

/// A parsed exec request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecArgs {
    pub vm: String,
    pub command: Vec<String>,
    pub quiet: bool,
}

const QUIET: &[&str] = &["-q", "--quiet", "--no-interactive"];

/// Returns `Some` when argv is an exec invocation (or its help), `None` when it is not exec.
pub(crate) fn parse(args: &[String]) -> Result<Option<Parsed>, String> {
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
    for token in rest.by_ref() {
        if QUIET.contains(&token.as_str()) {
            quiet = true;
        } else if token == "-h" || token == "--help" {
            return Ok(Some(Parsed::Help(HELP.to_owned())));
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
    Ok(Some(Parsed::Exec(ExecArgs { vm, command, quiet })))
}

const HELP: &str = "Run a command in a VM over ssh\n\nUsage: stoat exec <VM> [--] <CMD>...\n\nEverything after the VM name goes to the guest unchanged, --json included.\nUnder --json, stoat exits 0 whenever the command ran; the guest's status is data.exit_code.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(args: &[&str]) -> Result<Option<ExecArgs>, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&args).map(|p| match p {
            Some(Parsed::Exec(e)) => Some(e),
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
    }

    #[test]
    fn missing_parts_are_usage_errors() {
        assert!(exec(&["exec"]).is_err());
        assert!(exec(&["exec", "work"]).is_err());
        assert!(exec(&["exec", "work", "--"]).is_err());
        assert_eq!(exec(&["ls"]).unwrap(), None);
    }
}
