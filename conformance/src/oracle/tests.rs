//! Unit tests of each oracle rule: a transcript in, the exact finding ids out. Includes the
//! negative cases (unknown event types, extra fields, allowed host paths) so no rule can
//! pass vacuously or fire wrongly.

use super::*;
use crate::capture::{Capture, Ending};
use serde_json::Value;

fn judge_with(stdout: &str, exit: i32, context: Context) -> Judgement {
    let capture = Capture::from_stdout(stdout.as_bytes().to_vec(), Ending::Exited(exit));
    // Rule tests isolate the rules: only the builtin shapes, not the published schemas.
    Oracle::with_schema(vec![Box::new(BuiltinShapes)]).judge(&capture, &context)
}

fn ids(stdout: &str, exit: i32) -> Vec<String> {
    ids_with(stdout, exit, Context::default())
}

fn ids_with(stdout: &str, exit: i32, context: Context) -> Vec<String> {
    let mut ids: Vec<String> = judge_with(stdout, exit, context)
        .findings
        .into_iter()
        .map(|f| f.check_id)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

const OK_LS: &str =
    "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"vms\":[]}}\n";

#[test]
fn a_clean_result_has_no_findings() {
    assert_eq!(ids(OK_LS, 0), Vec::<String>::new());
    let judgement = judge_with(OK_LS, 0, Context::default());
    assert_eq!(judgement.outcome, Outcome::Ok);
    for rule in [
        "ENV.result-last",
        "ENV.one-result",
        "EXIT.ok-is-0",
        "LIST.never-null",
        "SCHEMA.data",
    ] {
        assert!(judgement.exercised.contains(rule), "{rule} not exercised");
    }
}

#[test]
fn unknown_event_types_and_extra_fields_are_tolerated() {
    let stream = "{\"v\":3,\"type\":\"heartbeat\",\"cmd\":\"ls\",\"data\":{\"n\":1}}\n{\"v\":3,\"type\":\"mystery\",\"cmd\":\"ls\"}\n{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"vms\":[],\"future\":{\"x\":null}}}\n";
    assert_eq!(ids(stream, 0), Vec::<String>::new());
}

#[test]
fn stream_rules() {
    assert_eq!(ids(&format!("hello\n{OK_LS}"), 0), vec!["ENV.json-lines"]);
    assert_eq!(
        ids(&format!("{OK_LS}{OK_LS}"), 0),
        vec!["ENV.one-result", "ENV.result-last"]
    );
    let log = "{\"v\":3,\"type\":\"log\",\"cmd\":\"ls\",\"data\":{\"line\":\"x\"}}\n";
    assert_eq!(ids(&format!("{OK_LS}{log}"), 0), vec!["ENV.result-last"]);
    assert_eq!(ids(log, 1), vec!["ENV.result-present"]);
    assert_eq!(
        judge_with(log, 1, Context::default()).outcome,
        Outcome::Crashed
    );
    assert_eq!(ids("", 0), vec!["ENV.result-present", "EXIT.crash-nonzero"]);
    assert_eq!(ids(&format!("\n{OK_LS}"), 0), vec!["ENV.json-lines"]);
    assert_eq!(
        ids("[1,2]\n", 1),
        vec!["ENV.json-lines", "ENV.result-present"]
    );
}

#[test]
fn envelope_rules() {
    let v2 = OK_LS.replace("\"v\":3", "\"v\":2");
    assert_eq!(ids(&v2, 0), vec!["ENV.v-is-3"]);
    let v_string = OK_LS.replace("\"v\":3", "\"v\":\"3\"");
    assert_eq!(ids(&v_string, 0), vec!["ENV.v-is-3"]);
    let no_cmd = OK_LS.replace("\"cmd\":\"ls\",", "");
    assert_eq!(
        ids(&no_cmd, 0),
        vec!["ENV.line-fields", "SCHEMA.data"]
            .into_iter()
            .filter(|id| *id != "SCHEMA.data")
            .collect::<Vec<_>>()
    );
    let ok_event =
        "{\"v\":3,\"type\":\"log\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"line\":\"x\"}}\n";
    assert_eq!(
        ids(&format!("{ok_event}{OK_LS}"), 0),
        vec!["ENV.ok-only-on-result"]
    );
    let no_ok = OK_LS.replace("\"ok\":true,", "");
    assert_eq!(ids(&no_ok, 0), vec!["ENV.ok-bool"]);
    let both = "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"vms\":[]},\"error\":{\"code\":\"internal\",\"message\":\"x\"}}\n";
    assert_eq!(ids(both, 0), vec!["ENV.data-xor-error"]);
    let neither = "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":false}\n";
    assert_eq!(
        ids(neither, 1),
        vec!["ENV.data-xor-error", "ENV.ok-matches-payload"]
    );
    let bad_error =
        "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":false,\"error\":{\"code\":7}}\n";
    assert_eq!(ids(bad_error, 1), vec!["ENV.error-shape"]);
    let stage_without_data = format!("{{\"v\":3,\"type\":\"stage\",\"cmd\":\"ls\"}}\n{OK_LS}");
    assert_eq!(ids(&stage_without_data, 0), vec!["ENV.event-data"]);
    let other_cmd = format!(
        "{{\"v\":3,\"type\":\"log\",\"cmd\":\"apply\",\"data\":{{\"line\":\"x\"}}}}\n{OK_LS}"
    );
    assert_eq!(ids(&other_cmd, 0), vec!["ENV.cmd-consistent"]);
    let context = Context {
        expect_cmd: Some("apply".into()),
        ..Default::default()
    };
    assert_eq!(ids_with(OK_LS, 0, context), vec!["ENV.cmd-matches"]);
}

