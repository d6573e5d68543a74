//! Owns the checks that hold ACROSS invocations, where an answer's meaning is tested by a
//! later read rather than by its shape: what `update` did not name stays as it was, a
//! restored snapshot really brings the disk back, a clone's stored forwards agree with its
//! `forwards_copied`, `ls` maps pre-field VMs like `get` does; and the units of numbers
//! (progress bytes against the bytes served, `waited_ms` against the measured wall time).

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, get_vm, str_at, with_work};
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::Case;
use crate::sandbox::VmFixture;
use crate::spec::Editions;

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "STATE.update-unnamed-unchanged",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "A flag you did not pass does not appear, and the field it names is untouched.",
        title: "after `update work --ram 2048`, a later `get` shows every other VM field exactly as before",
        tags: &["update", "state"],
        ..scenario(update_unnamed_unchanged)
    },
    CheckDef {
        id: "STATE.snapshot-restore-restores",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "snapshot (act) {\"vm\":\"work\",\"tag\":\"clean\",\"action\":\"restore\"}",
        title: "with the real qemu-img: data written to the disk after `snapshot work clean` is gone after `snapshot work clean --restore`",
        tags: &["snapshot", "state"],
        ..scenario(snapshot_restore_restores)
    },
    CheckDef {
        id: "CLONE.forwards-agree",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "clone {\"vm\":VM,\"source\":\"work\",\"forwards_copied\":false}",
        title: "the clone's stored forwards (a later `get` and `ls`) agree with forwards_copied: none when false, the source's when true",
        tags: &["clone", "state", "forward"],
        ..scenario(clone_forwards_agree)
    },
    CheckDef {
        id: "LS.allow-exec-prefield",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "For compatibility, an absent key still appears as allow_exec:true in the VM DTO.",
        title: "`ls` (not only `get`) shows a VM without allow_exec as allow_exec:true/agent_access manage, stored true as exec, stored false as false/manage",
        tags: &["ls", "access"],
        editions: Editions::V3 { change: "contract 2 has allow_exec but no agent_access" },
        ..scenario(ls_allow_exec_prefield)
    },
    CheckDef {
        id: "WAIT.waited-ms-wall",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        title: "waited_ms is milliseconds: never more than the wall time the suite measured around the whole invocation",
        tags: &["wait", "units"],
        ..scenario(waited_ms_wall)
    },
    CheckDef {
        id: "PULL.progress-bytes",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#streaming",
        quote: "{\"v\":3,\"type\":\"progress\",\"cmd\":\"pull\",\"data\":{\"id\":\"alpine-virt\",\"done\":62914560,\"total\":62914560,\"percent\":100}}",
        title: "progress done/total are bytes: total equals the size the mirror served, the last done reaches it, percent agrees with done/total",
        tags: &["pull", "units", "events"],
        ..scenario(progress_bytes)
    },
    CheckDef {
        id: "STATE.update-read-back",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "update.changed names the fields that actually changed, in wire naming",
        title: "`update work --cpus 3 --ram 2048` answers the VM with cpus 3 and ram_mb 2048, and a later `get` and `ls` show exactly those values (what the answer says changed is what was stored)",
        tags: &["update", "state"],
        ..scenario(update_read_back)
    },
    CheckDef {
        id: "FORWARD.refused-unsaved",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "invalid_spec the request itself is malformed",
        title: "a `forward` refused with invalid_spec (host port 80) leaves the stored forwards as they were (a later `forward work` and `get` show the fixture's one forward)",
        tags: &["forward", "state"],
        ..scenario(forward_refused_unsaved)
    },
    CheckDef {
        id: "CREATE.agent-access-agrees",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "An explicitly stored allow_exec = true maps to exec.",
        title: "`create`'s answer shows the allow_exec and agent_access a later `get` shows; when the created vm.toml stores allow_exec = true, both say agent_access exec",
        tags: &["create", "access"],
        editions: Editions::V3 { change: "contract 2 has no agent_access (it came with contract 3)" },
        ..scenario(create_agent_access_agrees)
    },
    CheckDef {
        id: "CAPABILITIES.access-policy",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#capabilities",
        quote: "MCP enforces agent_access; direct CLI exec and cp do not.",
        title: "`capabilities` answers access_policy {mcp_agent_access_enforced: true, cli_agent_access_enforced: false, cli_commands: [exec, cp]}",
        tags: &["capabilities", "access"],
        editions: Editions::V3 { change: "contract 2 has no capabilities report and no agent_access" },
        ..scenario(capabilities_access_policy)
    },
];

