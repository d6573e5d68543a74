//! Owns the checks of VM commands on fixtures written straight into the data root: ls, get,
//! rm, wait, snapshot, forward, update, logs, doctor, clone, ssh-command and the error codes
//! every VM command shares.

use serde_json::{json, Value};

use super::helpers::{
    expect_eq, get_vm, str_at, with_disk_work, with_running_work, with_work, Banner,
};
use super::{from_design, scenario, v3_only, CheckDef, Tier};
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::{Case, Inv};
use crate::sandbox::VmFixture;
use crate::spec::Edition;

pub(super) const CHECKS: &[CheckDef] = &[
    scenario("LS.empty-is-array", Must, Tier::Pure, "json-v3#types", "Every list-valued field is [] when empty, never null.",
        "`ls` on an empty data root answers vms: []", &["ls", "lists"], ls_empty),
    scenario("LS.lists-fixture", Must, Tier::Pure, "json-v3#per-command-data", "ls {\"vms\":[VM,...]}",
        "`ls` lists a vm.toml fixture as a stopped VM with its recorded fields", &["ls"], ls_fixture),
    scenario("LS.broken-listed", Must, Tier::Pure, "json-v3#types", "state is one of stopped, running, broken. error appears only on a broken VM.",
        "a vm.toml that will not parse is listed with state broken and an error; good VMs carry no error", &["ls", "broken"], ls_broken),
    scenario("LS.running-state", Must, Tier::Fake, "json-v3#types", "state is one of stopped, running, broken.",
        "a VM whose pidfile names a live qemu lists as running", &["ls", "state"], ls_running),
    scenario("GET.not-found", Must, Tier::Pure, "json-v3#error-codes", "not_found no such VM",
        "`get ghost` fails with not_found", &["get", "errors"], get_not_found),
    v3_only(scenario("GET.vm-status", Must, Tier::Pure, "json-v3#per-command-data", "get {\"vm\":VMStatus}",
        "`get` answers {vm: VMStatus} with health and recipes_detail", &["get"], get_vm_status), "contract 2's get answers {vm: VM}, without health or recipes_detail"),
    scenario("GET.broken-ok", Must, Tier::Pure, "json-v3#types", "VM.display is \"window\" or \"vnc\", and \"\" on a broken VM.",
        "`get` on a broken VM succeeds with state broken, an error and display \"\"", &["get", "broken"], get_broken),
    scenario("GET.allow-exec-absent", Must, Tier::Pure, "json-v3#types", "allow_exec is true for every VM that predates the field",
        "an absent allow_exec reads as allow_exec:true and agent_access manage", &["get", "access"], get_allow_exec_absent),
    v3_only(scenario("GET.agent-access-mapping", Must, Tier::Pure, "json-v3#types", "An explicitly stored allow_exec = true maps to exec. An explicit false value or an absent key maps to manage.",
        "stored allow_exec true maps to agent_access exec, false to manage", &["get", "access"], get_agent_access), "contract 2 has no agent_access field"),
    scenario("GET.display-vnc-headless", Must, Tier::Pure, "json-v3#types", "Without a graphical session, an uninstalled disk VM uses VNC so that its installer remains accessible.",
        "with STOAT_GRAPHICAL=0 an uninstalled disk VM reports display vnc", &["get", "display"], get_display_vnc),
    scenario("GET.display-window-graphical", Must, Tier::Pure, "json-v3#types", "STOAT_GRAPHICAL=0 or STOAT_GRAPHICAL=1 overrides that detection.",
        "with STOAT_GRAPHICAL=1 an installed VM without a pinned display reports display window", &["get", "display"], get_display_window),
    scenario("WAIT.reachable", Must, Tier::Fake, "json-v3#per-command-data", "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        "`wait --until reachable` on a running VM whose ssh port answers an SSH banner reaches it", &["wait", "state"], wait_reachable),
    scenario("GET.forwards-shape", Must, Tier::Pure, "json-v3#types", "\"forwards\":[{\"host_port\":8080,\"guest_port\":80}]",
        "stored [[forwards]] come back as {host_port, guest_port}", &["get", "forward"], get_forwards),
    scenario("RM.confirmation-required-no-stdin", Must, Tier::Pure, "json-v3#json-implies", "rm without -y fails with confirmation_required rather than prompting.",
        "`rm work` with \"y\\n\" piped in fails with confirmation_required, reads no stdin, and the VM survives", &["rm", "stdin"], rm_confirmation),
    scenario("RM.deletes", Must, Tier::Pure, "json-v3#per-command-data", "rm {\"name\":\"scratch\",\"deleted\":true}",
        "`rm -y` answers {name, deleted:true} and the VM is gone", &["rm"], rm_deletes),
    scenario("RM.running-refused", Must, Tier::Fake, "json-v3#error-codes", "already_running the operation needs a stopped VM",
        "`rm -y` on a running VM fails with already_running and deletes nothing", &["rm", "state"], rm_running),
    scenario("WAIT.cannot-reach", Must, Tier::Pure, "json-v3#error-codes", "cannot_reach wait was asked for a state this VM can never reach",
        "`wait --until reachable` on a stopped VM fails with cannot_reach at once", &["wait"], wait_cannot_reach),
    scenario("WAIT.stopped-immediate", Must, Tier::Pure, "json-v3#per-command-data", "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        "`wait --until stopped` on a stopped VM answers reached:true with integer waited_ms", &["wait"], wait_stopped),
    scenario("WAIT.timeout", Must, Tier::Fake, "json-v3#error-codes", "timeout the deadline expired",
        "`wait --until stopped --timeout 300ms` on a running VM fails with timeout", &["wait", "state"], wait_timeout),
    scenario("WAIT.bad-until", Must, Tier::Pure, "json-v3#error-codes", "usage a bad flag, a missing argument, an unknown subcommand",
        "`wait --until bogus` is a usage error", &["wait", "usage"], wait_bad_until),
    scenario("SNAPSHOT.no-disk-live", Must, Tier::Pure, "json-v3#error-codes", "no_disk the VM has no qcow2 (a live VM has none)",
        "`snapshot` on a live VM fails with no_disk", &["snapshot"], snapshot_no_disk),
    scenario("SNAPSHOT.list-empty", Must, Tier::Fake, "json-v3#per-command-data", "snapshot (list) {\"vm\":\"work\",\"snapshots\":[Snapshot,...]}",
        "`snapshot work` on a stopped disk VM without snapshots answers snapshots: []", &["snapshot", "lists"], snapshot_list_empty),
    scenario("SNAPSHOT.save-list-restore-delete", Must, Tier::Fake, "json-v3#per-command-data", "snapshot (act) {\"vm\":\"work\",\"tag\":\"clean\",\"action\":\"restore\"}",
        "save, list, restore and delete a snapshot of a stopped disk VM (through qemu-img)", &["snapshot"], snapshot_cycle),
    scenario("FORWARD.show", Must, Tier::Pure, "json-v3#per-command-data", "A forward that only displays the current configuration reports active without applies_at.",
        "`forward work` answers {vm, forwards: [], active} without applies_at", &["forward"], forward_show),
    scenario("FORWARD.set-stopped", Must, Tier::Pure, "json-v3#per-command-data", "applies_at is now or next_start, and appears on update and on a forward that changed the configuration.",
        "`forward work 8080:80` on a stopped VM answers applies_at and the forward persists", &["forward"], forward_set_stopped),
    scenario("FORWARD.set-running", Must, Tier::Fake, "json-v3#per-command-data", "A forward saved on a running VM is not active until the next start.",
        "a forward saved on a running VM answers active:false, applies_at next_start", &["forward", "state"], forward_set_running),
    scenario("FORWARD.clear", Must, Tier::Pure, "json-v3#per-command-data", "forward (set/clear) {\"vm\":\"work\",\"forwards\":[...],\"active\":false,\"applies_at\":\"next_start\"}",
        "`forward work --clear` answers forwards: [] and clears the stored forwards", &["forward", "lists"], forward_clear),
    scenario("FORWARD.low-port-invalid", Should, Tier::Pure, "json-v3#error-codes", "invalid_spec the request itself is malformed",
        "a host port under 1024 is refused with invalid_spec", &["forward", "errors"], forward_low_port),
    scenario("FORWARD.bad-pair-usage", Should, Tier::Pure, "json-v3#error-codes", "usage a bad flag, a missing argument, an unknown subcommand",
        "a forward pair that is not HOST:GUEST is a usage error", &["forward", "usage"], forward_bad_pair),
    scenario("UPDATE.changed-ram", Must, Tier::Pure, "json-v3#per-command-data", "update.changed names the fields that actually changed, in wire naming (ssh_port, not SSHPort).",
        "`update --ram 2048` on a stopped VM answers changed [\"ram\"], applies_at now, and the VM shows it", &["update"], update_changed_ram),
    scenario("UPDATE.only-actual-changes", Must, Tier::Pure, "json-v3#per-command-data", "A flag you did not pass does not appear, and the field it names is untouched.",
        "`update --ram <same> --cpus 2` lists only cpus; ram stays", &["update"], update_only_actual),
    scenario("UPDATE.running-next-start", Must, Tier::Fake, "json-v3#per-command-data", "applies_at is now or next_start",
        "`update --ram` on a running VM answers applies_at next_start", &["update", "state"], update_running),
    scenario("UPDATE.disk-shrink", Must, Tier::Pure, "json-v3#error-codes", "disk_shrink a disk can only grow",
        "`update --disk 4G` on an 8G disk VM fails with disk_shrink", &["update", "errors"], update_disk_shrink),
    scenario("UPDATE.disk-grow", Must, Tier::Fake, "json-v3#per-command-data", "update {\"vm\":VM,\"changed\":[\"ram\"],\"applies_at\":\"now\"}",
        "`update --disk 16G` on a stopped disk VM answers changed [\"disk\"] and grows the disk through qemu-img", &["update"], update_disk_grow),
    scenario("LOGS.vm-empty", Must, Tier::Pure, "json-v3#per-command-data", "logs <vm> {\"vm\":\"work\",\"which\":\"console\",\"lines\":[...]}",
        "`logs work` with no console log answers {vm, which: console, lines: []}", &["logs", "lists"], logs_vm_empty),
    scenario("LOGS.vm-tail", Should, Tier::Pure, "json-v3#per-command-data", "logs <vm> {\"vm\":\"work\",\"which\":\"console\",\"lines\":[...]}",
        "`logs work -n 2` answers the last two console lines", &["logs"], logs_vm_tail),
    from_design(scenario("LOGS.unknown-which", Must, Tier::Pure, "design#decisions", "`unknown_log`, exit 1",
        "`logs work --which bogus` fails with unknown_log, exit 1", &["logs", "errors"], logs_unknown_which)),
    scenario("LOGS.global", Must, Tier::Pure, "json-v3#per-command-data", "logs (no VM) {\"lines\":[...]} (stoat's own log)",
        "`logs` with no VM answers {lines: [...]} without a vm member", &["logs"], logs_global),
    scenario("DOCTOR.healthy-field", Must, Tier::Pure, "json-v3#per-command-data", "doctor {\"healthy\":false,\"checks\":[Check,...]}",
        "`doctor` answers healthy and checks of {name, ok, detail, fix[], optional}", &["doctor"], doctor_shape),
    scenario("DOCTOR.unhealthy-exit-0", Must, Tier::Pure, "json-v3#exit-codes", "doctor exits 0 with healthy:false.",
        "`doctor` with no host tools on PATH answers healthy:false and exits 0", &["doctor", "exit"], doctor_unhealthy),
    scenario("DOCTOR.healthy-consistent", Should, Tier::Pure, "json-v3#per-command-data", "doctor.healthy reports host readiness.",
        "healthy is false when a non-optional check failed", &["doctor"], doctor_consistent),
    scenario("CLONE.forwards-not-copied", Must, Tier::Pure, "json-v3#per-command-data", "clone {\"vm\":VM,\"source\":\"work\",\"forwards_copied\":false}",
        "`clone work copy` answers {vm, source, forwards_copied:false} and the clone has no forwards", &["clone"], clone_forwards),
    scenario("CLONE.name-taken", Must, Tier::Pure, "json-v3#error-codes", "name_taken a VM by that name already exists",
        "`clone work work` fails with name_taken", &["clone", "errors"], clone_name_taken),
    scenario("SSHCMD.argv", Must, Tier::Pure, "json-v3#per-command-data", "ssh-command {\"argv\":[\"ssh\",\"-p\",\"2200\",...]}",
        "`ssh-command work` answers an argv starting with ssh that names the VM's port", &["ssh-command"], sshcmd_argv),
    scenario("CODES.not-found-everywhere", Must, Tier::Pure, "json-v3#error-codes", "not_found no such VM",
        "every command that names a VM fails with not_found for a VM that does not exist", &["errors"], not_found_everywhere),
    scenario("CODES.broken-refused", Must, Tier::Pure, "json-v3#error-codes", "broken the VM's vm.toml will not parse",
        "commands that need a readable VM fail with broken on a broken vm.toml", &["errors", "broken"], broken_refused),
    scenario("CODES.not-running", Must, Tier::Pure, "json-v3#error-codes", "not_running the operation needs a running VM",
        "down, exec, cp and screenshot on a stopped VM fail with not_running", &["errors", "state"], not_running),
    v3_only(scenario("APPLY.provision-alias", Must, Tier::Pure, "json-v3#per-command-data", "provision is a hidden alias of apply and reports \"cmd\":\"apply\".",
        "`provision` answers with cmd apply", &["apply"], provision_alias), "contract 2's provision is a command of its own (cmd provision, {vm, provisioned, skipped_reason})"),
    scenario("IMAGES.file-bare", Must, Tier::Pure, "json-v3#types", "Image.file is a bare filename under the data root's isos/, never an absolute path.",
        "`images` answers images: [...] whose file is a bare filename", &["images"], images_file_bare),
    scenario("PRUNE.dry-run-empty", Must, Tier::Pure, "json-v3#per-command-data", "prune {\"dry_run\":true,\"items\":[PruneItem,...]}",
        "`prune` on a clean root answers {dry_run: true, items: []}", &["prune", "lists"], prune_empty),
    v3_only(scenario("RECIPES.schema-lists", Must, Tier::Pure, "json-v3#per-command-data", "A recipe without a health check has health:null; all list fields are [], never null.",
        "`recipes` answers RecipeSchema rows with list fields and health null or an object", &["recipes", "lists"], recipes_lists), "contract 2's Recipe is {name, description}"),
    scenario("CHECKRECIPES.applicable-explicit", Must, Tier::Pure, "json-v3#per-command-data", "check-recipes.applicable is emitted explicitly even though it equals issues == [].",
        "`check-recipes` answers applicable equal to issues == []", &["recipes"], check_recipes),
    v3_only(scenario("RECIPE.cmd-is-recipe", Must, Tier::Pure, "json-v3#per-command-data", "All recipe subcommands report \"cmd\":\"recipe\"",
        "`recipe list` answers cmd recipe with roots and recipes lists", &["recipes"], recipe_list), "contract 2's recipe list answers {dir, recipes: [names]}"),
    scenario("RECIPE.new-path", Must, Tier::Pure, "json-v3#per-command-data", "recipe new {\"path\":\"/home/u/.stoat/recipes/foo/\"}",
        "`recipe new <name> --os alpine` answers {path}: an absolute path, naming the recipe, that exists once the command has answered (SKIP when the SUT refuses that command line as usage)", &["recipes", "state"], recipe_new_path),
    v3_only(scenario("GUEST.cmd-is-guest", Must, Tier::Pure, "json-v3#per-command-data", "all guest subcommands report \"cmd\":\"guest\"",
        "`guest ls` answers cmd guest with a guests list", &["guest"], guest_ls), "contract 2 has no guest command"),
    v3_only(scenario("GUEST.show", Must, Tier::Pure, "json-v3#per-command-data", "guest show {\"guest\":Guest}",
        "`guest show <name>` of every guest `guest ls` lists answers cmd guest with {guest} naming it, its fields as `guest ls` gave them; an unknown name is refused (exit 1), never with internal", &["guest"], guest_show), "contract 2 has no guest command"),
    v3_only(scenario("CAPABILITIES.unavailable", Must, Tier::Pure, "json-v3#capabilities", "runtime.fork and runtime.continuation always appear under unavailable with unsupported/not_implemented.",
        "`capabilities` answers schema 1 and lists runtime.fork and runtime.continuation as unsupported/not_implemented", &["capabilities"], capabilities), "contract 2 has no capabilities command"),
    v3_only(scenario("PULL.no-such-image", Must, Tier::Pure, "json-v3#error-codes", "no_such_image the requested image is not in the index",
        "`pull` of an id the catalog does not know fails with no_such_image", &["pull", "errors"], pull_unknown), "contract 2 has no no_such_image code"),
    scenario("CREATE.byo-live", Must, Tier::Pure, "json-v3#per-command-data", "create {\"vm\":VM}",
        "`create` from a bring-your-own ISO answers {vm} and the VM lists as stopped", &["create"], create_byo),
    scenario("CREATE.name-taken", Must, Tier::Pure, "json-v3#error-codes", "name_taken a VM by that name already exists",
        "`create work` when work exists fails with name_taken", &["create", "errors"], create_name_taken),
];

fn ls_empty(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["ls"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vms", &json!([]));
    }
    Ok(())
}

fn find_vm<'v>(data: &'v Value, name: &str) -> Option<&'v Value> {
    data.get("vms")?
        .as_array()?
        .iter()
        .find(|vm| vm.get("name").and_then(Value::as_str) == Some(name))
}

