//! Owns the project checks: `init`, `status` (drift, immutable fields, undeclared state),
//! `ls --project`, and the no-name fan-out of up/down/apply/wait/rm (ProjectRun listing
//! every declared VM in declaration order, `skipped` after a failure), plus the design rule
//! that keeps a fan-out's stream JSON lines although the contract tolerates prose there.

use super::def::{rule, CheckDef};
use crate::ids;
use crate::spec::{Editions, Source};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        quote: "the project fan-out stays pure JSON lines: its progress is events, never prose",
        title: "a project fan-out (up/down/apply answering ProjectRun) writes only JSON lines; the contract tolerates prose there, so this is judged apart from ENV.json-lines",
        tags: &["project", "envelope"],
        editions: Editions::V3 { change: "contract 2 has no project fan-out" },
        source: Source::Design,
        ..rule(ids::PROJECT_FANOUT_JSON_LINES)
    },
];

// ---- scenarios ------------------------------------------------------------------------

use serde_json::{json, Value};

use super::def::{scenario, Tier};
use super::helpers::{expect_eq, str_at, with_work};
use crate::error::HarnessError;
use crate::finding::Level::Must;
use crate::run::{Case, Ran};
use crate::sandbox::Sandbox;

pub(super) const SCENARIOS: &[CheckDef] = &[
    CheckDef {
        id: "INIT.result",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "init InitResult",
        title: "`init` answers InitResult {path, project, gitignore_updated} and path names the stoat.toml it wrote",
        tags: &["project", "init"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(init_result)
    },
    CheckDef {
        id: "STATUS.undeclared-no-state",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "ProjectStatusVM.state is missing for a declared VM that does not exist yet, otherwise a VM.state value.",
        title: "`status` lists a declared VM that does not exist with key and name, no state, drift []",
        tags: &["project", "status"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(status_undeclared)
    },
    CheckDef {
        id: "STATUS.drift",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "Drift {\"field\":\"cpus\",\"from\":\"2\",\"to\":\"4\",\"needs_restart\":true}",
        title: "after the declaration's cpus changes from 2 to 4, `status` reports drift {field: cpus, from: \"2\", to: \"4\", needs_restart: bool}",
        tags: &["project", "status"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(status_drift)
    },
    CheckDef {
        id: "STATUS.immutable-field",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "drift is empty when error is set: an immutable-field mismatch (image or disk) stops the comparison before the rest of the fields are checked.",
        title: "after the declaration's image changes, `status` reports that VM with an error and drift []",
        tags: &["project", "status"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(status_immutable)
    },
    CheckDef {
        id: "PROJECT.ls-fields",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "VM.project is the absolute directory of the stoat.toml that declared this VM, and VM.key is the declaration key, both empty for a VM stoat create made outside a project.",
        title: "`ls --project` lists the project's VMs with project (its directory) and key; a VM made outside it has project \"\" and key \"\" in `ls`",
        tags: &["project", "ls"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(ls_project)
    },
    CheckDef {
        id: "PROJECT.fanout-order-skipped",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "skipped means a VM earlier in declaration order failed and this one was never attempted; ProjectRun.vms always lists every declared VM, in declaration order",
        title: "no-name `up` with a failing second declaration answers ProjectRun [ok, error (with error), skipped] in declaration order, and the skipped VM was not created",
        tags: &["project", "up"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(fanout_order_skipped)
    },
    CheckDef {
        id: "PROJECT.fanout-commands",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "up, down, apply, wait, rm (no VM, project scope) ProjectRun",
        title: "no-name up, down, wait, apply and rm -y each answer a ProjectRun listing every declared VM in order, with cmd the command's own name",
        tags: &["project"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(fanout_commands)
    },
    CheckDef {
        id: "PROJECT.rm-confirmation",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#json-implies",
        quote: "rm without -y fails with confirmation_required rather than prompting.",
        title: "no-name `rm` at project scope without -y fails with confirmation_required",
        tags: &["project", "rm"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(rm_confirmation)
    },
    CheckDef {
        id: "PROJECT.rm-unconfirmed-keeps",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#json-implies",
        quote: "A boundary that can be crossed by a process that answers a prompt is not a boundary.",
        title: "after no-name `up` and `down` made the project's VM, no-name `rm` without -y fails with confirmation_required and the VM is still there (`status` gives it a state, `ls --project` lists it)",
        tags: &["project", "rm", "state"],
        editions: Editions::V3 { change: "contract 2 has no project files: init, status, ls --project and the no-name fan-out came with contract 3" },
        ..scenario(rm_unconfirmed_keeps)
    },
];

/// The declarations of a project: (key, image, cpus).
struct Decl<'a> {
    key: &'a str,
    image: String,
    cpus: Option<u32>,
}

/// A fake qcow2 image in the work dir, as a bring-your-own image for cloud VMs.
fn base_image(sandbox: &Sandbox, name: &str) -> Result<String, HarnessError> {
    let path =
        sandbox.write_work_file(name, b"QFI\xfb fake qcow2 written by stoat-conformance\n")?;
    Ok(path.to_string_lossy().into_owned())
}

/// Project `shop` with one VM, `dev`, on a base image of its own.
fn write_dev_project(sandbox: &Sandbox) -> Result<(), HarnessError> {
    let image = base_image(sandbox, "base.qcow2")?;
    write_project(
        sandbox,
        "shop",
        &[Decl {
            key: "dev",
            image,
            cpus: None,
        }],
    )
}

fn write_project(sandbox: &Sandbox, name: &str, decls: &[Decl<'_>]) -> Result<(), HarnessError> {
    let mut text = format!("[project]\nname = \"{name}\"\n");
    for decl in decls {
        text.push_str(&format!(
            "\n[vm.{}]\nimage = {}\nram = 512\n",
            decl.key,
            toml::Value::String(decl.image.clone())
        ));
        if let Some(cpus) = decl.cpus {
            text.push_str(&format!("cpus = {cpus}\n"));
        }
    }
    sandbox.write_work_file("stoat.toml", text.as_bytes())?;
    Ok(())
}

/// The rows of a ProjectRun (empty, with a finding, when it is not one).
fn project_run(case: &mut Case<'_>, ran: &Ran, keys: &[&str]) -> Vec<Value> {
    let Some(data) = case.expect_ok(ran).cloned() else {
        return Vec::new();
    };
    let argv = ran.capture.argv_display();
    case.ensure(
        data.get("project").is_some_and(Value::is_string),
        "/data/project",
        format!("`{argv}`: a ProjectRun names its project"),
    );
    let rows = data
        .get("vms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let got: Vec<&str> = rows.iter().filter_map(|r| str_at(r, "/key")).collect();
    case.ensure(
        got == keys,
        "/data/vms",
        format!("`{argv}`: ProjectRun.vms lists keys {got:?}; every declared VM in declaration order is {keys:?}"),
    );
    for (index, row) in rows.iter().enumerate() {
        let status = str_at(row, "/status");
        case.ensure(
            matches!(status, Some("ok" | "error" | "skipped")),
            &format!("/data/vms/{index}/status"),
            format!("`{argv}`: status {status:?} is not ok, error or skipped"),
        );
        case.ensure(
            row.get("error").is_some() == (status == Some("error")),
            &format!("/data/vms/{index}/error"),
            format!("`{argv}`: error appears only (and always) when status is error"),
        );
        case.ensure(
            str_at(row, "/name").is_some_and(|n| !n.is_empty()),
            &format!("/data/vms/{index}/name"),
            format!("`{argv}`: every ProjectRunVM names its VM"),
        );
    }
    rows
}

fn init_result(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["init"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let path = str_at(&data, "/path").unwrap_or("").to_string();
        case.ensure(
            path.ends_with("/stoat.toml") && std::path::Path::new(&path).is_file(),
            "/data/path",
            format!("path {path:?} does not name the stoat.toml init wrote"),
        );
        case.ensure(
            std::path::Path::new(&path).parent() == Some(sandbox.work.as_path())
                || std::fs::canonicalize(&path)
                    .ok()
                    .and_then(|p| p.parent().map(|d| d.to_path_buf()))
                    == std::fs::canonicalize(&sandbox.work).ok(),
            "/data/path",
            "init wrote its stoat.toml somewhere else than the directory it ran in",
        );
        case.ensure(
            str_at(&data, "/project").is_some_and(|p| !p.is_empty()),
            "/data/project",
            "InitResult.project is a non-empty name",
        );
        case.ensure(
            data.get("gitignore_updated").is_some_and(Value::is_boolean),
            "/data/gitignore_updated",
            "InitResult.gitignore_updated is a bool",
        );
    }
    Ok(())
}

fn status_undeclared(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    write_dev_project(&sandbox)?;
    let ran = case.json(&sandbox, &["status"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/project", &json!("shop"));
        let rows = data
            .get("vms")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match rows.iter().find(|r| str_at(r, "/key") == Some("dev")) {
            Some(row) => {
                case.ensure(
                    row.get("state").is_none(),
                    "/data/vms/dev/state",
                    "a declared VM that does not exist yet carries no state",
                );
                expect_eq(case, row, "/drift", &json!([]));
                case.ensure(
                    str_at(row, "/name").is_some_and(|n| !n.is_empty()),
                    "/data/vms/dev/name",
                    "ProjectStatusVM names the VM",
                );
            }
            None => case.fail("/data/vms", "status does not list the declared VM dev"),
        }
        case.ensure(
            data.get("dir")
                .and_then(Value::as_str)
                .is_some_and(|d| std::path::Path::new(d).is_absolute()),
            "/data/dir",
            "ProjectStatus.dir is the project's absolute directory",
        );
    }
    Ok(())
}

/// A project `shop` with zeta (cpus 2) created and stopped through no-name `up`/`down`.
fn created_project(case: &mut Case<'_>) -> Result<Option<(Sandbox, String)>, HarnessError> {
    let sandbox = case.sandbox()?;
    let image = base_image(&sandbox, "base.qcow2")?;
    write_project(
        &sandbox,
        "shop",
        &[Decl {
            key: "zeta",
            image: image.clone(),
            cpus: Some(2),
        }],
    )?;
    let up = case.json(&sandbox, &["up"])?;
    let rows = project_run(case, &up, &["zeta"]);
    if rows.first().and_then(|r| str_at(r, "/status")) != Some("ok") {
        case.fail(
            "/data/vms/0/status",
            format!("no-name `up` did not bring zeta up: {rows:?}"),
        );
        return Ok(None);
    }
    let down = case.json(&sandbox, &["down"])?;
    project_run(case, &down, &["zeta"]);
    Ok(Some((sandbox, image)))
}

fn status_drift(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, image)) = created_project(case)? else {
        return Ok(());
    };
    write_project(
        &sandbox,
        "shop",
        &[Decl {
            key: "zeta",
            image,
            cpus: Some(4),
        }],
    )?;
    let ran = case.json(&sandbox, &["status"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let row = data.get("vms").and_then(Value::as_array).and_then(|rows| {
            rows.iter()
                .find(|r| str_at(r, "/key") == Some("zeta"))
                .cloned()
        });
        let drift = row
            .as_ref()
            .and_then(|r| r.get("drift"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match drift.iter().find(|d| str_at(d, "/field") == Some("cpus")) {
            Some(entry) => {
                expect_eq(case, entry, "/from", &json!("2"));
                expect_eq(case, entry, "/to", &json!("4"));
                case.ensure(
                    entry.get("needs_restart").is_some_and(Value::is_boolean),
                    "/data/vms/zeta/drift/cpus/needs_restart",
                    "Drift.needs_restart is a bool",
                );
            }
            None => case.fail(
                "/data/vms/zeta/drift",
                format!(
                    "cpus changed from 2 to 4 in stoat.toml but status reports drift {drift:?}"
                ),
            ),
        }
        if let Some(row) = row {
            case.ensure(
                row.get("state").is_some(),
                "/data/vms/zeta/state",
                "an existing declared VM carries its state",
            );
        }
    }
    let _ = case.json(&sandbox, &["rm", "-y"])?;
    Ok(())
}

fn status_immutable(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _)) = created_project(case)? else {
        return Ok(());
    };
    let other = base_image(&sandbox, "other.qcow2")?;
    write_project(
        &sandbox,
        "shop",
        &[Decl {
            key: "zeta",
            image: other,
            cpus: Some(4),
        }],
    )?;
    let ran = case.json(&sandbox, &["status"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let row = data.get("vms").and_then(Value::as_array).and_then(|rows| {
            rows.iter()
                .find(|r| str_at(r, "/key") == Some("zeta"))
                .cloned()
        });
        match row {
            Some(row) => {
                case.ensure(
                    str_at(&row, "/error").is_some_and(|e| !e.is_empty()),
                    "/data/vms/zeta/error",
                    "the declaration's image differs from the VM's: status must report the immutable-field mismatch as error",
                );
                expect_eq(case, &row, "/drift", &json!([]));
            }
            None => case.fail("/data/vms", "status does not list zeta"),
        }
    }
    let _ = case.json(&sandbox, &["rm", "-y"])?;
    Ok(())
}

fn ls_project(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, _)) = created_project(case)? else {
        return Ok(());
    };
    sandbox.write_vm(&crate::sandbox::VmFixture::live("loner").sshport(2290))?;
    let ran = case.json(&sandbox, &["ls", "--project"])?;
    let dir = std::fs::canonicalize(&sandbox.work).unwrap_or(sandbox.work.clone());
    if let Some(vms) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("vms"))
        .and_then(Value::as_array)
        .cloned()
    {
        case.ensure(
            vms.iter().any(|v| str_at(v, "/key") == Some("zeta")),
            "/data/vms",
            "`ls --project` does not list the project's VM (key zeta)",
        );
        for (index, vm) in vms.iter().enumerate() {
            let project = str_at(vm, "/project").map(std::path::PathBuf::from);
            case.ensure(
                project.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or(p.clone())) == Some(dir.clone()),
                &format!("/data/vms/{index}/project"),
                format!("`ls --project` lists {:?} whose project is {project:?}, not the project directory", str_at(vm, "/name")),
            );
        }
    }
    let all = case.json(&sandbox, &["ls"])?;
    if let Some(vms) = case
        .expect_ok(&all)
        .and_then(|d| d.get("vms"))
        .and_then(Value::as_array)
        .cloned()
    {
        match vms.iter().find(|v| str_at(v, "/name") == Some("loner")) {
            Some(loner) => {
                expect_eq(case, loner, "/project", &json!(""));
                expect_eq(case, loner, "/key", &json!(""));
            }
            None => case.fail(
                "/data/vms",
                "`ls` does not list the VM made outside the project",
            ),
        }
    }
    let _ = case.json(&sandbox, &["rm", "-y"])?;
    Ok(())
}

fn fanout_order_skipped(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let image = base_image(&sandbox, "base.qcow2")?;
    write_project(
        &sandbox,
        "shop",
        &[
            Decl {
                key: "zeta",
                image: image.clone(),
                cpus: None,
            },
            Decl {
                key: "alpha",
                image: "no-such-image-stoat-conformance.iso".into(),
                cpus: None,
            },
            Decl {
                key: "mid",
                image,
                cpus: None,
            },
        ],
    )?;
    let ran = case.json(&sandbox, &["up"])?;
    let rows = project_run(case, &ran, &["zeta", "alpha", "mid"]);
    let statuses: Vec<Option<&str>> = rows.iter().map(|r| str_at(r, "/status")).collect();
    if rows.len() == 3 {
        case.ensure(
            statuses == [Some("ok"), Some("error"), Some("skipped")],
            "/data/vms",
            format!("statuses are {statuses:?}; after the second declaration fails the third is skipped: [ok, error, skipped]"),
        );
        if let Some(name) = str_at(&rows[2], "/name") {
            let got = case.json(&sandbox, &["get", name])?;
            case.ensure(
                got.code() == Some("not_found"),
                "/data/vms/2",
                format!("the skipped VM {name} was \"never attempted\", yet it exists afterwards"),
            );
        }
    }
    let _ = case.json(&sandbox, &["down"])?;
    let _ = case.json(&sandbox, &["rm", "-y"])?;
    Ok(())
}

fn fanout_commands(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let image = base_image(&sandbox, "base.qcow2")?;
    write_project(
        &sandbox,
        "shop",
        &[
            Decl {
                key: "web",
                image: image.clone(),
                cpus: None,
            },
            Decl {
                key: "db",
                image,
                cpus: None,
            },
        ],
    )?;
    let keys = ["web", "db"];
    for args in [
        &["up"][..],
        &["apply"],
        &["down"],
        &["wait", "--until", "stopped"],
        &["rm", "-y"],
    ] {
        let ran = case.json(&sandbox, args)?;
        let rows = project_run(case, &ran, &keys);
        expect_eq(
            case,
            ran.judgement.result.as_ref().unwrap_or(&Value::Null),
            "/cmd",
            &json!(args[0]),
        );
        if args[0] == "up" && rows.iter().any(|r| str_at(r, "/status") != Some("ok")) {
            case.fail(
                "/data/vms",
                format!("no-name up did not bring both VMs up: {rows:?}"),
            );
        }
    }
    Ok(())
}

fn rm_confirmation(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    write_dev_project(&sandbox)?;
    let ran = case.json(&sandbox, &["rm"])?;
    case.expect_error(&ran, "confirmation_required");
    Ok(())
}

fn rm_unconfirmed_keeps(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    write_dev_project(&sandbox)?;
    for args in [&["up"][..], &["down"], &["wait", "--until", "stopped"]] {
        let ran = case.json(&sandbox, args)?;
        if case.expect_ok(&ran).is_none() {
            return Ok(());
        }
    }
    let ran = case.json(&sandbox, &["rm"])?;
    case.expect_error(&ran, "confirmation_required");
    let status = case.json(&sandbox, &["status"])?;
    if let Some(data) = case.expect_ok(&status).cloned() {
        let row = data.get("vms").and_then(Value::as_array).and_then(|rows| {
            rows.iter()
                .find(|r| str_at(r, "/key") == Some("dev"))
                .cloned()
        });
        case.ensure(
            row.as_ref().is_some_and(|r| r.get("state").is_some()),
            "status/vms",
            format!("after rm without -y answered confirmation_required, status shows dev as {row:?}: the VM was deleted"),
        );
    }
    let listed = case.json(&sandbox, &["ls", "--project"])?;
    if let Some(data) = case.expect_ok(&listed).cloned() {
        let listed = data
            .get("vms")
            .and_then(Value::as_array)
            .is_some_and(|rows| rows.iter().any(|r| str_at(r, "/key") == Some("dev")));
        case.ensure(
            listed,
            "ls/vms",
            "after rm without -y answered confirmation_required, ls --project no longer lists dev",
        );
    }
    Ok(())
}
