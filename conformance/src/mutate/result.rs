//! Owns the operators that act on the answer once the SUT exited: [`Answer`] (the lines,
//! the parsed result and the exit status) and one function per operator that rewrites it.

use base64::Engine as _;
use serde_json::{json, Value};

use super::argv::words;

/// The SUT's answer as the result operators see it: every stdout line from the result on,
/// the result parsed, the facts read off it, and the exit status to use.
pub(crate) struct Answer<'a> {
    pub lines: Vec<String>,
    /// The index of the (last) result line in `lines`.
    pub at: usize,
    pub result: Value,
    /// The result's `cmd` ("" when absent).
    pub cmd: String,
    pub ok: Option<bool>,
    pub error_code: Option<String>,
    pub code: i32,
    /// The arguments the SUT was run with.
    pub args: &'a [String],
    /// The SUT's program (the kit's first operand).
    pub program: &'a str,
}

/// `two-results`: a second result line.
pub(super) fn two_results(a: &mut Answer) {
    a.lines.push(a.lines[a.at].clone());
}

/// `result-not-last`: an event after the result.
pub(super) fn result_not_last(a: &mut Answer) {
    a.lines
        .push(json!({"v": 3, "type": "log", "cmd": a.cmd, "data": {"line": "late"}}).to_string());
}

/// `no-result`: the result line dropped (exit 1).
pub(super) fn no_result(a: &mut Answer) {
    a.lines.remove(a.at);
    a.code = 1;
}

/// `no-result-exit-0`: the result line dropped, exit 0.
pub(super) fn no_result_exit_0(a: &mut Answer) {
    a.lines.remove(a.at);
    a.code = 0;
}

/// `canceled-no-result`: an answer of canceled dropped (exit 1 kept).
pub(super) fn canceled_no_result(a: &mut Answer) {
    if a.error_code.as_deref() == Some("canceled") {
        a.lines.remove(a.at);
        a.code = 1;
    }
}

/// `canceled-exit-0`: an answer of canceled with exit status 0.
pub(super) fn canceled_exit_0(a: &mut Answer) {
    if a.error_code.as_deref() == Some("canceled") {
        a.code = 0;
    }
}

