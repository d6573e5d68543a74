//! Owns the leak sweep: read-only commands over fixtures with a planted console password,
//! so the oracle's LEAK rules see every command's payload; plus stoat's own log and HOME.

use super::def::{scenario, CheckDef, Tier};
use super::helpers::with_work;
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::Case;
use crate::sandbox::VmFixture;
use crate::spec::Source;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "LEAK.sweep",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#absent",
        quote: "These are pinned by a test that runs the real CLI and greps its whole output",
        title: "ls, get, forward, logs, ssh-command, doctor, snapshot over planted fixtures all answer (the oracle greps every payload)",
        tags: &["leaks"],
        ..scenario(sweep)
    },
    CheckDef {
        id: "LEAK.password-not-logged",
        level: Should,
        tier: Tier::Pure,
        spec: "design#decisions",
        quote: "a console password is never written anywhere, stoat's own log included",
        title: "after the sweep, nothing under <root>/logs holds the console password",
        tags: &["leaks", "logs"],
        source: Source::Design,
        ..scenario(password_not_logged)
    },
    CheckDef {
        id: "SANDBOX.home-untouched",
        level: Should,
        tier: Tier::Pure,
        spec: "design#decisions",
        quote: "`$STOAT_HOME`, else `$HOME/.stoat`",
        title: "with STOAT_HOME set, commands write nothing under HOME",
        tags: &["sandbox"],
        source: Source::Design,
        ..scenario(home_untouched)
    },
];

/// Runs the read-only sweep; `require_ok` makes a failed command a finding of this check.
fn sweep_commands(
    case: &mut Case<'_>,
    sandbox: &crate::sandbox::Sandbox,
    require_ok: bool,
) -> Result<(), HarnessError> {
    let commands: &[&[&str]] = &[
        &["ls"],
        &["get", "work"],
        &["get", "disky"],
        &["forward", "work"],
        &["logs"],
        &["logs", "work"],
        &["ssh-command", "work"],
        &["doctor"],
        &["images"],
        &["prune"],
    ];
    for args in commands {
        let ran = case.json(sandbox, args)?;
        if require_ok {
            case.expect_ok(&ran);
        }
    }
    Ok(())
}

/// `work` (live) and `disky` (disk, with a forward), both with the planted password.
fn planted(case: &Case<'_>) -> Result<crate::sandbox::Sandbox, HarnessError> {
    let sandbox = with_work(case)?;
    sandbox.write_vm(&VmFixture::disk("disky").sshport(2201).forward(8080, 80))?;
    Ok(sandbox)
}

fn sweep(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = planted(case)?;
    sweep_commands(case, &sandbox, true)
}

fn password_not_logged(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = planted(case)?;
    sweep_commands(case, &sandbox, false)?;
    let mut files = Vec::new();
    collect(&sandbox.data.join("logs"), &mut files);
    for file in files {
        let text = std::fs::read(&file).unwrap_or_default();
        if String::from_utf8_lossy(&text).contains(&sandbox.console_password) {
            case.fail(
                file.display().to_string(),
                "stoat's log holds the console password",
            );
        }
    }
    Ok(())
}

fn home_untouched(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = planted(case)?;
    if sandbox.data_root_var().is_empty() {
        case.skip("the SUT profile names no data-root variable: its data root is under HOME");
        return Ok(());
    }
    sweep_commands(case, &sandbox, false)?;
    let entries = sandbox.home_entries();
    case.ensure(
        entries.is_empty(),
        "HOME",
        format!("files appeared under HOME: {entries:?}"),
    );
    Ok(())
}

fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