/// The VM fields `update --ram` must leave alone (everything but ram_mb and the state).
fn comparable(vm: &Value) -> Vec<(String, Value)> {
    vm.as_object()
        .map(|map| {
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "ram_mb" | "state"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn update_unnamed_unchanged(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let mut vm = VmFixture::disk("work")
        .forward(8080, 80)
        .allow_exec(Some(false));
    vm.cpus = 2;
    sandbox.write_vm(&vm)?;
    let Some(before) = get_vm(case, &sandbox, "work")? else {
        return Ok(());
    };
    let ran = case.json(&sandbox, &["update", "work", "--ram", "2048"])?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let Some(after) = get_vm(case, &sandbox, "work")? else {
        return Ok(());
    };
    expect_eq(case, &after, "/ram_mb", &json!(2048));
    for (field, was) in comparable(&before) {
        let now = after.get(&field);
        case.ensure(
            now == Some(&was),
            &format!("/data/vm/{field}"),
            format!(
                "`update --ram` did not name {field}, yet a later get shows {} where it was {}",
                now.map(|v| crate::oracle::excerpt(&v.to_string()))
                    .unwrap_or_else(|| "<missing>".into()),
                crate::oracle::excerpt(&was.to_string())
            ),
        );
    }
    Ok(())
}

/// The real qemu-img and qemu-io of this host, when both are installed.
fn real_qemu_tools() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let find = |name: &str| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    };
    Some((find("qemu-img")?, find("qemu-io")?))
}

fn qemu_io(
    tool: &std::path::Path,
    disk: &std::path::Path,
    command: &str,
) -> Result<String, HarnessError> {
    let output = std::process::Command::new(tool)
        .args(["-f", "qcow2", "-c", command])
        .arg(disk)
        .output()
        .map_err(|e| HarnessError::io(tool, e))?;
    Ok(format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Whether the first 64 KiB of `disk` hold `pattern` (qemu-io's own verification).
fn holds_pattern(
    tool: &std::path::Path,
    disk: &std::path::Path,
    pattern: u8,
) -> Result<bool, HarnessError> {
    let said = qemu_io(tool, disk, &format!("read -P 0x{pattern:02x} 0 64k"))?;
    Ok(!said.contains("Pattern verification failed") && said.contains("read 65536/65536"))
}

fn snapshot_restore_restores(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((qemu_img, qemu_io_tool)) = real_qemu_tools() else {
        case.skip("needs the host's real qemu-img and qemu-io on the suite's PATH");
        return Ok(());
    };
    let sandbox = case.sandbox()?;
    let dir = sandbox.write_vm(&VmFixture::disk("work"))?;
    let disk = dir.join("disk.qcow2");
    let _ = std::fs::remove_file(&disk);
    let made = std::process::Command::new(&qemu_img)
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&disk)
        .arg("64M")
        .status()
        .map_err(|e| HarnessError::io(&qemu_img, e))?;
    if !made.success() {
        case.skip("the host's qemu-img could not create a qcow2");
        return Ok(());
    }
    crate::sandbox::set_mode(&disk, 0o600)?;
    // The SUT finds qemu-img on PATH: this one check gives it the real one.
    let shim = sandbox.bin.join("qemu-img");
    let _ = std::fs::remove_file(&shim);
    std::os::unix::fs::symlink(&qemu_img, &shim).map_err(|e| HarnessError::io(&shim, e))?;
    qemu_io(&qemu_io_tool, &disk, "write -P 0x11 0 64k")?;
    let saved = case.json(&sandbox, &["snapshot", "work", "clean"])?;
    if case.expect_ok(&saved).is_none() {
        return Ok(());
    }
    qemu_io(&qemu_io_tool, &disk, "write -P 0xab 0 64k")?;
    if !holds_pattern(&qemu_io_tool, &disk, 0xab)? {
        case.skip("qemu-io could not write the disk the check restores");
        return Ok(());
    }
    let restored = case.json(&sandbox, &["snapshot", "work", "clean", "--restore"])?;
    if let Some(data) = case.expect_ok(&restored).cloned() {
        expect_eq(case, &data, "/action", &json!("restore"));
        expect_eq(case, &data, "/tag", &json!("clean"));
        let back = holds_pattern(&qemu_io_tool, &disk, 0x11)?;
        case.ensure(
            back,
            "disk",
            "`snapshot --restore` answered ok but the disk still holds what was written after the save",
        );
    }
    Ok(())
}

fn forwards_of(vm: &Value) -> Vec<(u64, u64)> {
    vm.get("forwards")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| {
                    Some((
                        f.get("host_port")?.as_u64()?,
                        f.get("guest_port")?.as_u64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn clone_forwards_agree(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80).forward(8443, 443))?;
    let ran = case.json(&sandbox, &["clone", "work", "copy"])?;
    let Some(copied) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("forwards_copied"))
        .and_then(Value::as_bool)
    else {
        case.fail(
            "/data/forwards_copied",
            "clone answered no boolean forwards_copied",
        );
        return Ok(());
    };
    let source = get_vm(case, &sandbox, "work")?
        .map(|vm| forwards_of(&vm))
        .unwrap_or_default();
    let expected = if copied { source } else { Vec::new() };
    if let Some(vm) = get_vm(case, &sandbox, "copy")? {
        let stored = forwards_of(&vm);
        case.ensure(
            stored == expected,
            "/data/vm/forwards",
            format!("clone answered forwards_copied:{copied}, yet a later get of the clone shows forwards {stored:?}"),
        );
    }
    let listed = case.json(&sandbox, &["ls"])?;
    if let Some(vms) = case
        .expect_ok(&listed)
        .and_then(|d| d.get("vms"))
        .and_then(Value::as_array)
        .cloned()
    {
        if let Some(vm) = vms.iter().find(|v| str_at(v, "/name") == Some("copy")) {
            let stored = forwards_of(vm);
            case.ensure(
                stored == expected,
                "/data/vms/copy/forwards",
                format!("clone answered forwards_copied:{copied}, yet ls shows the clone's forwards {stored:?}"),
            );
        }
    }
    Ok(())
}

fn ls_allow_exec_prefield(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    for (name, stored, port) in [
        ("old", None, 2210),
        ("yes", Some(true), 2211),
        ("no", Some(false), 2212),
    ] {
        sandbox.write_vm(&VmFixture::live(name).allow_exec(stored).sshport(port))?;
    }
    let ran = case.json(&sandbox, &["ls"])?;
    let Some(vms) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("vms"))
        .and_then(Value::as_array)
        .cloned()
    else {
        return Ok(());
    };
    for (name, allow, access) in [
        ("old", true, "manage"),
        ("yes", true, "exec"),
        ("no", false, "manage"),
    ] {
        match vms.iter().find(|v| str_at(v, "/name") == Some(name)) {
            Some(vm) => {
                expect_eq(case, vm, "/allow_exec", &json!(allow));
                expect_eq(case, vm, "/agent_access", &json!(access));
            }
            None => case.fail("/data/vms", format!("the fixture VM {name} is not listed")),
        }
    }
    Ok(())
}

fn waited_ms_wall(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["wait", "work", "--until", "stopped"])?;
    let Some(waited) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("waited_ms"))
        .and_then(Value::as_u64)
    else {
        return Ok(());
    };
    let wall = ran.capture.duration_ms;
    case.ensure(
        waited <= wall + 1,
        "/data/waited_ms",
        format!("waited_ms is {waited} but the whole invocation took {wall} ms of wall time: not milliseconds"),
    );
    Ok(())
}

fn progress_bytes(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, files)) = super::pull::with_catalog(case)? else {
        return Ok(());
    };
    let served = files.payload.len() as u64;
    let ran = case.json(&sandbox, &["pull", "tiny"])?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let progress: Vec<Value> = ran
        .judgement
        .events()
        .into_iter()
        .filter(|e| str_at(e, "/type") == Some("progress"))
        .cloned()
        .collect();
    let Some(last) = progress.last() else {
        case.fail("stdout", "the pull emitted no progress event");
        return Ok(());
    };
    let total = last.pointer("/data/total").and_then(Value::as_u64);
    let done = last.pointer("/data/done").and_then(Value::as_u64);
    case.ensure(
        total == Some(served),
        "/data/total",
        format!("progress total is {total:?}; the mirror served {served} bytes"),
    );
    case.ensure(
        done == Some(served),
        "/data/done",
        format!("the last progress done is {done:?}; the mirror served {served} bytes"),
    );
    for (index, event) in progress.iter().enumerate() {
        let (Some(done), Some(total), Some(percent)) = (
            event.pointer("/data/done").and_then(Value::as_u64),
            event.pointer("/data/total").and_then(Value::as_u64),
            event.pointer("/data/percent").and_then(Value::as_u64),
        ) else {
            continue;
        };
        if let Some(computed) = (done * 100).checked_div(total) {
            case.ensure(
                computed.abs_diff(percent) <= 1,
                &format!("progress {index}/data/percent"),
                format!("percent {percent} does not agree with done/total {done}/{total}"),
            );
        }
    }
    drop(sandbox);
    Ok(())
}