fn ls_fixture(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["ls"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    let Some(vm) = find_vm(&data, "work").cloned() else {
        case.fail("/data/vms", "the fixture VM work is not listed");
        return Ok(());
    };
    for (pointer, expected) in [
        ("/state", json!("stopped")),
        ("/mode", json!("live")),
        ("/ram_mb", json!(1024)),
        ("/cpus", json!(1)),
        ("/ssh_port", json!(2200)),
        ("/forwards", json!([])),
        ("/recipes", json!([])),
    ] {
        expect_eq(case, &vm, pointer, &expected);
    }
    Ok(())
}

fn ls_broken(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    sandbox.write_broken_vm("bad")?;
    let ran = case.json(&sandbox, &["ls"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    match find_vm(&data, "bad") {
        Some(bad) => {
            case.ensure(
                str_at(bad, "/state") == Some("broken"),
                "/data/vms/bad/state",
                "the broken VM must list with state broken",
            );
            case.ensure(
                str_at(bad, "/error").is_some_and(|e| !e.is_empty()),
                "/data/vms/bad/error",
                "the broken VM must carry error",
            );
        }
        None => case.fail("/data/vms", "the broken VM bad is not listed"),
    }
    match find_vm(&data, "work") {
        Some(work) => {
            case.ensure(
                work.get("error").is_none(),
                "/data/vms/work/error",
                "a good VM carries no error",
            );
        }
        None => case.fail(
            "/data/vms",
            "the good VM work is not listed next to a broken one",
        ),
    }
    Ok(())
}

fn ls_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["ls"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let state = find_vm(&data, "work")
            .and_then(|vm| str_at(vm, "/state"))
            .map(str::to_string);
        case.ensure(
            state.as_deref() == Some("running"),
            "/data/vms/work/state",
            format!("expected running, got {state:?}"),
        );
    }
    Ok(())
}

fn get_not_found(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["get", "ghost"])?;
    if case.expect_error(&ran, "not_found") {
        case.expect_exit(&ran, 1);
    }
    Ok(())
}

fn get_vm_status(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let Some(vm) = get_vm(case, &sandbox, "work")? else {
        return Ok(());
    };
    expect_eq(case, &vm, "/name", &json!("work"));
    expect_eq(case, &vm, "/state", &json!("stopped"));
    case.ensure(
        matches!(str_at(&vm, "/health"), Some("ok" | "failed" | "unknown")),
        "/data/vm/health",
        "health must be ok, failed or unknown",
    );
    case.ensure(
        vm.get("recipes_detail").is_some_and(Value::is_array),
        "/data/vm/recipes_detail",
        "recipes_detail must be a list",
    );
    Ok(())
}

fn get_broken(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_broken_vm("bad")?;
    let Some(vm) = get_vm(case, &sandbox, "bad")? else {
        return Ok(());
    };
    expect_eq(case, &vm, "/state", &json!("broken"));
    case.ensure(
        str_at(&vm, "/error").is_some_and(|e| !e.is_empty()),
        "/data/vm/error",
        "a broken VM carries error",
    );
    expect_eq(case, &vm, "/display", &json!(""));
    Ok(())
}

fn get_allow_exec_absent(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let Some(vm) = get_vm(case, &sandbox, "work")? else {
        return Ok(());
    };
    expect_eq(case, &vm, "/allow_exec", &json!(true));
    // Contract 2 has no agent_access.
    if case.edition() == Edition::V3 {
        expect_eq(case, &vm, "/agent_access", &json!("manage"));
    }
    Ok(())
}

fn get_agent_access(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("yes").allow_exec(Some(true)).sshport(2201))?;
    sandbox.write_vm(&VmFixture::live("no").allow_exec(Some(false)).sshport(2202))?;
    if let Some(vm) = get_vm(case, &sandbox, "yes")? {
        expect_eq(case, &vm, "/agent_access", &json!("exec"));
        expect_eq(case, &vm, "/allow_exec", &json!(true));
    }
    if let Some(vm) = get_vm(case, &sandbox, "no")? {
        expect_eq(case, &vm, "/agent_access", &json!("manage"));
        expect_eq(case, &vm, "/allow_exec", &json!(false));
    }
    Ok(())
}