#[test]
fn ansi_is_caught_raw_and_decoded_but_not_in_guest_output() {
    assert_eq!(
        ids(&format!("\x1b[0m{OK_LS}"), 0),
        vec![
            "ENV.json-lines",
            "ENV.no-ansi",
            "ENV.result-present",
            "EXIT.crash-nonzero"
        ]
    );
    let coloured = "{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":true,\"data\":{\"state\":\"\\u001b[32mrunning\\u001b[0m\"}}\n";
    assert!(ids(coloured, 0).contains(&"ENV.no-ansi".to_string()));
    let guest = "{\"v\":3,\"type\":\"result\",\"cmd\":\"exec\",\"ok\":true,\"data\":{\"vm\":\"w\",\"exit_code\":0,\"stdout\":\"\\u001b[1mbold\",\"stderr\":\"\"}}\n";
    assert_eq!(ids(guest, 0), Vec::<String>::new());
}

#[test]
fn exit_rules() {
    assert_eq!(ids(OK_LS, 1), vec!["EXIT.ok-is-0"]);
    assert_eq!(ids(OK_LS, 3), vec!["EXIT.ok-is-0", "EXIT.status-range"]);
    let usage = "{\"v\":3,\"type\":\"result\",\"cmd\":\"\",\"ok\":false,\"error\":{\"code\":\"usage\",\"message\":\"bad\"}}\n";
    assert_eq!(ids(usage, 2), Vec::<String>::new());
    assert_eq!(ids(usage, 1), vec!["EXIT.usage-is-2"]);
    assert_eq!(ids(usage, 0), vec!["EXIT.error-nonzero", "EXIT.usage-is-2"]);
    let not_found = "{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":false,\"error\":{\"code\":\"not_found\",\"message\":\"no\"}}\n";
    assert_eq!(ids(not_found, 1), Vec::<String>::new());
    assert_eq!(ids(not_found, 2), vec!["EXIT.usage-is-2"]);
    let exec = "{\"v\":3,\"type\":\"result\",\"cmd\":\"exec\",\"ok\":true,\"data\":{\"vm\":\"w\",\"exit_code\":2,\"stdout\":\"\",\"stderr\":\"\"}}\n";
    assert_eq!(ids(exec, 0), Vec::<String>::new());
    assert_eq!(ids(exec, 2), vec!["EXIT.exec-ran-is-0", "EXIT.usage-is-2"]);
    let doctor = "{\"v\":3,\"type\":\"result\",\"cmd\":\"doctor\",\"ok\":true,\"data\":{\"healthy\":false,\"checks\":[]}}\n";
    assert_eq!(ids(doctor, 0), Vec::<String>::new());
    assert_eq!(ids(doctor, 1), vec!["EXIT.doctor-unhealthy-is-0"]);
    // A signal or a timeout leaves the exit rules nothing to judge.
    let capture = Capture::from_stdout(Vec::new(), Ending::Signaled(9));
    let judgement = Oracle::new().judge(&capture, &Context::default());
    assert_eq!(
        judgement
            .findings
            .iter()
            .map(|f| f.check_id.as_str())
            .collect::<Vec<_>>(),
        vec!["ENV.result-present"]
    );
}

