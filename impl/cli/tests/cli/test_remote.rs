//! Remote recipes through real git: bare repositories built here and reached by `file://`
//! URLs (`recipe add|lock|sync|update|rm`, `recipe list` pins, `recipe search`,
//! `git_required`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{JsonRun, TestEnv};
use crate::test_sweeps::HOST_SECRET;

/// A bare repository and the work clone that commits to it.
struct Remote {
    bare: PathBuf,
    work: PathBuf,
    home: PathBuf,
}

impl Remote {
    /// A remote holding a valid recipe `name` (one commit, tag `v1`).
    fn recipe(env: &TestEnv, name: &str) -> Remote {
        let remote = Remote::empty(env, name);
        remote.write("recipe.toml", &manifest(name, "first"));
        remote.write("install.sh", "#!/bin/sh\necho one\n");
        remote.commit("one");
        remote.git(&["tag", "v1"]);
        remote.push();
        remote
    }

    /// A bare repository with nothing pushed yet.
    fn empty(env: &TestEnv, name: &str) -> Remote {
        let base = env.tmp().join(format!("git-{name}"));
        let remote = Remote {
            bare: base.join(format!("{name}.git")),
            work: base.join("work"),
            home: env.home(),
        };
        std::fs::create_dir_all(&remote.work).unwrap();
        remote.git_in(&base, &["init", "-q", "--bare", &format!("{name}.git")]);
        remote.git(&["init", "-q", "."]);
        remote.git(&["remote", "add", "origin", &remote.url()]);
        remote
    }

    fn url(&self) -> String {
        format!("file://{}", self.bare.display())
    }

    fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.work, args)
    }

    fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.work.join(file), text).unwrap();
    }

    /// Commits everything and returns the full commit id.
    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }

    fn push(&self) {
        self.git(&[
            "push",
            "-q",
            "--force",
            "--tags",
            "origin",
            "HEAD:refs/heads/main",
        ]);
    }
}

fn manifest(name: &str, description: &str) -> String {
    format!("schema = 3\nname = \"{name}\"\ndescription = \"{description}\"\nscript = \"install.sh\"\nos = [\"debian\"]\n")
}

