//! recipes, check-recipes, recipe list|show|new|refresh and guest ls|show through the real
//! binary: success shapes, every error code, the lazy bundled install, refresh statuses,
//! search roots and shadowing, user guest files.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::common::{write_recipe_in, TestEnv};

fn local(env: &TestEnv, name: &str, extra: &str) {
    env.write_recipe(
        name,
        &format!("schema = 3\nname = \"{name}\"\nscript = \"install.sh\"\n{extra}"),
        "#!/bin/sh\n",
    );
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn recipes_lists_what_each_os_is_offered() {
    let env = TestEnv::new();
    let fedora = env.json(&["recipes", "--os", "fedora"]);
    assert_eq!(
        names(&fedora.data()["recipes"]),
        strings(&["devtools", "docker", "tailscale"])
    );
    let alpine = env.json(&["recipes", "--os", "alpine", "--backend", "apkovl"]);
    assert_eq!(
        names(&alpine.data()["recipes"]),
        strings(&["devtools", "docker", "tailscale", "xfce"])
    );
    for args in [&["recipes"][..], &["recipes", "--backend", "cloudinit"]] {
        let all = env.json(args);
        assert_eq!(names(&all.data()["recipes"]).len(), 4, "{args:?}");
    }
    let alias = env.json(&["recipes", "--os", "rpm-family"]);
    assert_eq!(alias.data(), fedora.data(), "an alias names the same guest");
    assert_eq!(
        env.json(&["recipes", "--os", "plan9"]).data()["recipes"],
        serde_json::json!([])
    );
}

#[test]
fn recipes_projects_the_recipe_schema() {
    let env = TestEnv::new();
    let run = env.json(&["recipes", "--os", "debian"]);
    let docker = run.data()["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "docker")
        .unwrap()
        .clone();
    assert_eq!(docker["schema"], 3);
    assert_eq!(docker["health"]["check"], "docker info");
    assert_eq!(docker["params"][0]["default_from"], "ssh_user");
    assert_eq!(docker["params"][0]["default"], "");
    let devtools = &run.data()["recipes"][0];
    assert_eq!(devtools["params"], serde_json::json!([]));
}

#[test]
fn a_v2_manifest_still_loads_and_a_broken_one_is_left_out() {
    let env = TestEnv::new();
    env.write_recipe(
        "old",
        "name = \"old\"\ndescription = \"v2\"\nscript = \"install.sh\"\nlabel = \"x\"\n",
        "#!/bin/sh\n",
    );
    local(&env, "bad", "runtime = \"bash\"\n");
    let run = env.json(&["recipes", "--os", "debian"]);
    let list = run.data()["recipes"].as_array().unwrap().clone();
    let old = list.iter().find(|r| r["name"] == "old").expect("v2 listed");
    assert_eq!(old["schema"], 2);
    assert_eq!(old["health"], Value::Null);
    assert_eq!(old["params"], serde_json::json!([]));
    assert!(!list.iter().any(|r| r["name"] == "bad"));
}

#[test]
fn params_and_outputs_are_sorted_by_name() {
    let env = TestEnv::new();
    local(
        &env,
        "pp",
        "[params.zed]\nhelp = \"z\"\n[params.alpha]\ntype = \"enum\"\nvalues = [\"a\", \"b\"]\ndefault = \"a\"\n[params.key]\ntype = \"secret\"\nrequired = true\n[outputs.url]\n[outputs.addr]\nhelp = \"where\"\n",
    );
    let run = env.json(&["recipe", "show", "pp"]);
    let recipe = &run.data()["recipe"];
    assert_eq!(names(&recipe["params"]), strings(&["alpha", "key", "zed"]));
    assert_eq!(names(&recipe["outputs"]), strings(&["addr", "url"]));
    assert_eq!(recipe["params"][0]["values"], serde_json::json!(["a", "b"]));
    assert_eq!(recipe["params"][1]["type"], "secret");
    assert_eq!(recipe["params"][1]["required"], true);
    assert!(recipe["params"][0].get("default_from").is_none());
    assert_eq!(recipe["health"], Value::Null);
}

#[test]
fn check_recipes_is_applicable_when_every_name_is_offered() {
    let env = TestEnv::new();
    let run = env.json(&[
        "check-recipes",
        "docker,devtools",
        "--os",
        "arch",
        "--backend",
        "cloudinit",
    ]);
    assert_eq!(run.data()["applicable"], true);
    assert_eq!(run.data()["issues"], serde_json::json!([]));
}

#[test]
fn check_recipes_names_every_issue_and_still_exits_0() {
    let env = TestEnv::new();
    local(&env, "broken", "run = \"sometimes\"\n");
    local(&env, "early", "stage = \"install\"\n");
    local(&env, "needy", "depends = [\"docker\"]\n");
    local(&env, "apt-only", "requires = [\"apt\"]\n");
    let run = env.json(&[
        "check-recipes",
        "xfce,nosuch,broken,early,needy,apt-only",
        "--os",
        "fedora",
        "--backend",
        "cloudinit",
    ]);
    assert_eq!(run.exit, 0);
    assert_eq!(run.data()["applicable"], false);
    let issues = run.data()["issues"].as_array().unwrap();
    let reason = |name: &str| -> String {
        issues
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("no issue for {name}: {issues:?}"))["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(reason("xfce").contains("not offered to fedora/cloudinit"));
    assert!(reason("xfce").contains("built for alpine, ubuntu, debian, arch, not fedora"));
    assert_eq!(reason("nosuch"), "no such recipe \"nosuch\"");
    assert!(reason("broken").contains("recipe.toml") && reason("broken").contains("line 4"));
    assert!(reason("early").contains("install-stage recipes are not yet supported"));
    assert!(reason("needy").contains("needy depends on docker; add it to the recipe list"));
    assert!(reason("apt-only").contains("requires apt, which fedora does not have"));
}

#[test]
fn check_recipes_names_a_cycle_and_an_unknown_os() {
    let env = TestEnv::new();
    local(&env, "a", "depends = [\"b\"]\n");
    local(&env, "b", "depends = [\"a\"]\n");
    let run = env.json(&["check-recipes", "a,b", "--os", "debian"]);
    assert_eq!(
        run.data()["issues"][0]["reason"],
        "cycle detected: a -> b -> a"
    );
    let run = env.json(&["check-recipes", "docker", "--os", "plan9"]);
    assert_eq!(run.data()["applicable"], false);
    assert!(run.data()["issues"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("unknown os"));
}

#[test]
fn check_recipes_needs_names_and_os() {
    let env = TestEnv::new();
    env.json(&["check-recipes", "docker"]).error("usage");
    env.json(&["check-recipes", "--os", "debian"])
        .error("usage");
}

#[test]
fn bundled_recipes_are_installed_lazily() {
    let env = TestEnv::new();
    env.json(&["ls"]);
    assert!(
        !env.root().join("recipes/docker").exists(),
        "ls must not install recipes"
    );
    env.json(&["recipe", "list"]);
    let script = env.root().join("recipes/docker/install-alpine.sh");
    assert_eq!(
        script.metadata().unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(env.root().join("recipes/.manifest").is_file());
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn a_recipes_terminal_escapes_reach_a_human_only_as_visible_text() -> TestEnv {
    let env = TestEnv::new();
    local(
        &env,
        "evil",
        "description = \"\\u001b]0;owned\\u0007nice \\u001b[31mred\\u009b2J\"\n",
    );
    let raw = "\u{1b}]0;owned\u{7}nice \u{1b}[31mred\u{9b}2J";
    let shown = "\\x1b]0;owned\\x07nice \\x1b[31mred\\u{9b}2J";
    let json = env.json(&["recipe", "show", "evil"]);
    assert_eq!(
        json.data()["recipe"]["description"],
        raw,
        "--json keeps the bytes"
    );
    for argv in [
        &["recipe", "show", "evil"][..],
        &["recipes"],
        &["recipe", "list"],
    ] {
        let out = env.run(argv);
        assert!(out.status.success(), "{argv:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(shown), "{argv:?}: {text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
            "{argv:?}: {text:?}"
        );
    }
    env
}

#[test]
fn recipe_list_reports_roots_in_search_order_and_every_manifest() {
    let env = TestEnv::new();
    local(&env, "mine", "description = \"my own\"\n");
    local(&env, "broken", "oops = \n");
    let run = env.json(&["recipe", "list"]);
    let roots = run.data()["roots"].as_array().unwrap();
    let scopes: Vec<&str> = roots.iter().map(|r| r["scope"].as_str().unwrap()).collect();
    assert_eq!(scopes, ["global", "local", "bundled"]);
    let recipes_dir = env.path_str(&env.root().join("recipes"));
    assert_eq!(roots[0]["path"], format!("{recipes_dir}/.remote"));
    assert_eq!(roots[1]["path"], recipes_dir);
    let entries = run.data()["recipes"].as_array().unwrap();
    let rows: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["scope"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(rows[0], ("mine".to_string(), "local".to_string()));
    assert_eq!(
        rows.len(),
        5,
        "4 bundled + mine; the broken one is left out: {rows:?}"
    );
    assert!(entries.iter().all(|e| e.get("commit").is_none()));
}

#[test]
fn a_project_recipe_shadows_a_bundled_one() {
    let env = TestEnv::new();
    std::fs::write(env.home().join("stoat.toml"), "[project]\nname = \"p\"\n").unwrap();
    write_recipe_in(
        &env.home().join("recipes"),
        "docker",
        "schema = 3\nname = \"docker\"\ndescription = \"project docker\"\nscript = \"install.sh\"\nos = [\"debian\"]\n",
        "#!/bin/sh\n",
    );
    let run = env.json(&["recipe", "list"]);
    assert_eq!(run.data()["roots"][0]["scope"], "project");
    assert_eq!(
        run.data()["roots"][0]["path"],
        env.path_str(&env.home().join("recipes"))
    );
    let dockers: Vec<&Value> = run.data()["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "docker")
        .collect();
    assert_eq!(dockers.len(), 2);
    assert_eq!(dockers[0]["scope"], "project");
    assert_eq!(dockers[1]["scope"], "bundled");
    let shown = env.json(&["recipe", "show", "docker"]);
    assert_eq!(shown.data()["recipe"]["description"], "project docker");
    let fedora = env.json(&["recipes", "--os", "fedora"]);
    assert!(!names(&fedora.data()["recipes"]).contains(&"docker".to_string()));
}

#[test]
fn recipe_show_answers_not_found_and_broken() {
    let env = TestEnv::new();
    let shown = env.json(&["recipe", "show", "xfce"]);
    assert_eq!(shown.data()["recipe"]["reboot"], true);
    assert_eq!(shown.result["cmd"], "recipe");
    let message = env.json(&["recipe", "show", "nosuch"]).error("not_found");
    assert!(
        message.contains("nosuch") && message.contains("docker"),
        "{message}"
    );
    local(&env, "bad", "[params.x]\ntype = \"enum\"\n");
    let message = env.json(&["recipe", "show", "bad"]).error("broken");
    assert!(
        message.contains("bad/recipe.toml") && message.contains("values"),
        "{message}"
    );
}

#[test]
fn recipe_new_scaffolds_a_local_recipe() {
    let env = TestEnv::new();
    let run = env.json(&["recipe", "new", "web", "--os", "debian"]);
    let dir = env.root().join("recipes/web");
    assert_eq!(run.data()["path"], format!("{}/", env.path_str(&dir)));
    let script = dir.join("install.sh");
    assert_eq!(
        script.metadata().unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(std::fs::read_to_string(&script)
        .unwrap()
        .contains("apt-get install -y"));
    let shown = env.json(&["recipe", "show", "web"]);
    assert_eq!(shown.data()["recipe"]["schema"], 3);
    assert!(
        names(&env.json(&["recipes", "--os", "debian"]).data()["recipes"])
            .contains(&"web".to_string())
    );
    assert!(
        !names(&env.json(&["recipes", "--os", "alpine"]).data()["recipes"])
            .contains(&"web".to_string())
    );
    let run = env.json(&["recipe", "new", "py", "--os", "rpm-family"]);
    assert!(run.data()["path"].as_str().unwrap().ends_with("/py/"));
    assert!(
        std::fs::read_to_string(env.root().join("recipes/py/recipe.toml"))
            .unwrap()
            .contains("os = [\"fedora\"]")
    );
}

#[test]
fn recipe_new_refuses_bad_input_and_creates_nothing() {
    let env = TestEnv::new();
    for name in ["a.b", "a b", ".hidden"] {
        env.json(&["recipe", "new", name, "--os", "alpine"])
            .error("invalid_spec");
    }
    env.json(&["recipe", "new", "a/b", "--os", "alpine"])
        .error("invalid_spec");
    assert!(!env.root().join("recipes/a").exists());
    let message = env.json(&["recipe", "new", "x"]).error("invalid_spec");
    assert!(message.contains("needs an os"), "{message}");
    env.json(&["recipe", "new", "x", "--os", "plan9"])
        .error("invalid_spec");
    assert!(!env.root().join("recipes/x").exists());
    env.json(&["recipe", "new", "docker", "--os", "alpine"])
        .error("name_taken");
    env.json(&["recipe", "new", "x", "--os", "alpine"]);
    let before = std::fs::read_to_string(env.root().join("recipes/x/install.sh")).unwrap();
    env.json(&["recipe", "new", "x", "--os", "debian"])
        .error("name_taken");
    let after = std::fs::read_to_string(env.root().join("recipes/x/install.sh")).unwrap();
    assert_eq!(before, after, "an existing recipe is never overwritten");
}

fn refresh_status(run: &crate::common::JsonRun, path: &str) -> String {
    run.data()["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .map(|f| f["status"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[test]
fn recipe_refresh_reports_current_refreshed_and_backed_up() {
    let env = TestEnv::new();
    let first = env.json(&["recipe", "refresh"]);
    assert!(first.data()["files"].as_array().unwrap().len() >= 20);
    let again = env.json(&["recipe", "refresh"]);
    assert!(again.data()["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["status"] == "current"));

    let edited = env.root().join("recipes/docker/install-debian.sh");
    std::fs::write(&edited, "#!/bin/sh\necho mine\n").unwrap();
    let deleted = env.root().join("recipes/xfce/install-arch.sh");
    std::fs::remove_file(&deleted).unwrap();
    env.json(&["recipes"]);
    assert_eq!(
        std::fs::read_to_string(&edited).unwrap(),
        "#!/bin/sh\necho mine\n",
        "reading recipes keeps a user's edit"
    );
    std::fs::remove_file(&deleted).unwrap();
    let run = env.json(&["recipe", "refresh"]);
    assert_eq!(
        refresh_status(&run, "docker/install-debian.sh"),
        "backed_up"
    );
    assert_eq!(refresh_status(&run, "xfce/install-arch.sh"), "refreshed");
    assert_eq!(refresh_status(&run, "docker/recipe.toml"), "current");
    assert_eq!(
        std::fs::read_to_string(edited.with_extension("sh.bak")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    assert!(deleted.is_file());
    assert!(!env.root().join("recipes/xfce/install-arch.sh.bak").exists());
}

#[test]
fn guest_ls_lists_the_bundled_guests_in_registry_order() {
    let env = TestEnv::new();
    let run = env.json(&["guest", "ls"]);
    assert_eq!(run.result["cmd"], "guest");
    let guests = run.data()["guests"].as_array().unwrap();
    assert_eq!(
        names(&run.data()["guests"]),
        strings(&["alpine", "ubuntu", "debian", "fedora", "arch"])
    );
    assert!(guests.iter().all(|g| g["source"] == "bundled"));
    assert_eq!(guests[0]["init"], "openrc");
    assert_eq!(guests[0]["default_backend"], "apkovl");
    assert_eq!(
        guests[3]["capabilities"],
        serde_json::json!(["dnf", "systemd"])
    );
}

#[test]
fn guest_show_resolves_aliases_and_refuses_unknown_names() {
    let env = TestEnv::new();
    let run = env.json(&["guest", "show", "rpm-family"]);
    assert_eq!(run.data()["guest"]["name"], "fedora");
    assert_eq!(
        run.data()["guest"]["backend"]["cloudinit"]["skip_9p"],
        false
    );
    let message = env.json(&["guest", "show", "plan9"]).error("not_found");
    assert!(message.contains("plan9"));
}

#[test]
fn user_guest_files_merge_over_bundled_ones_and_add_guests() {
    let env = TestEnv::new();
    let dir = env.root().join("guests");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("debian.toml"),
        "default_ssh_user = \"admin\"\n[svc]\nreload = \"systemctl reload {name}\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("void.toml"),
        "init = \"runit\"\nshell = \"/bin/sh\"\ncapabilities = [\"xbps\"]\n[pkg]\ninstall = [\"xbps-install\", \"-y\"]\n",
    )
    .unwrap();
    let run = env.json(&["guest", "ls"]);
    let guests = run.data()["guests"].as_array().unwrap();
    let debian = guests.iter().find(|g| g["name"] == "debian").unwrap();
    assert_eq!(debian["source"], "bundled+user");
    assert_eq!(debian["default_ssh_user"], "admin");
    assert_eq!(debian["svc"]["reload"], "systemctl reload {name}");
    assert_eq!(debian["svc"]["enable"], "systemctl enable {name}");
    let void = guests.last().unwrap();
    assert_eq!(
        (void["name"].as_str(), void["source"].as_str()),
        (Some("void"), Some("user"))
    );
    let offered = env.json(&["recipes", "--os", "void"]);
    assert_eq!(
        offered.data()["recipes"],
        serde_json::json!([]),
        "every bundled recipe names its OSes"
    );
    let ls = env.json(&["ls"]);
    assert_eq!(
        ls.data()["vms"],
        serde_json::json!([]),
        "guests/ is not a VM"
    );
}

#[test]
fn a_broken_user_guest_file_is_reported_with_its_position() {
    let env = TestEnv::new();
    let dir = env.root().join("guests");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("alpine.toml"), "shell = \"/bin/ash\"\ninit = [\n").unwrap();
    let message = env.json(&["guest", "ls"]).error("broken");
    assert!(
        message.contains("alpine.toml") && message.contains("line 2, column 9"),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
}

#[test]
fn human_output_is_plain_tables() {
    let env = TestEnv::new();
    let out = env.run(&["recipes", "--os", "fedora"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("NAME"), "{text}");
    assert!(text.contains("tailscale") && !text.contains("xfce"));
    let out = env.run(&["check-recipes", "xfce", "--os", "fedora"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a human sees failure as a status"
    );
}