#[test]
fn lists_and_codes() {
    let null_list = "{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":true,\"data\":{\"vm\":{\"recipes\":null}}}\n";
    assert!(ids(null_list, 0).contains(&"LIST.never-null".to_string()));
    let null_health = "{\"v\":3,\"type\":\"result\",\"cmd\":\"recipes\",\"ok\":true,\"data\":{\"recipes\":[{\"health\":null,\"depends\":[]}]}}\n";
    assert_eq!(ids(null_health, 0), Vec::<String>::new());
    let unknown_code = "{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":false,\"error\":{\"code\":\"brand_new\",\"message\":\"x\"}}\n";
    let judgement = judge_with(unknown_code, 1, Context::default());
    assert_eq!(judgement.findings.len(), 1);
    assert_eq!(judgement.findings[0].check_id, "CODES.known");
    assert_eq!(judgement.findings[0].level, crate::Level::Should);
    assert!(
        KNOWN_CODES.windows(2).all(|w| w[0] < w[1]),
        "KNOWN_CODES must stay sorted"
    );
}

fn canaries() -> Context {
    Context {
        expect_cmd: None,
        edition: Default::default(),
        canaries: Canaries {
            paths: vec![Canary {
                label: "STOAT_HOME".into(),
                value: "/tmp/sb/data".into(),
            }],
            secrets: vec![Canary {
                label: "console password".into(),
                value: "cpw-123".into(),
            }],
            ..Default::default()
        },
    }
}

#[test]
fn leaks_are_found_except_where_the_contract_allows_paths() {
    let leak = "{\"v\":3,\"type\":\"result\",\"cmd\":\"guest\",\"ok\":true,\"data\":{\"guest\":{\"disk_path\":\"/tmp/sb/data/w/disk.qcow2\"}}}\n";
    assert_eq!(ids_with(leak, 0, canaries()), vec!["LEAK.host-path"]);
    let allowed = "{\"v\":3,\"type\":\"result\",\"cmd\":\"cp\",\"ok\":true,\"data\":{\"vm\":\"w\",\"direction\":\"to_guest\",\"local\":\"/tmp/sb/data/f\",\"remote\":\"/tmp/f\"}}\n";
    assert_eq!(ids_with(allowed, 0, canaries()), Vec::<String>::new());
    let password = "{\"v\":3,\"type\":\"result\",\"cmd\":\"guest\",\"ok\":true,\"data\":{\"guest\":{\"console\":\"cpw-123\"}}}\n";
    assert_eq!(
        ids_with(password, 0, canaries()),
        vec!["LEAK.console-password"]
    );
    let key = "{\"v\":3,\"type\":\"result\",\"cmd\":\"guest\",\"ok\":true,\"data\":{\"guest\":{\"console_password\":\"\"}}}\n";
    assert_eq!(ids_with(key, 0, canaries()), vec!["LEAK.console-password"]);
    // "cpw-123" in base64 is Y3B3LTEyMw==
    let encoded = "{\"v\":3,\"type\":\"result\",\"cmd\":\"exec\",\"ok\":true,\"data\":{\"vm\":\"w\",\"exit_code\":0,\"stdout_base64\":\"Y3B3LTEyMw==\",\"stdout_encoding\":\"base64\",\"stderr\":\"\"}}\n";
    let found = ids_with(encoded, 0, canaries());
    assert!(
        found.contains(&"LEAK.console-password".to_string()),
        "{found:?}"
    );
    let message = "{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":false,\"error\":{\"code\":\"broken\",\"message\":\"/tmp/sb/data/w/vm.toml: bad\"}}\n";
    assert_eq!(
        ids_with(message, 1, canaries()),
        vec!["LEAK.host-path-in-message"]
    );
    let prose = "starting in /tmp/sb/data/w\n{\"v\":3,\"type\":\"result\",\"cmd\":\"up\",\"ok\":false,\"error\":{\"code\":\"internal\",\"message\":\"x\"}}\n";
    assert!(ids_with(prose, 1, canaries()).contains(&"LEAK.host-path".to_string()));
}

#[test]
fn exec_encoding_rules() {
    let ok = |data: &str| {
        format!("{{\"v\":3,\"type\":\"result\",\"cmd\":\"exec\",\"ok\":true,\"data\":{{\"vm\":\"w\",\"exit_code\":0,{data}}}}}\n")
    };
    assert_eq!(
        ids(&ok("\"stdout\":\"a\",\"stderr\":\"\""), 0),
        Vec::<String>::new()
    );
    assert_eq!(
        ids(
            &ok("\"stdout_base64\":\"//4=\",\"stdout_encoding\":\"base64\",\"stderr\":\"\""),
            0
        ),
        Vec::<String>::new()
    );
    assert_eq!(ids(&ok("\"stderr\":\"\""), 0), vec!["EXEC.empty-is-string"]);
    assert_eq!(ids(&ok("\"stdout\":\"\",\"stdout_base64\":\"//4=\",\"stdout_encoding\":\"base64\",\"stderr\":\"\""), 0), vec!["EXEC.stream-exclusive"]);
    assert_eq!(
        ids(&ok("\"stdout_base64\":\"//4=\",\"stderr\":\"\""), 0),
        vec!["EXEC.encoding-tag"]
    );
    assert_eq!(
        ids(
            &ok("\"stdout_base64\":\"!!\",\"stdout_encoding\":\"base64\",\"stderr\":\"\""),
            0
        ),
        vec!["EXEC.base64-valid"]
    );
    assert_eq!(
        ids(
            &ok("\"stdout_base64\":\"aGk=\",\"stdout_encoding\":\"base64\",\"stderr\":\"\""),
            0
        ),
        vec!["EXEC.base64-only-non-utf8"]
    );
}

