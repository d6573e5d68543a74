//! Owns the checks of stoat's front door: version, help, usage errors and where `--json`
//! may appear (outside exec).

use serde_json::Value;

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{with_work, Rng};
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::{Case, Inv};
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "SMOKE.version",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "version {\"version\":\"1.2.3\",\"contract\":3}",
        title: "the smoke stage: `--json version` answers ok with a version string and an integer contract (run first; only an answer in no known edition stops the run)",
        tags: &["smoke", "version"],
        ..scenario(version_answers)
    },
    CheckDef {
        id: "VERSION.contract-3",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "version {\"version\":\"1.2.3\",\"contract\":3}",
        title: "`version` answers {version: string, contract: 3}",
        tags: &["version"],
        editions: Editions::V3 { change: "contract 2's version names its own contract number" },
        ..scenario(version_contract)
    },
    CheckDef {
        id: "HELP.usage",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "help {\"usage\":\"...\"}",
        title: "`help` answers {usage: non-empty string}",
        tags: &["help"],
        ..scenario(help_usage)
    },
    CheckDef {
        id: "HELP.mentions-commands",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "help {\"usage\":\"...\"}",
        title: "the usage text names every command of the per-command table",
        tags: &["help"],
        ..scenario(help_mentions_commands)
    },
    CheckDef {
        id: "USAGE.unknown-command",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "usage a bad flag, a missing argument, an unknown subcommand",
        title: "an unknown subcommand is a usage error (exit 2) answered in the contract",
        tags: &["usage"],
        ..scenario(usage_unknown_command)
    },
    CheckDef {
        id: "USAGE.unknown-flag",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "usage a bad flag, a missing argument, an unknown subcommand",
        title: "an unknown flag is a usage error (exit 2)",
        tags: &["usage"],
        ..scenario(usage_unknown_flag)
    },
    CheckDef {
        id: "USAGE.missing-argument",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "usage a bad flag, a missing argument, an unknown subcommand",
        title: "a missing VM argument is a usage error (exit 2)",
        tags: &["usage"],
        ..scenario(usage_missing_argument)
    },
    CheckDef {
        id: "USAGE.ssh-refused",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#ssh-refused",
        quote: "stoat --json ssh <vm> is a usage error.",
        title: "`ssh <vm>` under --json is a usage error (exit 2), wherever --json stands",
        tags: &["usage", "ssh"],
        ..scenario(usage_ssh_refused)
    },
    CheckDef {
        id: "USAGE.bare-json",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#flag-position",
        quote: "--json is scanned out of argv before parsing, so a usage error can still answer in the contract.",
        title: "`stoat --json` alone answers a usage error in the contract",
        tags: &["usage", "argv"],
        ..scenario(usage_bare_json)
    },
    CheckDef {
        id: "ARGV.json-anywhere",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#flag-position",
        quote: "It is recognized anywhere EXCEPT after exec's VM name",
        title: "--json before the command, after it, after its argument and between flags all select JSON mode",
        tags: &["argv"],
        ..scenario(json_anywhere)
    },
    CheckDef {
        id: "ARGV.json-generated",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#flag-position",
        quote: "It is recognized anywhere EXCEPT after exec's VM name",
        title: "--json (and -q) at seeded random positions of several command lines still answer in the contract",
        tags: &["argv", "generated"],
        ..scenario(json_generated)
    },
    CheckDef {
        id: "ARGV.quiet-noop",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#json-implies",
        quote: "-q becomes meaningless and is accepted as a no-op.",
        title: "-q before or after the command changes nothing under --json",
        tags: &["argv"],
        ..scenario(quiet_noop)
    },
];

fn version_contract(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["version"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    case.ensure(
        data.get("contract").and_then(Value::as_u64) == Some(3),
        "/data/contract",
        format!(
            "contract is {}, expected the integer 3",
            data.get("contract").unwrap_or(&Value::Null)
        ),
    );
    case.ensure(
        data.get("version")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty()),
        "/data/version",
        "version must be a non-empty string",
    );
    Ok(())
}

/// The smoke check: an answer in the judged edition (its envelope is the oracle's job), with
/// the two fields every edition gives `version`; the number itself is VERSION.contract-3's.
fn version_answers(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["version"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    case.ensure(
        data.get("contract").is_some_and(Value::is_u64),
        "/data/contract",
        format!(
            "contract must be an integer, got {}",
            data.get("contract").unwrap_or(&Value::Null)
        ),
    );
    case.ensure(
        data.get("version")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty()),
        "/data/version",
        "version must be a non-empty string",
    );
    Ok(())
}