fn get_display_vnc(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_disk_work(case)?;
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/display", &json!("vnc"));
    }
    Ok(())
}

fn get_display_window(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let mut sandbox = case.sandbox()?;
    sandbox.set_env("STOAT_GRAPHICAL", "1");
    let mut fixture = VmFixture::disk("work");
    fixture.installed = true;
    sandbox.write_vm(&fixture)?;
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/display", &json!("window"));
    }
    Ok(())
}

fn wait_reachable(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let banner = Banner::start()?;
    let mut sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").sshport(banner.port))?;
    sandbox.start_running("work")?;
    let ran = case.json(
        &sandbox,
        &["wait", "work", "--until", "reachable", "--timeout", "20s"],
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/reached", &json!(true));
        expect_eq(case, &data, "/until", &json!("reachable"));
    }
    Ok(())
}

fn get_forwards(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80))?;
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(
            case,
            &vm,
            "/forwards",
            &json!([{"host_port": 8080, "guest_port": 80}]),
        );
    }
    Ok(())
}

fn rm_confirmation(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.run(&sandbox, Inv::json(&["rm", "work"]).stdin(b"y\n"))?;
    if case.expect_error(&ran, "confirmation_required") {
        case.expect_exit(&ran, 1);
    }
    let unread = ran.stdin_unread.clone().unwrap_or_default();
    case.ensure(
        unread == b"y\n",
        "stdin",
        format!(
            "stdin must not be read under --json; {} of 2 bytes were consumed",
            2 - unread.len().min(2)
        ),
    );
    case.ensure(
        sandbox.vm_dir("work").join("vm.toml").exists(),
        "fs",
        "the VM was deleted without -y",
    );
    Ok(())
}

