//! Projects through the real binary: init, status, ls --project, recipe lock --project and the
//! no-name fan-out of up, down, wait, apply and rm (json-v3#per-command-data: InitResult, ProjectStatus,
//! ProjectRun; design#project-fan-out: pure JSON lines, progress as `vm` events).
//!
//! FAKE tier: the runtime tests' stub `qemu-system-x86_64` boots "live" VMs from an empty ISO
//! file; every JSON run is checked by `JsonRun` (JSON lines only, one result last, schemas,
//! exit status). REAL tier: `real_project_two_vms`, ignored unless asked for (needs STOAT_REAL_GUEST).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    fake_qemu, real_guest, timed, FakeRunningVm, JsonRun, RealGuard, Reaper, TestEnv,
};

/// Runs `stoat <args> --json` with `dir` as the working directory.
fn json_in(env: &TestEnv, dir: &Path, args: &[&str]) -> JsonRun {
    let mut all = args.to_vec();
    all.push("--json");
    JsonRun::check(env.cmd(&all).current_dir(dir).output().unwrap())
}

/// A project directory `<home>/<name>` holding `toml` as stoat.toml.
fn project(env: &TestEnv, name: &str, toml: &str) -> PathBuf {
    let dir = env.home().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("stoat.toml"), toml).unwrap();
    dir
}

/// A tiny ISO with a /boot kernel the fake QEMU never boots; its name makes the VM
/// alpine/apkovl/live.
fn iso(env: &TestEnv) -> String {
    let path = env.tmp().join("alpine-virt-3.20.1-x86_64.iso");
    env.fake_alpine_iso(&path);
    path.display().to_string()
}

fn decl(key: &str, image: &str, extra: &str) -> String {
    format!("[vm.{key}]\nimage = \"{image}\"\n{extra}\n")
}

