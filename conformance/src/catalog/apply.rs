//! Owns the `apply` checks over a recipe the suite writes into the data root: `--dry-run`
//! (a plan, no events, nothing run) and a real apply through the fake `ssh` in local-exec
//! mode (the recipe body runs under the local `/bin/sh`, as sshd would run it), which must
//! stream a `stage` event at the recipe boundary and `log` events for the recipe's output
//! (contract "Streaming" and the apply rows of "Per-command data").

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at, Banner};
use super::live::{Next, Watched};
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, Rule};
use crate::finding::Level::Must;
use crate::run::{Case, Ran};
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::{Edition, Editions, Source};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "APPLY.dry-run-plan",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "apply --dry-run emits none: it computes the plan host-side and runs nothing.",
        title: "`apply work --dry-run` answers {vm, dry_run: true, plan: [{name: hello, action: run, ...}]} with no event line and no ssh call",
        tags: &["apply", "events"],
        editions: Editions::V3 { change: "contract 2 has no apply --dry-run" },
        ..scenario(dry_run_plan)
    },
    CheckDef {
        id: "APPLY.dry-run-data-object",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v2#envelope",
        quote: "data object on success, and on non-terminal events",
        title: "`apply work --dry-run`, when the SUT accepts the flag, answers data as an object (contract 2 does not name --dry-run: a refusal as usage SKIPs)",
        tags: &["apply", "envelope"],
        editions: Editions::V2,
        source: Source::ContractV2,
        ..scenario(dry_run_data_object)
    },
    CheckDef {
        id: "APPLY.streams-stage-log",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "apply wraps each appended line of the recipe log as a log event, and emits a stage event at each recipe boundary:",
        title: "`apply work` (recipe run by the fake ssh) streams stage {recipe: hello} then a log event with the recipe's output, and answers {vm, applied: [hello], skipped_reason: \"\"}",
        tags: &["apply", "events"],
        ..scenario(streams_stage_log)
    },
    CheckDef {
        id: "APPLY.dry-run-running",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "apply --dry-run emits none: it computes the plan host-side and runs nothing.",
        title: "`apply work --dry-run` on a RUNNING VM whose ssh would run the recipe: no event line, no ssh call, the recipe's marker file never appears, and the plan names hello with action run",
        tags: &["apply", "events", "state"],
        editions: Editions::V3 { change: "contract 2 has no apply --dry-run" },
        ..scenario(dry_run_running)
    },
    CheckDef {
        id: "APPLY.plan-version-absent",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: PLAN_VERSION_ABSENT,
        title: "`apply work --dry-run` of a VM whose recipe never ran (stopped and running) answers its ApplyPlan without version",
        tags: &["apply"],
        editions: Editions::V3 { change: "contract 2 has no apply --dry-run" },
        ..scenario(plan_version_absent)
    },
    CheckDef {
        id: "APPLY.log-per-line",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#streaming",
        quote: "apply wraps each appended line of the recipe log as a log event",
        title: "a recipe printing three lines streams three log events, one line each in order, none holding a newline",
        tags: &["apply", "events"],
        ..scenario(log_per_line)
    },
    CheckDef {
        id: "APPLY.locked-skipped-reason",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "a second run already holding the VM's lock is the other case; both come back with applied: [] and a reason.",
        title: "an `apply work` started while another apply of work is still running its recipe answers applied: [] and a non-empty skipped_reason (or is refused), never \"\" as if it ran",
        tags: &["apply", "state"],
        editions: Editions::V3 { change: "contract 2's apply answers {vm, applied} without skipped_reason" },
        ..scenario(locked_skipped_reason)
    },
    CheckDef {
        id: "APPLY.health-failed",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "health is the stored aggregate (ok, failed, or unknown); it is not a live SSH check.",
        title: "after `apply` of a recipe whose health check exits 1 in the guest, `get` reports neither that recipe's health nor the VM's aggregate health as ok",
        tags: &["apply", "recipes", "state"],
        editions: Editions::V3 { change: "contract 2's get answers no health and no recipes_detail" },
        ..scenario(health_failed)
    },
];

/// What the v3 ApplyPlan rule says of `version`, shared by the dry-run checks.
const PLAN_VERSION_ABSENT: &str =
    "version is the recipe version already applied, absent when the recipe never ran.";

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

/// Contract 2 names no `apply --dry-run`, but whatever a command answers, its data is an
/// object: an implementation that has the flag is judged on that.
fn dry_run_data_object(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_recipe_vm(case, 2200)?;
    let ran = case.json(&sandbox, &["apply", "work", "--dry-run"])?;
    if ran.code() == Some("usage") {
        case.skip("contract 2 names no `apply --dry-run`, and the SUT refuses it as a usage error");
        return Ok(());
    }
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.is_object(),
            "/data",
            format!(
                "`apply work --dry-run` answered data {}; data is an object",
                crate::oracle::excerpt(&data.to_string())
            ),
        );
    }
    Ok(())
}