fn rm_deletes(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["rm", "work", "-y"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/name", &json!("work"));
        expect_eq(case, &data, "/deleted", &json!(true));
    }
    case.ensure(
        !sandbox.vm_dir("work").exists(),
        "fs",
        "the VM directory still exists after rm -y",
    );
    let again = case.json(&sandbox, &["get", "work"])?;
    case.expect_error(&again, "not_found");
    Ok(())
}

fn rm_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["rm", "work", "-y"])?;
    case.expect_error(&ran, "already_running");
    case.ensure(
        sandbox.vm_dir("work").join("vm.toml").exists(),
        "fs",
        "a running VM was deleted",
    );
    Ok(())
}

fn wait_cannot_reach(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(
        &sandbox,
        &["wait", "work", "--until", "reachable", "--timeout", "30s"],
    )?;
    case.expect_error(&ran, "cannot_reach");
    case.ensure(
        ran.capture.duration_ms < 10_000,
        "duration",
        format!(
            "cannot_reach took {} ms; it is known at once",
            ran.capture.duration_ms
        ),
    );
    Ok(())
}

fn wait_stopped(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["wait", "work", "--until", "stopped"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/until", &json!("stopped"));
        expect_eq(case, &data, "/reached", &json!(true));
        case.ensure(
            data.get("waited_ms").is_some_and(|w| w.is_u64()),
            "/data/waited_ms",
            "waited_ms must be a non-negative integer",
        );
    }
    Ok(())
}

