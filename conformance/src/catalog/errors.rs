//! Owns the error-code checks an independent implementation was seen to miss: a missing
//! share (`share_invalid`, not `internal`), a monitor that does not answer, `recipe new`
//! and `update --recipes` validation, `apply` with nothing to run (`applied` a list), `wait
//! --until applied`, and the leak sweep AFTER a cloud VM with a console password was started.

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, get_vm, unused_port, with_running_work, with_work, Banner};
use super::streaming::write_recipe;
use crate::error::HarnessError;
use crate::fakes::script::{FakeScript, QemuScript, Rule};
use crate::finding::Level::Must;
use crate::run::Case;
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "ERRORS.share-invalid",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "share_invalid the configured share is not a directory",
        title: "`up` of a VM whose share is missing, or is a file, fails with share_invalid and leaves the VM stopped",
        tags: &["errors", "share", "up"],
        editions: Editions::V3 { change: "contract 2 has no share_invalid code" },
        ..scenario(share_invalid)
    },
    CheckDef {
        id: "ERRORS.monitor-unreachable",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "monitor_unreachable the VM's qemu monitor socket does not answer",
        title: "`screenshot` of a running VM whose qemu has no monitor socket fails with monitor_unreachable",
        tags: &["errors", "monitor"],
        editions: Editions::V3 { change: "contract 2 has no monitor_unreachable code" },
        ..scenario(monitor_unreachable)
    },
    CheckDef {
        id: "ERRORS.monitor-rejected",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "monitor_rejected qemu answered the monitor command with an error",
        title: "`snapshot work clean` of a running disk VM whose qemu answers savevm with an error fails with monitor_rejected, and the snapshot is not listed",
        tags: &["errors", "monitor", "snapshot"],
        editions: Editions::V3 { change: "contract 2 has no monitor_rejected code" },
        ..scenario(monitor_rejected)
    },
    CheckDef {
        id: "ERRORS.no-xattr",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "no_xattr the share's filesystem cannot store user.* extended attributes",
        title: "`up` with the data root on a filesystem without user.* xattrs (STOAT_CONFORMANCE_NO_XATTR_DIR; SKIP when no such directory is available) fails with no_xattr and leaves the VM stopped",
        tags: &["errors", "share", "up"],
        editions: Editions::V3 { change: "contract 2 has no no_xattr code" },
        ..scenario(no_xattr)
    },
    CheckDef {
        id: "ERRORS.recipe-new-invalid",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "invalid_spec the request itself is malformed",
        title: "`recipe new` with a name that is not a name, or an unknown --os, fails with invalid_spec (not internal) and writes no recipe",
        tags: &["errors", "recipes"],
        ..scenario(recipe_new_invalid)
    },
    CheckDef {
        id: "ERRORS.update-recipes-unknown",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "recipe_not_applicable a named recipe cannot run on this VM",
        title: "`update --recipes` naming a recipe that does not exist is refused (recipe_not_applicable or invalid_spec) and the VM's recipes are unchanged",
        tags: &["errors", "recipes", "update"],
        ..scenario(update_recipes_unknown)
    },
    CheckDef {
        id: "APPLY.nothing-to-run",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "applied is always a list, never a bool.",
        title: "`apply` of a running VM without recipes answers applied: [] (a list, never null) and, in contract 3, a string skipped_reason",
        tags: &["apply", "lists"],
        ..scenario(apply_nothing)
    },
    CheckDef {
        id: "WAIT.until-applied",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        title: "after an apply finished, `wait --until applied` answers {vm, until: applied, reached: true, waited_ms}",
        tags: &["wait", "apply"],
        editions: Editions::V3 { change: "contract 2 names no applied state" },
        ..scenario(wait_until_applied)
    },
    CheckDef {
        id: "LEAK.after-cloud-up",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#absent",
        quote: "console_password. A console password is useless unless shown to a human at a console, and it must never reach a wire format.",
        title: "after `up` of a cloud VM with a console password: up, logs (stoat's and the VM's), get, ls, status and down never carry it in any encoding",
        tags: &["leaks", "up", "logs"],
        ..scenario(leak_after_cloud_up)
    },
];

