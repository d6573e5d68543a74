//! Owns the operators that act before the SUT runs: those that change its arguments and
//! those that answer in its place for the command lines they know (a command that does
//! nothing), one function each.

use serde_json::json;

/// `update-unnamed`: `update VM` also gets `--cpus 3`, which its answer then leaves out.
pub(super) fn update_unnamed(args: Vec<String>) -> Vec<String> {
    if args.iter().any(|a| a == "update") && !args.iter().any(|a| a.starts_with("--cpus")) {
        let mut args = args;
        args.extend(["--cpus".to_string(), "3".to_string()]);
        return args;
    }
    args
}

/// `update-persisted-elsewhere`: `update VM --cpus N` runs as `--cpus N+1` (the answer is
/// then put back to N by the result act).
pub(super) fn update_persisted_elsewhere(args: Vec<String>) -> Vec<String> {
    update_asking_more(args, "--cpus", 1)
}

/// An `update` whose numeric `flag` value runs `by` higher than it was given.
fn update_asking_more(mut args: Vec<String>, flag: &str, by: u64) -> Vec<String> {
    if words(&args).first() != Some(&"update") {
        return args;
    }
    if let Some(at) = args.iter().position(|a| a == flag) {
        if let Some(n) = args.get(at + 1).and_then(|v| v.parse::<u64>().ok()) {
            args[at + 1] = (n + by).to_string();
        }
    }
    args
}

/// Whether the data root holds a VM directory `name` (a mutant that acts only on a VM that
/// exists leaves `not_found` to the SUT, so only a history can catch it).
fn vm_exists(name: &str) -> bool {
    std::env::var_os("STOAT_HOME").is_some_and(|root| {
        std::path::Path::new(&root)
            .join(name)
            .join("vm.toml")
            .is_file()
    })
}

/// Whether `create NAME` found NAME free when this kit began (see `create_race_note`).
pub(super) static CREATE_FOUND_FREE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// `create-race-both-win`, before the SUT runs: notes whether the name a `create` names is
/// free in the data root (nothing by that name), so the result act knows a `name_taken`
/// that follows was a lost race rather than a name taken before.
pub(super) fn create_race_note(args: Vec<String>) -> Vec<String> {
    if let ["create", name, ..] = words(&args).as_slice() {
        let free = std::env::var_os("STOAT_HOME")
            .is_some_and(|root| !std::path::Path::new(&root).join(name).exists());
        CREATE_FOUND_FREE.store(free, std::sync::atomic::Ordering::SeqCst);
    }
    args
}

/// `rm-keeps-vm`: `rm VM -y` on an existing VM answers `{name, deleted: true}` without
/// running.
pub(super) fn rm_keeps_vm(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "-y" || a == "--yes") {
        return None;
    }
    let named = words(args);
    let ["rm", name, ..] = named.as_slice() else {
        return None;
    };
    if !vm_exists(name) {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "rm", "ok": true,
        "data": {"name": name, "deleted": true}});
    println!("{line}");
    Some(0)
}

/// `snapshot-delete-keeps-snapshot`: `snapshot VM TAG --delete` on a VM with a disk answers
/// `{vm, tag, action: delete}` without running.
pub(super) fn snapshot_delete_keeps_snapshot(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "--delete") {
        return None;
    }
    let named = words(args);
    let ["snapshot", name, tag, ..] = named.as_slice() else {
        return None;
    };
    let root = std::env::var_os("STOAT_HOME")?;
    if !std::path::Path::new(&root)
        .join(name)
        .join("disk.qcow2")
        .is_file()
    {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "snapshot", "ok": true,
        "data": {"vm": name, "tag": tag, "action": "delete"}});
    println!("{line}");
    Some(0)
}

/// Whether the VM `name` runs: its directory holds the `qemu.pid` a started VM has.
fn vm_running(name: &str) -> bool {
    std::env::var_os("STOAT_HOME").is_some_and(|root| {
        std::path::Path::new(&root)
            .join(name)
            .join("qemu.pid")
            .is_file()
    })
}

/// The lifecycle command `down-leaves-running` or `up-leaves-stopped` turned into a `get`
/// (`""`: none), for the result act to answer as that command.
pub(super) static LIFECYCLE_FAKED: std::sync::Mutex<&str> = std::sync::Mutex::new("");

