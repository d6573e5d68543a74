//! Values that break the contract must fail, and the message must name where. One test per
//! rule, so a failing test says which rule the schemas stopped enforcing.

use serde_json::{json, Value};
use stoat_schemas::validate::Validator;

fn validator() -> &'static Validator {
    static VALIDATOR: std::sync::OnceLock<Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(Validator::new)
}

/// Asserts that `schema` ("line" for a whole line) rejects `value` with a message naming
/// `pointer`.
fn assert_rejected(schema: &str, value: Value, pointer: &str) {
    let messages = if schema == "line" {
        validator().validate_line(&value)
    } else {
        validator().validate(schema, &value)
    };
    assert!(!messages.is_empty(), "{schema} accepted {value}");
    assert!(
        messages.iter().any(|message| message.contains(pointer)),
        "{schema}: no message names {pointer}: {messages:#?}"
    );
}

fn assert_accepted(schema: &str, value: Value) {
    let messages = if schema == "line" {
        validator().validate_line(&value)
    } else {
        validator().validate(schema, &value)
    };
    assert!(
        messages.is_empty(),
        "{schema} rejected {value}: {messages:#?}"
    );
}

fn vm() -> Value {
    json!({"name":"work","os":"alpine","mode":"cloud","backend":"cloudinit",
           "state":"stopped","cpus":4,"ram_mb":4096,"disk":"8G","share":"",
           "recipes":[],"ssh_port":2200,"ssh_user":"stoat","installed":false,
           "forwards":[],"allow_exec":true,"agent_access":"manage","display":"vnc",
           "project":"","key":"","project_missing":false})
}

fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

// ---- envelope

#[test]
fn a_null_list_fails() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":true,"data":{"vms":null}}),
        "/data/vms",
    );
    assert_rejected(
        "dto/vm.json",
        with(vm(), "recipes", Value::Null),
        "/recipes",
    );
    assert_rejected(
        "dto/vm.json",
        with(vm(), "forwards", Value::Null),
        "/forwards",
    );
}

#[test]
fn ok_on_an_event_fails() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"log","cmd":"apply","ok":true,"data":{"line":"x"}}),
        "envelope.json",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"heartbeat","cmd":"pull","ok":true}),
        "envelope.json",
    );
}

#[test]
fn data_and_error_both_on_a_result_fail() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":true,"data":{"vms":[]},"error":{"code":"internal","message":"x"}}),
        "envelope.json",
    );
}

#[test]
fn a_result_with_neither_data_nor_error_fails() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":true}),
        "envelope.json",
    );
}

#[test]
fn ok_must_agree_with_data_or_error() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":false,"data":{"vms":[]}}),
        "envelope.json",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":true,"error":{"code":"internal","message":"x"}}),
        "envelope.json",
    );
}

#[test]
fn a_result_without_ok_fails() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","data":{"vms":[]}}),
        "envelope.json",
    );
}

#[test]
fn missing_v_type_or_cmd_fails() {
    assert_rejected(
        "line",
        json!({"type":"result","cmd":"ls","ok":true,"data":{"vms":[]}}),
        "\"v\" is a required property",
    );
    assert_rejected(
        "line",
        json!({"v":3,"cmd":"ls","ok":true,"data":{"vms":[]}}),
        "\"type\" is a required property",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","ok":true,"data":{"vms":[]}}),
        "\"cmd\" is a required property",
    );
}

#[test]
fn v2_fails() {
    assert_rejected(
        "line",
        json!({"v":2,"type":"result","cmd":"ls","ok":true,"data":{"vms":[]}}),
        "/v",
    );
    assert_rejected(
        "line",
        json!({"v":"3","type":"result","cmd":"ls","ok":true,"data":{"vms":[]}}),
        "/v",
    );
}

#[test]
fn a_line_that_is_not_an_object_fails() {
    assert_rejected("line", json!([1, 2]), "envelope.json");
    assert_rejected("line", json!("result"), "envelope.json");
}