fn update_read_back(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(
        &sandbox,
        &["update", "work", "--cpus", "3", "--ram", "2048"],
    )?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    let changed = data
        .get("changed")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for field in ["cpus", "ram"] {
        case.ensure(
            changed.contains(&json!(field)),
            "/data/changed",
            format!(
                "update changed {field} (the fixture had another value); changed is {changed:?}"
            ),
        );
    }
    expect_eq(case, &data, "/vm/cpus", &json!(3));
    expect_eq(case, &data, "/vm/ram_mb", &json!(2048));
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        for (pointer, wanted) in [("/cpus", 3), ("/ram_mb", 2048)] {
            case.ensure(
                vm.pointer(pointer) == Some(&json!(wanted)),
                &format!("get{pointer}"),
                format!(
                    "update answered {pointer} {wanted}, a later get shows {}",
                    vm.pointer(pointer)
                        .map_or("nothing".into(), Value::to_string)
                ),
            );
        }
    }
    let listed = case.json(&sandbox, &["ls"])?;
    if let Some(rows) = case.expect_ok(&listed).and_then(|d| d.get("vms")).cloned() {
        let row = rows.as_array().and_then(|r| {
            r.iter()
                .find(|v| str_at(v, "/name") == Some("work"))
                .cloned()
        });
        match row {
            Some(row) => {
                case.ensure(
                    row.get("cpus") == Some(&json!(3)) && row.get("ram_mb") == Some(&json!(2048)),
                    "ls/vms",
                    format!("update answered cpus 3 and ram_mb 2048, ls shows {row}"),
                );
            }
            None => case.fail("ls/vms", "ls does not list work after the update"),
        }
    }
    Ok(())
}

