//! Version, help, usage errors, the --json scan, ls and get over fixtures, broken VMs, leaks.

use crate::common::{TestEnv, PLANTED_PASSWORD};

#[test]
fn version_names_contract_3_without_a_data_root() {
    let env = TestEnv::new();
    let run = env.json(&["version"]);
    assert_eq!(run.data()["contract"], 3);
    assert!(
        !env.root().join("isos").exists(),
        "version must not touch the data root"
    );
}

#[test]
fn help_answers_in_the_contract_anywhere() {
    let env = TestEnv::new();
    for args in [&["help"][..], &["ls", "-h"], &["--help"]] {
        let run = env.json(args);
        assert_eq!(run.result["cmd"], "help");
        assert!(run.data()["usage"].as_str().unwrap().contains("Usage"));
    }
    let usage = env.json(&["help"]).data()["usage"]
        .as_str()
        .unwrap()
        .to_owned();
    for command in [
        "ls",
        "get",
        "create",
        "update",
        "up",
        "down",
        "wait",
        "rm",
        "clone",
        "exec",
        "ssh",
        "ssh-command",
        "cp",
        "forward",
        "images",
        "pull",
        "snapshot",
        "prune",
        "apply",
        "recipes",
        "check-recipes",
        "recipe",
        "logs",
        "doctor",
        "version",
        "help",
    ] {
        assert!(usage.contains(command), "help mentions {command}");
    }
    assert!(!usage.contains("provision"));
}

#[test]
fn usage_errors_exit_2_with_the_raw_command() {
    let env = TestEnv::new();
    let run = env.json(&["frobnicate"]);
    run.error("usage");
    assert_eq!(run.result["cmd"], "frobnicate");
    assert!(run.stderr.is_empty());
    env.json(&["get"]).error("usage");
    env.json(&["wait", "w", "--timeout", "0s"]).error("usage");
    env.json(&["wait", "w", "--until", "sideways"])
        .error("usage");
    env.json_raw(&["--json", "exec", "w"]).error("usage");
    env.json(&["ssh", "w"]).error("usage");
    let bare = env.json_raw(&["--json"]);
    bare.error("usage");
    assert_eq!(bare.result["cmd"], "");
}