#[test]
fn an_error_without_message_fails() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"up","ok":false,"error":{"code":"not_found"}}),
        "/error",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"result","cmd":"up","ok":false,"error":{"code":"not_found","message":""}}),
        "/error/message",
    );
}

#[test]
fn a_known_event_needs_its_data() {
    assert_rejected(
        "line",
        json!({"v":3,"type":"progress","cmd":"pull"}),
        "envelope.json",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"progress","cmd":"pull","data":{"id":"x","done":1,"total":2}}),
        "/data",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"progress","cmd":"pull","data":{"id":"x","done":1,"total":2,"percent":101}}),
        "/data/percent",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"stage","cmd":"apply","data":{"recipe":""}}),
        "/data/recipe",
    );
    assert_rejected(
        "line",
        json!({"v":3,"type":"log","cmd":"apply","data":{"line":null}}),
        "/data/line",
    );
}

#[test]
fn unknown_event_types_and_extra_fields_pass() {
    assert_accepted("line", json!({"v":3,"type":"heartbeat","cmd":"pull"}));
    assert_accepted(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":true,"data":{"vms":[],"extra":1}}),
    );
    assert_accepted("dto/vm.json", with(vm(), "future_field", json!({"a":1})));
}

#[test]
fn a_result_of_an_unknown_cmd_gets_the_envelope_check_only() {
    assert_accepted(
        "line",
        json!({"v":3,"type":"result","cmd":"future","ok":true,"data":{"anything":[null]}}),
    );
}

// ---- DTOs

#[test]
fn a_broken_vm_without_error_fails() {
    let broken = with(with(vm(), "state", json!("broken")), "display", json!(""));
    assert_rejected("dto/vm.json", broken.clone(), "dto/vm.json");
    assert_accepted("dto/vm.json", with(broken, "error", json!("vm.toml: bad")));
}

#[test]
fn error_on_a_healthy_vm_fails() {
    assert_rejected(
        "dto/vm.json",
        with(vm(), "error", json!("oops")),
        "dto/vm.json",
    );
}

#[test]
fn display_is_empty_exactly_on_a_broken_vm() {
    assert_rejected("dto/vm.json", with(vm(), "display", json!("")), "/display");
    let broken = with(with(vm(), "state", json!("broken")), "error", json!("bad"));
    assert_rejected("dto/vm.json", broken, "/display");
    assert_rejected(
        "dto/vm.json",
        with(vm(), "display", json!("sdl")),
        "/display",
    );
}

#[test]
fn vm_enums_are_closed() {
    assert_rejected(
        "dto/vm.json",
        with(vm(), "state", json!("paused")),
        "/state",
    );
    assert_rejected(
        "dto/vm.json",
        with(vm(), "agent_access", json!("admin")),
        "/agent_access",
    );
}

#[test]
fn every_vm_field_is_required() {
    for field in [
        "name",
        "state",
        "recipes",
        "forwards",
        "allow_exec",
        "agent_access",
        "display",
        "project",
        "key",
        "project_missing",
    ] {
        assert_rejected(
            "dto/vm.json",
            without(vm(), field),
            &format!("\"{field}\" is a required property"),
        );
    }
}

#[test]
fn vm_types_are_strict() {
    assert_rejected("dto/vm.json", with(vm(), "cpus", json!("4")), "/cpus");
    assert_rejected(
        "dto/vm.json",
        with(vm(), "ssh_port", json!(70000)),
        "/ssh_port",
    );
    assert_rejected(
        "dto/vm.json",
        with(vm(), "forwards", json!([{"host_port":8080}])),
        "/forwards/0",
    );
    assert_rejected(
        "dto/vm.json",
        with(vm(), "project", json!("relative/dir")),
        "/project",
    );
}

