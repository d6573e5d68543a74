//! The CLI adapters of the host-side operations: ssh-command, ssh, logs, doctor, prune,
//! snapshot, capabilities (`stoat_core::app::host`; json-v3#per-command-data). `ssh` replaces
//! the process with the session core prepared.

use std::io::Write;
use std::os::unix::process::CommandExt;

use stoat_core::app::host::{self as app_host, PruneOptions, SnapshotAction};
use stoat_core::{Error, Result};
use stoat_wire::dto::{
    CapabilityEntry, CapabilityReport, DoctorData, LogsData, PruneData, SnapshotListData,
};

use crate::ctx::Ctx;
use crate::grammar::{LogsArgs, PruneArgs, SnapshotArgs};
use crate::human;
use crate::output::Reply;
use crate::version::VERSION;

/// `ssh-command <vm>`: the argv to run yourself. It does not check that the VM runs.
pub fn ssh_command(ctx: &Ctx, name: &str) -> Result<Reply> {
    let data = app_host::ssh_command(ctx, name)?;
    let human: Vec<String> = data
        .argv
        .iter()
        .map(|word| app_host::shell_word(word))
        .collect();
    Ok(Reply::new(&data, human.join(" ")))
}

/// `ssh <vm> [-- CMD...]` and `exec -t` (human mode only): replaces stoat with ssh, so the
/// guest command's exit status is stoat's. Returns only on failure.
pub fn ssh(
    ctx: &Ctx,
    name: &str,
    command: &[std::ffi::OsString],
    force_tty: bool,
) -> Result<Reply> {
    use std::io::IsTerminal;
    let request = app_host::SshRequest {
        command,
        force_tty,
        stdin_is_tty: std::io::stdin().is_terminal(),
    };
    let session = app_host::ssh(ctx, name, &request)?;
    let mut command = std::process::Command::new(session.program);
    command.arg0("ssh").args(session.args);
    if let Some(dir) = session.cwd {
        command.current_dir(dir);
    }
    let err = command.exec();
    Err(Error::io("run ssh", err))
}

/// `logs [<vm>] [-n N] [--which console|apply] [-f]`.
pub fn logs(ctx: &Ctx, args: &LogsArgs) -> Result<Reply> {
    if args.follow {
        return logs_follow(ctx, args);
    }
    let data = app_host::logs(ctx, log_source(args)?, args.lines)?;
    // The guest wrote these lines: a terminal escape in them is shown, not obeyed.
    let human = data
        .lines
        .iter()
        .map(|line| human::visible_line(line))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Reply::new(&data, human))
}

/// The log `logs` names: a VM's (`--which`: `unknown_log` unless console or apply, asked
/// before whether the VM exists), or stoat's own, where `--which` has no say.
fn log_source(args: &LogsArgs) -> Result<app_host::LogSource<'_>> {
    Ok(match args.vm.as_deref() {
        Some(name) => app_host::LogSource::Vm {
            name,
            which: app_host::Which::parse(&args.which)?,
        },
        None => app_host::LogSource::Stoat,
    })
}

/// `logs -f` (refused under --json before dispatch): each line reaches stdout, flushed, as
/// it is written. Every end is a normal one (exit 0): the VM stopped, Ctrl-C, or the reader
/// closed the pipe; the answer has nothing left to print.
fn logs_follow(ctx: &Ctx, args: &LogsArgs) -> Result<Reply> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut print = |line: &str| -> std::io::Result<()> {
        writeln!(out, "{}", human::visible_line(line))?;
        out.flush()
    };
    app_host::logs_follow(ctx, log_source(args)?, args.lines, &mut print)?;
    let data = LogsData {
        vm: args.vm.clone(),
        which: args.vm.as_ref().map(|_| args.which.clone()),
        lines: Vec::new(),
    };
    Ok(Reply::new(&data, ""))
}

/// `doctor`: under --json exit 0 even when unhealthy; in human mode exit 1 then.
pub fn doctor(ctx: &Ctx) -> Result<Reply> {
    let data = app_host::doctor(ctx)?;
    let human = ctx.prose(|| Ok(doctor_human(&data, &app_host::doctor_facts(ctx))))?;
    let exit = if data.healthy { 0 } else { 1 };
    Ok(Reply::new(&data, human).with_human_exit(exit))
}