fn share_invalid(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let file = "not-a-directory.txt";
    for (label, share) in [("missing", "no-such-dir"), ("a file", file)] {
        let sandbox = case.sandbox()?;
        let share = sandbox.work.join(share);
        sandbox.write_work_file(file, b"a file, not a directory\n")?;
        let mut vm = VmFixture::live("work").sshport(unused_port()?);
        vm.share = share.to_string_lossy().into_owned();
        let dir = sandbox.write_vm(&vm)?;
        super::streaming::bootable_files(&sandbox, &dir)?;
        let ran = case.json(&sandbox, &["up", "work"])?;
        if !case.expect_error(&ran, "share_invalid") {
            case.fail("/error/code", format!("the share was {label}"));
        }
        if let Some(vm) = get_vm(case, &sandbox, "work")? {
            expect_eq(case, &vm, "/state", &json!("stopped"));
        }
        let _ = case.json(&sandbox, &["down", "work"])?;
    }
    Ok(())
}

fn monitor_unreachable(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["screenshot", "work"])?;
    case.expect_error(&ran, "monitor_unreachable");
    Ok(())
}

fn monitor_rejected(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    // A port nothing holds (see lifecycle's prepare_bootable).
    let dir = sandbox.write_vm(&VmFixture::disk("work").sshport(unused_port()?))?;
    super::streaming::bootable_files(&sandbox, &dir)?;
    sandbox.write_script(&FakeScript {
        qemu: QemuScript {
            savevm_error: Some("Device 'drive0' is writable but does not support snapshots".into()),
            ..Default::default()
        },
        ..Default::default()
    })?;
    let up = case.json(&sandbox, &["up", "work"])?;
    if case.expect_ok(&up).is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["snapshot", "work", "clean"])?;
    case.expect_error(&ran, "monitor_rejected");
    let listed = case.json(&sandbox, &["snapshot", "work"])?;
    if let Some(snapshots) = listed
        .data()
        .and_then(|d| d.get("snapshots"))
        .and_then(Value::as_array)
    {
        case.ensure(
            !snapshots
                .iter()
                .any(|s| s.get("tag") == Some(&json!("clean"))),
            "/data/snapshots",
            "qemu refused savevm, yet `snapshot work` lists the tag clean",
        );
    }
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

/// The variable naming a directory on a filesystem that cannot store user.* xattrs.
const NO_XATTR_DIR: &str = "STOAT_CONFORMANCE_NO_XATTR_DIR";

/// Whether `dir`'s filesystem refuses a user.* extended attribute (the suite's own probe).
fn refuses_user_xattrs(dir: &std::path::Path) -> bool {
    use rustix::io::Errno;
    let name = c"user.stoat-conformance.probe";
    match rustix::fs::setxattr(dir, name, b"1", rustix::fs::XattrFlags::empty()) {
        Ok(()) => {
            let _ = rustix::fs::removexattr(dir, name);
            false
        }
        Err(errno) => matches!(errno, Errno::OPNOTSUPP | Errno::PERM | Errno::ACCESS),
    }
}

fn no_xattr(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some(parent) = std::env::var_os(NO_XATTR_DIR).map(std::path::PathBuf::from) else {
        case.skip(format!(
            "no_xattr is reachable only with the data root on a filesystem that cannot store user.* extended attributes (tmpfs has stored them since Linux 6.6); set {NO_XATTR_DIR} to a writable directory on one (a ramfs or vfat mount)"
        ));
        return Ok(());
    };
    if !refuses_user_xattrs(&parent) {
        case.skip(format!(
            "{NO_XATTR_DIR}={} is on a filesystem that stores user.* extended attributes; no_xattr cannot be reached there",
            parent.display()
        ));
        return Ok(());
    }
    let sandbox = case.sandbox_from(crate::sandbox::SandboxOptions {
        fakes: case.fakes(),
        seed_keys: true,
        parent: Some(parent),
        ..Default::default()
    })?;
    let dir = sandbox.write_vm(&VmFixture::live("work").sshport(unused_port()?))?;
    super::streaming::bootable_files(&sandbox, &dir)?;
    let ran = case.json(&sandbox, &["up", "work"])?;
    case.expect_error(&ran, "no_xattr");
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/state", &json!("stopped"));
    }
    let _ = case.json(&sandbox, &["down", "work"])?;
    Ok(())
}

fn recipes_written(sandbox: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sandbox.data.join("recipes"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("bad") || n == "okname")
                .collect()
        })
        .unwrap_or_default()
}