fn statuses(run: &JsonRun) -> Vec<(String, String)> {
    run.data()["vms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["key"].as_str().unwrap().to_owned(),
                v["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The `vm` events of a run, as `key:status`.
fn vm_events(run: &JsonRun) -> Vec<String> {
    run.lines
        .iter()
        .filter(|l| l["type"] == "vm")
        .map(|l| {
            format!(
                "{}:{}",
                l["data"]["key"].as_str().unwrap(),
                l["data"]["status"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn init_writes_a_template_once_and_gitignore_once() {
    let env = TestEnv::new();
    let dir = env.home().join("myrepo");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let run = json_in(&env, &dir, &["init"]);
    let data = run.data();
    assert_eq!(data["project"], "myrepo");
    assert_eq!(data["path"], dir.join("stoat.toml").display().to_string());
    assert_eq!(data["gitignore_updated"], true);
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        ".stoat/\n"
    );
    let message = json_in(&env, &dir, &["init"]).error("invalid_spec");
    assert!(message.contains("already exists"), "{message}");
    std::fs::remove_file(dir.join("stoat.toml")).unwrap();
    let again = json_in(&env, &dir, &["init"]);
    assert_eq!(again.data()["gitignore_updated"], false);
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        ".stoat/\n"
    );
    // The template parses, declares nothing, and status reads it.
    let status = json_in(&env, &dir, &["status"]);
    assert_eq!(status.data()["vms"], Value::Array(vec![]));

    let plain = env.home().join("notgit");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(
        json_in(&env, &plain, &["init"]).data()["gitignore_updated"],
        false
    );
    assert!(
        !plain.join(".gitignore").exists(),
        "no .gitignore outside git"
    );
}

#[test]
fn outside_a_project() {
    let env = TestEnv::new();
    let message = env.json(&["status"]).error("not_found");
    assert!(message.contains("stoat init"), "{message}");
    env.json(&["ls", "--project"]).error("not_found");
    for cmd in ["up", "down", "wait", "apply", "rm"] {
        env.json(&[cmd]).error("usage");
    }
}

#[test]
fn a_malformed_stoat_toml_names_file_and_line_everywhere() {
    let env = TestEnv::new();
    let dir = project(&env, "bad", "[vm.dev]\nimage = \"x\"\ncpus = \"many\"\n");
    let sub = dir.join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    for args in [
        &["status"][..],
        &["up"],
        &["rm", "-y"],
        &["ls", "--project"],
    ] {
        let message = json_in(&env, &sub, args).error("invalid_spec");
        assert!(
            message.contains(&dir.join("stoat.toml").display().to_string()),
            "{message}"
        );
        assert!(message.contains("line 3"), "{message}");
    }
}

#[test]
fn status_reports_missing_drift_and_immutable_mismatch() {
    let env = TestEnv::new();
    let image = iso(&env);
    let dir = project(
        &env,
        "demo",
        &format!(
            "[project]\nname = \"demo\"\n{}{}{}",
            decl("a", &image, "cpus = 2\nram = 512\nforwards = [\"8080:80\"]"),
            decl("b", &image, ""),
            decl("c", &image, "")
        ),
    );
    let dir_text = dir.display().to_string();
    let vm = |name: &str, key: &str, extra: &str| {
        env.write_vm(
            name,
            &format!("mode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"{image}\"\nram = 1024\ncpus = 4\nsshport = 2250\nproject = \"{dir_text}\"\nkey = \"{key}\"\n{extra}"),
        )
    };
    vm("demo-a", "a", "");
    // demo-c was made from another image: an immutable mismatch.
    env.write_vm(
        "demo-c",
        &format!("mode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"/elsewhere/other.iso\"\nram = 1024\ncpus = 4\nsshport = 2251\nproject = \"{dir_text}\"\nkey = \"c\"\n"),
    );
    let _running = FakeRunningVm::start(&env.root().join("demo-a"));
    let data = json_in(&env, &dir, &["status"]).data().clone();
    assert_eq!(data["project"], "demo");
    assert_eq!(data["dir"], dir_text);
    let a = &data["vms"][0];
    assert_eq!(a["state"], "running");
    let fields: Vec<&str> = a["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["cpus", "ram", "forwards"]);
    assert_eq!(
        a["drift"][0],
        serde_json::json!({"field":"cpus","from":"4","to":"2","needs_restart":true})
    );
    let b = &data["vms"][1];
    assert!(b.get("state").is_none(), "not created: {b}");
    assert_eq!(b["name"], "demo-b");
    let c = &data["vms"][2];
    assert_eq!(c["state"], "stopped");
    assert_eq!(c["drift"], Value::Array(vec![]));
    assert!(c["error"].as_str().unwrap().starts_with("image:"), "{c}");

    // ls --project: only this project's VMs, with project and key.
    env.write_basic_vm("outsider", 2260);
    let ls = json_in(&env, &dir, &["ls", "--project"]);
    let names: Vec<&str> = ls.data()["vms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["demo-a", "demo-c"]);
    assert_eq!(ls.data()["vms"][0]["project"], dir_text);
    assert_eq!(ls.data()["vms"][0]["key"], "a");
    assert_eq!(ls.data()["vms"][0]["project_missing"], false);
    let all = env.json(&["ls"]);
    let outsider = all.data()["vms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "outsider")
        .unwrap()
        .clone();
    assert_eq!(outsider["project"], "");
    assert_eq!(outsider["key"], "");
}

#[test]
fn up_down_rm_fan_out_in_declaration_order_with_pure_json_lines() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let image = iso(&env);
    let dir = project(
        &env,
        "shop",
        &format!(
            "{}{}",
            decl(
                "web",
                &image,
                "cpus = 2\nram = 512\nforwards = [\"18080:80\"]\nshare = \".\""
            ),
            decl("db", &image, "")
        ),
    );
    let _reaper = Reaper::watch(&env, &["shop-web", "shop-db"]);
    let up = json_in(&env, &dir, &["up", "--no-wait"]);
    assert_eq!(statuses(&up), pairs(&[("web", "ok"), ("db", "ok")]));
    assert_eq!(up.data()["project"], "shop");
    assert_eq!(
        vm_events(&up),
        ["web:started", "web:ok", "db:started", "db:ok"]
    );
    assert!(up.lines.iter().all(|l| l["cmd"] == "up"));
    let web = env.vm_toml("shop-web");
    assert!(
        web.contains(&format!("project = \"{}\"", dir.display())),
        "{web}"
    );
    assert!(
        web.contains("key = \"web\"") && web.contains("hostport = 18080"),
        "{web}"
    );
    assert!(
        web.contains(&format!("share = \"{}\"", dir.display())),
        "{web}"
    );

    // Running VMs: up again is ok and starts nothing; a cpus change waits for a restart.
    let text = std::fs::read_to_string(dir.join("stoat.toml")).unwrap();
    std::fs::write(dir.join("stoat.toml"), text.replace("cpus = 2", "cpus = 3")).unwrap();
    assert_eq!(
        statuses(&json_in(&env, &dir, &["up", "--no-wait"])),
        pairs(&[("web", "ok"), ("db", "ok")])
    );
    let status = json_in(&env, &dir, &["status"]);
    assert_eq!(status.data()["vms"][0]["drift"][0]["needs_restart"], true);

    let down = json_in(&env, &dir, &["down"]);
    assert_eq!(statuses(&down), pairs(&[("web", "ok"), ("db", "ok")]));
    assert_eq!(
        json_in(&env, &dir, &["status"]).data()["vms"][0]["state"],
        "stopped"
    );
    // Stopped: up converges the drift before starting.
    json_in(&env, &dir, &["up", "--no-wait"]).data();
    assert!(env.vm_toml("shop-web").contains("cpus = 3"));
    assert_eq!(
        json_in(&env, &dir, &["status"]).data()["vms"][0]["drift"],
        Value::Array(vec![])
    );
    json_in(&env, &dir, &["down"]).data();

    json_in(&env, &dir, &["rm"]).error("confirmation_required");
    assert!(
        env.root().join("shop-web").exists(),
        "nothing deleted without -y"
    );
    let rm = json_in(&env, &dir, &["rm", "-y"]);
    assert_eq!(statuses(&rm), pairs(&[("web", "ok"), ("db", "ok")]));
    assert!(!env.root().join("shop-web").exists() && !env.root().join("shop-db").exists());
    // Nothing left: every fan-out is still ok (there is nothing to stop or delete).
    assert_eq!(
        statuses(&json_in(&env, &dir, &["down"])),
        pairs(&[("web", "ok"), ("db", "ok")])
    );
    assert_eq!(
        statuses(&json_in(&env, &dir, &["rm", "-y"])),
        pairs(&[("web", "ok"), ("db", "ok")])
    );
    // A person reads what happened to each VM, not only `ok`.
    let human = |args: &[&str]| {
        let out = env.cmd(args).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let row = |table: &str, key: &str| {
        table
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let down = human(&["down"]);
    assert_eq!(row(&down, "web"), "web shop-web ok (not created)", "{down}");
    let up = human(&["up", "--no-wait"]);
    assert_eq!(
        row(&up, "db"),
        "db shop-db ok (created and started)",
        "{up}"
    );
    let up = human(&["up", "--no-wait"]);
    assert_eq!(row(&up, "db"), "db shop-db ok (already running)", "{up}");
    let down = human(&["down"]);
    assert_eq!(row(&down, "db"), "db shop-db ok (stopped)", "{down}");
    let down = human(&["down"]);
    assert_eq!(
        row(&down, "db"),
        "db shop-db ok (already stopped)",
        "{down}"
    );
    let rm = human(&["rm", "-y"]);
    assert_eq!(row(&rm, "db"), "db shop-db ok (deleted)", "{rm}");
}

#[test]
fn a_failure_in_the_middle_skips_the_rest() {
    let env = TestEnv::new();
    fake_qemu(&env);
    let image = iso(&env);
    let dir = project(
        &env,
        "p",
        &format!(
            "{}{}{}",
            decl("a", &image, ""),
            decl("b", &image, ""),
            decl("c", &image, "")
        ),
    );
    let _reaper = Reaper::watch(&env, &["p-a", "p-b", "p-c"]);
    // p-b exists but is not this project's: up must not adopt it, rm must not delete it.
    env.write_basic_vm("p-b", 2270);
    let up = json_in(&env, &dir, &["up", "--no-wait"]);
    assert_eq!(
        statuses(&up),
        pairs(&[("a", "ok"), ("b", "error"), ("c", "skipped")])
    );
    assert!(up.data()["vms"][1]["error"]
        .as_str()
        .unwrap()
        .contains("not created from a project"));
    assert!(up.data()["vms"][2].get("error").is_none());
    assert_eq!(
        vm_events(&up),
        ["a:started", "a:ok", "b:started", "b:error", "c:skipped"]
    );
    assert!(!env.root().join("p-c").exists(), "c was never attempted");

    // Human mode: the summary on stdout, exit 1 because one failed; progress on stderr.
    let human = env.cmd(&["down"]).current_dir(&dir).output().unwrap();
    assert_eq!(human.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(stdout.starts_with("KEY"), "{stdout}");
    assert!(String::from_utf8_lossy(&human.stderr).contains("==> a (p-a)"));

    json_in(&env, &dir, &["up", "--no-wait"]); // p-a running again
    let rm = json_in(&env, &dir, &["rm", "-y"]);
    assert_eq!(
        statuses(&rm),
        pairs(&[("a", "error"), ("b", "skipped"), ("c", "skipped")])
    );
    assert!(rm.data()["vms"][0]["error"]
        .as_str()
        .unwrap()
        .contains("running"));
    json_in(&env, &dir, &["down"]);
    let rm = json_in(&env, &dir, &["rm", "-y"]);
    assert_eq!(
        statuses(&rm),
        pairs(&[("a", "ok"), ("b", "error"), ("c", "skipped")])
    );
    assert!(
        env.root().join("p-b").exists(),
        "a foreign VM is never deleted"
    );
}

#[test]
fn wait_and_apply_fan_out() {
    let env = TestEnv::new();
    let image = iso(&env);
    let dir = project(
        &env,
        "w",
        &format!("{}{}", decl("a", &image, ""), decl("b", &image, "")),
    );
    let wait = json_in(
        &env,
        &dir,
        &["wait", "--until", "stopped", "--timeout", "2s"],
    );
    assert_eq!(statuses(&wait), pairs(&[("a", "error"), ("b", "skipped")]));
    assert!(wait.data()["vms"][0]["error"]
        .as_str()
        .unwrap()
        .contains("not created"));
    let dir_text = dir.display().to_string();
    for (name, key, port) in [("w-a", "a", 2280), ("w-b", "b", 2281)] {
        env.write_vm(
            name,
            &format!("mode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"{image}\"\nram = 512\ncpus = 1\nsshport = {port}\nproject = \"{dir_text}\"\nkey = \"{key}\"\n"),
        );
    }
    let wait = json_in(
        &env,
        &dir,
        &["wait", "--until", "stopped", "--timeout", "2s"],
    );
    assert_eq!(statuses(&wait), pairs(&[("a", "ok"), ("b", "ok")]));
    json_in(&env, &dir, &["apply", "--dry-run"]).error("usage");
    // Every line of an apply fan-out is JSON whatever the single-VM apply answers.
    let apply = json_in(&env, &dir, &["apply"]);
    assert_eq!(apply.data()["vms"].as_array().unwrap().len(), 2);
}

#[test]
fn remote_recipes_must_be_pinned_in_stoat_lock() {
    let env = TestEnv::new();
    // A local git repository stands in for the remote.
    let remote = env.tmp().join("remote");
    std::fs::create_dir_all(&remote).unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&remote)
            .env("HOME", env.home())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(status.status.success(), "{:?}", status);
        String::from_utf8(status.stdout).unwrap()
    };
    git(&["init", "-q", "."]);
    std::fs::write(remote.join("recipe.toml"), "name = \"ts\"\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "one"]);
    git(&["tag", "v1"]);
    let commit = git(&["rev-parse", "HEAD"]).trim().to_owned();
    let image = iso(&env);
    let dir = project(
        &env,
        "locked",
        &format!(
            "{}[recipes.ts]\nsource = \"{}\"\nref = \"v1\"\n",
            decl("a", &image, "recipes = [\"ts\"]"),
            remote.display()
        ),
    );
    let message = json_in(&env, &dir, &["up", "--no-wait"]).error("lock_out_of_date");
    assert!(
        message.contains("ts") && message.contains("recipe lock --project"),
        "{message}"
    );
    json_in(&env, &dir, &["apply"]).error("lock_out_of_date");
    let lock = json_in(&env, &dir, &["recipe", "lock", "--project"]);
    assert_eq!(lock.result["cmd"], "recipe");
    assert_eq!(lock.data()["recipes"][0]["commit"], commit);
    assert_eq!(lock.data()["recipes"][0]["scope"], "project");
    let text = std::fs::read_to_string(dir.join("stoat.lock")).unwrap();
    assert!(text.contains(&commit), "{text}");
    // Pinned: up gets past the lock check (the recipe itself is not installed here, so the
    // VM's create fails on its own terms, inside the ProjectRun).
    let up = json_in(&env, &dir, &["up", "--no-wait"]);
    assert_eq!(statuses(&up), pairs(&[("a", "error")]));
}

/// REAL tier: two VMs from the test guest brought up, changed, statused and torn down.
#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_project_two_vms() {
    let guest = real_guest();
    let env = TestEnv::new();
    let _guards = [
        RealGuard(env.root().join("real-one")),
        RealGuard(env.root().join("real-two")),
    ];
    let image = guest.image.display().to_string();
    let dir = project(
        &env,
        "real",
        &format!(
            "{}{}",
            decl("one", &image, "cpus = 1\nram = 512"),
            decl("two", &image, "cpus = 1\nram = 512")
        ),
    );
    let up = timed("project up (create + boot)", || {
        json_in(&env, &dir, &["up"])
    });
    assert_eq!(
        statuses(&up),
        pairs(&[("one", "ok"), ("two", "ok")]),
        "{}",
        up.stdout
    );
    let wait = timed("project wait", || {
        json_in(&env, &dir, &["wait", "--timeout", "3m"])
    });
    assert_eq!(
        statuses(&wait),
        pairs(&[("one", "ok"), ("two", "ok")]),
        "{}",
        wait.stdout
    );
    let text = std::fs::read_to_string(dir.join("stoat.toml")).unwrap();
    std::fs::write(
        dir.join("stoat.toml"),
        text.replacen("ram = 512", "ram = 768", 1),
    )
    .unwrap();
    let status = json_in(&env, &dir, &["status"]);
    assert_eq!(status.data()["vms"][0]["drift"][0]["field"], "ram");
    assert_eq!(status.data()["vms"][0]["drift"][0]["needs_restart"], true);
    assert_eq!(status.data()["vms"][1]["drift"], serde_json::json!([]));
    assert_eq!(
        statuses(&timed("project down", || json_in(&env, &dir, &["down"]))),
        pairs(&[("one", "ok"), ("two", "ok")])
    );
    let stopped = json_in(&env, &dir, &["status"]);
    assert_eq!(stopped.data()["vms"][0]["state"], "stopped");
    assert_eq!(stopped.data()["vms"][0]["drift"][0]["needs_restart"], false);

    // The next up converges the stopped VM's drift, then boots both again.
    let up = timed("project up (converge)", || json_in(&env, &dir, &["up"]));
    assert_eq!(statuses(&up), pairs(&[("one", "ok"), ("two", "ok")]));
    assert_eq!(
        env.json(&["get", "real-one"]).data()["vm"]["ram_mb"],
        768,
        "the change was applied"
    );
    timed("project wait", || {
        json_in(&env, &dir, &["wait", "--timeout", "3m"])
    });
    let hostname = env.json_raw(&["--json", "exec", "real-two", "hostname"]);
    assert_eq!(hostname.data()["stdout"], "real-two\n");
    let status = json_in(&env, &dir, &["status"]);
    for vm in status.data()["vms"].as_array().unwrap() {
        assert_eq!(vm["state"], "running", "{vm}");
        assert_eq!(vm["drift"], serde_json::json!([]), "{vm}");
    }
    assert_eq!(
        json_in(&env, &dir, &["ls", "--project"]).data()["vms"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        statuses(&timed("project down", || json_in(&env, &dir, &["down"]))),
        pairs(&[("one", "ok"), ("two", "ok")])
    );
    assert_eq!(
        statuses(&json_in(&env, &dir, &["rm", "-y"])),
        pairs(&[("one", "ok"), ("two", "ok")])
    );
    assert_eq!(
        json_in(&env, &dir, &["ls", "--project"]).data()["vms"],
        serde_json::json!([])
    );
}

#[test]
fn a_disk_declared_for_a_live_vm_is_no_disk_not_a_shrink() {
    let env = TestEnv::new();
    let image = iso(&env);
    let dir = project(
        &env,
        "demo",
        &format!(
            "[project]\nname = \"demo\"\n{}",
            decl("a", &image, "disk = \"10G\"")
        ),
    );
    let dir_text = dir.display().to_string();
    env.write_vm(
        "demo-a",
        &format!("mode = \"live\"\nos = \"alpine\"\nbackend = \"apkovl\"\niso = \"{image}\"\nram = 1024\ncpus = 4\nsshport = 2250\nproject = \"{dir_text}\"\nkey = \"a\"\n"),
    );
    let run = json_in(&env, &dir, &["up"]);
    let vm = &run.lines.last().unwrap()["data"]["vms"][0];
    assert_eq!(vm["status"], "error", "{}", run.stdout);
    let message = vm["error"].as_str().unwrap();
    assert!(
        message.contains("demo-a is a live VM and has no qcow2 disk")
            && !message.contains("disk is ;"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn a_projects_recipe_params_are_checked_against_the_manifest_before_anything_is_made() {
    let env = TestEnv::new();
    fake_qemu(&env);
    env.write_recipe(
        "r",
        "schema = 3\nname = \"r\"\nversion = \"1.0\"\nscript = \"install.sh\"\n[params.n]\ntype = \"int\"\n",
        "echo \"n=$STOAT_PARAM_N\"\n",
    );
    let image = iso(&env);
    let toml = format!(
        "{}[vm.web.params.r]\nn = \"many\"\n",
        decl("web", &image, "recipes = [\"r\"]")
    );
    let _reaper = Reaper::watch(&env, &["shop-web"]);
    // A value the manifest refuses: the project's table reached the check as typed settings,
    // and nothing is created. (A value it takes would start an apply that needs a guest.)
    let dir = project(&env, "shop", &toml);
    let bad = json_in(&env, &dir, &["up", "--no-wait"]);
    let failed = &bad.data()["vms"][0];
    assert_eq!(failed["status"], "error", "{}", bad.stdout);
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains("not an integer"),
        "{}",
        bad.stdout
    );
    env.json(&["get", "shop-web"]).error("not_found");
}
