//! Owns the `apply` checks over a recipe the suite writes into the data root: `--dry-run`
//! (a plan, no events, nothing run) and a real apply through the fake `ssh` in local-exec
//! mode (the recipe body runs under the local `/bin/sh`, as sshd would run it), which must
//! stream a `stage` event at the recipe boundary and `log` events for the recipe's output
//! (contract "Streaming" and the apply rows of "Per-command data").

use serde_json::{json, Value};

use super::helpers::{expect_eq, str_at, Banner};
use super::{scenario, v3_only, CheckDef, Tier};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Rule};
use crate::finding::Level::Must;
use crate::run::{Case, Ran};
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::Edition;

pub(super) const CHECKS: &[CheckDef] = &[
    v3_only(scenario("APPLY.dry-run-plan", Must, Tier::Fake, "json-v3#streaming", "apply --dry-run emits none: it computes the plan host-side and runs nothing.",
        "`apply work --dry-run` answers {vm, dry_run: true, plan: [{name: hello, action: run, ...}]} with no event line and no ssh call", &["apply", "events"], dry_run_plan), "contract 2 has no apply --dry-run"),
    scenario("APPLY.streams-stage-log", Must, Tier::Fake, "json-v3#streaming", "apply wraps each appended line of the recipe log as a log event, and emits a stage event at each recipe boundary:",
        "`apply work` (recipe run by the fake ssh) streams stage {recipe: hello} then a log event with the recipe's output, and answers {vm, applied: [hello], skipped_reason: \"\"}", &["apply", "events"], streams_stage_log),
];

/// The recipe's one line of output; the seed keeps it unique per run.
fn greeting(case: &Case<'_>) -> String {
    format!("hello-from-recipe-{}", case.seed())
}

/// Writes `<root>/recipes/hello/{recipe.toml,install.sh}` (runs on alpine, prints one line).
fn write_recipe(sandbox: &Sandbox, line: &str) -> Result<(), HarnessError> {
    let dir = sandbox.data.join("recipes").join("hello");
    std::fs::create_dir_all(&dir).map_err(|e| HarnessError::io(&dir, e))?;
    let manifest = "name = \"hello\"\ndescription = \"prints one line (stoat-conformance)\"\nversion = \"1.0\"\nos = [\"alpine\"]\nscript = \"install.sh\"\n";
    let script = format!("#!/bin/sh\necho {line}\n");
    for (name, text) in [
        ("recipe.toml", manifest.to_string()),
        ("install.sh", script),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| HarnessError::io(&path, e))?;
    }
    crate::sandbox::set_mode(&dir.join("install.sh"), 0o755)
}

/// A sandbox holding `work` (live alpine, recipes = [hello]) on `sshport`.
fn with_recipe_vm(case: &Case<'_>, sshport: u16) -> Result<Sandbox, HarnessError> {
    let sandbox = case.sandbox()?;
    let mut vm = VmFixture::live("work").sshport(sshport);
    vm.recipes = vec!["hello".into()];
    sandbox.write_vm(&vm)?;
    write_recipe(&sandbox, &greeting(case))?;
    Ok(sandbox)
}

fn kinds(ran: &Ran) -> Vec<(String, Value)> {
    ran.judgement
        .events()
        .into_iter()
        .map(|e| {
            (
                e.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                e.get("data").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn dry_run_plan(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_recipe_vm(case, 2200)?;
    let ran = case.json(&sandbox, &["apply", "work", "--dry-run"])?;
    // "A consumer MUST ignore any type it does not recognize": only the contract's own
    // event types count as something a dry run emitted.
    let events: Vec<_> = kinds(&ran)
        .into_iter()
        .filter(|(kind, _)| matches!(kind.as_str(), "progress" | "stage" | "log"))
        .collect();
    case.ensure(
        events.is_empty(),
        "stdout",
        format!(
            "apply --dry-run emitted {} event line(s); it emits none",
            events.len()
        ),
    );
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/dry_run", &json!(true));
        let plan = data
            .get("plan")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match plan
            .iter()
            .position(|p| str_at(p, "/name") == Some("hello"))
        {
            Some(index) => {
                expect_eq(case, &data, &format!("/plan/{index}/action"), &json!("run"));
            }
            None => case.fail(
                "/data/plan",
                format!("the plan does not name the VM's recipe hello: {plan:?}"),
            ),
        }
    }
    let ssh_calls = sandbox
        .fake_calls()
        .iter()
        .filter(|c| c.tool == "ssh")
        .count();
    case.ensure(
        ssh_calls == 0,
        "fake-log",
        format!("apply --dry-run ran ssh {ssh_calls} time(s); it runs nothing"),
    );
    Ok(())
}

fn streams_stage_log(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let mut sandbox = with_recipe_vm(case, banner.port)?;
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            run_locally: true,
            ..Default::default()
        },
    ))?;
    sandbox.start_running("work")?;
    let ran = case.json(&sandbox, &["apply", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/applied", &json!(["hello"]));
        // Contract 2's apply answers {vm, applied} only.
        if case.edition() == Edition::V3 {
            expect_eq(case, &data, "/skipped_reason", &json!(""));
        }
    }
    let events = kinds(&ran);
    let stage = events
        .iter()
        .position(|(kind, data)| kind == "stage" && str_at(data, "/recipe") == Some("hello"));
    let line = greeting(case);
    let log = events.iter().position(|(kind, data)| {
        kind == "log" && str_at(data, "/line").is_some_and(|l| l.contains(&line))
    });
    match (stage, log) {
        (Some(stage), Some(log)) => {
            case.ensure(
                stage < log,
                "stdout",
                "the recipe's output came before its stage event",
            );
        }
        (None, _) => case.fail(
            "stdout",
            "no stage event {\"recipe\":\"hello\"} before the result",
        ),
        (_, None) => case.fail(
            "stdout",
            format!("no log event carries the recipe's output line {line:?}"),
        ),
    }
    Ok(())
}