fn help_usage(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["help"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("usage")
                .and_then(Value::as_str)
                .is_some_and(|u| !u.trim().is_empty()),
            "/data/usage",
            "usage must be a non-empty string",
        );
    }
    Ok(())
}

const COMMANDS: &[&str] = &[
    "ls",
    "get",
    "create",
    "update",
    "up",
    "down",
    "wait",
    "rm",
    "clone",
    "exec",
    "ssh-command",
    "cp",
    "forward",
    "images",
    "pull",
    "snapshot",
    "prune",
    "apply",
    "recipes",
    "check-recipes",
    "recipe",
    "logs",
    "doctor",
    "version",
];

fn help_mentions_commands(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["help"])?;
    let usage = case
        .expect_ok(&ran)
        .and_then(|d| d.get("usage"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let missing: Vec<&str> = COMMANDS
        .iter()
        .copied()
        .filter(|c| {
            !usage
                .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-'))
                .any(|w| w == *c)
        })
        .collect();
    case.ensure(
        missing.is_empty(),
        "/data/usage",
        format!("usage does not mention: {}", missing.join(", ")),
    );
    Ok(())
}

/// Runs `args` and expects a usage error with exit 2.
fn expect_usage(
    case: &mut Case<'_>,
    sandbox: &crate::sandbox::Sandbox,
    inv: Inv,
) -> Result<(), HarnessError> {
    let ran = case.run(sandbox, inv)?;
    if case.expect_error(&ran, "usage") {
        case.expect_exit(&ran, 2);
    }
    Ok(())
}

fn usage_unknown_command(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    expect_usage(case, &sandbox, Inv::json(&["frobnicate"]))?;
    expect_usage(case, &sandbox, Inv::json_raw(&["frobnicate", "--json"]))
}

fn usage_unknown_flag(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    expect_usage(case, &sandbox, Inv::json(&["ls", "--frobnicate"]).cmd(None))
}

fn usage_missing_argument(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    expect_usage(case, &sandbox, Inv::json(&["get"]).cmd(None))?;
    expect_usage(case, &sandbox, Inv::json(&["rm"]).cmd(None).stdin(b""))
}

fn usage_ssh_refused(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    expect_usage(case, &sandbox, Inv::json(&["ssh", "work"]).cmd(None))?;
    expect_usage(
        case,
        &sandbox,
        Inv::json_raw(&["ssh", "work", "--json"]).cmd(None),
    )
}

fn usage_bare_json(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    expect_usage(case, &sandbox, Inv::json_raw(&["--json"]).cmd(None))
}

fn json_anywhere(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    for args in [
        &["--json", "ls"][..],
        &["ls", "--json"],
        &["--json", "get", "work"],
        &["get", "--json", "work"],
        &["get", "work", "--json"],
        &["logs", "work", "--json", "-n", "5"],
    ] {
        let ran = case.run(&sandbox, Inv::json_raw(args))?;
        case.expect_ok(&ran);
    }
    Ok(())
}

fn json_generated(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let bases: &[&[&str]] = &[
        &["ls"],
        &["get", "work"],
        &["forward", "work"],
        &["logs", "work", "-n", "3"],
        &["wait", "work", "--until", "stopped"],
    ];
    let mut rng = Rng::new(case.seed(), 0x4a53_4f4e);
    for _ in 0..8 {
        let base = bases[rng.below(bases.len())];
        let mut args: Vec<&str> = base.to_vec();
        args.insert(rng.below(args.len() + 1), "--json");
        if rng.below(2) == 0 {
            args.insert(rng.below(args.len() + 1), "-q");
        }
        // -q must not land between a flag and its value.
        let flag_positions: Vec<usize> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| **a == "-n" || **a == "--until")
            .map(|(i, _)| i)
            .collect();
        if flag_positions
            .iter()
            .any(|i| args.get(i + 1).is_some_and(|next| next.starts_with('-')))
        {
            continue;
        }
        let ran = case.run(&sandbox, Inv::json_raw(&args))?;
        case.expect_ok(&ran);
    }
    Ok(())
}

fn quiet_noop(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let plain = case.json(&sandbox, &["ls"])?;
    let Some(reference) = case.expect_ok(&plain).cloned() else {
        return Ok(());
    };
    for args in [&["-q", "--json", "ls"][..], &["--json", "ls", "-q"]] {
        let ran = case.run(&sandbox, Inv::json_raw(args))?;
        if let Some(data) = case.expect_ok(&ran).cloned() {
            case.ensure(
                data == reference,
                "/data",
                format!(
                    "`{}` answered different data than `--json ls`",
                    args.join(" ")
                ),
            );
        }
    }
    Ok(())
}