/// `canceled-vm-started`: after an `up VM` that answered canceled, the VM is started anyway
/// (`up VM --no-wait` by the same SUT), and the answer still says canceled.
pub(super) fn canceled_vm_started(a: &mut Answer) {
    if a.cmd != "up" || a.error_code.as_deref() != Some("canceled") {
        return;
    }
    let named = words(a.args);
    let Some(at) = named.iter().position(|w| *w == "up") else {
        return;
    };
    let Some(vm) = named.get(at + 1) else {
        return;
    };
    let leading: Vec<&String> = a
        .args
        .iter()
        .take_while(|w| *w != "--json" && *w != "up")
        .collect();
    let _ = std::process::Command::new(a.program)
        .args(leading)
        .args(["--json", "up", vm, "--no-wait"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// `prose-line`: a line of prose before the result.
pub(super) fn prose_line(a: &mut Answer) {
    let cmd = a.cmd.clone();
    a.lines.insert(a.at, format!("running {cmd}..."));
}

/// `null-list`: an empty list emitted as null.
pub(super) fn null_list(a: &mut Answer) {
    if let Some(data) = a.result.get_mut("data") {
        null_first_list(data);
    }
    a.lines[a.at] = a.result.to_string();
}

/// `ok-on-event`: an event carrying ok.
pub(super) fn ok_on_event(a: &mut Answer) {
    a.lines.insert(
        a.at,
        json!({"v": 3, "type": "log", "cmd": a.cmd, "ok": true, "data": {"line": "x"}}).to_string(),
    );
}

/// `ok-missing`: the result without ok.
pub(super) fn ok_missing(a: &mut Answer) {
    if let Some(map) = a.result.as_object_mut() {
        map.remove("ok");
    }
    a.lines[a.at] = a.result.to_string();
}

/// `data-and-error`: data and error together.
pub(super) fn data_and_error(a: &mut Answer) {
    if a.ok == Some(true) {
        a.result["error"] = json!({"code": "internal", "message": "both"});
    } else {
        a.result["data"] = json!({});
    }
    a.lines[a.at] = a.result.to_string();
}

/// `exit-3`: exit 3 instead of 1.
pub(super) fn exit_3(a: &mut Answer) {
    if a.code == 1 {
        a.code = 3;
    }
}

/// `usage-exit-1`: a usage error exiting 1.
pub(super) fn usage_exit_1(a: &mut Answer) {
    if a.error_code.as_deref() == Some("usage") {
        a.code = 1;
    }
}

/// `usage-exit-0`: a usage error exiting 0.
pub(super) fn usage_exit_0(a: &mut Answer) {
    if a.error_code.as_deref() == Some("usage") {
        a.code = 0;
    }
}

/// `error-exit-0`: a failed result exiting 0.
pub(super) fn error_exit_0(a: &mut Answer) {
    if a.ok == Some(false) {
        a.code = 0;
    }
}

/// `ok-exit-1`: an ok result exiting 1.
pub(super) fn ok_exit_1(a: &mut Answer) {
    if a.ok == Some(true) && a.cmd != "exec" && a.cmd != "doctor" {
        a.code = 1;
    }
}

/// `ansi-raw`: ANSI colour around a line.
pub(super) fn ansi_raw(a: &mut Answer) {
    a.lines[a.at] = format!("\x1b[32m{}\x1b[0m", a.lines[a.at]);
}

/// `ansi-in-string`: ANSI colour inside a string value.
pub(super) fn ansi_in_string(a: &mut Answer) {
    if let Some(data) = a.result.get_mut("data") {
        colour_first_string(data);
    }
    a.lines[a.at] = a.result.to_string();
}

/// `leak-data-root`: a path under STOAT_HOME in data.
pub(super) fn leak_data_root(a: &mut Answer) {
    let root = std::env::var("STOAT_HOME").unwrap_or_default();
    if let Some(target) = payload_object(&mut a.result) {
        target.insert("disk_path".into(), json!(format!("{root}/work/disk.qcow2")));
    }
    a.lines[a.at] = a.result.to_string();
}

/// `leak-password`: the console password in data.
pub(super) fn leak_password(a: &mut Answer) {
    if let Some(password) = planted_password() {
        if let Some(target) = payload_object(&mut a.result) {
            target.insert("console".into(), json!(password));
        }
    }
    a.lines[a.at] = a.result.to_string();
}

/// `exec-exit-passthrough`: exec --json exiting with the guest's status.
pub(super) fn exec_exit_passthrough(a: &mut Answer) {
    if a.cmd == "exec" && a.ok == Some(true) {
        a.code = a
            .result
            .pointer("/data/exit_code")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
    }
}

/// `exec-lossy`: non-UTF-8 exec output emitted lossily as plain text.
pub(super) fn exec_lossy(a: &mut Answer) {
    if a.cmd == "exec" {
        if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
            for stream in ["stdout", "stderr"] {
                if let Some(encoded) = data.remove(&format!("{stream}_base64")) {
                    data.remove(&format!("{stream}_encoding"));
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(encoded.as_str().unwrap_or(""))
                        .unwrap_or_default();
                    data.insert(stream.into(), json!(String::from_utf8_lossy(&bytes)));
                }
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `exec-omit-empty`: empty exec streams omitted.
pub(super) fn exec_omit_empty(a: &mut Answer) {
    if a.cmd == "exec" {
        if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
            data.retain(|k, v| !((k == "stdout" || k == "stderr") && v == &json!("")));
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `exec-both-fields`: a plain field next to its base64 twin.
pub(super) fn exec_both_fields(a: &mut Answer) {
    if a.cmd == "exec" {
        if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
            for stream in ["stdout", "stderr"] {
                if data.contains_key(&format!("{stream}_base64")) {
                    data.insert(stream.into(), json!(""));
                }
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `base64-for-utf8`: base64 for valid UTF-8 output (SHOULD).
pub(super) fn base64_for_utf8(a: &mut Answer) {
    if a.cmd == "exec" {
        if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
            if let Some(Value::String(text)) = data.remove("stdout") {
                data.insert(
                    "stdout_base64".into(),
                    json!(base64::engine::general_purpose::STANDARD.encode(text.as_bytes())),
                );
                data.insert("stdout_encoding".into(), json!("base64"));
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `wrong-cmd`: the result naming another cmd.
pub(super) fn wrong_cmd(a: &mut Answer) {
    let cmd = a.cmd.clone();
    a.result["cmd"] = json!(format!("x{cmd}"));
    a.lines[a.at] = a.result.to_string();
}

/// `doctor-unhealthy-exit-1`: doctor exiting 1 when unhealthy.
pub(super) fn doctor_unhealthy_exit_1(a: &mut Answer) {
    if a.cmd == "doctor" && a.result.pointer("/data/healthy") == Some(&json!(false)) {
        a.code = 1
    }
}

/// `leak-path-in-message`: the data root named in an error message.
pub(super) fn leak_path_in_message(a: &mut Answer) {
    if a.ok == Some(false) {
        let root = std::env::var("STOAT_HOME").unwrap_or_default();
        if let Some(Value::String(message)) = a.result.pointer_mut("/error/message") {
            message.push_str(&format!(" (under {root}/work)"));
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `update-unnamed`: update also changing cpus, a field that was not passed (and not reporting it).
pub(super) fn update_unnamed(a: &mut Answer) {
    if a.cmd == "update" {
        if let Some(Value::Array(changed)) = a.result.pointer_mut("/data/changed") {
            changed.retain(|c| c != "cpus");
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `update-persisted-elsewhere`: the answer of an update run with `--cpus N+1` shows N.
pub(super) fn update_persisted_elsewhere(a: &mut Answer) {
    update_answers_less(a, "--cpus", "cpus", 1);
}

/// An `update` run with `flag` answering the VM's `field` as `by` less than it stored.
fn update_answers_less(a: &mut Answer, flag: &str, field: &str, by: u64) {
    if a.cmd != "update" || !a.args.iter().any(|x| x == flag) {
        return;
    }
    if let Some(value) = a.result["data"]["vm"][field].as_u64() {
        a.result["data"]["vm"][field] = json!(value.saturating_sub(by));
        a.lines[a.at] = a.result.to_string();
    }
}

/// `create-race-both-win`: a `create` that answered `name_taken` for a name that was free
/// when the kit began (another create won the race in between) answers ok with the
/// winner's VM, read with `get`, as a create that dropped the data-root lock would.
pub(super) fn create_race_both_win(a: &mut Answer) {
    use std::sync::atomic::Ordering;
    if a.cmd != "create"
        || a.error_code.as_deref() != Some("name_taken")
        || !super::argv::CREATE_FOUND_FREE.load(Ordering::SeqCst)
    {
        return;
    }
    let named = words(a.args);
    let ["create", name, ..] = named.as_slice() else {
        return;
    };
    let Ok(output) = std::process::Command::new(a.program)
        .args(["--json", "get", name])
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return;
    };
    let Some(mut vm) = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|l| l.pointer("/data/vm").cloned())
    else {
        return;
    };
    if let Some(map) = vm.as_object_mut() {
        map.remove("health");
        map.remove("recipes_detail");
    }
    a.result = json!({"v": 3, "type": "result", "cmd": "create", "ok": true, "data": {"vm": vm}});
    a.lines[a.at] = a.result.to_string();
    a.code = 0;
}

/// `down-leaves-running` and `up-leaves-stopped`, after the `get` their argv act ran in
/// place of the command: answers as that command, `{vm}` with the state it claims (down:
/// stopped, up: running), the VM otherwise as `get` read it.
pub(super) fn lifecycle_as_answered(a: &mut Answer) {
    let verb = std::mem::take(
        &mut *super::argv::LIFECYCLE_FAKED
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    if verb.is_empty() || a.cmd != "get" || a.ok != Some(true) {
        return;
    }
    let Some(mut vm) = a.result.pointer("/data/vm").cloned() else {
        return;
    };
    if let Some(map) = vm.as_object_mut() {
        map.remove("health");
        map.remove("recipes_detail");
        let state = if verb == "down" { "stopped" } else { "running" };
        map.insert("state".into(), json!(state));
    }
    a.result = json!({"v": 3, "type": "result", "cmd": verb, "ok": true, "data": {"vm": vm}});
    a.lines[a.at] = a.result.to_string();
    a.code = 0;
}

/// `waited-us`: wait's waited_ms in microseconds.
pub(super) fn waited_us(a: &mut Answer) {
    if a.cmd == "wait" {
        if let Some(ms) = a.result.pointer("/data/waited_ms").and_then(Value::as_u64) {
            a.result["data"]["waited_ms"] = json!(ms * 1000 + 1000);
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `ls-prefield-deny`: ls giving a VM that predates allow_exec allow_exec:false.
pub(super) fn ls_prefield_deny(a: &mut Answer) {
    if a.cmd == "ls" {
        let root = std::env::var_os("STOAT_HOME").unwrap_or_default();
        if let Some(Value::Array(vms)) = a.result.pointer_mut("/data/vms") {
            for vm in vms {
                let name = vm
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let stored = std::fs::read_to_string(
                    std::path::Path::new(&root).join(&name).join("vm.toml"),
                )
                .unwrap_or_default();
                if !name.is_empty() && !stored.contains("allow_exec") {
                    vm["allow_exec"] = json!(false);
                }
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `applied-null`: apply answering applied: null when nothing ran.
pub(super) fn applied_null(a: &mut Answer) {
    if a.cmd == "apply" && a.ok == Some(true) {
        if a.result
            .pointer("/data/applied")
            .is_some_and(|a| a == &json!([]))
        {
            a.result["data"]["applied"] = Value::Null;
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `share-internal`: a missing share answered with internal instead of share_invalid.
pub(super) fn share_internal(a: &mut Answer) {
    if a.error_code.as_deref() == Some("share_invalid") {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `git-required-internal`: a missing git answered with internal instead of git_required.
pub(super) fn git_required_internal(a: &mut Answer) {
    if a.error_code.as_deref() == Some("git_required") {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `monitor-rejected-internal`: qemu refusing a monitor command answered with internal instead of monitor_rejected.
pub(super) fn monitor_rejected_internal(a: &mut Answer) {
    if a.error_code.as_deref() == Some("monitor_rejected") {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `show-unknown-internal`: recipe show of an unknown recipe answered with internal.
pub(super) fn show_unknown_internal(a: &mut Answer) {
    if a.cmd == "recipe" && matches!(a.error_code.as_deref(), Some("not_found" | "invalid_spec")) {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `recipe-pin-short`: recipe add/lock/sync/update answering the 7-character commit instead of the full resolved one.
pub(super) fn recipe_pin_short(a: &mut Answer) {
    if a.cmd == "recipe" && a.ok == Some(true) {
        let data = &mut a.result["data"];
        let shorten = |entry: &mut Value| {
            if let Some(commit) = entry.get("commit").and_then(Value::as_str) {
                if commit.len() == 40 {
                    entry["commit"] = json!(commit[..7].to_string());
                }
            }
        };
        shorten(data);
        if let Some(Value::Array(rows)) = data.get_mut("recipes") {
            rows.iter_mut().for_each(shorten);
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `recipe-list-no-pin`: recipe list rows of remote recipes without source, ref and commit.
pub(super) fn recipe_list_no_pin(a: &mut Answer) {
    if a.cmd == "recipe" && a.ok == Some(true) {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/recipes") {
            for row in rows.iter_mut().filter(|r| {
                matches!(
                    r.get("scope").and_then(Value::as_str),
                    Some("global" | "project")
                )
            }) {
                if let Some(map) = row.as_object_mut() {
                    for key in ["source", "ref", "commit"] {
                        map.remove(key);
                    }
                }
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `refresh-all-current`: recipe refresh calling every file current, a file the user changed included.
pub(super) fn refresh_all_current(a: &mut Answer) {
    if a.cmd == "recipe" && a.ok == Some(true) {
        if let Some(Value::Array(files)) = a.result.pointer_mut("/data/files") {
            for file in files.iter_mut().filter(|f| f.get("status").is_some()) {
                file["status"] = json!("current");
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `search-drops-os`: recipe search answering every IndexEntry with os: [].
pub(super) fn search_drops_os(a: &mut Answer) {
    if a.cmd == "recipe" && a.ok == Some(true) {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/recipes") {
            for row in rows.iter_mut().filter(|r| r.get("os").is_some()) {
                row["os"] = json!([]);
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `recipe-new-internal`: recipe new validation answered with internal instead of invalid_spec.
pub(super) fn recipe_new_internal(a: &mut Answer) {
    if a.cmd == "recipe"
        && a.error_code.as_deref() == Some("invalid_spec")
        && words(a.args).first() == Some(&"recipe")
        && words(a.args).get(1) == Some(&"new")
    {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `image-missing-not-found`: create of a catalog image not yet pulled answered not_found instead of image_not_downloaded.
pub(super) fn image_missing_not_found(a: &mut Answer) {
    if a.error_code.as_deref() == Some("image_not_downloaded") {
        a.result["error"]["code"] = json!("not_found");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `monitor-unreachable-internal`: a qemu without a monitor socket answered with internal instead of monitor_unreachable.
pub(super) fn monitor_unreachable_internal(a: &mut Answer) {
    if a.error_code.as_deref() == Some("monitor_unreachable") {
        a.result["error"]["code"] = json!("internal");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `leak-password-logs`: the console password in a line of `logs` (after up of a cloud VM).
pub(super) fn leak_password_logs(a: &mut Answer) {
    if a.cmd == "logs" && a.ok == Some(true) {
        if let (Some(password), Some(Value::Array(logged))) =
            (planted_password(), a.result.pointer_mut("/data/lines"))
        {
            logged.push(json!(format!("cloud-init: console password is {password}")));
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `leak-password-hex`: the console password hex-encoded in a line of `logs`.
pub(super) fn leak_password_hex(a: &mut Answer) {
    if a.cmd == "logs" && a.ok == Some(true) {
        if let (Some(password), Some(Value::Array(logged))) =
            (planted_password(), a.result.pointer_mut("/data/lines"))
        {
            let hex: String = password.bytes().map(|b| format!("{b:02x}")).collect();
            logged.push(json!(format!("cloud-init: console secret (hex) {hex}")));
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `leak-vm-path-in-message`: a failed command's message names the monitor socket of the VM
/// it was about (a VM the data root holds).
pub(super) fn leak_vm_path_in_message(a: &mut Answer) {
    if a.ok != Some(false) {
        return;
    }
    let Some(root) = std::env::var_os("STOAT_HOME") else {
        return;
    };
    let root = std::path::PathBuf::from(root);
    let Some(dir) = words(a.args)
        .iter()
        .map(|w| root.join(w))
        .find(|dir| dir.join("vm.toml").is_file())
    else {
        return;
    };
    if let Some(Value::String(message)) = a.result.pointer_mut("/error/message") {
        message.push_str(&format!(" (monitor {})", dir.join("qmp.sock").display()));
    }
    a.lines[a.at] = a.result.to_string();
}

/// `plan-version-never-ran`: every ApplyPlan row of a dry run carries a version, a recipe
/// that never ran included.
pub(super) fn plan_version_never_ran(a: &mut Answer) {
    if a.cmd != "apply" || a.result.pointer("/data/dry_run") != Some(&json!(true)) {
        return;
    }
    if let Some(Value::Array(plan)) = a.result.pointer_mut("/data/plan") {
        for row in plan.iter_mut().filter_map(Value::as_object_mut) {
            row.entry("version").or_insert(json!("1.0"));
        }
    }
    a.lines[a.at] = a.result.to_string();
}

/// `log-lines-joined`: consecutive log events merged into one whose line holds them all,
/// joined by newlines (the stream is held to the end to see the whole run).
pub(super) fn log_lines_joined(a: &mut Answer) {
    let mut out: Vec<String> = Vec::new();
    let mut merged: Option<Value> = None;
    let flush = |merged: &mut Option<Value>, out: &mut Vec<String>| {
        if let Some(event) = merged.take() {
            out.push(event.to_string());
        }
    };
    for (index, line) in a.lines.iter().enumerate() {
        let value = serde_json::from_str::<Value>(line).ok();
        let log_line = value
            .as_ref()
            .filter(|v| index < a.at && v.get("type") == Some(&json!("log")))
            .and_then(|v| v.pointer("/data/line").and_then(Value::as_str));
        match (log_line, merged.as_mut()) {
            (Some(text), Some(event)) => {
                let joined = format!(
                    "{}\n{text}",
                    event
                        .pointer("/data/line")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                );
                event["data"]["line"] = json!(joined);
            }
            (Some(_), None) => merged = value,
            (None, _) => {
                flush(&mut merged, &mut out);
                out.push(line.clone());
            }
        }
    }
    flush(&mut merged, &mut out);
    a.at = out
        .iter()
        .rposition(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("type") == Some(&json!("result")))
        })
        .unwrap_or(out.len().saturating_sub(1));
    a.lines = out;
}

/// `byo-iso-in-vm`: every VM object gets the `iso` its vm.toml records (a BYO image's
/// absolute host path).
pub(super) fn byo_iso_in_vm(a: &mut Answer) {
    let Some(root) = std::env::var_os("STOAT_HOME") else {
        return;
    };
    let iso_of = |name: &str| -> Option<String> {
        let text =
            std::fs::read_to_string(std::path::Path::new(&root).join(name).join("vm.toml")).ok()?;
        let table: toml::Table = text.parse().ok()?;
        table
            .get("iso")
            .and_then(|v| v.as_str())
            .filter(|iso| !iso.is_empty())
            .map(str::to_string)
    };
    let mut vms: Vec<&mut Value> = Vec::new();
    if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
        for (key, value) in data.iter_mut() {
            match (key.as_str(), value) {
                ("vm", vm @ Value::Object(_)) => vms.push(vm),
                ("vms", Value::Array(rows)) => vms.extend(rows.iter_mut()),
                _ => {}
            }
        }
    }
    for vm in vms {
        let name = vm
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let (Some(iso), Some(object)) = (iso_of(&name), vm.as_object_mut()) {
            object.insert("iso".into(), json!(iso));
        }
    }
    a.lines[a.at] = a.result.to_string();
}

/// `health-always-ok`: `get` reporting every recipe's health and the aggregate as ok.
pub(super) fn health_always_ok(a: &mut Answer) {
    if a.cmd != "get" || a.ok != Some(true) {
        return;
    }
    if let Some(vm) = a
        .result
        .pointer_mut("/data/vm")
        .and_then(Value::as_object_mut)
    {
        if vm.contains_key("health") {
            vm.insert("health".into(), json!("ok"));
        }
        if let Some(Value::Array(details)) = vm.get_mut("recipes_detail") {
            for detail in details.iter_mut().filter_map(Value::as_object_mut) {
                detail.insert("health".into(), json!("ok"));
            }
        }
    }
    a.lines[a.at] = a.result.to_string();
}

/// `skipped-reason-blank`: an apply that ran nothing answering skipped_reason "".
pub(super) fn skipped_reason_blank(a: &mut Answer) {
    if a.cmd != "apply" || a.result.pointer("/data/applied") != Some(&json!([])) {
        return;
    }
    if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
        if data.contains_key("skipped_reason") {
            data.insert("skipped_reason".into(), json!(""));
        }
    }
    a.lines[a.at] = a.result.to_string();
}

/// `update-ram-stored-elsewhere`: the answer of an update run with `--ram N+256` shows N.
pub(super) fn update_ram_stored_elsewhere(a: &mut Answer) {
    update_answers_less(a, "--ram", "ram_mb", 256);
}

/// `create-exec-as-manage`: create's answer mapping allow_exec true to agent_access manage.
pub(super) fn create_exec_as_manage(a: &mut Answer) {
    if a.cmd != "create" || a.ok != Some(true) {
        return;
    }
    if a.result.pointer("/data/vm/agent_access") == Some(&json!("exec")) {
        a.result["data"]["vm"]["agent_access"] = json!("manage");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `capabilities-cli-enforced`: capabilities claiming the CLI enforces agent_access.
pub(super) fn capabilities_cli_enforced(a: &mut Answer) {
    if a.cmd != "capabilities" || a.ok != Some(true) {
        return;
    }
    if let Some(policy) = a
        .result
        .pointer_mut("/data/access_policy")
        .and_then(Value::as_object_mut)
    {
        policy.insert("cli_agent_access_enforced".into(), json!(true));
        a.lines[a.at] = a.result.to_string();
    }
}

/// `wait-applied-as-reachable`: wait --until applied treated as reachable (answering until: reachable).
pub(super) fn wait_applied_as_reachable(a: &mut Answer) {
    if a.cmd == "wait" && a.result.pointer("/data/until") == Some(&json!("applied")) {
        a.result["data"]["until"] = json!("reachable");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `fanout-reversed`: a ProjectRun listing the declared VMs in reverse declaration order.
pub(super) fn fanout_reversed(a: &mut Answer) {
    if is_project_run(&a.result) {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/vms") {
            rows.reverse();
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// Only where the contract tolerates it: prose before an up/down/apply ProjectRun.
pub(super) fn fanout_prose(a: &mut Answer) {
    let cmd = a.cmd.clone();
    if is_project_run(&a.result) && matches!(a.cmd.as_str(), "up" | "down" | "apply") {
        a.lines
            .insert(a.at, format!("==> {cmd}: every VM of the project"));
    }
}

/// `status-no-drift`: status reporting no drift although stoat.toml changed a field.
pub(super) fn status_no_drift(a: &mut Answer) {
    if a.cmd == "status" && a.ok == Some(true) {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/vms") {
            for row in rows.iter_mut().filter(|r| r.get("drift").is_some()) {
                row["drift"] = json!([]);
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `ls-project-no-key`: ls rows of project VMs without their declaration key (key: "").
pub(super) fn ls_project_no_key(a: &mut Answer) {
    if a.cmd == "ls" && a.ok == Some(true) {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/vms") {
            for row in rows.iter_mut().filter(|r| str_nonempty(r, "project")) {
                row["key"] = json!("");
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `init-relative-path`: init answering a relative path instead of the stoat.toml it wrote.
pub(super) fn init_relative_path(a: &mut Answer) {
    if a.cmd == "init" && a.ok == Some(true) {
        a.result["data"]["path"] = json!("stoat.toml");
        a.lines[a.at] = a.result.to_string();
    }
}

/// `guest-show-other`: guest show answering a guest other than the one named.
pub(super) fn guest_show_other(a: &mut Answer) {
    if a.cmd == "guest" {
        if let Some(Value::String(name)) = a.result.pointer_mut("/data/guest/name") {
            *name = format!("not-{name}");
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `mcp-doctor-contract-2`: mcp doctor naming contract 2 while version names 3.
pub(super) fn mcp_doctor_contract_2(a: &mut Answer) {
    if a.cmd == "mcp" && a.result.pointer("/data/transport").is_some() {
        a.result["data"]["contract"] = json!(2);
        a.lines[a.at] = a.result.to_string();
    }
}

/// `mcp-doctor-stale`: mcp doctor calling every entry stale (current: false), the one this binary just wrote included.
pub(super) fn mcp_doctor_stale(a: &mut Answer) {
    if a.cmd == "mcp" {
        if let Some(Value::Array(rows)) = a.result.pointer_mut("/data/clients") {
            for row in rows.iter_mut() {
                row["current"] = json!(false);
            }
        }
        a.lines[a.at] = a.result.to_string();
    }
}

/// `unknown-event`: nothing: an unknown event type must be tolerated.
pub(super) fn unknown_event(a: &mut Answer) {
    a.lines.insert(
        a.at,
        json!({"v": 3, "type": "heartbeat", "cmd": a.cmd, "data": {"beat": 1}}).to_string(),
    );
}

/// `extra-field`: nothing: additive fields are allowed.
pub(super) fn extra_field(a: &mut Answer) {
    if let Some(data) = a.result.get_mut("data").and_then(Value::as_object_mut) {
        data.insert("x_future_field".into(), json!(1));
    }
    a.lines[a.at] = a.result.to_string();
}

/// `leak-password-base64`: the console password base64-encoded in a VM object.
pub(super) fn leak_password_base64(a: &mut Answer) {
    leak_password_as(a, |password| {
        base64::engine::general_purpose::STANDARD.encode(format!("console={password}"))
    });
}

/// `leak-password-url`: the console password URL-encoded in a VM object.
pub(super) fn leak_password_url(a: &mut Answer) {
    leak_password_as(a, |password| {
        password
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    });
}

/// `leak-password-escaped`: the console password JSON-escaped (`\uXXXX`) in a VM object.
pub(super) fn leak_password_escaped(a: &mut Answer) {
    leak_password_as(a, |_| "@@ESCAPED@@".to_string());
}

/// Puts the planted password, encoded by `encode`, in the payload's `note`; the marker
/// `@@ESCAPED@@` becomes the password written as `\\uXXXX` escapes.
fn leak_password_as(a: &mut Answer, encode: impl Fn(&str) -> String) {
    if let Some(password) = planted_password() {
        let encoded = encode(&password);
        if let Some(target) = payload_object(&mut a.result) {
            target.insert("note".into(), json!(encoded));
        }
        let escaped: String = password
            .encode_utf16()
            .map(|u| format!("\\u{u:04x}"))
            .collect();
        a.lines[a.at] = a.result.to_string().replace("@@ESCAPED@@", &escaped);
    }
}

/// A ProjectRun: a fan-out's result, whose rows carry a status.
fn is_project_run(result: &Value) -> bool {
    result.pointer("/data/project").is_some()
        && result
            .pointer("/data/vms")
            .and_then(Value::as_array)
            .is_some_and(|rows| rows.iter().all(|r| r.get("status").is_some()))
}

fn str_nonempty(value: &Value, key: &str) -> bool {
    value
        .get(key)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

fn payload_object(result: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let data = result.get_mut("data")?;
    if data.get("vm").is_some_and(Value::is_object) {
        return data.get_mut("vm")?.as_object_mut();
    }
    data.as_object_mut()
}

fn null_first_list(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            for (_, child) in map.iter_mut() {
                if child.as_array().is_some_and(Vec::is_empty) {
                    *child = Value::Null;
                    return true;
                }
            }
            map.iter_mut().any(|(_, child)| null_first_list(child))
        }
        Value::Array(items) => items.iter_mut().any(null_first_list),
        _ => false,
    }
}

fn colour_first_string(value: &mut Value) -> bool {
    match value {
        Value::String(text) => {
            *text = format!("\u{1b}[1m{text}\u{1b}[0m");
            true
        }
        Value::Object(map) => map
            .iter_mut()
            .filter(|(k, _)| !matches!(k.as_str(), "stdout" | "stderr"))
            .any(|(_, child)| colour_first_string(child)),
        Value::Array(items) => items.iter_mut().any(colour_first_string),
        _ => false,
    }
}

/// The console password of any VM under `$STOAT_HOME` (what a careless DTO would copy).
pub(super) fn planted_password() -> Option<String> {
    let root = std::env::var_os("STOAT_HOME")?;
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("vm.toml")) else {
            continue;
        };
        let Ok(value) = toml::from_str::<toml::Value>(&text) else {
            continue;
        };
        if let Some(password) = value.get("console_password").and_then(|p| p.as_str()) {
            return Some(password.to_string());
        }
    }
    None
}