fn wait_timeout(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(
        &sandbox,
        &["wait", "work", "--until", "stopped", "--timeout", "300ms"],
    )?;
    case.expect_error(&ran, "timeout");
    Ok(())
}

fn wait_bad_until(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.run(
        &sandbox,
        Inv::json(&["wait", "work", "--until", "bogus"]).cmd(None),
    )?;
    if case.expect_error(&ran, "usage") {
        case.expect_exit(&ran, 2);
    }
    Ok(())
}

fn snapshot_no_disk(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["snapshot", "work"])?;
    case.expect_error(&ran, "no_disk");
    let ran = case.json(&sandbox, &["snapshot", "work", "clean"])?;
    case.expect_error(&ran, "no_disk");
    Ok(())
}

fn snapshot_list_empty(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_disk_work(case)?;
    let ran = case.json(&sandbox, &["snapshot", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/snapshots", &json!([]));
    }
    Ok(())
}

fn snapshot_cycle(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_disk_work(case)?;
    let saved = case.json(&sandbox, &["snapshot", "work", "clean"])?;
    if let Some(data) = case.expect_ok(&saved).cloned() {
        expect_eq(case, &data, "/tag", &json!("clean"));
        expect_eq(case, &data, "/action", &json!("save"));
    }
    let listed = case.json(&sandbox, &["snapshot", "work"])?;
    if let Some(data) = case.expect_ok(&listed).cloned() {
        let row = data
            .get("snapshots")
            .and_then(Value::as_array)
            .and_then(|rows| rows.iter().find(|r| str_at(r, "/tag") == Some("clean")))
            .cloned();
        match row {
            Some(row) => {
                case.ensure(
                    row.get("vm_state").is_some_and(Value::is_boolean),
                    "/data/snapshots/0/vm_state",
                    "vm_state must be a bool",
                );
                case.ensure(
                    row.get("size_display").is_some_and(Value::is_string),
                    "/data/snapshots/0/size_display",
                    "size_display must be a string",
                );
                case.ensure(
                    row.get("created_display").is_some_and(Value::is_string),
                    "/data/snapshots/0/created_display",
                    "created_display must be a string",
                );
            }
            None => case.fail("/data/snapshots", "the saved snapshot clean is not listed"),
        }
    }
    for (flag, action) in [("--restore", "restore"), ("--delete", "delete")] {
        let ran = case.json(&sandbox, &["snapshot", "work", "clean", flag])?;
        if let Some(data) = case.expect_ok(&ran).cloned() {
            expect_eq(case, &data, "/action", &json!(action));
        }
    }
    let relisted = case.json(&sandbox, &["snapshot", "work"])?;
    if let Some(data) = case.expect_ok(&relisted).cloned() {
        expect_eq(case, &data, "/snapshots", &json!([]));
    }
    Ok(())
}

fn forward_show(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["forward", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/forwards", &json!([]));
        expect_eq(case, &data, "/active", &json!(false));
        case.ensure(
            data.get("applies_at").is_none(),
            "/data/applies_at",
            "a forward that only displays carries no applies_at",
        );
    }
    Ok(())
}

fn forward_set_stopped(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["forward", "work", "8080:80"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(
            case,
            &data,
            "/forwards",
            &json!([{"host_port": 8080, "guest_port": 80}]),
        );
        case.ensure(
            matches!(str_at(&data, "/applies_at"), Some("now" | "next_start")),
            "/data/applies_at",
            "a forward that changed the configuration carries applies_at now or next_start",
        );
    }
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(
            case,
            &vm,
            "/forwards",
            &json!([{"host_port": 8080, "guest_port": 80}]),
        );
    }
    Ok(())
}