fn dry_run_plan(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_recipe_vm(case, 2200)?;
    expect_host_side_dry_run(case, &sandbox, "")
}

/// `apply work --dry-run` emits no event, answers {vm: work, dry_run: true} with a plan that
/// runs hello, and runs no ssh (`state` says which VM, for the messages: "" or "of a running
/// VM ").
fn expect_host_side_dry_run(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    state: &str,
) -> Result<(), HarnessError> {
    let ran = case.json(sandbox, &["apply", "work", "--dry-run"])?;
    // "A consumer MUST ignore any type it does not recognize": only the contract's own
    // event types count as something a dry run emitted.
    let events = kinds(&ran)
        .into_iter()
        .filter(|(kind, _)| matches!(kind.as_str(), "progress" | "stage" | "log"))
        .count();
    case.ensure(
        events == 0,
        "stdout",
        format!("apply --dry-run {state}emitted {events} event line(s); it emits none"),
    );
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/dry_run", &json!(true));
        if let Some((index, _)) = hello_row(case, &data) {
            expect_eq(case, &data, &format!("/plan/{index}/action"), &json!("run"));
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
        format!("apply --dry-run {state}ran ssh {ssh_calls} time(s); it computes the plan host-side and runs nothing"),
    );
    Ok(())
}

fn streams_stage_log(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_recipe_vm(case, &banner)?;
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

/// Writes the recipe `hello` with its own script body.
fn write_recipe_script(sandbox: &Sandbox, body: &str) -> Result<(), HarnessError> {
    let path = sandbox
        .data
        .join("recipes")
        .join("hello")
        .join("install.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).map_err(|e| HarnessError::io(&path, e))
}

/// `work` (live alpine, recipes = [hello]) running on a banner port, its ssh the local shell.
fn running_recipe_vm(case: &Case<'_>, banner: &Banner) -> Result<Sandbox, HarnessError> {
    let mut sandbox = with_recipe_vm(case, banner.port)?;
    sandbox.write_script(&FakeScript::default().rule(
        "ssh",
        Rule {
            run_locally: true,
            ..Default::default()
        },
    ))?;
    sandbox.start_running("work")?;
    Ok(sandbox)
}

/// The plan row of `hello` in a dry run's data, and its index.
fn hello_row(case: &mut Case<'_>, data: &Value) -> Option<(usize, Value)> {
    let plan = data
        .get("plan")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let found = plan
        .iter()
        .position(|p| str_at(p, "/name") == Some("hello"))
        .map(|index| (index, plan[index].clone()));
    if found.is_none() {
        case.fail(
            "/data/plan",
            format!("the plan does not name the VM's recipe hello: {plan:?}"),
        );
    }
    found
}

fn dry_run_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_recipe_vm(case, &banner)?;
    let marker = sandbox.tmp.join("hello-ran");
    write_recipe_script(
        &sandbox,
        &format!("echo {}\n: > '{}'\n", greeting(case), marker.display()),
    )?;
    expect_host_side_dry_run(case, &sandbox, "of a running VM ")?;
    case.ensure(
        !marker.exists(),
        "guest",
        "apply --dry-run ran the recipe in the guest (its marker file appeared)",
    );
    Ok(())
}

fn plan_version_absent(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let stopped = with_recipe_vm(case, banner.port)?;
    let running = running_recipe_vm(case, &banner)?;
    for (label, sandbox) in [("stopped", &stopped), ("running", &running)] {
        let ran = case.json(sandbox, &["apply", "work", "--dry-run"])?;
        let Some(data) = case.expect_ok(&ran).cloned() else {
            continue;
        };
        if let Some((index, row)) = hello_row(case, &data) {
            case.ensure(
                row.get("version").is_none(),
                &format!("/data/plan/{index}/version"),
                format!(
                    "the plan of a {label} VM whose recipe hello never ran carries version {}; it is absent when the recipe never ran",
                    row.get("version").map_or(String::new(), Value::to_string)
                ),
            );
        }
    }
    Ok(())
}

fn log_per_line(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_recipe_vm(case, &banner)?;
    let seed = case.seed();
    let wanted: Vec<String> = (1..=3).map(|n| format!("line-{n}-of-3-{seed}")).collect();
    let body: String = wanted.iter().map(|l| format!("echo {l}\n")).collect();
    write_recipe_script(&sandbox, &body)?;
    let ran = case.json(&sandbox, &["apply", "work"])?;
    case.expect_ok(&ran);
    let logged: Vec<String> = kinds(&ran)
        .into_iter()
        .filter(|(kind, _)| kind == "log")
        .filter_map(|(_, data)| str_at(&data, "/line").map(str::to_string))
        .collect();
    for line in logged.iter().filter(|l| l.contains('\n')) {
        case.fail(
            "stdout",
            format!("a log event holds more than one line: {line:?}; each line of output is its own event"),
        );
    }
    let ours: Vec<&String> = logged
        .iter()
        .filter(|l| l.contains(&format!("-of-3-{seed}")))
        .collect();
    let matches = ours.len() == wanted.len()
        && ours
            .iter()
            .zip(&wanted)
            .all(|(got, want)| got.contains(want.as_str()));
    case.ensure(
        matches,
        "stdout",
        format!("the recipe printed {wanted:?}; its log events carried {ours:?} (one event per line, in order)"),
    );
    Ok(())
}

fn locked_skipped_reason(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_recipe_vm(case, &banner)?;
    let seed = case.seed();
    let ready = format!("holding-{seed}");
    let release = sandbox.tmp.join(format!("release-{seed}"));
    // The first apply's recipe prints a line, then waits until the suite ran the second
    // apply: the second one surely meets the first holding the VM. The wait is bounded in
    // wall-clock seconds (a count of short sleeps stretches on a loaded host), well inside
    // the invocation timeout, since an SUT without the lock runs the recipe twice.
    write_recipe_script(
        &sandbox,
        &format!(
            "echo {ready}\nend=$(( $(date +%s) + 15 ))\nwhile [ ! -e '{file}' ] && [ \"$(date +%s)\" -lt \"$end\" ]; do sleep 0.05; done\n",
            file = release.display()
        ),
    )?;
    let mut first = Watched::spawn(case, &sandbox, &["--json", "apply", "work"], false)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut holding = false;
    while !holding {
        match first.next(std::time::Duration::from_millis(200)) {
            Next::Line(line) => holding = line.contains(&ready),
            Next::Eof => break,
            Next::Timeout if std::time::Instant::now() > deadline => break,
            Next::Timeout => {}
        }
    }
    if !holding {
        let _ = std::fs::write(&release, b"go");
        case.fail(
            "stdout",
            format!("the first apply never streamed its recipe's line {ready:?}"),
        );
        return Ok(());
    }
    let second = case.json(&sandbox, &["apply", "work"])?;
    let _ = std::fs::write(&release, b"go");
    while !matches!(
        first.next(std::time::Duration::from_secs(30)),
        Next::Eof | Next::Timeout
    ) {}
    if second.code().is_some() {
        // Refusing the second run outright is an answer too: it did not claim to have run.
        return Ok(());
    }
    if let Some(data) = case.expect_ok(&second).cloned() {
        expect_eq(case, &data, "/applied", &json!([]));
        let reason = str_at(&data, "/skipped_reason").unwrap_or("");
        case.ensure(
            !reason.is_empty(),
            "/data/skipped_reason",
            "an apply that met another apply of the VM still running answered skipped_reason \"\" (which says the apply ran)",
        );
    }
    Ok(())
}

fn health_failed(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_recipe_vm(case, &banner)?;
    let dir = sandbox.data.join("recipes").join("hello");
    let manifest = "schema = 3\nname = \"hello\"\ndescription = \"a recipe whose health check fails (stoat-conformance)\"\nversion = \"1.0\"\nos = [\"alpine\"]\nscript = \"install.sh\"\n\n[health]\ncheck = \"exit 1\"\ntimeout = \"10s\"\n";
    let path = dir.join("recipe.toml");
    std::fs::write(&path, manifest).map_err(|e| HarnessError::io(&path, e))?;
    let ran = case.json(&sandbox, &["apply", "work"])?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let got = case.json(&sandbox, &["get", "work"])?;
    let Some(vm) = case.expect_ok(&got).and_then(|d| d.get("vm")).cloned() else {
        return Ok(());
    };
    case.ensure(
        str_at(&vm, "/health") != Some("ok"),
        "/data/vm/health",
        "the VM's aggregate health is ok although its recipe's health check failed",
    );
    let details = vm
        .get("recipes_detail")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match details
        .iter()
        .position(|d| str_at(d, "/name") == Some("hello"))
    {
        Some(index) => {
            case.ensure(
                str_at(&details[index], "/health") != Some("ok"),
                &format!("/data/vm/recipes_detail/{index}/health"),
                "recipe hello's health is ok although its health check exited 1",
            );
        }
        None => case.fail(
            "/data/vm/recipes_detail",
            "recipes_detail has no row for the applied recipe hello",
        ),
    }
    Ok(())
}