/// Runs `get NAME` in place of `verb NAME` on a VM `wanted` accepts, noting `verb`.
fn lifecycle_as_get(
    mut args: Vec<String>,
    verb: &'static str,
    wanted: fn(&str) -> bool,
) -> Vec<String> {
    let named = words(&args);
    let [word, name] = named.as_slice() else {
        return args;
    };
    if *word != verb || !vm_exists(name) || !wanted(name) {
        return args;
    }
    if let Some(at) = args.iter().position(|a| a == verb) {
        args[at] = "get".into();
        *LIFECYCLE_FAKED.lock().unwrap_or_else(|p| p.into_inner()) = verb;
    }
    args
}

/// `down-leaves-running`, before the SUT runs: `down NAME` of a running VM runs `get NAME`.
pub(super) fn down_leaves_running(args: Vec<String>) -> Vec<String> {
    lifecycle_as_get(args, "down", vm_running)
}

/// `up-leaves-stopped`, before the SUT runs: `up NAME` of a stopped VM runs `get NAME`.
pub(super) fn up_leaves_stopped(args: Vec<String>) -> Vec<String> {
    lifecycle_as_get(args, "up", |name| !vm_running(name))
}

/// `snapshot-save-running-unsaved`: `snapshot VM TAG` (a save) of a running VM with a disk
/// answers `{vm, tag, action: save}` without running.
pub(super) fn snapshot_save_running_unsaved(args: &[String]) -> Option<i32> {
    if args
        .iter()
        .any(|a| matches!(a.as_str(), "--delete" | "--restore" | "--force"))
    {
        return None;
    }
    let named = words(args);
    let ["snapshot", name, tag] = named.as_slice() else {
        return None;
    };
    let root = std::env::var_os("STOAT_HOME")?;
    if !std::path::Path::new(&root)
        .join(name)
        .join("disk.qcow2")
        .is_file()
        || !vm_running(name)
    {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "snapshot", "ok": true,
        "data": {"vm": name, "tag": tag, "action": "save"}});
    println!("{line}");
    Some(0)
}

/// The file `clone-forwards-contradict-answer` leaves in a clone's directory: the source's
/// name, whose forwards the clone's next change brings in.
pub(super) const CLONE_MARK: &str = ".mutant-forwards-from";

/// `clone-forwards-contradict-answer`, before the SUT runs: an `update` or a changing
/// `forward` of a clone marked at its clone first gives it the source's stored forwards.
pub(super) fn clone_forwards_late(args: Vec<String>) -> Vec<String> {
    let named = words(&args);
    let name = match named.as_slice() {
        ["update", name, ..] => name.to_string(),
        // A forward that only shows is a read: it leaves the mark.
        ["forward", name, _, ..] => name.to_string(),
        ["forward", name]
            if args
                .iter()
                .any(|a| matches!(a.as_str(), "--add" | "--remove" | "--clear")) =>
        {
            name.to_string()
        }
        _ => return args,
    };
    let Some(root) = std::env::var_os("STOAT_HOME") else {
        return args;
    };
    let root = std::path::Path::new(&root);
    let mark = root.join(&name).join(CLONE_MARK);
    let Ok(source) = std::fs::read_to_string(&mark) else {
        return args;
    };
    let _ = std::fs::remove_file(&mark);
    let read = |vm: &str| -> Option<toml::Table> {
        std::fs::read_to_string(root.join(vm).join("vm.toml"))
            .ok()?
            .parse()
            .ok()
    };
    if let (Some(from), Some(mut to)) = (read(source.trim()), read(&name)) {
        if let Some(forwards) = from.get("forwards") {
            to.insert("forwards".into(), forwards.clone());
            let _ = std::fs::write(root.join(&name).join("vm.toml"), to.to_string());
        }
    }
    args
}

/// `forward-clear-unsaved`: `forward VM --clear` on an existing VM answers an empty list
/// without running.
pub(super) fn forward_clear_unsaved(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "--clear") {
        return None;
    }
    let named = words(args);
    let ["forward", name, ..] = named.as_slice() else {
        return None;
    };
    if !vm_exists(name) {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "forward", "ok": true,
        "data": {"vm": name, "forwards": [], "active": false, "applies_at": "next_start"}});
    println!("{line}");
    Some(0)
}

/// `up-no-apply`: `up VM` gets `--no-apply`.
pub(super) fn up_no_apply(args: Vec<String>) -> Vec<String> {
    let named = words(&args);
    if named.first() == Some(&"up") && named.len() >= 2 {
        let mut args = args;
        args.push("--no-apply".to_string());
        return args;
    }
    args
}