fn forward_refused_unsaved(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80))?;
    let ran = case.json(&sandbox, &["forward", "work", "80:80"])?;
    if ran.code() != Some("invalid_spec") {
        case.skip("the SUT did not refuse host port 80 with invalid_spec (FORWARD.low-port-invalid judges that)");
        return Ok(());
    }
    let wanted = json!([{"host_port": 8080, "guest_port": 80}]);
    let shown = case.json(&sandbox, &["forward", "work"])?;
    if let Some(data) = case.expect_ok(&shown).cloned() {
        case.ensure(
            data.get("forwards") == Some(&wanted),
            "/data/forwards",
            format!(
                "after a forward refused with invalid_spec, `forward work` shows {}; the stored forwards were {wanted}",
                data.get("forwards").map_or("nothing".into(), Value::to_string)
            ),
        );
    }
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        case.ensure(
            vm.get("forwards") == Some(&wanted),
            "get/forwards",
            format!(
                "after a forward refused with invalid_spec, get shows forwards {}",
                vm.get("forwards")
                    .map_or("nothing".into(), Value::to_string)
            ),
        );
    }
    Ok(())
}

fn create_agent_access_agrees(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let mut iso = vec![0u8; 32774];
    iso[32768] = 1;
    iso[32769..].copy_from_slice(b"CD001");
    let iso = sandbox.write_work_file("alpine-virt-3.20.3-x86_64.iso", &iso)?;
    let iso = iso.to_string_lossy().into_owned();
    let ran = case.json(
        &sandbox,
        &["create", "vm1", "--image", &iso, "--mode", "live"],
    )?;
    let Some(answered) = case.expect_ok(&ran).and_then(|d| d.get("vm")).cloned() else {
        return Ok(());
    };
    let Some(got) = get_vm(case, &sandbox, "vm1")? else {
        return Ok(());
    };
    for field in ["allow_exec", "agent_access"] {
        case.ensure(
            answered.get(field) == got.get(field),
            &format!("/data/vm/{field}"),
            format!(
                "create answered {field} {}, a later get shows {}",
                answered
                    .get(field)
                    .map_or("nothing".into(), Value::to_string),
                got.get(field).map_or("nothing".into(), Value::to_string)
            ),
        );
    }
    // The data root's vm.toml (the layout the fixtures write): an explicit key is a fact.
    let stored = std::fs::read_to_string(sandbox.vm_dir("vm1").join("vm.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|table| table.get("allow_exec").and_then(toml::Value::as_bool));
    if stored == Some(true) {
        for (label, vm) in [("create", &answered), ("get", &got)] {
            case.ensure(
                str_at(vm, "/agent_access") == Some("exec"),
                &format!("{label}/agent_access"),
                format!(
                    "vm.toml stores allow_exec = true, which maps to exec; {label} answered agent_access {}",
                    vm.get("agent_access").map_or("nothing".into(), Value::to_string)
                ),
            );
        }
    }
    Ok(())
}

fn capabilities_access_policy(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["capabilities"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    expect_eq(
        case,
        &data,
        "/access_policy/mcp_agent_access_enforced",
        &json!(true),
    );
    expect_eq(
        case,
        &data,
        "/access_policy/cli_agent_access_enforced",
        &json!(false),
    );
    let mut commands: Vec<String> = data
        .pointer("/access_policy/cli_commands")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    commands.sort();
    case.ensure(
        commands == ["cp", "exec"],
        "/data/access_policy/cli_commands",
        format!("cli_commands names the CLI commands that do not enforce agent_access (exec, cp); it is {commands:?}"),
    );
    Ok(())
}