#[test]
fn vm_status_keeps_the_vm_rules_and_adds_health() {
    let status = with(
        with(vm(), "health", json!("ok")),
        "recipes_detail",
        json!([]),
    );
    assert_accepted("dto/vm-status.json", status.clone());
    assert_rejected(
        "dto/vm-status.json",
        with(status.clone(), "health", json!("good")),
        "/health",
    );
    assert_rejected(
        "dto/vm-status.json",
        without(status.clone(), "agent_access"),
        "agent_access",
    );
    assert_rejected(
        "dto/vm-status.json",
        with(
            status,
            "recipes_detail",
            json!([{"name":"x","applied":true,"version":"","at":"","health":"ok","params":null,"outputs":{}}]),
        ),
        "/recipes_detail/0/params",
    );
}

#[test]
fn an_image_file_with_a_slash_fails() {
    let image = json!({"id":"alpine-virt","os":"alpine","variant":"virt","backend":"apkovl",
        "file":"/home/u/.stoat/isos/alpine.iso","downloaded":true,"bytes":1,"bytes_exact":true,"byo":false});
    assert_rejected("dto/image.json", image.clone(), "/file");
    assert_rejected(
        "dto/image.json",
        with(image.clone(), "file", json!("isos/alpine.iso")),
        "/file",
    );
}

#[test]
fn an_image_file_is_empty_exactly_when_not_downloaded() {
    let image = json!({"id":"alpine-virt","os":"alpine","variant":"virt","backend":"apkovl",
        "file":"","downloaded":false,"bytes":69206016,"bytes_exact":false,"byo":false});
    assert_accepted("dto/image.json", image.clone());
    assert_rejected(
        "dto/image.json",
        with(image, "downloaded", json!(true)),
        "/file",
    );
}

#[test]
fn recipe_param_declares_default_or_default_from_never_both() {
    let param = json!({"name":"user","type":"string","required":false,"default":"","default_from":"ssh_user","values":[],"help":""});
    assert_accepted("dto/recipe-param.json", param.clone());
    assert_rejected(
        "dto/recipe-param.json",
        with(param.clone(), "default", json!("root")),
        "/default",
    );
    assert_rejected(
        "dto/recipe-param.json",
        with(param, "default_from", json!("home")),
        "/default_from",
    );
}

#[test]
fn recipe_health_is_an_object_or_null() {
    let recipe = json!({"name":"xfce","description":"","schema":2,"runtime":"sh","reboot":false,
        "depends":[],"params":[],"outputs":[],"health":null});
    assert_accepted("dto/recipe.json", recipe.clone());
    assert_rejected(
        "dto/recipe.json",
        without(recipe.clone(), "health"),
        "\"health\" is a required property",
    );
    assert_rejected(
        "dto/recipe.json",
        with(recipe.clone(), "health", json!("docker info")),
        "/health",
    );
    assert_rejected(
        "dto/recipe.json",
        with(recipe, "health", json!({"check":"docker info"})),
        "/health",
    );
}

#[test]
fn recipe_entry_commit_is_seven_hex_and_only_on_remote_rows() {
    let entry = json!({"name":"tailscale","description":"","scope":"global","source":"https://example.invalid/x","ref":"v1","commit":"9f3c1e2"});
    assert_accepted("dto/recipe-entry.json", entry.clone());
    assert_rejected(
        "dto/recipe-entry.json",
        with(entry.clone(), "commit", json!("9f3c1e2d4a")),
        "/commit",
    );
    assert_rejected(
        "dto/recipe-entry.json",
        with(entry.clone(), "scope", json!("bundled")),
        "dto/recipe-entry.json",
    );
    assert_rejected(
        "dto/recipe-entry.json",
        with(entry, "scope", json!("system")),
        "/scope",
    );
}

#[test]
fn recipe_added_commit_is_forty_hex() {
    let added = json!({"name":"tailscale","source":"https://example.invalid/x","ref":"v1","commit":"9f3c1e2","scope":"global"});
    assert_rejected("dto/recipe-added.json", added.clone(), "/commit");
    assert_rejected(
        "dto/recipe-added.json",
        with(
            added,
            "commit",
            json!("9F3C1E2D4A5B6C7D8E9F0A1B2C3D4E5F6A7B8C9D"),
        ),
        "/commit",
    );
}

