//! Owns the checks of VM commands on fixtures written straight into the data root: ls, get,
//! rm, wait, snapshot, forward, update, logs, doctor, clone, ssh-command and the error codes
//! every VM command shares.

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{
    expect_eq, get_vm, str_at, with_disk_work, with_running_work, with_work, Banner,
};
use crate::error::HarnessError;
use crate::finding::Level::{Must, Should};
use crate::run::{Case, Inv, Ran};
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::{Edition, Editions};

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "LS.empty-is-array",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "Every list-valued field is [] when empty, never null.",
        title: "`ls` on an empty data root answers vms: []",
        tags: &["ls", "lists"],
        ..scenario(ls_empty)
    },
    CheckDef {
        id: "LS.lists-fixture",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "ls {\"vms\":[VM,...]}",
        title: "`ls` lists a vm.toml fixture as a stopped VM with its recorded fields",
        tags: &["ls"],
        ..scenario(ls_fixture)
    },
    CheckDef {
        id: "LS.broken-listed",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "state is one of stopped, running, broken. error appears only on a broken VM.",
        title: "a vm.toml that will not parse is listed with state broken and an error; good VMs carry no error",
        tags: &["ls", "broken"],
        ..scenario(ls_broken)
    },
    CheckDef {
        id: "LS.running-state",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#types",
        quote: "state is one of stopped, running, broken.",
        title: "a VM whose pidfile names a live qemu lists as running",
        tags: &["ls", "state"],
        ..scenario(ls_running)
    },
    CheckDef {
        id: "GET.not-found",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "not_found no such VM",
        title: "`get ghost` fails with not_found",
        tags: &["get", "errors"],
        ..scenario(get_not_found)
    },
    CheckDef {
        id: "GET.vm-status",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "get {\"vm\":VMStatus}",
        title: "`get` answers {vm: VMStatus} with health and recipes_detail",
        tags: &["get"],
        editions: Editions::V3 { change: "contract 2's get answers {vm: VM}, without health or recipes_detail" },
        ..scenario(get_vm_status)
    },
    CheckDef {
        id: "GET.broken-ok",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "VM.display is \"window\" or \"vnc\", and \"\" on a broken VM.",
        title: "`get` on a broken VM succeeds with state broken, an error and display \"\"",
        tags: &["get", "broken"],
        ..scenario(get_broken)
    },
    CheckDef {
        id: "GET.allow-exec-absent",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "allow_exec is true for every VM that predates the field",
        title: "an absent allow_exec reads as allow_exec:true and agent_access manage",
        tags: &["get", "access"],
        ..scenario(get_allow_exec_absent)
    },
    CheckDef {
        id: "GET.agent-access-mapping",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "An explicitly stored allow_exec = true maps to exec. An explicit false value or an absent key maps to manage.",
        title: "stored allow_exec true maps to agent_access exec, false to manage",
        tags: &["get", "access"],
        editions: Editions::V3 { change: "contract 2 has no agent_access field" },
        ..scenario(get_agent_access)
    },
    CheckDef {
        id: "GET.display-vnc-headless",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "Without a graphical session, an uninstalled disk VM uses VNC so that its installer remains accessible.",
        title: "with STOAT_GRAPHICAL=0 an uninstalled disk VM reports display vnc",
        tags: &["get", "display"],
        ..scenario(get_display_vnc)
    },
    CheckDef {
        id: "GET.display-window-graphical",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "STOAT_GRAPHICAL=0 or STOAT_GRAPHICAL=1 overrides that detection.",
        title: "with STOAT_GRAPHICAL=1 an installed VM without a pinned display reports display window",
        tags: &["get", "display"],
        ..scenario(get_display_window)
    },
    CheckDef {
        id: "WAIT.reachable",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        title: "`wait --until reachable` on a running VM whose ssh port answers an SSH banner reaches it",
        tags: &["wait", "state"],
        ..scenario(wait_reachable)
    },
    CheckDef {
        id: "GET.forwards-shape",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "\"forwards\":[{\"host_port\":8080,\"guest_port\":80}]",
        title: "stored [[forwards]] come back as {host_port, guest_port}",
        tags: &["get", "forward"],
        ..scenario(get_forwards)
    },
    CheckDef {
        id: "RM.confirmation-required-no-stdin",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#json-implies",
        quote: "rm without -y fails with confirmation_required rather than prompting.",
        title: "`rm work` with \"y\\n\" piped in fails with confirmation_required, reads no stdin, and the VM survives",
        tags: &["rm", "stdin"],
        ..scenario(rm_confirmation)
    },
    CheckDef {
        id: "RM.deletes",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "rm {\"name\":\"scratch\",\"deleted\":true}",
        title: "`rm -y` answers {name, deleted:true} and the VM is gone",
        tags: &["rm"],
        ..scenario(rm_deletes)
    },
    CheckDef {
        id: "RM.running-refused",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "already_running the operation needs a stopped VM",
        title: "`rm -y` on a running VM fails with already_running and deletes nothing",
        tags: &["rm", "state"],
        ..scenario(rm_running)
    },
    CheckDef {
        id: "WAIT.cannot-reach",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "cannot_reach wait was asked for a state this VM can never reach",
        title: "`wait --until reachable` on a stopped VM fails with cannot_reach at once",
        tags: &["wait"],
        ..scenario(wait_cannot_reach)
    },
    CheckDef {
        id: "WAIT.stopped-immediate",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "wait {\"vm\":\"work\",\"until\":\"reachable\",\"reached\":true,\"waited_ms\":4210}",
        title: "`wait --until stopped` on a stopped VM answers reached:true with integer waited_ms",
        tags: &["wait"],
        ..scenario(wait_stopped)
    },
    CheckDef {
        id: "WAIT.timeout",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#error-codes",
        quote: "timeout the deadline expired",
        title: "`wait --until stopped --timeout 300ms` on a running VM fails with timeout",
        tags: &["wait", "state"],
        ..scenario(wait_timeout)
    },
    CheckDef {
        id: "WAIT.bad-until",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "usage a bad flag, a missing argument, an unknown subcommand",
        title: "`wait --until bogus` is a usage error",
        tags: &["wait", "usage"],
        ..scenario(wait_bad_until)
    },
    CheckDef {
        id: "SNAPSHOT.no-disk-live",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "no_disk the VM has no qcow2 (a live VM has none)",
        title: "`snapshot` on a live VM fails with no_disk",
        tags: &["snapshot"],
        ..scenario(snapshot_no_disk)
    },
    CheckDef {
        id: "SNAPSHOT.list-empty",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "snapshot (list) {\"vm\":\"work\",\"snapshots\":[Snapshot,...]}",
        title: "`snapshot work` on a stopped disk VM without snapshots answers snapshots: []",
        tags: &["snapshot", "lists"],
        ..scenario(snapshot_list_empty)
    },
    CheckDef {
        id: "SNAPSHOT.save-list-restore-delete",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "snapshot (act) {\"vm\":\"work\",\"tag\":\"clean\",\"action\":\"restore\"}",
        title: "save, list, restore and delete a snapshot of a stopped disk VM (through qemu-img)",
        tags: &["snapshot"],
        ..scenario(snapshot_cycle)
    },
    CheckDef {
        id: "FORWARD.show",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "A forward that only displays the current configuration reports active without applies_at.",
        title: "`forward work` answers {vm, forwards: [], active} without applies_at",
        tags: &["forward"],
        ..scenario(forward_show)
    },
    CheckDef {
        id: "FORWARD.set-stopped",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "applies_at is now or next_start, and appears on update and on a forward that changed the configuration.",
        title: "`forward work 8080:80` on a stopped VM answers applies_at and the forward persists",
        tags: &["forward"],
        ..scenario(forward_set_stopped)
    },
    CheckDef {
        id: "FORWARD.set-running",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "A forward saved on a running VM is not active until the next start.",
        title: "a forward saved on a running VM answers active:false, applies_at next_start",
        tags: &["forward", "state"],
        ..scenario(forward_set_running)
    },
    CheckDef {
        id: "FORWARD.clear",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "forward (set/clear) {\"vm\":\"work\",\"forwards\":[...],\"active\":false,\"applies_at\":\"next_start\"}",
        title: "`forward work --clear` answers forwards: [] and clears the stored forwards",
        tags: &["forward", "lists"],
        ..scenario(forward_clear)
    },
    CheckDef {
        id: "FORWARD.low-port-invalid",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "invalid_spec the request itself is malformed",
        title: "a host port under 1024 is refused with invalid_spec",
        tags: &["forward", "errors"],
        ..scenario(forward_low_port)
    },
    CheckDef {
        id: "FORWARD.bad-pair-usage",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "usage a bad flag, a missing argument, an unknown subcommand",
        title: "a forward pair that is not HOST:GUEST is a usage error",
        tags: &["forward", "usage"],
        ..scenario(forward_bad_pair)
    },
    CheckDef {
        id: "UPDATE.changed-ram",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "update.changed names the fields that actually changed, in wire naming (ssh_port, not SSHPort).",
        title: "`update --ram 2048` on a stopped VM answers changed [\"ram\"], applies_at now, and the VM shows it",
        tags: &["update"],
        ..scenario(update_changed_ram)
    },
    CheckDef {
        id: "UPDATE.only-actual-changes",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "A flag you did not pass does not appear, and the field it names is untouched.",
        title: "`update --ram <same> --cpus 2` lists only cpus; ram stays",
        tags: &["update"],
        ..scenario(update_only_actual)
    },
    CheckDef {
        id: "UPDATE.running-next-start",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "applies_at is now or next_start",
        title: "`update --ram` on a running VM answers applies_at next_start",
        tags: &["update", "state"],
        ..scenario(update_running)
    },
    CheckDef {
        id: "UPDATE.disk-shrink",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "disk_shrink a disk can only grow",
        title: "`update --disk 4G` on an 8G disk VM fails with disk_shrink",
        tags: &["update", "errors"],
        ..scenario(update_disk_shrink)
    },
    CheckDef {
        id: "UPDATE.disk-grow",
        level: Must,
        tier: Tier::Fake,
        spec: "json-v3#per-command-data",
        quote: "update {\"vm\":VM,\"changed\":[\"ram\"],\"applies_at\":\"now\"}",
        title: "`update --disk 16G` on a stopped disk VM answers changed [\"disk\"] and grows the disk through qemu-img",
        tags: &["update"],
        ..scenario(update_disk_grow)
    },
    CheckDef {
        id: "LOGS.vm-empty",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "logs <vm> {\"vm\":\"work\",\"which\":\"console\",\"lines\":[...]}",
        title: "`logs work` with no console log answers {vm, which: console, lines: []}",
        tags: &["logs", "lists"],
        ..scenario(logs_vm_empty)
    },
    CheckDef {
        id: "LOGS.vm-tail",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "logs <vm> {\"vm\":\"work\",\"which\":\"console\",\"lines\":[...]}",
        title: "`logs work -n 2` answers the last two console lines",
        tags: &["logs"],
        ..scenario(logs_vm_tail)
    },
    CheckDef {
        id: "LOGS.unknown-which",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "unknown_log bad --which",
        title: "`logs work --which bogus` fails with unknown_log, exit 1",
        tags: &["logs", "errors"],
        ..scenario(logs_unknown_which)
    },
    CheckDef {
        id: "LOGS.global",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "logs (no VM) {\"lines\":[...]} (stoat's own log)",
        title: "`logs` with no VM answers {lines: [...]} without a vm member",
        tags: &["logs"],
        ..scenario(logs_global)
    },
    CheckDef {
        id: "DOCTOR.healthy-field",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "doctor {\"healthy\":false,\"checks\":[Check,...]}",
        title: "`doctor` answers healthy and checks of {name, ok, detail, fix[], optional}",
        tags: &["doctor"],
        ..scenario(doctor_shape)
    },
    CheckDef {
        id: "DOCTOR.unhealthy-exit-0",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#exit-codes",
        quote: "doctor exits 0 with healthy:false.",
        title: "`doctor` with no host tools on PATH answers healthy:false and exits 0",
        tags: &["doctor", "exit"],
        ..scenario(doctor_unhealthy)
    },
    CheckDef {
        id: "DOCTOR.healthy-consistent",
        level: Should,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "doctor.healthy reports host readiness.",
        title: "healthy is false when a non-optional check failed",
        tags: &["doctor"],
        ..scenario(doctor_consistent)
    },
    CheckDef {
        id: "CLONE.forwards-not-copied",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "clone {\"vm\":VM,\"source\":\"work\",\"forwards_copied\":false}",
        title: "`clone work copy` answers {vm, source, forwards_copied:false} and the clone has no forwards",
        tags: &["clone"],
        ..scenario(clone_forwards)
    },
    CheckDef {
        id: "CLONE.name-taken",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "name_taken a VM by that name already exists",
        title: "`clone work work` fails with name_taken",
        tags: &["clone", "errors"],
        ..scenario(clone_name_taken)
    },
    CheckDef {
        id: "SSHCMD.argv",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "ssh-command {\"argv\":[\"ssh\",\"-p\",\"2200\",...]}",
        title: "`ssh-command work` answers an argv starting with ssh that names the VM's port",
        tags: &["ssh-command"],
        ..scenario(sshcmd_argv)
    },
    CheckDef {
        id: "CODES.not-found-everywhere",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "not_found no such VM",
        title: "every command that names a VM fails with not_found for a VM that does not exist",
        tags: &["errors"],
        ..scenario(not_found_everywhere)
    },
    CheckDef {
        id: "CODES.broken-refused",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "broken the VM's vm.toml will not parse",
        title: "commands that need a readable VM fail with broken on a broken vm.toml",
        tags: &["errors", "broken"],
        ..scenario(broken_refused)
    },
    CheckDef {
        id: "CODES.not-running",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "not_running the operation needs a running VM",
        title: "down, exec, cp and screenshot on a stopped VM fail with not_running",
        tags: &["errors", "state"],
        ..scenario(not_running)
    },
    CheckDef {
        id: "APPLY.provision-alias",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "provision is a hidden alias of apply and reports \"cmd\":\"apply\".",
        title: "`provision` answers with cmd apply",
        tags: &["apply"],
        editions: Editions::V3 { change: "contract 2's provision is a command of its own (cmd provision, {vm, provisioned, skipped_reason})" },
        ..scenario(provision_alias)
    },
    CheckDef {
        id: "IMAGES.file-bare",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "Image.file is a bare filename under the data root's isos/, never an absolute path.",
        title: "`images` answers images: [...] whose file is a bare filename",
        tags: &["images"],
        ..scenario(images_file_bare)
    },
    CheckDef {
        id: "PRUNE.dry-run-empty",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "prune {\"dry_run\":true,\"items\":[PruneItem,...]}",
        title: "`prune` on a clean root answers {dry_run: true, items: []}",
        tags: &["prune", "lists"],
        ..scenario(prune_empty)
    },
    CheckDef {
        id: "RECIPES.schema-lists",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "A recipe without a health check has health:null; all list fields are [], never null.",
        title: "`recipes` answers RecipeSchema rows with list fields and health null or an object",
        tags: &["recipes", "lists"],
        editions: Editions::V3 { change: "contract 2's Recipe is {name, description}" },
        ..scenario(recipes_lists)
    },
    CheckDef {
        id: "CHECKRECIPES.applicable-explicit",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "check-recipes.applicable is emitted explicitly even though it equals issues == [].",
        title: "`check-recipes` answers applicable equal to issues == []",
        tags: &["recipes"],
        ..scenario(check_recipes)
    },
    CheckDef {
        id: "RECIPE.cmd-is-recipe",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "All recipe subcommands report \"cmd\":\"recipe\"",
        title: "`recipe list` answers cmd recipe with roots and recipes lists",
        tags: &["recipes"],
        editions: Editions::V3 { change: "contract 2's recipe list answers {dir, recipes: [names]}" },
        ..scenario(recipe_list)
    },
    CheckDef {
        id: "RECIPE.new-path",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "recipe new {\"path\":\"/home/u/.stoat/recipes/foo/\"}",
        title: "`recipe new <name> --os alpine` answers {path}: an absolute path, naming the recipe, that exists once the command has answered (SKIP when the SUT refuses that command line as usage)",
        tags: &["recipes", "state"],
        ..scenario(recipe_new_path)
    },
    CheckDef {
        id: "GUEST.cmd-is-guest",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "all guest subcommands report \"cmd\":\"guest\"",
        title: "`guest ls` answers cmd guest with a guests list",
        tags: &["guest"],
        editions: Editions::V3 { change: "contract 2 has no guest command" },
        ..scenario(guest_ls)
    },
    CheckDef {
        id: "GUEST.show",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "guest show {\"guest\":Guest}",
        title: "`guest show <name>` of every guest `guest ls` lists answers cmd guest with {guest} naming it, its fields as `guest ls` gave them; an unknown name is refused (exit 1), never with internal",
        tags: &["guest"],
        editions: Editions::V3 { change: "contract 2 has no guest command" },
        ..scenario(guest_show)
    },
    CheckDef {
        id: "CAPABILITIES.unavailable",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#capabilities",
        quote: "runtime.fork and runtime.continuation always appear under unavailable with unsupported/not_implemented.",
        title: "`capabilities` answers schema 1 and lists runtime.fork and runtime.continuation as unsupported/not_implemented",
        tags: &["capabilities"],
        editions: Editions::V3 { change: "contract 2 has no capabilities command" },
        ..scenario(capabilities)
    },
    CheckDef {
        id: "PULL.no-such-image",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "no_such_image the requested image is not in the index",
        title: "`pull` of an id the catalog does not know fails with no_such_image",
        tags: &["pull", "errors"],
        editions: Editions::V3 { change: "contract 2 has no no_such_image code" },
        ..scenario(pull_unknown)
    },
    CheckDef {
        id: "CREATE.byo-live",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "create {\"vm\":VM}",
        title: "`create` from a bring-your-own ISO answers {vm} and the VM lists as stopped",
        tags: &["create"],
        ..scenario(create_byo)
    },
    CheckDef {
        id: "LEAK.byo-image-path",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#absent",
        quote: "iso and base. base is an absolute host path. Both are omitted until a caller has a concrete need.",
        title: "after `create` from a BYO ISO planted under a canary directory, create, ls, get and images never carry its absolute path (the oracle) and get's VM has no iso or base member",
        tags: &["leaks", "create", "images"],
        ..scenario(byo_path_absent)
    },
    CheckDef {
        id: "CREATE.name-taken",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "name_taken a VM by that name already exists",
        title: "`create work` when work exists fails with name_taken",
        tags: &["create", "errors"],
        ..scenario(create_name_taken)
    },
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