/// Every check with its status (ok, FAIL, or no for an optional one), then how to fix what
/// failed, the accelerator `up` will use,
/// QEMU's version, the way to software emulation when KVM cannot run guests, and the verdict.
fn doctor_human(data: &DoctorData, facts: &app_host::DoctorFacts) -> String {
    let rows: Vec<Vec<String>> = data
        .checks
        .iter()
        .map(|check| {
            // An optional check that is not met reads "no": it does not make the host unhealthy.
            let status = match (check.ok, check.optional) {
                (true, _) => "ok",
                (false, true) => "no",
                (false, false) => "FAIL",
            };
            vec![status.into(), check.name.clone(), check.detail.clone()]
        })
        .collect();
    let mut out = human::table(&["STATUS", "CHECK", "DETAIL"], &rows);
    let fixes: Vec<String> = data
        .checks
        .iter()
        .filter(|c| !c.ok && !c.fix.is_empty())
        .map(|c| format!("  {}: {}\n", c.name, c.fix.join(" ")))
        .collect();
    if !fixes.is_empty() {
        out.push_str("\nto fix:\n");
        out.extend(fixes);
    }
    out.push('\n');
    out.push_str(&match &facts.accel {
        Ok("tcg") => "accelerator: tcg (software emulation; STOAT_ACCEL=tcg)\n".to_owned(),
        Ok(accel) => format!("accelerator: {accel} (STOAT_ACCEL=tcg selects software emulation)\n"),
        Err(refused) => format!("accelerator: none: {refused}\n"),
    });
    out.push_str(&format!(
        "qemu: {}\n",
        facts.qemu_version.as_deref().unwrap_or("version unknown")
    ));
    let kvm_failed = data
        .checks
        .iter()
        .any(|c| c.name == "/dev/kvm" && !c.ok && !c.optional);
    if kvm_failed && facts.accel == Ok("kvm") {
        out.push_str(
            "hint: KVM cannot run guests on this host; `export STOAT_ACCEL=tcg` makes stoat use software emulation (slower, works everywhere)\n",
        );
    }
    let failed: Vec<&str> = data
        .checks
        .iter()
        .filter(|c| !c.ok && !c.optional)
        .map(|c| c.name.as_str())
        .collect();
    if failed.is_empty() {
        out.push_str("healthy: this host can run VMs\n");
    } else {
        out.push_str(&format!("not healthy: {} failed\n", failed.join(", ")));
    }
    out
}

/// `prune [--apply] [--broken] [--images]`.
pub fn prune(ctx: &Ctx, args: &PruneArgs) -> Result<Reply> {
    let data = app_host::prune(
        ctx,
        PruneOptions {
            apply: args.apply,
            broken: args.broken,
            images: args.images,
        },
    )?;
    let human = prune_human(&data);
    Ok(Reply::new(&data, human))
}

fn prune_human(data: &PruneData) -> String {
    if data.items.is_empty() {
        return "nothing to prune".into();
    }
    let mut out: String = data
        .items
        .iter()
        .map(|item| {
            let prefix = item.class.replace('_', " ");
            format!("{prefix}: {}\n", item.path)
        })
        .collect();
    if data.dry_run {
        out.push_str("\n(dry run: nothing was deleted; re-run with --apply)\n");
    }
    out
}

/// `snapshot <vm> [tag] [--restore|--delete]`.
pub fn snapshot(ctx: &Ctx, args: &SnapshotArgs) -> Result<Reply> {
    if !args.extra.is_empty() {
        return Err(Error::Usage(snapshot_words_misplaced(args)));
    }
    let action = match (args.restore, args.delete, args.force) {
        (true, _, _) => Some(SnapshotAction::Restore),
        (_, true, _) => Some(SnapshotAction::Delete),
        (_, _, true) => Some(SnapshotAction::Replace),
        _ => None,
    };
    ctx.root()?;
    match (&args.tag, action) {
        (None, None) => {
            let data = app_host::snapshot_list(ctx, &args.vm)?;
            let human = snapshot_list_human(&data);
            Ok(Reply::new(&data, human))
        }
        (None, Some(action)) => {
            let flag = match action {
                SnapshotAction::Replace => "force",
                other => other.as_str(),
            };
            Err(Error::Usage(format!(
                "snapshot --{flag} needs a tag: stoat snapshot {} <tag> --{flag}",
                args.vm
            )))
        }
        (Some(tag), action) => {
            let action = action.unwrap_or(SnapshotAction::Save);
            let data = app_host::snapshot_act(ctx, &args.vm, tag, action)?;
            let human = match action {
                SnapshotAction::Save | SnapshotAction::Replace => {
                    let saved = format!("saved snapshot {} of {}", data.tag, data.vm);
                    // `snapshot w list`, as Vagrant spells a listing: a tag it is, and the
                    // listing is one word away.
                    if matches!(data.tag.as_str(), "list" | "ls") {
                        format!(
                            "{saved} (a tag; to list the snapshots: stoat snapshot {})",
                            data.vm
                        )
                    } else {
                        saved
                    }
                }
                SnapshotAction::Restore => {
                    format!("restored {} to snapshot {}", data.vm, data.tag)
                }
                SnapshotAction::Delete => {
                    format!("deleted snapshot {} of {}", data.tag, data.vm)
                }
            };
            Ok(Reply::new(&data, human))
        }
    }
}