fn forward_set_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["forward", "work", "8080:80"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/applies_at", &json!("next_start"));
        expect_eq(case, &data, "/active", &json!(false));
    }
    Ok(())
}

fn forward_clear(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80))?;
    let ran = case.json(&sandbox, &["forward", "work", "--clear"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/forwards", &json!([]));
    }
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/forwards", &json!([]));
    }
    Ok(())
}

fn forward_low_port(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["forward", "work", "80:80"])?;
    case.expect_error(&ran, "invalid_spec");
    Ok(())
}

fn forward_bad_pair(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.run(
        &sandbox,
        Inv::json(&["forward", "work", "eighty"]).cmd(None),
    )?;
    if case.expect_error(&ran, "usage") {
        case.expect_exit(&ran, 2);
    }
    Ok(())
}

fn update_changed_ram(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["update", "work", "--ram", "2048"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/changed", &json!(["ram"]));
        expect_eq(case, &data, "/applies_at", &json!("now"));
        expect_eq(case, &data, "/vm/ram_mb", &json!(2048));
    }
    if let Some(vm) = get_vm(case, &sandbox, "work")? {
        expect_eq(case, &vm, "/ram_mb", &json!(2048));
    }
    Ok(())
}

fn update_only_actual(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(
        &sandbox,
        &["update", "work", "--ram", "1024", "--cpus", "2"],
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/changed", &json!(["cpus"]));
        expect_eq(case, &data, "/vm/ram_mb", &json!(1024));
        expect_eq(case, &data, "/vm/cpus", &json!(2));
    }
    Ok(())
}

fn update_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_running_work(case)?;
    let ran = case.json(&sandbox, &["update", "work", "--ram", "2048"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/applies_at", &json!("next_start"));
    }
    Ok(())
}

fn update_disk_shrink(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_disk_work(case)?;
    let ran = case.json(&sandbox, &["update", "work", "--disk", "4G"])?;
    case.expect_error(&ran, "disk_shrink");
    Ok(())
}

fn update_disk_grow(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_disk_work(case)?;
    // A disk VM has its qcow2 from create on; the fake qemu-img only needs the file to exist.
    let disk = sandbox.vm_dir("work").join("disk.qcow2");
    std::fs::write(&disk, b"QFI\xfb").map_err(|e| HarnessError::io(&disk, e))?;
    let ran = case.json(&sandbox, &["update", "work", "--disk", "16G"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/changed", &json!(["disk"]));
        expect_eq(case, &data, "/vm/disk", &json!("16G"));
    }
    let resized = sandbox
        .fake_calls()
        .iter()
        .any(|c| c.tool == "qemu-img" && c.argv.first().map(String::as_str) == Some("resize"));
    case.ensure(
        resized,
        "fake-log",
        "the disk was not grown: no `qemu-img resize` call",
    );
    Ok(())
}

fn logs_vm_empty(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["logs", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm", &json!("work"));
        expect_eq(case, &data, "/which", &json!("console"));
        expect_eq(case, &data, "/lines", &json!([]));
    }
    Ok(())
}

fn logs_vm_tail(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let log = sandbox.vm_dir("work").join("console.log");
    std::fs::write(&log, "one\ntwo\nthree\n").map_err(|e| HarnessError::io(&log, e))?;
    let ran = case.json(&sandbox, &["logs", "work", "-n", "2"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/lines", &json!(["two", "three"]));
    }
    Ok(())
}

fn logs_unknown_which(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["logs", "work", "--which", "bogus"])?;
    if case.expect_error(&ran, "unknown_log") {
        case.expect_exit(&ran, 1);
    }
    Ok(())
}

fn logs_global(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["logs"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("lines").is_some_and(Value::is_array),
            "/data/lines",
            "lines must be a list",
        );
        case.ensure(
            data.get("vm").is_none(),
            "/data/vm",
            "stoat's own log carries no vm member",
        );
    }
    Ok(())
}

fn check_rows(case: &mut Case<'_>, data: &Value) {
    let Some(rows) = data.get("checks").and_then(Value::as_array) else {
        case.fail("/data/checks", "checks must be a list");
        return;
    };
    // Contract 2's Check has no optional.
    let v3 = case.edition() == Edition::V3;
    for (index, row) in rows.iter().enumerate() {
        let shape_ok = row.get("name").is_some_and(Value::is_string)
            && row.get("ok").is_some_and(Value::is_boolean)
            && row.get("detail").is_some_and(Value::is_string)
            && row.get("fix").is_some_and(Value::is_array)
            && (!v3 || row.get("optional").is_some_and(Value::is_boolean));
        case.ensure(
            shape_ok,
            &format!("/data/checks/{index}"),
            format!(
                "a Check is {{name, ok, detail, fix[]{}}}, got {row}",
                if v3 { ", optional" } else { "" }
            ),
        );
    }
}

fn doctor_shape(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["doctor"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("healthy").is_some_and(Value::is_boolean),
            "/data/healthy",
            "healthy must be a bool",
        );
        check_rows(case, &data);
    }
    case.expect_exit(&ran, 0);
    Ok(())
}