#[test]
fn recipe_refreshed_status_is_closed() {
    assert_rejected(
        "dto/recipe-refreshed.json",
        json!({"path":"x/install.sh","status":"updated"}),
        "/status",
    );
}

#[test]
fn apply_plan_action_is_run_or_skip() {
    assert_rejected(
        "dto/apply-plan.json",
        json!({"name":"x","action":"maybe","reason":""}),
        "/action",
    );
}

#[test]
fn project_status_vm_drift_is_empty_when_error_is_set() {
    let drift = json!({"field":"cpus","from":"2","to":"4","needs_restart":true});
    assert_rejected(
        "dto/project-status-vm.json",
        json!({"key":"dev","name":"d","drift":[drift],"error":"image differs"}),
        "/drift",
    );
}

#[test]
fn project_run_vm_error_only_when_status_is_error() {
    assert_rejected(
        "dto/project-run-vm.json",
        json!({"key":"dev","name":"d","status":"ok","error":"x"}),
        "dto/project-run-vm.json",
    );
    assert_rejected(
        "dto/project-run-vm.json",
        json!({"key":"dev","name":"d","status":"error"}),
        "error",
    );
    assert_rejected(
        "dto/project-run-vm.json",
        json!({"key":"dev","name":"d","status":"failed"}),
        "/status",
    );
}

#[test]
fn guest_source_is_closed() {
    let guest = json!({"name":"fedora","init":"systemd","shell":"/bin/bash","installer":"","default_backend":"cloudinit",
        "default_ssh_user":"stoat","escalate":[],"capabilities":[],"aliases":[],"filename_hints":[],"seed_packages":[],
        "pkg":{"setup":"","install":[],"env":{},"runtime_packages":{}},"svc":{},"cmd":{},"backend":{},"source":"bundled"});
    assert_accepted("dto/guest.json", guest.clone());
    assert_rejected(
        "dto/guest.json",
        with(guest.clone(), "source", json!("vendor")),
        "/source",
    );
    assert_rejected(
        "dto/guest.json",
        with(guest, "escalate", Value::Null),
        "/escalate",
    );
}

#[test]
fn capability_report_rules() {
    let unavailable = json!([
        {"name":"runtime.fork","status":"unsupported","scope":"runtime","requirements":[],"limits":[],"reason":{"code":"not_implemented"},"evidence":[]},
        {"name":"runtime.continuation","status":"unsupported","scope":"runtime","requirements":[],"limits":[],"reason":{"code":"not_implemented"},"evidence":[]}
    ]);
    let report = json!({"schema":1,"stoat_version":"dev","host":{"os":"linux","arch":"amd64","project_state":"absent"},
        "access_policy":{"mcp_agent_access_enforced":true,"cli_agent_access_enforced":false,"cli_commands":["exec","cp"]},
        "profiles":[],"capabilities":[],"unavailable":unavailable});
    assert_accepted("dto/capability-report.json", report.clone());
    assert_rejected(
        "dto/capability-report.json",
        with(report.clone(), "schema", json!(2)),
        "/schema",
    );
    assert_rejected(
        "dto/capability-report.json",
        with(report.clone(), "unavailable", json!([])),
        "/unavailable",
    );
    let mut bad_state = report.clone();
    bad_state["host"]["project_state"] = json!("present");
    assert_rejected(
        "dto/capability-report.json",
        bad_state,
        "/host/project_state",
    );
    let limited_without_limit = json!([{"name":"vm.snapshot","status":"limited","scope":"vm","requirements":[],"limits":[],"evidence":[]}]);
    assert_rejected(
        "dto/capability-report.json",
        with(report.clone(), "capabilities", limited_without_limit),
        "/capabilities/0",
    );
    let unknown_without_reason = json!([{"name":"x","status":"unknown","scope":"vm","requirements":[],"limits":[],"evidence":[]}]);
    assert_rejected(
        "dto/capability-report.json",
        with(report.clone(), "profiles", unknown_without_reason),
        "/profiles/0",
    );
    let bad_status = json!([{"name":"x","status":"maybe","scope":"vm","requirements":[],"limits":[],"evidence":[]}]);
    assert_rejected(
        "dto/capability-report.json",
        with(report, "profiles", bad_status),
        "/profiles/0/status",
    );
}