/// What another tool means by a word standing where `snapshot` takes a VM or a tag
/// (`vagrant snapshot save VM TAG`, `limactl snapshot create VM --tag TAG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnapshotWord {
    Save,
    Restore,
    Delete,
    List,
}

/// The action `word` names in other tools' snapshot commands, if any.
pub(crate) fn snapshot_word(word: &str) -> Option<SnapshotWord> {
    Some(match word {
        "save" | "create" | "take" => SnapshotWord::Save,
        "restore" | "apply" | "revert" | "rollback" => SnapshotWord::Restore,
        "delete" | "rm" | "remove" => SnapshotWord::Delete,
        "list" | "ls" => SnapshotWord::List,
        _ => return None,
    })
}

/// The usage error for more words than VM and tag: stoat's form for the action an action
/// word among them names, else the grammar.
fn snapshot_words_misplaced(args: &SnapshotArgs) -> String {
    let mut words = vec![args.vm.as_str()];
    words.extend(args.tag.as_deref());
    words.extend(args.extra.iter().map(String::as_str));
    let found = words
        .iter()
        .enumerate()
        .find_map(|(at, word)| Some((at, snapshot_word(word)?)));
    let (Some((at, action)), 3) = (found, words.len()) else {
        return "snapshot takes a VM and at most one tag: `stoat snapshot VM [TAG] [--restore|--delete|--force]`".into();
    };
    let rest: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, w)| *w)
        .collect();
    let (vm, tag) = (rest[0], rest[1]);
    let form = match action {
        SnapshotWord::List => format!("`stoat snapshot {vm}` lists the snapshots"),
        SnapshotWord::Save => format!("`stoat snapshot {vm} {tag}`"),
        SnapshotWord::Restore => format!("`stoat snapshot {vm} {tag} --restore`"),
        SnapshotWord::Delete => format!("`stoat snapshot {vm} {tag} --delete`"),
    };
    format!(
        "snapshot takes the action as a flag, not the word {:?}: {form}",
        words[at]
    )
}

fn snapshot_list_human(data: &SnapshotListData) -> String {
    if data.snapshots.is_empty() {
        return format!("{} has no snapshots", data.vm);
    }
    let rows: Vec<Vec<String>> = data
        .snapshots
        .iter()
        .map(|s| {
            vec![
                s.tag.clone(),
                s.size_display.clone(),
                s.created_display.clone(),
                if s.vm_state { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    human::table(&["TAG", "SIZE", "CREATED", "VM STATE"], &rows)
}

/// `capabilities [VM]`: reads, never starts or touches a VM.
pub fn capabilities(ctx: &Ctx, target: Option<&str>) -> Result<Reply> {
    let cwd = std::env::current_dir().ok();
    let report = app_host::capabilities(ctx, cwd.as_deref(), target, VERSION)?;
    let human = capabilities_human(&report);
    Ok(Reply::new(&report, human))
}

fn capabilities_human(report: &CapabilityReport) -> String {
    let mut out = format!(
        "stoat {} on {}/{} (project: {})\n",
        report.stoat_version, report.host.os, report.host.arch, report.host.project_state
    );
    if let Some(target) = &report.target {
        out.push_str(&format!(
            "target {}: mode {}, agent_access {}\n",
            target.name, target.mode, target.agent_access
        ));
    }
    let row = |entry: &CapabilityEntry| {
        let why: Vec<&str> = entry
            .limits
            .iter()
            .chain(entry.reason.iter())
            .map(|c| c.code.as_str())
            .collect();
        vec![entry.name.clone(), entry.status.clone(), why.join(", ")]
    };
    let rows: Vec<Vec<String>> = report
        .profiles
        .iter()
        .chain(&report.capabilities)
        .chain(&report.unavailable)
        .map(row)
        .collect();
    out.push_str(&human::table(&["NAME", "STATUS", "WHY"], &rows));
    out
}
