//! The CLI adapter of `cp` (`stoat_core::app::runtime::cp_transfer` and `cp_stream`): the
//! positional form `cp [-r] SRC... DST` (every source on one side, DST on the other), the
//! flag form (`--vm --direction --local --remote`), and `-` for stdin or stdout
//! (docs/decisions/runtime.md "cp").

use stoat_core::app::runtime::{self, StreamRequest, Transfer, REACH_WAIT};
use stoat_core::{Error, Result};
use stoat_wire::dto::{CopyDirection, CpData};

use crate::ctx::Ctx;
use crate::grammar::CpArgs;
use crate::output::Reply;

/// The local operand that stands for stdin (a source) or stdout (the destination).
const STDIO: &str = "-";

/// What a parsed `cp` does.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Files and trees through scp.
    Files(Transfer),
    /// One guest file's bytes from stdin or to stdout.
    Stream(StreamRequest),
}

/// `cp [-r] SRC... DST`, or the flag form.
pub fn cp(ctx: &Ctx, args: &CpArgs) -> Result<Reply> {
    let reach_wait = args.timeout.unwrap_or(REACH_WAIT);
    match parse(args)? {
        Plan::Stream(request) => {
            runtime::cp_stream(ctx, &request, reach_wait)?;
            // The guest's bytes were the whole of stdout; only a copy into the guest says so.
            let human = match request.direction {
                CopyDirection::ToGuest => {
                    format!("copied stdin to {}:{}", request.vm, request.remote)
                }
                CopyDirection::FromGuest => String::new(),
            };
            Ok(Reply::new(&serde_json::json!({}), human))
        }
        Plan::Files(request) => {
            let cwd =
                std::env::current_dir().map_err(|e| Error::io("read the current directory", e))?;
            let copies = runtime::cp_transfer(ctx, &cwd, &request, reach_wait)?;
            let human = copies
                .iter()
                .map(copied_line)
                .collect::<Vec<_>>()
                .join("\n");
            // Several records never reach the wire: `refused_under_json` stops them first.
            Ok(match copies.as_slice() {
                [one] => Reply::new(one, human),
                many => Reply::new(&many, human),
            })
        }
    }
}

/// One line per copied source, as `cp -v` prints them.
fn copied_line(data: &CpData) -> String {
    match data.direction {
        CopyDirection::ToGuest => format!("copied {} to {}:{}", data.local, data.vm, data.remote),
        CopyDirection::FromGuest => format!("copied {}:{} to {}", data.vm, data.remote, data.local),
    }
}

/// Why this `cp` cannot answer in JSON lines, checked before it runs: `-` puts file bytes on
/// stdout (or takes them from stdin) where only JSON lines may be, and the contract's cp
/// result names one absolute local path and one guest path, so it cannot describe several
/// sources.
pub fn refused_under_json(args: &CpArgs) -> Option<Error> {
    let stdio = args.paths.iter().any(|path| path == STDIO) || args.local.as_deref() == Some(STDIO);
    if stdio {
        return Some(Error::Usage(
            "cp - streams a file through stdin or stdout, which carry only JSON lines under --json, and cp's JSON answer names an absolute local path; run it without --json, or copy to a file".into(),
        ));
    }
    (args.paths.len() > 2).then(|| {
        Error::Usage(
            "cp --json copies one source: its answer names one local and one guest path; run one cp per source (-r copies a whole directory)".into(),
        )
    })
}

/// Exactly one form: positional (one side `vm:path`) or all four flags.
fn parse(args: &CpArgs) -> Result<Plan> {
    let any_flag = args.vm.is_some()
        || args.direction.is_some()
        || args.local.is_some()
        || args.remote.is_some();
    match (!args.paths.is_empty(), any_flag) {
        (true, true) => Err(Error::Usage(
            "cp: give either `<src>... <dst>` or --vm/--direction/--local/--remote, not both"
                .into(),
        )),
        (false, true) => parse_flags(args),
        (true, false) => parse_positional(&args.paths, args.recursive),
        (false, false) => Err(Error::Usage(
            "cp needs `<vm>:<remote>... <local>` or `<local>... <vm>:<remote>`".into(),
        )),
    }
}

fn parse_flags(args: &CpArgs) -> Result<Plan> {
    let (Some(vm), Some(direction), Some(local), Some(remote)) =
        (&args.vm, &args.direction, &args.local, &args.remote)
    else {
        return Err(Error::Usage(
            "cp: the flag form needs all of --vm, --direction, --local and --remote".into(),
        ));
    };
    let direction = match direction.as_str() {
        "to" => CopyDirection::ToGuest,
        "from" => CopyDirection::FromGuest,
        other => {
            return Err(Error::Usage(format!(
                "cp: --direction must be to or from, not {other:?}"
            )))
        }
    };
    let (source, destination) = match direction {
        CopyDirection::ToGuest => (local, remote),
        CopyDirection::FromGuest => (remote, local),
    };
    plan(
        vm.clone(),
        direction,
        vec![source.clone()],
        destination.clone(),
        args.recursive,
    )
}

/// One operand: a guest path `<vm>:<path>`, or a local path.
enum Operand<'a> {
    Guest { vm: &'a str, path: &'a str },
    Local(&'a str),
}

fn operand(text: &str) -> Result<Operand<'_>> {
    match text.split_once(':') {
        Some(("", _)) => Err(Error::Usage(
            "cp: `:<path>` names no VM; use `<vm>:<path>`".into(),
        )),
        Some((vm, path)) => Ok(Operand::Guest { vm, path }),
        None => Ok(Operand::Local(text)),
    }
}