/// `recipe-update-stale`: `recipe update` runs as `recipe sync`.
pub(super) fn recipe_update_stale(args: Vec<String>) -> Vec<String> {
    let mut args = args;
    let recipe = args.iter().position(|a| a == "recipe");
    if let Some(at) = recipe.and_then(|r| {
        args[r + 1..]
            .iter()
            .position(|a| a == "update")
            .map(|u| r + 1 + u)
    }) {
        args[at] = "sync".to_string();
    }
    args
}

/// `json-eaten-after-exec`: emulates upstream's quirk, every --json is stoat's, even after
/// exec's VM name.
pub(super) fn json_eaten_after_exec(args: Vec<String>) -> Vec<String> {
    let had_json = args.iter().any(|a| a == "--json");
    let mut out: Vec<String> = args.into_iter().filter(|a| a != "--json").collect();
    if had_json {
        out.insert(0, "--json".to_string());
    }
    out
}

/// `recipe-rm-noop`: `recipe rm NAME` answers ok without removing anything.
pub(super) fn recipe_rm_noop(args: &[String]) -> Option<i32> {
    let operands = positionals_after(args, "recipe")?;
    let name = match operands.as_slice() {
        ["rm", name, ..] => name,
        _ => return None,
    };
    let line = json!({"v": 3, "type": "result", "cmd": "recipe", "ok": true,
        "data": {"name": name, "scope": "global"}});
    println!("{line}");
    Some(0)
}

/// `mcp-install-noop`: `mcp install CLIENT` answers ok without writing the client's config.
pub(super) fn mcp_install_noop(args: &[String]) -> Option<i32> {
    let named = words(args);
    let ["mcp", "install", client, ..] = named.as_slice() else {
        return None;
    };
    let home = std::env::var("HOME").unwrap_or_default();
    let line = json!({"v": 3, "type": "result", "cmd": "mcp", "ok": true,
        "data": {"client": client, "path": format!("{home}/.{client}/mcp.json"), "json": "{}"}});
    println!("{line}");
    Some(0)
}

/// `restore-noop`: `snapshot VM TAG --restore` answers ok without restoring.
pub(super) fn restore_noop(args: &[String]) -> Option<i32> {
    if !args.iter().any(|a| a == "--restore") {
        return None;
    }
    let operands = positionals_after(args, "snapshot")?;
    let (vm, tag) = (operands.first()?, operands.get(1)?);
    let line = json!({"v": 3, "type": "result", "cmd": "snapshot", "ok": true,
        "data": {"vm": vm, "tag": tag, "action": "restore"}});
    println!("{line}");
    Some(0)
}

/// `update-recipes-accepted`: `update VM --recipes NAME` stores NAME without looking it up
/// and answers ok, as an update that validates nothing would.
pub(super) fn update_recipes_accepted(args: &[String]) -> Option<i32> {
    let named = words(args);
    let vm = match named.as_slice() {
        ["update", vm, ..] => vm.to_string(),
        _ => return None,
    };
    let at = args.iter().position(|a| a == "--recipes")?;
    let recipe = args.get(at + 1)?.clone();
    let root = std::env::var_os("STOAT_HOME")?;
    let file = std::path::Path::new(&root).join(&vm).join("vm.toml");
    let mut table: toml::Table = std::fs::read_to_string(&file).ok()?.parse().ok()?;
    table.insert(
        "recipes".into(),
        toml::Value::Array(vec![toml::Value::String(recipe)]),
    );
    let _ = std::fs::write(&file, table.to_string());
    let line = json!({"v": 3, "type": "result", "cmd": "update", "ok": true,
        "data": {"vm": {"name": vm}, "changed": ["recipes"], "applies_at": "now"}});
    println!("{line}");
    Some(0)
}