/// A human usage error, as a person sees it on stderr (and nothing on stdout, exit 2).
fn human_usage(env: &TestEnv, args: &[&str]) -> String {
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn usage_errors_say_what_clap_knows_in_both_modes() {
    let env = TestEnv::new();
    insta::assert_snapshot!(human_usage(&env, &["create", "x"]), @r"
    error: the following required arguments were not provided:
      --image <IMAGE>

    Usage: stoat create --image <IMAGE> <NAME>

    For more information, try '--help'.
    ");
    insta::assert_snapshot!(human_usage(&env, &["wait", "w", "--until", "sideways"]), @r"
    error: invalid value 'sideways' for '--until <UNTIL>'
      [possible values: reachable, stopped, applied]

    For more information, try '--help'.
    ");
    insta::assert_snapshot!(human_usage(&env, &["lss"]), @r"
    error: unrecognized subcommand 'lss'

      tip: some similar subcommands exist: 'list', 'logs', 'ls'

    Usage: stoat [OPTIONS] [COMMAND]

    For more information, try '--help'.
    ");
    // Under --json the same content, on one line.
    insta::assert_snapshot!(env.json(&["create", "x"]).error("usage"), @"the following required arguments were not provided: --image <IMAGE>; usage: stoat create --image <IMAGE> <NAME>");
    insta::assert_snapshot!(env.json(&["wait", "w", "--until", "sideways"]).error("usage"), @"invalid value 'sideways' for '--until <UNTIL>' [possible values: reachable, stopped, applied]");
    insta::assert_snapshot!(env.json(&["lss"]).error("usage"), @"unrecognized subcommand 'lss'; tip: some similar subcommands exist: 'list', 'logs', 'ls'; usage: stoat [OPTIONS] [COMMAND]");
    insta::assert_snapshot!(env.json(&["clone"]).error("usage"), @"the following required arguments were not provided: <SOURCE>, <NAME>; usage: stoat clone <SOURCE> <NAME>");
}

#[test]
fn help_for_one_command() {
    let env = TestEnv::new();
    let out = env.run(&["help", "create"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Create a VM"), "{text}");
    assert!(
        text.contains("--image <IMAGE>") && text.contains("Catalog id"),
        "{text}"
    );
    assert_eq!(
        env.json(&["help", "recipe", "add"]).data()["usage"]
            .as_str()
            .unwrap()
            .lines()
            .next(),
        Some("Add a remote recipe from a git URL")
    );
    let exec = env.run(&["help", "exec"]);
    assert!(String::from_utf8(exec.stdout)
        .unwrap()
        .contains("--timeout <D>"));
    env.json(&["help", "nope"]).error("usage");
}

#[test]
fn json_flag_is_found_anywhere() {
    let env = TestEnv::new();
    for args in [
        &["--json", "ls"][..],
        &["ls", "--json"],
        &["-q", "--json", "ls"],
        &["ls", "-q", "--json"],
    ] {
        let run = env.json_raw(args);
        assert_eq!(run.data()["vms"], serde_json::json!([]));
    }
}

#[test]
fn empty_root_lists_an_empty_array() {
    let env = TestEnv::new();
    assert_eq!(env.json(&["ls"]).data()["vms"], serde_json::json!([]));
}

#[test]
fn broken_vm_lists_and_gets_but_never_crashes() {
    let env = TestEnv::new();
    env.write_broken_vm("bad");
    env.write_basic_vm("good", 2201);
    let ls = env.json(&["ls"]);
    let vms = ls.data()["vms"].as_array().unwrap();
    assert_eq!(vms.len(), 2);
    assert_eq!(vms[0]["name"], "bad");
    assert_eq!(vms[0]["state"], "broken");
    assert!(vms[0]["error"].as_str().unwrap().contains("line 2"));
    assert_eq!(vms[1]["state"], "stopped");
    assert!(vms[1].get("error").is_none());
    let get = env.json(&["get", "bad"]);
    assert_eq!(get.data()["vm"]["state"], "broken");
    assert_eq!(get.data()["vm"]["recipes_detail"], serde_json::json!([]));
    let human = env.run(&["ls"]);
    assert_eq!(human.status.code(), Some(0));
}

#[test]
fn get_reports_vm_status_and_not_found() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2200);
    let run = env.json(&["get", "work"]);
    let vm = &run.data()["vm"];
    assert_eq!(vm["name"], "work");
    assert_eq!(vm["ssh_user"], "stoat");
    assert_eq!(vm["allow_exec"], true);
    assert_eq!(vm["agent_access"], "manage");
    assert_eq!(vm["health"], "unknown");
    assert_eq!(vm["display"], "vnc");
    env.json(&["get", "ghost"]).error("not_found");
    env.json(&["get", "isos"]).error("not_found");
}

#[test]
fn no_host_path_or_password_in_vm_output() {
    let env = TestEnv::new();
    env.write_basic_vm("work", 2200);
    let root = env.root().display().to_string();
    for args in [&["ls"][..], &["get", "work"]] {
        let run = env.json(args);
        run.assert_absent(&root);
        run.assert_absent(PLANTED_PASSWORD);
        run.assert_absent("console_password");
        run.assert_absent("qemu.pid");
    }
    let human = env.run(&["get", "work"]);
    assert!(!String::from_utf8_lossy(&human.stdout).contains(PLANTED_PASSWORD));
}

#[test]
fn a_panic_still_ends_with_one_internal_result() {
    let mut env = TestEnv::new();
    env.set_env("STOAT_DEBUG_PANIC", "1");
    let run = env.json(&["ls"]);
    assert_eq!(run.result["cmd"], "ls");
    assert!(
        run.error("internal").starts_with("panic: "),
        "{}",
        run.stdout
    );
    assert_eq!(run.lines.len(), 1);
    let human = env.run(&["ls"]);
    assert_eq!(human.status.code(), Some(1));
    assert!(human.stdout.is_empty());
}