fn doctor_unhealthy(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.bare_sandbox()?;
    let ran = case.json(&sandbox, &["doctor"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/healthy", &json!(false));
    }
    case.expect_exit(&ran, 0);
    Ok(())
}

fn doctor_consistent(case: &mut Case<'_>) -> Result<(), HarnessError> {
    for bare in [true, false] {
        let sandbox = if bare {
            case.bare_sandbox()?
        } else {
            case.sandbox()?
        };
        let ran = case.json(&sandbox, &["doctor"])?;
        let Some(data) = case.expect_ok(&ran).cloned() else {
            continue;
        };
        let failed_required = data
            .get("checks")
            .and_then(Value::as_array)
            .is_some_and(|rows| {
                rows.iter().any(|r| {
                    r.get("ok") == Some(&json!(false)) && r.get("optional") != Some(&json!(true))
                })
            });
        if failed_required {
            expect_eq(case, &data, "/healthy", &json!(false));
        }
    }
    Ok(())
}

fn clone_forwards(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").forward(8080, 80))?;
    let ran = case.json(&sandbox, &["clone", "work", "copy"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/source", &json!("work"));
        expect_eq(case, &data, "/forwards_copied", &json!(false));
        expect_eq(case, &data, "/vm/name", &json!("copy"));
        expect_eq(case, &data, "/vm/forwards", &json!([]));
    }
    Ok(())
}

fn clone_name_taken(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let ran = case.json(&sandbox, &["clone", "work", "work"])?;
    case.expect_error(&ran, "name_taken");
    Ok(())
}

fn sshcmd_argv(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_vm(&VmFixture::live("work").sshport(2234))?;
    let ran = case.json(&sandbox, &["ssh-command", "work"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let argv: Vec<&str> = data
            .get("argv")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        case.ensure(
            argv.first() == Some(&"ssh"),
            "/data/argv/0",
            format!("argv must start with ssh, got {argv:?}"),
        );
        case.ensure(
            argv.iter().any(|a| a.contains("2234")),
            "/data/argv",
            "argv must name the VM's ssh port 2234",
        );
    }
    Ok(())
}

fn not_found_everywhere(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let commands: &[&[&str]] = &[
        &["get", "ghost"],
        &["up", "ghost"],
        &["down", "ghost"],
        &["rm", "ghost", "-y"],
        &["exec", "ghost", "true"],
        &["ssh-command", "ghost"],
        &["forward", "ghost"],
        &["update", "ghost", "--ram", "2048"],
        &["snapshot", "ghost"],
        &["logs", "ghost"],
        &["wait", "ghost", "--until", "stopped"],
        &["apply", "ghost"],
        &["clone", "ghost", "other"],
        &["screenshot", "ghost"],
    ];
    let edition = case.edition();
    for args in commands.iter().filter(|a| in_edition(edition, a)) {
        let ran = case.json(&sandbox, args)?;
        case.expect_error(&ran, "not_found");
    }
    Ok(())
}

/// Whether the judged edition has the command (contract 2 has no screenshot).
fn in_edition(edition: Edition, args: &[&str]) -> bool {
    edition == Edition::V3 || args.first() != Some(&"screenshot")
}

fn broken_refused(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    sandbox.write_broken_vm("bad")?;
    let commands: &[&[&str]] = &[
        &["up", "bad"],
        &["down", "bad"],
        &["exec", "bad", "true"],
        &["ssh-command", "bad"],
        &["snapshot", "bad"],
        &["apply", "bad"],
        &["clone", "bad", "other"],
        &["update", "bad", "--ram", "2048"],
        &["wait", "bad", "--until", "stopped"],
    ];
    for args in commands {
        let ran = case.json(&sandbox, args)?;
        case.expect_error(&ran, "broken");
    }
    Ok(())
}

fn not_running(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    sandbox.write_work_file("f.txt", b"payload\n")?;
    let commands: &[&[&str]] = &[
        &["down", "work"],
        &["exec", "work", "true"],
        &["cp", "f.txt", "work:/tmp/f.txt"],
        &["screenshot", "work"],
    ];
    let edition = case.edition();
    for args in commands.iter().filter(|a| in_edition(edition, a)) {
        let ran = case.json(&sandbox, args)?;
        case.expect_error(&ran, "not_running");
    }
    Ok(())
}

fn provision_alias(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["provision", "ghost"])?;
    let cmd = ran.judgement.cmd().map(str::to_string);
    case.ensure(
        cmd.as_deref() == Some("apply"),
        "/cmd",
        format!("provision must answer cmd apply, got {cmd:?}"),
    );
    case.expect_error(&ran, "not_found");
    Ok(())
}

fn images_file_bare(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["images"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    let Some(images) = data.get("images").and_then(Value::as_array) else {
        case.fail("/data/images", "images must be a list");
        return Ok(());
    };
    for (index, image) in images.iter().enumerate() {
        let file = str_at(image, "/file").unwrap_or("");
        case.ensure(
            !file.contains('/'),
            &format!("/data/images/{index}/file"),
            format!("file must be a bare filename, got {file:?}"),
        );
        case.ensure(
            image.get("byo").is_some_and(Value::is_boolean),
            &format!("/data/images/{index}/byo"),
            "byo must be an explicit bool",
        );
    }
    Ok(())
}

fn prune_empty(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["prune"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/dry_run", &json!(true));
        expect_eq(case, &data, "/items", &json!([]));
    }
    Ok(())
}

fn recipes_lists(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["recipes"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    for (index, recipe) in data
        .get("recipes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        for list in ["depends", "params", "outputs"] {
            case.ensure(
                recipe.get(list).is_some_and(Value::is_array),
                &format!("/data/recipes/{index}/{list}"),
                format!("{list} must be a list"),
            );
        }
        case.ensure(
            recipe
                .get("health")
                .is_some_and(|h| h.is_null() || h.is_object()),
            &format!("/data/recipes/{index}/health"),
            "health must be null or an object",
        );
    }
    Ok(())
}

fn check_recipes(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["check-recipes", "xfce", "--os", "alpine"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        let issues_empty = data
            .get("issues")
            .and_then(Value::as_array)
            .map(Vec::is_empty);
        let applicable = data.get("applicable").and_then(Value::as_bool);
        case.ensure(
            applicable.is_some() && applicable == issues_empty,
            "/data/applicable",
            format!("applicable {applicable:?} must equal issues == [] ({issues_empty:?})"),
        );
    }
    Ok(())
}

fn recipe_list(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["recipe", "list"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("roots").is_some_and(Value::is_array),
            "/data/roots",
            "roots must be a list",
        );
        case.ensure(
            data.get("recipes").is_some_and(Value::is_array),
            "/data/recipes",
            "recipes must be a list",
        );
    }
    Ok(())
}

fn recipe_new_path(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let args = ["recipe", "new", "confnew", "--os", "alpine"];
    let ran = case.json(&sandbox, &args)?;
    if ran.code() == Some("usage") {
        // The contract gives the answer, not the command line.
        case.skip(format!(
            "the SUT refuses `{}` as a usage error: the contract gives no command line for recipe new",
            args.join(" ")
        ));
        return Ok(());
    }
    let Some(path) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("path"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        case.fail("/data/path", "recipe new must answer its path as a string");
        return Ok(());
    };
    let path = std::path::Path::new(&path);
    case.ensure(
        path.is_absolute(),
        "/data/path",
        format!("path {} is not absolute", path.display()),
    );
    case.ensure(
        path.to_string_lossy().contains("confnew"),
        "/data/path",
        format!("path {} does not name the recipe confnew", path.display()),
    );
    case.ensure(
        path.exists(),
        "/data/path",
        format!(
            "nothing exists at {} after recipe new answered",
            path.display()
        ),
    );
    Ok(())
}

fn guest_ls(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["guest", "ls"])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        case.ensure(
            data.get("guests").is_some_and(Value::is_array),
            "/data/guests",
            "guests must be a list",
        );
    }
    Ok(())
}