#[test]
fn schema_shapes() {
    let bad_version = "{\"v\":3,\"type\":\"result\",\"cmd\":\"version\",\"ok\":true,\"data\":{\"version\":1,\"contract\":3}}\n";
    assert_eq!(ids(bad_version, 0), vec!["SCHEMA.data"]);
    let progress = "{\"v\":3,\"type\":\"progress\",\"cmd\":\"pull\",\"data\":{\"id\":\"a\",\"done\":\"1\",\"total\":2,\"percent\":50}}\n{\"v\":3,\"type\":\"result\",\"cmd\":\"pull\",\"ok\":true,\"data\":{\"id\":\"a\",\"downloaded\":true,\"verified\":true,\"checksum_available\":true}}\n";
    assert_eq!(ids(progress, 0), vec!["SCHEMA.data"]);
}

#[test]
fn every_rule_id_the_oracle_emits_is_in_the_catalog() {
    let sources = [
        include_str!("codes.rs"),
        include_str!("envelope.rs"),
        include_str!("exec.rs"),
        include_str!("exit.rs"),
        include_str!("leaks.rs"),
        include_str!("lists.rs"),
        include_str!("schema.rs"),
    ];
    let pattern = regex::Regex::new(r#""([A-Z]+\.[a-z0-9-]+)""#).expect("regex");
    for source in sources {
        for capture in pattern.captures_iter(source) {
            let id = &capture[1];
            let def = crate::catalog::find(id)
                .unwrap_or_else(|| panic!("{id} is emitted but not in the catalog"));
            assert_eq!(
                def.kind,
                crate::catalog::Kind::Oracle,
                "{id} is emitted by the oracle but is not an oracle check"
            );
        }
    }
}

#[test]
fn the_code_table_agrees_with_the_published_schemas() {
    let mut published = stoat_schemas::codes();
    published.sort_unstable();
    assert_eq!(
        KNOWN_CODES.to_vec(),
        published,
        "two readings of the v3 code table disagree"
    );
}

#[test]
fn the_published_schemas_compile_and_judge_lines() {
    let schemas = PublishedSchemas::new();
    let good: Value = serde_json::from_str(OK_LS).expect("json");
    assert_eq!(schemas.validate_line(&good), Vec::<(String, String)>::new());
    let bad: Value = serde_json::from_str(
        "{\"v\":3,\"type\":\"result\",\"cmd\":\"ls\",\"ok\":true,\"data\":{\"vms\":null}}",
    )
    .expect("json");
    assert!(!schemas.validate_line(&bad).is_empty());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a SUT writes, the oracle judges it without panicking, and a run without a
        /// result line is always classified as crashed.
        #[test]
        fn the_oracle_never_panics_on_arbitrary_stdout(stdout in proptest::collection::vec(any::<u8>(), 0..512), exit in -1i32..300) {
            let capture = Capture::from_stdout(stdout, Ending::Exited(exit));
            let judgement = Oracle::new().judge(&capture, &Context::default());
            if judgement.result.is_none() {
                prop_assert_eq!(judgement.outcome, Outcome::Crashed);
            }
        }

        /// Arbitrary JSON-ish lines built from envelope pieces never panic either.
        #[test]
        fn the_oracle_never_panics_on_arbitrary_envelopes(
            v in prop_oneof![Just("3".to_string()), Just("\"3\"".to_string()), Just("null".to_string()), any::<i64>().prop_map(|n| n.to_string())],
            kind in prop_oneof![Just("result"), Just("log"), Just("progress"), Just("stage"), Just("x")],
            ok in prop_oneof![Just("true"), Just("false"), Just("1"), Just("null")],
            data in prop_oneof![Just("{}"), Just("null"), Just("[]"), Just("{\"vms\":null}"), Just("{\"stdout_base64\":\"%%\"}")],
        ) {
            let line = format!("{{\"v\":{v},\"type\":\"{kind}\",\"cmd\":\"exec\",\"ok\":{ok},\"data\":{data}}}\n");
            let capture = Capture::from_stdout(line.into_bytes(), Ending::Exited(0));
            let _ = Oracle::new().judge(&capture, &Context::default());
        }
    }
}