/// The `recipe list` rows named `name`.
fn listed(run: &JsonRun, name: &str) -> Vec<Value> {
    run.data()["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == name)
        .cloned()
        .collect()
}

fn json_in(env: &TestEnv, dir: &Path, args: &[&str]) -> JsonRun {
    let mut all = args.to_vec();
    all.push("--json");
    JsonRun::check(env.cmd(&all).current_dir(dir).output().unwrap())
}

fn vm_listing(env: &TestEnv, vm: &str, recipes: &str) {
    env.write_vm(
        vm,
        &format!("name = \"{vm}\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = 2299\nsshuser = \"stoat\"\nrecipes = [{recipes}]\n"),
    );
}

#[test]
fn global_add_lock_update_sync_rm() {
    let env = TestEnv::new();
    let remote = Remote::recipe(&env, "hello");
    let first = remote.git(&["rev-parse", "HEAD"]).trim().to_owned();

    let added = env.json(&["recipe", "add", &remote.url(), "--ref", "v1"]);
    let data = added.data();
    assert_eq!(data["name"], "hello");
    assert_eq!(data["source"], remote.url());
    assert_eq!(data["ref"], "v1");
    assert_eq!(data["commit"], first);
    assert_eq!(data["scope"], "global");
    let clone = env.root().join("recipes/.remote/hello");
    assert!(clone.join("install.sh").is_file());
    let pins = std::fs::read_to_string(env.root().join("recipes/.remote/pins.toml")).unwrap();
    assert!(pins.contains(&first), "{pins}");

    let list = env.json(&["recipe", "list"]);
    let rows = listed(&list, "hello");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["scope"], "global");
    assert_eq!(rows[0]["commit"], first[..7]);
    assert_eq!(rows[0]["ref"], "v1");
    assert_eq!(rows[0]["source"], remote.url());
    env.json(&["recipe", "show", "hello"]);

    let again = env.json(&["recipe", "add", &remote.url(), "--ref", "v1"]);
    assert!(again.error("name_taken").contains("recipe update hello"));

    let locked = env.json(&["recipe", "lock"]);
    assert_eq!(locked.data()["recipes"][0]["commit"], first);

    // The tag moves to a new commit; update follows it.
    remote.write("install.sh", "#!/bin/sh\necho two\n");
    let second = remote.commit("two");
    remote.git(&["tag", "-f", "v1"]);
    remote.push();
    let updated = env.json(&["recipe", "update"]);
    let pin = &updated.data()["recipes"][0];
    assert_eq!(pin["commit"], second);
    assert_eq!(pin["ref"], "v1");
    assert!(std::fs::read_to_string(clone.join("install.sh"))
        .unwrap()
        .contains("two"));
    let list = env.json(&["recipe", "list"]);
    assert_eq!(listed(&list, "hello")[0]["commit"], second[..7]);
    env.json(&["recipe", "update", "nope"]).error("not_found");

    // A fresh data root with the same pins file: sync re-creates the clone at the pin.
    let fresh = TestEnv::new();
    std::fs::create_dir_all(fresh.root().join("recipes/.remote")).unwrap();
    std::fs::copy(
        env.root().join("recipes/.remote/pins.toml"),
        fresh.root().join("recipes/.remote/pins.toml"),
    )
    .unwrap();
    let synced = fresh.json(&["recipe", "sync"]);
    assert_eq!(synced.data()["recipes"][0]["commit"], second);
    assert_eq!(synced.data()["recipes"][0]["scope"], "global");
    let list = fresh.json(&["recipe", "list"]);
    assert_eq!(listed(&list, "hello")[0]["commit"], second[..7]);
    // In sync already: a second sync needs no network and answers the same.
    std::fs::rename(&remote.bare, env.tmp().join("gone.git")).unwrap();
    let resync = fresh.json(&["recipe", "sync"]);
    assert_eq!(resync.data()["recipes"][0]["commit"], second);
    std::fs::rename(env.tmp().join("gone.git"), &remote.bare).unwrap();

    // rm is refused while a VM lists the recipe, and names the VM.
    vm_listing(&env, "box", "\"hello\"");
    let refused = env.json(&["recipe", "rm", "hello"]).error("in_use");
    assert!(refused.contains("box"), "{refused}");
    assert!(clone.is_dir(), "nothing removed");
    vm_listing(&env, "box", "");
    let removed = env.json(&["recipe", "rm", "hello"]);
    assert_eq!(removed.data()["name"], "hello");
    assert_eq!(removed.data()["scope"], "global");
    assert!(!clone.exists());
    let pins = std::fs::read_to_string(env.root().join("recipes/.remote/pins.toml")).unwrap();
    assert!(!pins.contains("hello"), "{pins}");
    assert!(listed(&env.json(&["recipe", "list"]), "hello").is_empty());
    env.json(&["recipe", "rm", "hello"]).error("not_found");
}

/// An error about a remote recipe names its files by their place in the repository, never
/// by the data root's staging clone (`<root>/recipes/.remote/.clone-XXXX/...`).
fn assert_names_only_the_recipe_s_files(env: &TestEnv, message: &str) {
    assert!(!message.contains(".clone-"), "{message}");
    assert!(!message.contains(".remote"), "{message}");
    let root = env.root().display().to_string();
    assert!(!message.contains(&root), "{message}");
}