/// The Guest members that are plain values (a list or a string): `guest show` must agree
/// with `guest ls` on each, since both answer the same Guest.
const GUEST_VALUE_FIELDS: &[&str] = &[
    "name",
    "init",
    "shell",
    "installer",
    "default_backend",
    "default_ssh_user",
    "escalate",
    "capabilities",
    "aliases",
    "filename_hints",
    "seed_packages",
    "source",
];

fn guest_show(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let listed = case.json(&sandbox, &["guest", "ls"])?;
    let guests = case
        .expect_ok(&listed)
        .and_then(|d| d.get("guests"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if guests.is_empty() {
        case.skip("`guest ls` lists no guest, so there is nothing to show");
        return Ok(());
    }
    for row in &guests {
        let Some(name) = str_at(row, "/name") else {
            case.fail("/data/guests", "a Guest without a string name");
            continue;
        };
        let shown = case.json(&sandbox, &["guest", "show", name])?;
        let Some(guest) = case.expect_ok(&shown).and_then(|d| d.get("guest")).cloned() else {
            case.fail(
                "/data/guest",
                format!("`guest show {name}` answers no guest object"),
            );
            continue;
        };
        for field in GUEST_VALUE_FIELDS {
            let (Some(from_ls), Some(from_show)) = (row.get(*field), guest.get(*field)) else {
                continue;
            };
            case.ensure(
                from_ls == from_show,
                &format!("/data/guest/{field}"),
                format!("`guest show {name}` answers {field} {from_show}, `guest ls` {from_ls}"),
            );
        }
    }
    let unknown = case.json(
        &sandbox,
        &["guest", "show", "no-such-guest-stoat-conformance"],
    )?;
    case.ensure(
        unknown.data().is_none() && unknown.code().is_some_and(|c| c != "internal"),
        "/error/code",
        format!(
            "`guest show` of an unknown guest answered {:?}; it is refused with a code of the table, not internal",
            unknown.code()
        ),
    );
    case.expect_exit(&unknown, 1);
    Ok(())
}

fn capabilities(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["capabilities"])?;
    let Some(data) = case.expect_ok(&ran).cloned() else {
        return Ok(());
    };
    expect_eq(case, &data, "/schema", &json!(1));
    for name in ["runtime.fork", "runtime.continuation"] {
        let entry = data
            .get("unavailable")
            .and_then(Value::as_array)
            .and_then(|rows| rows.iter().find(|r| str_at(r, "/name") == Some(name)))
            .cloned();
        match entry {
            Some(entry) => {
                case.ensure(
                    str_at(&entry, "/status") == Some("unsupported"),
                    "/data/unavailable",
                    format!("{name} status must be unsupported"),
                );
                case.ensure(
                    str_at(&entry, "/reason/code") == Some("not_implemented"),
                    "/data/unavailable",
                    format!("{name} reason.code must be not_implemented"),
                );
            }
            None => case.fail(
                "/data/unavailable",
                format!("{name} is not listed under unavailable"),
            ),
        }
    }
    Ok(())
}

fn pull_unknown(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(&sandbox, &["pull", "no-such-image-stoat-conformance"])?;
    case.expect_error(&ran, "no_such_image");
    Ok(())
}

fn create_byo(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let iso = sandbox.write_work_file("alpine-virt-3.20.3-x86_64.iso", b"fake iso\n")?;
    let iso = iso.to_string_lossy().into_owned();
    let ran = case.json(
        &sandbox,
        &["create", "vm1", "--image", &iso, "--mode", "live"],
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/vm/name", &json!("vm1"));
        expect_eq(case, &data, "/vm/state", &json!("stopped"));
    }
    let listed = case.json(&sandbox, &["ls"])?;
    if let Some(data) = case.expect_ok(&listed).cloned() {
        case.ensure(
            find_vm(&data, "vm1").is_some(),
            "/data/vms",
            "the created VM is not listed",
        );
    }
    Ok(())
}

fn create_name_taken(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = with_work(case)?;
    let iso = sandbox.write_work_file("alpine-virt-3.20.3-x86_64.iso", b"fake iso\n")?;
    let iso = iso.to_string_lossy().into_owned();
    let ran = case.json(
        &sandbox,
        &["create", "work", "--image", &iso, "--mode", "live"],
    )?;
    case.expect_error(&ran, "name_taken");
    Ok(())
}
