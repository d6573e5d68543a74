//! The `--json` pre-scan: runs before any parsing so that even a usage error can answer in
//! the contract.
//!
//! `--json` is recognised anywhere EXCEPT after exec's VM name, where everything belongs to
//! the guest. Unlike upstream, the exec token is found after leading global flags too, so
//! `stoat -q --json exec vm cmd --json` leaves the last `--json` to the guest.
//! Implements json-v3#flag-position, design#json-and-exec.

/// Global flags that may precede the command; none takes a value.
const GLOBAL_FLAGS: &[&str] = &["-q", "--quiet", "--no-interactive"];

/// The argv with stoat's own `--json` removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    pub json: bool,
    pub args: Vec<String>,
}

/// Removes stoat's `--json` tokens from `args` (the argv without the program name).
pub fn split_json_flag(args: Vec<String>) -> Scanned {
    let mut json = false;
    let mut kept = Vec::with_capacity(args.len());
    let mut iter = args.into_iter();
    // Leading global flags, then the command token.
    let mut command = None;
    for token in iter.by_ref() {
        if token == "--json" {
            json = true;
        } else if GLOBAL_FLAGS.contains(&token.as_str())
            || (command.is_none() && token.starts_with('-') && token != "--")
        {
            kept.push(token);
        } else {
            command = Some(token.clone());
            kept.push(token);
            break;
        }
    }
    if command.as_deref() == Some("exec") {
        // Flags between `exec` and the VM name are stoat's; the name and all after are not.
        while let Some(token) = iter.next() {
            if token == "--json" {
                json = true;
                continue;
            }
            // exec's own `--timeout D` also comes before the VM name.
            let takes_value = token == "--timeout";
            let is_stoat_flag = GLOBAL_FLAGS.contains(&token.as_str())
                || takes_value
                || token.starts_with("--timeout=");
            kept.push(token);
            if takes_value {
                kept.extend(iter.next());
            }
            if !is_stoat_flag {
                break;
            }
        }
        kept.extend(iter);
    } else {
        for token in iter {
            if token == "--json" {
                json = true;
            } else {
                kept.push(token);
            }
        }
    }
    Scanned { json, args: kept }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(args: &[&str]) -> (bool, Vec<String>) {
        let scanned = split_json_flag(args.iter().map(|s| s.to_string()).collect());
        (scanned.json, scanned.args)
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn upstream_table() {
        assert_eq!(scan(&["--json", "ls"]), (true, strings(&["ls"])));
        assert_eq!(scan(&["ls", "--json"]), (true, strings(&["ls"])));
        assert_eq!(
            scan(&["--json", "exec", "work", "ls", "-la"]),
            (true, strings(&["exec", "work", "ls", "-la"]))
        );
        assert_eq!(
            scan(&["exec", "--json", "work", "ls", "-la"]),
            (true, strings(&["exec", "work", "ls", "-la"]))
        );
        assert_eq!(
            scan(&["exec", "work", "ls", "--json"]),
            (false, strings(&["exec", "work", "ls", "--json"]))
        );
        assert_eq!(
            scan(&["exec", "work", "ls", "-la", "--json", "/tmp"]),
            (
                false,
                strings(&["exec", "work", "ls", "-la", "--json", "/tmp"])
            )
        );
    }

    #[test]
    fn exec_after_global_flags_keeps_the_guests_json() {
        assert_eq!(
            scan(&["-q", "--json", "exec", "vm", "cmd", "--json"]),
            (true, strings(&["-q", "exec", "vm", "cmd", "--json"]))
        );
        assert_eq!(
            scan(&["--json", "exec", "work", "echo", "--json"]),
            (true, strings(&["exec", "work", "echo", "--json"]))
        );
        assert_eq!(
            scan(&["exec", "-q", "--json", "w", "x"]),
            (true, strings(&["exec", "-q", "w", "x"]))
        );
        assert_eq!(
            scan(&["exec", "--timeout", "5s", "--json", "w", "x", "--json"]),
            (
                true,
                strings(&["exec", "--timeout", "5s", "w", "x", "--json"])
            )
        );
    }

    #[test]
    fn bare_json_and_flags_everywhere() {
        assert_eq!(scan(&["--json"]), (true, vec![]));
        assert_eq!(
            scan(&["rm", "--json", "w", "-y", "--json"]),
            (true, strings(&["rm", "w", "-y"]))
        );
    }

    proptest::proptest! {
        #[test]
        fn guest_argv_after_the_vm_name_is_untouched(
            prefix in proptest::collection::vec(proptest::sample::select(vec!["-q", "--json", "--quiet"]), 0..4),
            guest in proptest::collection::vec("(--json|-q|[a-z -]{0,6})", 1..6),
        ) {
            let mut args: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
            args.push("exec".into());
            args.push("vm".into());
            args.extend(guest.iter().cloned());
            let scanned = split_json_flag(args);
            let at = scanned.args.iter().position(|a| a == "vm").unwrap();
            proptest::prop_assert_eq!(&scanned.args[at + 1..], guest.as_slice());
            proptest::prop_assert_eq!(scanned.json, prefix.contains(&"--json"));
        }
    }
}