/// A row of `hostile_sweep` (test_sweeps.rs); returns its environment for the sweep's
/// look for the host's secret.
pub(crate) fn add_refuses_what_is_not_a_recipe_and_leaves_nothing() -> TestEnv {
    let env = TestEnv::new();
    let plain = Remote::empty(&env, "plain");
    plain.write("README", "not a recipe\n");
    plain.commit("readme");
    plain.push();
    let message = env
        .json(&["recipe", "add", &plain.url()])
        .error("invalid_spec");
    assert!(message.contains("recipe.toml"), "{message}");

    let broken = Remote::empty(&env, "broken");
    broken.write(
        "recipe.toml",
        "schema = 3\nname = \"broken\"\nscript = \"missing.sh\"\n",
    );
    broken.commit("broken");
    broken.push();
    let message = env
        .json(&["recipe", "add", &broken.url()])
        .error("invalid_spec");
    assert!(message.contains("missing.sh"), "{message}");
    assert_names_only_the_recipe_s_files(&env, &message);

    // A manifest that does not parse is named by its own file, not by the clone's path.
    let garbled = Remote::empty(&env, "garbled");
    garbled.write("recipe.toml", "schema = = 3\n");
    garbled.commit("garbled");
    garbled.push();
    let message = env
        .json(&["recipe", "add", &garbled.url()])
        .error("invalid_spec");
    assert!(message.contains("recipe.toml"), "{message}");
    assert_names_only_the_recipe_s_files(&env, &message);

    // A script that is a symlink to a host file (git keeps symlinks) is refused at add.
    let secret = env.tmp().join("host-secret.txt");
    std::fs::write(&secret, HOST_SECRET).unwrap();
    let linked = Remote::empty(&env, "linked");
    linked.write("recipe.toml", &manifest("linked", "first"));
    std::os::unix::fs::symlink(&secret, linked.work.join("install.sh")).unwrap();
    linked.commit("linked");
    linked.push();
    let message = env
        .json(&["recipe", "add", &linked.url()])
        .error("invalid_spec");
    assert!(
        message.contains("outside the recipe directory"),
        "{message}"
    );
    assert!(!message.contains(".clone-"), "{message}");
    assert!(listed(&env.json(&["recipe", "list"]), "linked").is_empty());

    let good = Remote::recipe(&env, "hello");
    let message = env
        .json(&["recipe", "add", &good.url(), "--ref", "nosuch"])
        .error("invalid_spec");
    assert!(message.contains("nosuch"), "{message}");
    let missing = format!("file://{}", env.tmp().join("absent.git").display());
    env.json(&["recipe", "add", &missing]).error("invalid_spec");

    let leftovers: Vec<String> = std::fs::read_dir(env.root().join("recipes/.remote"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".lock")
                .collect()
        })
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // No ref: the remote's HEAD, recorded as ref "".
    let head = good.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let added = env.json(&["recipe", "add", &good.url()]);
    assert_eq!(added.data()["ref"], "");
    assert_eq!(added.data()["commit"], head);
    env
}

#[test]
fn project_add_sync_update_rm() {
    let env = TestEnv::new();
    let remote = Remote::recipe(&env, "hello");
    let first = remote.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let dir = env.home().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("stoat.toml"),
        "# my project\n[project]\nname = \"proj\"\n",
    )
    .unwrap();
    let added = json_in(
        &env,
        &dir,
        &["recipe", "add", &remote.url(), "--ref", "v1", "--project"],
    );
    assert_eq!(added.data()["scope"], "project");
    assert_eq!(added.data()["commit"], first);
    let toml = std::fs::read_to_string(dir.join("stoat.toml")).unwrap();
    assert!(toml.starts_with("# my project"), "comments kept: {toml}");
    assert!(toml.contains("[recipes.hello]"), "{toml}");
    let lock = std::fs::read_to_string(dir.join("stoat.lock")).unwrap();
    assert!(lock.contains(&first), "{lock}");
    let clone = dir.join(".stoat/recipes/hello");
    assert!(clone.join("recipe.toml").is_file());
    let list = json_in(&env, &dir, &["recipe", "list"]);
    let rows = listed(&list, "hello");
    assert_eq!(rows[0]["scope"], "project");
    assert_eq!(rows[0]["commit"], first[..7]);
    // `recipe lock --project` keeps the pin (stoat.toml declares it now).
    let locked = json_in(&env, &dir, &["recipe", "lock", "--project"]);
    assert_eq!(locked.data()["recipes"][0]["commit"], first);

    // A fresh checkout has stoat.toml and stoat.lock but no clones: sync makes them.
    std::fs::remove_dir_all(dir.join(".stoat")).unwrap();
    let synced = json_in(&env, &dir, &["recipe", "sync", "--project"]);
    assert_eq!(synced.data()["recipes"][0]["commit"], first);
    assert!(clone.join("recipe.toml").is_file());

    remote.write("install.sh", "#!/bin/sh\necho two\n");
    let second = remote.commit("two");
    remote.git(&["tag", "-f", "v1"]);
    remote.push();
    let updated = json_in(&env, &dir, &["recipe", "update", "hello", "--project"]);
    assert_eq!(updated.data()["recipes"][0]["commit"], second);
    let lock = std::fs::read_to_string(dir.join("stoat.lock")).unwrap();
    assert!(lock.contains(&second), "{lock}");

    let removed = json_in(&env, &dir, &["recipe", "rm", "hello", "--project"]);
    assert_eq!(removed.data()["scope"], "project");
    assert!(!clone.exists());
    let toml = std::fs::read_to_string(dir.join("stoat.toml")).unwrap();
    assert!(!toml.contains("hello"), "{toml}");
    let lock = std::fs::read_to_string(dir.join("stoat.lock")).unwrap();
    assert!(!lock.contains("hello"), "{lock}");
}