// ---- per-command data

fn result(cmd: &str, data: Value) -> Value {
    json!({"v":3,"type":"result","cmd":cmd,"ok":true,"data":data})
}

#[test]
fn exec_with_both_stdout_and_stdout_base64_fails() {
    assert_rejected(
        "line",
        result(
            "exec",
            json!({"vm":"w","exit_code":0,"stdout":"","stdout_base64":"AA==","stdout_encoding":"base64","stderr":""}),
        ),
        "/data",
    );
}

#[test]
fn exec_streams_are_always_present() {
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","exit_code":0}),
        "data/exec.json",
    );
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","exit_code":0,"stdout":""}),
        "data/exec.json",
    );
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","stdout":"","stderr":""}),
        "\"exit_code\" is a required property",
    );
}

#[test]
fn exec_base64_needs_its_encoding_and_valid_alphabet() {
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","exit_code":0,"stdout_base64":"AA==","stderr":""}),
        "data/exec.json",
    );
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","exit_code":0,"stdout_base64":"AA==","stdout_encoding":"hex","stderr":""}),
        "/stdout_encoding",
    );
    assert_rejected(
        "data/exec.json",
        json!({"vm":"w","exit_code":0,"stdout_base64":"not base64!","stdout_encoding":"base64","stderr":""}),
        "/stdout_base64",
    );
}

#[test]
fn a_relative_cp_local_fails() {
    assert_rejected(
        "line",
        result(
            "cp",
            json!({"vm":"w","direction":"to_guest","local":"f","remote":"/tmp/f"}),
        ),
        "/data/local",
    );
    assert_rejected(
        "data/cp.json",
        json!({"vm":"w","direction":"to_guest","local":"~/f","remote":"/tmp/f"}),
        "/local",
    );
    assert_rejected(
        "data/cp.json",
        json!({"vm":"w","direction":"to","local":"/f","remote":"/tmp/f"}),
        "/direction",
    );
}

#[test]
fn update_applies_at_later_fails() {
    assert_rejected(
        "line",
        result(
            "update",
            json!({"vm":vm(),"changed":["ram"],"applies_at":"later"}),
        ),
        "/data/applies_at",
    );
    assert_rejected(
        "data/update.json",
        json!({"vm":vm(),"changed":["ram","ram"],"applies_at":"now"}),
        "/changed",
    );
    assert_rejected(
        "data/update.json",
        json!({"vm":vm(),"changed":null,"applies_at":"now"}),
        "/changed",
    );
}

#[test]
fn forward_show_has_no_applies_at_and_next_start_is_not_active() {
    assert_rejected(
        "data/forward/show.json",
        json!({"vm":"w","forwards":[],"active":true,"applies_at":"now"}),
        "data/forward/show.json",
    );
    assert_rejected(
        "data/forward.json",
        json!({"vm":"w","forwards":[],"active":true,"applies_at":"next_start"}),
        "data/forward.json",
    );
    assert_rejected(
        "data/forward.json",
        json!({"vm":"w","forwards":[],"active":false,"applies_at":"soon"}),
        "data/forward.json",
    );
}