/// `cli-enforces-access`: `exec VM ...` refused when the VM's stored agent_access is below
/// exec, as if the CLI applied MCP's permission levels.
pub(super) fn cli_enforces_access(args: &[String]) -> Option<i32> {
    let named = words(args);
    let vm = match named.as_slice() {
        ["exec", vm, ..] => vm.to_string(),
        _ => return None,
    };
    let root = std::env::var_os("STOAT_HOME")?;
    let text =
        std::fs::read_to_string(std::path::Path::new(&root).join(&vm).join("vm.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    // The contract's mapping: an explicit allow_exec = false reads as manage.
    let level = match (
        table.get("agent_access").and_then(|v| v.as_str()),
        table.get("allow_exec").and_then(|v| v.as_bool()),
    ) {
        (Some(level), _) => level.to_string(),
        (None, Some(false)) => "manage".to_string(),
        _ => return None,
    };
    if !matches!(level.as_str(), "none" | "observe" | "manage") {
        return None;
    }
    let line = json!({"v": 3, "type": "result", "cmd": "exec", "ok": false,
        "error": {"code": "access_denied", "message": format!("agent_access {level} does not allow exec")}});
    println!("{line}");
    Some(1)
}

/// The SUT's program as the kit was given it (`mutate --op OP -- <program> ...`).
fn sut_program() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--")?;
    args.get(at + 1).cloned()
}

/// `dry-run-runs-recipes`: `apply VM --dry-run` first runs the real apply (its answer thrown
/// away), then answers the dry run as the SUT does: a plan that ran the recipes anyway.
pub(super) fn dry_run_runs_recipes(args: &[String]) -> Option<i32> {
    if words(args).first() != Some(&"apply") || !args.iter().any(|a| a == "--dry-run") {
        return None;
    }
    let program = sut_program()?;
    let real: Vec<&String> = args.iter().filter(|a| *a != "--dry-run").collect();
    let _ = std::process::Command::new(program)
        .args(real)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    None
}

/// `update-ram-stored-elsewhere`: `update VM --ram N` runs as `--ram N+256` (the answer is
/// put back to N by the result act).
pub(super) fn update_ram_stored_elsewhere(args: Vec<String>) -> Vec<String> {
    update_asking_more(args, "--ram", 256)
}

/// `forward-refused-stored`: `forward VM H:G` with a host port under 1024 stores the pair
/// in vm.toml, then answers invalid_spec as the SUT would.
pub(super) fn forward_refused_stored(args: &[String]) -> Option<i32> {
    let named = words(args);
    let ["forward", vm, pair, ..] = named.as_slice() else {
        return None;
    };
    let (host, guest) = pair.split_once(':')?;
    let (host, guest) = (host.parse::<i64>().ok()?, guest.parse::<i64>().ok()?);
    if host >= 1024 {
        return None;
    }
    let root = std::env::var_os("STOAT_HOME")?;
    let file = std::path::Path::new(&root).join(vm).join("vm.toml");
    let mut table: toml::Table = std::fs::read_to_string(&file).ok()?.parse().ok()?;
    let mut forward = toml::Table::new();
    forward.insert("hostport".into(), toml::Value::Integer(host));
    forward.insert("guestport".into(), toml::Value::Integer(guest));
    match table.get_mut("forwards") {
        Some(toml::Value::Array(list)) => list.push(toml::Value::Table(forward)),
        _ => {
            table.insert(
                "forwards".into(),
                toml::Value::Array(vec![toml::Value::Table(forward)]),
            );
        }
    }
    let _ = std::fs::write(&file, table.to_string());
    let line = json!({"v": 3, "type": "result", "cmd": "forward", "ok": false,
        "error": {"code": "invalid_spec", "message": format!("host port {host} is below 1024")}});
    println!("{line}");
    Some(1)
}

/// `project-rm-unconfirmed-deletes`: no-name `rm` without -y runs `rm -y` (its answer thrown
/// away), then answers confirmation_required as the SUT would.
pub(super) fn project_rm_unconfirmed_deletes(args: &[String]) -> Option<i32> {
    if words(args) != ["rm"] || args.iter().any(|a| a == "-y" || a == "--yes") {
        return None;
    }
    let program = sut_program()?;
    let _ = std::process::Command::new(program)
        .args(args)
        .arg("-y")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let line = json!({"v": 3, "type": "result", "cmd": "rm", "ok": false,
        "error": {"code": "confirmation_required", "message": "rm needs -y under --json"}});
    println!("{line}");
    Some(1)
}

/// The positional arguments after the subcommand `name` (flags and their values skipped
/// only when they are `--flag=value` or bare switches this kit knows).
fn positionals_after<'a>(args: &'a [String], name: &str) -> Option<Vec<&'a str>> {
    let start = args.iter().position(|a| a == name)?;
    Some(
        args[start + 1..]
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect(),
    )
}

/// The words of a command line that are not flags (a flag's value counts as a word).
pub(super) fn words(args: &[String]) -> Vec<&str> {
    args.iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect()
}