/// The smallest file that carries the ISO 9660 signature (`CD001` at byte 32769), so a SUT
/// that checks what a typed path names before attaching it as a CD still takes it.
fn iso9660_fixture() -> Vec<u8> {
    let mut bytes = vec![0u8; 32774];
    bytes[32768] = 1;
    bytes[32769..].copy_from_slice(b"CD001");
    bytes
}

/// `create vm1 --image <BYO ISO> --mode live` in a fresh sandbox, the ISO planted under a
/// canary path (the oracle flags its absolute path in any payload).
fn create_from_byo_iso(case: &mut Case<'_>) -> Result<(Sandbox, Ran), HarnessError> {
    let sandbox = case.sandbox()?;
    let iso = sandbox.write_byo_file("alpine-virt-3.20.3-x86_64.iso", &iso9660_fixture())?;
    let iso = iso.to_string_lossy().into_owned();
    let ran = case.json(
        &sandbox,
        &["create", "vm1", "--image", &iso, "--mode", "live"],
    )?;
    Ok((sandbox, ran))
}

fn create_byo(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let (sandbox, ran) = create_from_byo_iso(case)?;
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

fn byo_path_absent(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let (sandbox, ran) = create_from_byo_iso(case)?;
    if case.expect_ok(&ran).is_none() {
        return Ok(());
    }
    let listed = case.json(&sandbox, &["ls"])?;
    case.expect_ok(&listed);
    let got = case.json(&sandbox, &["get", "vm1"])?;
    if let Some(vm) = case.expect_ok(&got).and_then(|d| d.get("vm")).cloned() {
        for key in ["iso", "base"] {
            case.ensure(
                vm.get(key).is_none(),
                &format!("/data/vm/{key}"),
                format!("get carries {key}; the contract omits iso and base"),
            );
        }
    }
    let images = case.json(&sandbox, &["images"])?;
    case.expect_ok(&images);
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