fn parse_positional(paths: &[String], recursive: bool) -> Result<Plan> {
    let Some((destination, sources)) = paths.split_last().filter(|(_, s)| !s.is_empty()) else {
        return Err(Error::Usage("cp needs a source and a destination".into()));
    };
    let sources = sources
        .iter()
        .map(|s| operand(s))
        .collect::<Result<Vec<_>>>()?;
    let guest_sources: Vec<(&str, &str)> = sources
        .iter()
        .filter_map(|s| match s {
            Operand::Guest { vm, path } => Some((*vm, *path)),
            Operand::Local(_) => None,
        })
        .collect();
    let local_sources: Vec<&str> = sources
        .iter()
        .filter_map(|s| match s {
            Operand::Local(path) => Some(*path),
            Operand::Guest { .. } => None,
        })
        .collect();
    if !guest_sources.is_empty() && !local_sources.is_empty() {
        return Err(Error::Usage(
            "cp: the sources mix host paths and `<vm>:<path>`; copy from one side at a time".into(),
        ));
    }
    match (operand(destination)?, guest_sources.first()) {
        (Operand::Guest { .. }, Some(_)) => Err(Error::Usage(
            "cp: only one side may name a VM (`<vm>:<path>`)".into(),
        )),
        (Operand::Local(_), None) => Err(Error::Usage(
            "cp: one side must name a VM as `<vm>:<path>`".into(),
        )),
        (Operand::Guest { vm, path }, None) => plan(
            vm.to_owned(),
            CopyDirection::ToGuest,
            local_sources.iter().map(|s| (*s).to_owned()).collect(),
            path.to_owned(),
            recursive,
        ),
        (Operand::Local(local), Some((vm, _))) => {
            if let Some((other, _)) = guest_sources.iter().find(|(other, _)| other != vm) {
                return Err(Error::Usage(format!(
                    "cp: the sources name two VMs ({vm} and {other}); copy from one VM at a time"
                )));
            }
            plan(
                (*vm).to_owned(),
                CopyDirection::FromGuest,
                guest_sources.iter().map(|(_, p)| (*p).to_owned()).collect(),
                local.to_owned(),
                recursive,
            )
        }
    }
}

/// The plan for a parsed request: `-` on the local side streams one file; anything else
/// goes through scp.
fn plan(
    vm: String,
    direction: CopyDirection,
    sources: Vec<String>,
    destination: String,
    recursive: bool,
) -> Result<Plan> {
    let local_is_stdio = match direction {
        CopyDirection::ToGuest => sources.iter().any(|s| s == STDIO),
        CopyDirection::FromGuest => destination == STDIO,
    };
    if !local_is_stdio {
        return Ok(Plan::Files(Transfer {
            vm,
            direction,
            sources,
            destination,
            recursive,
        }));
    }
    if recursive {
        return Err(Error::Usage(
            "cp: - streams one file's bytes; -r copies trees, so give a path instead of -".into(),
        ));
    }
    let remote = match (direction, sources.as_slice()) {
        (CopyDirection::ToGuest, [_]) => destination,
        (CopyDirection::FromGuest, [source]) => source.clone(),
        _ => {
            return Err(Error::Usage(
                "cp: - streams one file; give it alone on its side, with one guest path".into(),
            ))
        }
    };
    Ok(Plan::Stream(StreamRequest {
        vm,
        direction,
        remote,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positional(words: &[&str], recursive: bool) -> Result<Plan> {
        let paths: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        parse_positional(&paths, recursive)
    }

    fn files(vm: &str, direction: CopyDirection, sources: &[&str], destination: &str) -> Plan {
        Plan::Files(Transfer {
            vm: vm.into(),
            direction,
            sources: sources.iter().map(|s| (*s).to_owned()).collect(),
            destination: destination.into(),
            recursive: false,
        })
    }

    #[test]
    fn every_source_on_one_side() {
        assert_eq!(
            positional(&["a", "b", "w:/tmp/"], false).unwrap(),
            files("w", CopyDirection::ToGuest, &["a", "b"], "/tmp/")
        );
        assert_eq!(
            positional(&["w:/a", "w:b", "out"], false).unwrap(),
            files("w", CopyDirection::FromGuest, &["/a", "b"], "out")
        );
        for bad in [
            &["a", "w:/b", "w:/c"][..],
            &["w:/a", "v:/b", "out"],
            &["w:/a", "b", "out"],
            &["a", "b", "c"],
            &["w:/a", "w:/b"],
            &[":a", "b"],
            &["a"],
        ] {
            let error = positional(bad, false).unwrap_err();
            assert!(matches!(error, Error::Usage(_)), "{bad:?}: {error:?}");
        }
    }

    #[test]
    fn a_dash_streams_one_file() {
        let stream = |direction, remote: &str| {
            Plan::Stream(StreamRequest {
                vm: "w".into(),
                direction,
                remote: remote.into(),
            })
        };
        assert_eq!(
            positional(&["w:/etc/hostname", "-"], false).unwrap(),
            stream(CopyDirection::FromGuest, "/etc/hostname")
        );
        assert_eq!(
            positional(&["-", "w:/tmp/f"], false).unwrap(),
            stream(CopyDirection::ToGuest, "/tmp/f")
        );
        // `./-` is a file named -.
        assert_eq!(
            positional(&["./-", "w:/tmp/f"], false).unwrap(),
            files("w", CopyDirection::ToGuest, &["./-"], "/tmp/f")
        );
        for bad in [&["-", "a", "w:/t"][..], &["w:/a", "w:/b", "-"], &["-", "-"]] {
            let error = positional(bad, false).unwrap_err();
            assert!(matches!(error, Error::Usage(_)), "{bad:?}: {error:?}");
        }
        assert!(matches!(
            positional(&["w:/a", "-"], true),
            Err(Error::Usage(_))
        ));
    }
}