#[test]
fn apply_applied_is_a_list_and_dry_run_is_an_object() {
    assert_rejected(
        "data/apply.json",
        json!({"vm":"w","applied":false,"skipped_reason":"locked"}),
        "data/apply.json",
    );
    assert_rejected(
        "data/apply.json",
        json!({"vm":"w","applied":null,"skipped_reason":""}),
        "data/apply.json",
    );
    assert_rejected(
        "data/apply.json",
        json!([{"name":"x","action":"run","reason":""}]),
        "data/apply.json",
    );
    assert_rejected(
        "data/apply/run.json",
        json!({"vm":"w","applied":["x"]}),
        "skipped_reason",
    );
}

#[test]
fn a_one_vm_shape_and_project_run_are_exclusive() {
    let run = json!({"project":"p","vms":[]});
    assert_accepted("data/up.json", run.clone());
    assert_rejected(
        "data/up.json",
        json!({"vm":vm(),"project":"p","vms":[]}),
        "data/up.json",
    );
    assert_rejected("data/rm.json", json!({"name":"w"}), "data/rm.json");
    assert_rejected(
        "data/wait.json",
        json!({"vm":"w","until":"forever","reached":true,"waited_ms":1}),
        "data/wait.json",
    );
}

#[test]
fn check_recipes_applicable_agrees_with_issues() {
    assert_rejected(
        "data/check-recipes.json",
        json!({"applicable":true,"issues":[{"name":"x","reason":"y"}]}),
        "/issues",
    );
    assert_rejected(
        "data/check-recipes.json",
        json!({"applicable":false,"issues":[]}),
        "/issues",
    );
}

#[test]
fn logs_without_a_vm_has_no_vm_key() {
    assert_rejected(
        "data/logs/stoat.json",
        json!({"vm":"w","lines":[]}),
        "data/logs/stoat.json",
    );
    assert_rejected(
        "data/logs.json",
        json!({"vm":"w","which":"dmesg","lines":[]}),
        "data/logs.json",
    );
    assert_rejected("data/logs.json", json!({"lines":null}), "data/logs.json");
}

#[test]
fn snapshot_shapes() {
    assert_rejected(
        "data/snapshot.json",
        json!({"vm":"w","tag":"t","action":"rename"}),
        "data/snapshot.json",
    );
    assert_rejected(
        "data/snapshot/list.json",
        json!({"vm":"w","snapshots":null}),
        "/snapshots",
    );
}

#[test]
fn version_reports_contract_3() {
    assert_rejected(
        "data/version.json",
        json!({"version":"1.2.3","contract":2}),
        "/contract",
    );
    assert_rejected("data/version.json", json!({"version":"1.2.3"}), "contract");
    assert_rejected(
        "data/mcp/doctor.json",
        json!({"contract":1,"version":"1","transport":"stdio","binary":"/b","clients":[]}),
        "/contract",
    );
}

#[test]
fn ssh_command_argv_starts_with_ssh() {
    assert_rejected(
        "data/ssh-command.json",
        json!({"argv":["scp","-P","2200"]}),
        "/argv/0",
    );
    assert_rejected("data/ssh-command.json", json!({"argv":[]}), "/argv");
}

#[test]
fn recipe_union_rejects_a_shape_no_subcommand_has() {
    assert_rejected(
        "data/recipe.json",
        json!({"dir":"/home/u/.stoat/recipes","recipes":["xfce"]}),
        "data/recipe.json",
    );
    assert_rejected("data/recipe/new.json", json!({"path":"foo/"}), "/path");
}

#[test]
fn guest_union_and_mcp_union() {
    assert_rejected("data/guest.json", json!({"guests":null}), "data/guest.json");
    assert_rejected(
        "data/mcp.json",
        json!({"client":"cursor","path":"mcp.json","json":"{}"}),
        "data/mcp.json",
    );
}

#[test]
fn an_error_result_is_not_checked_against_the_data_schema() {
    assert_accepted(
        "line",
        json!({"v":3,"type":"result","cmd":"ls","ok":false,"error":{"code":"internal","message":"x"}}),
    );
}

#[test]
fn an_unknown_schema_path_is_reported() {
    assert_rejected("dto/nope.json", json!({}), "no such schema");
}