fn recipe_new_invalid(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    for args in [
        &["recipe", "new", "bad name/../x"][..],
        &[
            "recipe",
            "new",
            "okname",
            "--os",
            "no-such-os-stoat-conformance",
        ],
    ] {
        let ran = case.json(&sandbox, args)?;
        case.expect_error(&ran, "invalid_spec");
    }
    let written = recipes_written(&sandbox);
    case.ensure(
        written.is_empty(),
        "filesystem",
        format!("a refused `recipe new` left {written:?} under the recipes directory"),
    );
    Ok(())
}

fn update_recipes_unknown(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(
        &sandbox,
        &[
            "update",
            "work",
            "--recipes",
            "no-such-recipe-stoat-conformance",
        ],
    )?;
    match ran.code() {
        Some("recipe_not_applicable" | "invalid_spec") => {}
        _ => case.fail(
            "/error/code",
            format!("`update --recipes` with an unknown recipe answered {}; a recipe that does not exist cannot run on this VM", ran.answer()),
        ),
    }
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/recipes", &json!([]));
    }
    Ok(())
}

/// A running live VM on `banner`'s port whose recipes the fake ssh runs locally.
fn running_with_recipes(
    case: &Case<'_>,
    banner: &Banner,
    recipes: &[&str],
) -> Result<Sandbox, HarnessError> {
    let mut sandbox = case.sandbox()?;
    let mut vm = VmFixture::live("work").sshport(banner.port);
    vm.recipes = recipes.iter().map(|r| r.to_string()).collect();
    sandbox.write_vm(&vm)?;
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

fn apply_nothing(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_with_recipes(case, &banner, &[])?;
    let ran = case.json(&sandbox, &["apply", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("applied").is_some_and(Value::is_array),
            "/data/applied",
            format!(
                "applied is {}; it is always a list",
                data.get("applied")
                    .map_or("absent".to_string(), Value::to_string)
            ),
        );
        expect_eq(case, &data, "/applied", &json!([]));
        // Contract 2's apply answers {vm, applied}; skipped_reason came with contract 3.
        if case.edition() == crate::spec::Edition::V3 {
            case.ensure(
                data.get("skipped_reason").is_some_and(Value::is_string),
                "/data/skipped_reason",
                "skipped_reason is a string",
            );
        }
    }
    Ok(())
}

fn wait_until_applied(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let sandbox = running_with_recipes(case, &banner, &["hello"])?;
    write_recipe(&sandbox, "hello", "#!/bin/sh\necho hello\n")?;
    let applied = case.json(&sandbox, &["apply", "work"])?;
    if case.expect_ok(&applied).is_none() {
        return Ok(());
    }
    let ran = case.json(
        &sandbox,
        &["wait", "work", "--until", "applied", "--timeout", "20s"],
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/until", &json!("applied"));
        expect_eq(case, &data, "/reached", &json!(true));
        case.ensure(
            data.get("waited_ms").is_some_and(Value::is_u64),
            "/data/waited_ms",
            "waited_ms is an integer",
        );
    }
    Ok(())
}

fn leak_after_cloud_up(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let base = sandbox.write_work_file(
        "cloud-base.qcow2",
        b"QFI\xfb fake qcow2 written by stoat-conformance\n",
    )?;
    let mut vm = VmFixture::disk("work").sshport(unused_port()?);
    vm.mode = "cloud".into();
    vm.backend = "cloudinit".into();
    vm.os = "debian".into();
    vm.iso = None;
    vm.base = Some(base.to_string_lossy().into_owned());
    vm.sshuser = "stoat".into();
    sandbox.write_vm(&vm)?;
    let up = case.json(&sandbox, &["up", "work"])?;
    if case.expect_ok(&up).is_none() {
        return Ok(());
    }
    for args in [
        &["logs"][..],
        &["logs", "work"],
        &["logs", "work", "--which", "console"],
        &["get", "work"],
        &["ls"],
    ] {
        let ran = case.json(&sandbox, args)?;
        case.expect_ok(&ran);
    }
    let _ = case.json(&sandbox, &["status"])?;
    let down = case.json(&sandbox, &["down", "work"])?;
    case.expect_ok(&down);
    let after = case.json(&sandbox, &["logs"])?;
    if let Some(lines) = case.expect_ok(&after).and_then(|d| d.get("lines")).cloned() {
        case.ensure(
            lines.is_array(),
            "/data/lines",
            "logs answers lines as a list",
        );
    }
    Ok(())
}