#[test]
fn search_reads_the_index() {
    let mut env = TestEnv::new();
    let message = env.json(&["recipe", "search"]).error("invalid_spec");
    assert!(message.contains("STOAT_RECIPE_INDEX"), "{message}");
    let index = env.tmp().join("index.toml");
    std::fs::write(
        &index,
        "[[recipe]]\nname = \"tailscale\"\nsource = \"https://example.invalid/ts\"\ndescription = \"Join a tailnet on boot\"\nos = [\"alpine\", \"debian\"]\n\n[[recipe]]\nname = \"caddy\"\nsource = \"https://example.invalid/caddy\"\ndescription = \"a web server\"\n",
    )
    .unwrap();
    env.set_env("STOAT_RECIPE_INDEX", &index.display().to_string());
    let all = env.json(&["recipe", "search"]);
    let names: Vec<&str> = all.data()["recipes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["caddy", "tailscale"]);
    let hits = env.json(&["recipe", "search", "TAILNET"]);
    assert_eq!(hits.data()["recipes"].as_array().unwrap().len(), 1);
    assert_eq!(hits.data()["recipes"][0]["os"][1], "debian");
    let mut by_url = TestEnv::new();
    by_url.set_env("STOAT_RECIPE_INDEX", &format!("file://{}", index.display()));
    let web = by_url.json(&["recipe", "search", "web"]);
    assert_eq!(web.data()["recipes"][0]["name"], "caddy");
    std::fs::write(&index, "[[recipe]]\nname = 3\n").unwrap();
    let message = env.json(&["recipe", "search"]).error("invalid_spec");
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn git_missing_is_git_required() {
    let env = TestEnv::new();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        JsonRun::check(env.cmd(&all).env("PATH", env.bin()).output().unwrap())
    };
    let message = run(&["recipe", "add", "file:///nowhere.git"]).error("git_required");
    assert!(message.contains("git"), "{message}");
    run(&["recipe", "update"]).error("git_required");
    std::fs::create_dir_all(env.root().join("recipes/.remote")).unwrap();
    std::fs::write(
        env.root().join("recipes/.remote/pins.toml"),
        format!(
            "version = 1\n[recipe.hello]\nsource = \"file:///x\"\nref = \"v1\"\ncommit = \"{}\"\n",
            "a".repeat(40)
        ),
    )
    .unwrap();
    run(&["recipe", "sync"]).error("git_required");
    run(&["recipe", "lock"]).error("git_required");
}

/// The human answers of the remote-recipe verbs, with the sandbox's paths and the commit ids
/// (new on every run) masked.
#[test]
fn human_add_lock_update_rm_and_search() {
    use crate::test_snapshots::human;
    let mut env = TestEnv::new();
    let mut settings = env.snapshot_settings();
    settings.add_filter(r"\b[0-9a-f]{7,40}\b", "[COMMIT]");
    let _masked = settings.bind_to_scope();
    let remote = Remote::recipe(&env, "hello");
    let run = |env: &TestEnv, args: &[&str]| human(env, args, true);
    insta::assert_snapshot!(
        run(&env, &["recipe", "add", &remote.url(), "--ref", "v1"]),
        @"added hello file://[TMP]/git-hello/hello.git @ v1 [COMMIT] (global)"
    );
    insta::assert_snapshot!(
        run(&env, &["recipe", "lock"]),
        @"locked hello file://[TMP]/git-hello/hello.git @ v1 [COMMIT] (global)"
    );
    insta::assert_snapshot!(
        run(&env, &["recipe", "update"]),
        @"updated hello file://[TMP]/git-hello/hello.git @ v1 [COMMIT] (global)"
    );
    insta::assert_snapshot!(
        run(&env, &["recipe", "sync"]),
        @"synced hello file://[TMP]/git-hello/hello.git @ v1 [COMMIT] (global)"
    );
    insta::assert_snapshot!(run(&env, &["recipe", "rm", "hello"]), @"removed global recipe hello");
    let index = env.tmp().join("index.toml");
    std::fs::write(
        &index,
        "[[recipe]]\nname = \"tailscale\"\nsource = \"https://example.invalid/ts\"\ndescription = \"Join a tailnet on boot\"\nos = [\"alpine\", \"debian\"]\n",
    )
    .unwrap();
    env.set_env("STOAT_RECIPE_INDEX", &index.display().to_string());
    insta::assert_snapshot!(run(&env, &["recipe", "search"]), @r"
    NAME       OS             DESCRIPTION             SOURCE
    tailscale  alpine,debian  Join a tailnet on boot  https://example.invalid/ts
    ");
}
