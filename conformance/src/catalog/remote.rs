//! Owns the checks of the `recipe` subcommands beyond list/new: `recipe add|lock|sync|
//! update|rm` against a git repository the suite makes on disk (a `file://` URL, a tag and a
//! branch that moves), `git_required` when the SUT's PATH has no git, `recipe show` of a
//! recipe added that way or of one that does not exist, `recipe search` over an index the
//! suite writes, and `recipe refresh` (contract "Types": RecipeEntry, RecipeAdded,
//! RecipeRemoved, RecipeRefreshed, IndexEntry, and the recipe rows of "Per-command data";
//! the error codes `in_use` and `git_required`).
//!
//! The contract names no way to point `recipe search` at an index: the SUT profile's
//! `[recipe_index]` declares one (default: the reference's `STOAT_RECIPE_INDEX` and format),
//! and RECIPE.search-index SKIPs, naming the knob, when the SUT does not list the index.
//!
//! The SUT's PATH is the sandbox's own directory: these checks link the host's `git` there
//! (and nothing else), and `RECIPE.git-required` removes it again. When the suite itself
//! finds no git on its PATH, the checks SKIP naming it: the repository cannot be built.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::def::{scenario, CheckDef, Tier};
use super::helpers::{expect_eq, str_at};
use crate::error::HarnessError;
use crate::finding::Level::Must;
use crate::run::{Case, Ran};
use crate::sandbox::{Sandbox, VmFixture};
use crate::spec::Editions;

const NO_REMOTE: &str = "contract 2 has no remote recipes (recipe list is {dir, recipes}, no recipe add/lock/sync/update/rm/show)";

pub(super) const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "RECIPE.remote-add-pins",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "RecipeAdded uses the same remote pin fields for add, lock, sync, and update results, with the full resolved commit.",
        title: "`recipe add <file:// repository> --ref v1` answers {name: the manifest's name, source, ref: v1, commit: the full 40-hex commit v1 names, scope: global}",
        tags: &["recipes", "remote"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(add_pins)
    },
    CheckDef {
        id: "RECIPE.remote-list-row",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "only global and project entries carry source, ref, and the seven-character commit prefix.",
        title: "after `recipe add`, `recipe list` has a row {name, scope: global, source as add answered it, ref, commit: the first 7 characters of the pinned commit}",
        tags: &["recipes", "remote"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(list_row_check)
    },
    CheckDef {
        id: "RECIPE.remote-update-moves",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "recipe update {\"recipes\":[RecipeAdded,...]}",
        title: "after the pinned branch gains a commit, `recipe update` answers the recipe at the new full commit, and later `recipe list` and `recipe show` see the new commit's files",
        tags: &["recipes", "remote", "state"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(update_moves)
    },
    CheckDef {
        id: "RECIPE.remote-project-scope",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "RecipeEntry has name, description, scope, source, ref, and commit. scope is one of bundled, local, global, or project; only global and project entries carry source, ref, and the seven-character commit prefix.",
        title: "in a directory `init` made a project, `recipe add --project` answers scope project with the full commit; `recipe list` has that row {scope: project, ref, commit: 7 characters}; `recipe lock --project` answers the same pin",
        tags: &["recipes", "remote", "project"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(project_scope)
    },
    CheckDef {
        id: "RECIPE.remote-lock-sync-keep",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "recipe lock {\"recipes\":[RecipeAdded,...]} recipe sync {\"recipes\":[RecipeAdded,...]}",
        title: "with a recipe pinned at a tag that did not move, `recipe lock` and `recipe sync` both answer it {name, ref, commit: the same full commit, scope: global}",
        tags: &["recipes", "remote"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(lock_sync_keep)
    },
    CheckDef {
        id: "RECIPE.remote-rm",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "RecipeRemoved contains only the name and scope.",
        title: "`recipe rm <name>` of a remote recipe no VM lists answers {name, scope: global}; later `recipe list` has no such row and `recipe show` fails",
        tags: &["recipes", "remote", "state"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(rm_removes)
    },
    CheckDef {
        id: "RECIPE.remote-rm-in-use",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "in_use a recipe is still listed by one or more VMs",
        title: "`recipe rm` of a remote recipe a VM lists fails with in_use, and the recipe is still listed and pinned",
        tags: &["recipes", "remote", "errors"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(rm_in_use)
    },
    CheckDef {
        id: "RECIPE.remote-bad-ref",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "invalid_spec the request itself is malformed",
        title: "`recipe add` naming a ref the repository does not have fails (invalid_spec or not_found, never internal) and adds nothing",
        tags: &["recipes", "remote", "errors"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(bad_ref)
    },
    CheckDef {
        id: "RECIPE.git-required",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "git_required a recipe operation needs Git on PATH",
        title: "with no git on the SUT's PATH, `recipe add` and `recipe update` (of a recipe added while git was there) fail with git_required and change no pin",
        tags: &["recipes", "remote", "errors"],
        editions: Editions::V3 { change: "contract 2 has no git_required code and no remote recipes" },
        ..scenario(git_required)
    },
    CheckDef {
        id: "RECIPE.show-remote",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "recipe show and recipes use the same RecipeSchema projection. Parameters and outputs are named arrays sorted by name. A recipe without a health check has health:null; all list fields are [], never null.",
        title: "`recipe show` of a remote recipe answers {recipe: {name, description from its manifest, depends: [], params: [], outputs: [], health: null}}",
        tags: &["recipes", "remote"],
        editions: Editions::V3 { change: NO_REMOTE },
        ..scenario(show_remote)
    },
    CheckDef {
        id: "RECIPE.show-unknown",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#error-codes",
        quote: "internal anything unanticipated; the escape hatch",
        title: "`recipe show` of a name no root holds fails with not_found or invalid_spec (an anticipated case, never internal) and exit 1",
        tags: &["recipes", "errors"],
        editions: Editions::V3 { change: "contract 2 has no recipe show" },
        ..scenario(show_unknown)
    },
    CheckDef {
        id: "RECIPE.search-index",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#per-command-data",
        quote: "recipe search {\"recipes\":[IndexEntry,...]}",
        title: "`recipe search` with no query over an index the suite writes (profile [recipe_index]; SKIP when the SUT does not read it) answers every entry as {name, source, description, os}",
        tags: &["recipes"],
        editions: Editions::V3 { change: "contract 2 has no recipe search" },
        ..scenario(search_index)
    },
    CheckDef {
        id: "RECIPE.refresh-statuses",
        level: Must,
        tier: Tier::Pure,
        spec: "json-v3#types",
        quote: "RecipeRefreshed.status is current, refreshed, backed_up, or orphan; a .bak file is written before overwrite for every status except current and refreshed.",
        title: "`recipe refresh` answers files [{path (relative), status in current|refreshed|backed_up|orphan}]; a bundled file the user changed is then not current, is put back, and a backed_up one leaves a .bak holding the user's text",
        tags: &["recipes", "state"],
        editions: Editions::V3 { change: "contract 2 has no recipe refresh" },
        ..scenario(refresh_statuses)
    },
];

/// The recipe the suite's repository holds (its directory is `stoat-<name>`, so the
/// manifest's name is not the repository's, as in the contract's example).
const NAME: &str = "confgreet";

/// A git repository on disk with one recipe in it, made with the host's git.
pub struct RemoteRepo {
    dir: PathBuf,
    git: PathBuf,
    /// What `recipe add` is given: a `file://` URL of the repository.
    pub url: String,
    /// The commit tag `v1` names (branch `main` starts there too).
    pub first: String,
}

/// The host's git, from the suite's own PATH.
pub fn host_git() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl RemoteRepo {
    /// `<sandbox root>/remote/stoat-confgreet`: branch main, one commit, tag v1.
    fn create(sandbox: &Sandbox, git: PathBuf) -> Result<Self, HarnessError> {
        let dir = sandbox.root.join("remote").join(format!("stoat-{NAME}"));
        std::fs::create_dir_all(&dir).map_err(|e| HarnessError::io(&dir, e))?;
        let mut repo = RemoteRepo {
            url: format!("file://{}", dir.display()),
            dir,
            git,
            first: String::new(),
        };
        repo.git(&["-c", "init.defaultBranch=main", "init", "--quiet"])?;
        repo.first = repo.commit("first description (stoat-conformance)")?;
        repo.git(&["tag", "v1"])?;
        Ok(repo)
    }

    /// Writes the recipe with this description, commits it on main; returns the commit.
    pub fn commit(&self, description: &str) -> Result<String, HarnessError> {
        let manifest = format!(
            "name = \"{NAME}\"\ndescription = \"{description}\"\nversion = \"1.0\"\nos = [\"alpine\"]\nscript = \"install.sh\"\n"
        );
        for (file, text) in [
            ("recipe.toml", manifest.as_str()),
            (
                "install.sh",
                "#!/bin/sh\necho greetings from a remote recipe\n",
            ),
        ] {
            let path = self.dir.join(file);
            std::fs::write(&path, text).map_err(|e| HarnessError::io(&path, e))?;
        }
        crate::sandbox::set_mode(&self.dir.join("install.sh"), 0o755)?;
        self.git(&["add", "--all"])?;
        self.git(&["commit", "--quiet", "--no-gpg-sign", "-m", description])?;
        Ok(self.git(&["rev-parse", "HEAD"])?.trim().to_string())
    }

    /// Runs the suite's own git in the repository, isolated from any user configuration.
    fn git(&self, args: &[&str]) -> Result<String, HarnessError> {
        let output = Command::new(&self.git)
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "stoat-conformance")
            .env("GIT_AUTHOR_EMAIL", "conformance@invalid")
            .env("GIT_COMMITTER_NAME", "stoat-conformance")
            .env("GIT_COMMITTER_EMAIL", "conformance@invalid")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| HarnessError::io(&self.git, e))?;
        if !output.status.success() {
            return Err(HarnessError::Other(format!(
                "git {} in {}: {}",
                args.join(" "),
                self.dir.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// A sandbox whose PATH holds git, and the suite's repository; `None` (the check skipped)
/// when the suite has no git to build it with.
fn with_repo(case: &mut Case<'_>) -> Result<Option<(Sandbox, RemoteRepo)>, HarnessError> {
    let Some(git) = host_git() else {
        case.skip("the suite found no git on its own PATH: it needs git to build the repository these checks add recipes from");
        return Ok(None);
    };
    let sandbox = case.sandbox()?;
    link_git(&sandbox, &git)?;
    let repo = RemoteRepo::create(&sandbox, git)?;
    Ok(Some((sandbox, repo)))
}

fn link_git(sandbox: &Sandbox, git: &Path) -> Result<(), HarnessError> {
    std::os::unix::fs::symlink(git, sandbox.bin.join("git")).map_err(HarnessError::Sandbox)
}

fn unlink_git(sandbox: &Sandbox) -> Result<(), HarnessError> {
    let link = sandbox.bin.join("git");
    std::fs::remove_file(&link).map_err(|e| HarnessError::io(&link, e))
}

/// `recipe add <url> [--ref r]`, expecting ok; returns data.
fn add(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
    repo: &RemoteRepo,
    git_ref: Option<&str>,
) -> Result<Option<Value>, HarnessError> {
    let mut args = vec!["recipe", "add", repo.url.as_str()];
    if let Some(git_ref) = git_ref {
        args.extend(["--ref", git_ref]);
    }
    let ran = case.json(sandbox, &args)?;
    if ran.code() == Some("usage") {
        // The contract names what `recipe add` answers, not its command line: a SUT that
        // spells the ref another way is not wrong, it just cannot be driven this way.
        // One reason for every check that stops here (no temp path, no ref), so the closing
        // line counts them as one cause.
        case.skip(
            "the SUT refuses `recipe add SOURCE [--ref REF]` (SOURCE a file:// URL) as a usage error: the contract gives no command line for recipe add, so these checks assume that form",
        );
        return Ok(None);
    }
    Ok(case.expect_ok(&ran).cloned())
}

/// The `recipe list` row named [`NAME`], if any (records a finding when list fails).
fn listed_row(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<Value>, HarnessError> {
    let ran = case.json(sandbox, &["recipe", "list"])?;
    Ok(case
        .expect_ok(&ran)
        .and_then(|d| d.get("recipes"))
        .and_then(Value::as_array)
        .and_then(|rows| rows.iter().find(|r| str_at(r, "/name") == Some(NAME)))
        .cloned())
}

/// `data.recipes[]` entry named [`NAME`] of a lock/sync/update answer.
fn pinned_entry(case: &mut Case<'_>, ran: &Ran, what: &str) -> Option<Value> {
    let data = case.expect_ok(ran)?.clone();
    let entry = data
        .get("recipes")
        .and_then(Value::as_array)
        .and_then(|rows| rows.iter().find(|r| str_at(r, "/name") == Some(NAME)))
        .cloned();
    if entry.is_none() {
        case.fail(
            "/data/recipes",
            format!(
                "`recipe {what}` does not answer the remote recipe {NAME}: {}",
                crate::oracle::excerpt(&data.to_string())
            ),
        );
    }
    entry
}

fn add_pins(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if let Some(data) = add(case, &sandbox, &repo, Some("v1"))? {
        expect_eq(case, &data, "/name", &json!(NAME));
        expect_eq(case, &data, "/ref", &json!("v1"));
        expect_eq(case, &data, "/commit", &json!(repo.first));
        expect_eq(case, &data, "/scope", &json!("global"));
        case.ensure(
            str_at(&data, "/source").is_some_and(|s| !s.is_empty()),
            "/data/source",
            "source is the non-empty repository the recipe was added from",
        );
    }
    Ok(())
}

fn list_row_check(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    let Some(added) = add(case, &sandbox, &repo, Some("v1"))? else {
        return Ok(());
    };
    match listed_row(case, &sandbox)? {
        Some(row) => {
            expect_eq(case, &row, "/scope", &json!("global"));
            expect_eq(case, &row, "/ref", &json!("v1"));
            expect_eq(case, &row, "/commit", &json!(&repo.first[..7]));
            if let Some(source) = added.get("source") {
                expect_eq(case, &row, "/source", source);
            }
        }
        None => case.fail(
            "/data/recipes",
            format!("`recipe list` has no row {NAME} after `recipe add` answered ok"),
        ),
    }
    Ok(())
}

/// The description `recipe show NAME` answers (a finding when it fails).
fn shown_description(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
) -> Result<Option<String>, HarnessError> {
    let ran = case.json(sandbox, &["recipe", "show", NAME])?;
    Ok(case
        .expect_ok(&ran)
        .and_then(|d| str_at(d, "/recipe/description"))
        .map(str::to_string))
}

fn update_moves(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if add(case, &sandbox, &repo, Some("main"))?.is_none() {
        return Ok(());
    }
    let description = "second description (stoat-conformance)";
    let second = repo.commit(description)?;
    let ran = case.json(&sandbox, &["recipe", "update"])?;
    if let Some(entry) = pinned_entry(case, &ran, "update") {
        if !expect_eq(case, &entry, "/commit", &json!(second)) {
            case.fail(
                "/data/recipes",
                format!(
                    "branch main moved from {} to {second}; the update must resolve it anew",
                    repo.first
                ),
            );
        }
        expect_eq(case, &entry, "/ref", &json!("main"));
        expect_eq(case, &entry, "/scope", &json!("global"));
    }
    if let Some(row) = listed_row(case, &sandbox)? {
        expect_eq(case, &row, "/commit", &json!(&second[..7]));
    }
    if let Some(shown) = shown_description(case, &sandbox)? {
        case.ensure(
            shown == description,
            "/data/recipe/description",
            format!("after the update `recipe show` answers the description {shown:?}; the new commit's manifest says {description:?}"),
        );
    }
    Ok(())
}

fn lock_sync_keep(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if add(case, &sandbox, &repo, Some("v1"))?.is_none() {
        return Ok(());
    }
    // main moves on; the tag v1 the recipe is pinned at does not.
    repo.commit("a later commit on main (stoat-conformance)")?;
    for what in ["lock", "sync"] {
        let ran = case.json(&sandbox, &["recipe", what])?;
        if let Some(entry) = pinned_entry(case, &ran, what) {
            expect_eq(case, &entry, "/commit", &json!(repo.first));
            expect_eq(case, &entry, "/ref", &json!("v1"));
            expect_eq(case, &entry, "/scope", &json!("global"));
        }
    }
    Ok(())
}

fn rm_removes(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if add(case, &sandbox, &repo, Some("v1"))?.is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["recipe", "rm", NAME])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/name", &json!(NAME));
        expect_eq(case, &data, "/scope", &json!("global"));
    }
    if let Some(row) = listed_row(case, &sandbox)? {
        case.fail(
            "/data/recipes",
            format!("`recipe list` still lists {NAME} after `recipe rm` answered: {row}"),
        );
    }
    let show = case.json(&sandbox, &["recipe", "show", NAME])?;
    case.ensure(
        show.data().is_none() && show.code().is_some(),
        "/ok",
        format!("`recipe show {NAME}` after `recipe rm` must fail; the recipe is gone"),
    );
    Ok(())
}

fn rm_in_use(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if add(case, &sandbox, &repo, Some("v1"))?.is_none() {
        return Ok(());
    }
    let mut vm = VmFixture::live("work");
    vm.recipes = vec![NAME.to_string()];
    sandbox.write_vm(&vm)?;
    let ran = case.json(&sandbox, &["recipe", "rm", NAME])?;
    case.expect_error(&ran, "in_use");
    match listed_row(case, &sandbox)? {
        Some(row) => {
            expect_eq(case, &row, "/commit", &json!(&repo.first[..7]));
        }
        None => case.fail(
            "/data/recipes",
            format!("a refused `recipe rm` removed {NAME} from `recipe list`"),
        ),
    }
    let lock = case.json(&sandbox, &["recipe", "lock"])?;
    if let Some(entry) = pinned_entry(case, &lock, "lock") {
        expect_eq(case, &entry, "/commit", &json!(repo.first));
    }
    Ok(())
}

fn bad_ref(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    let ran = case.json(
        &sandbox,
        &[
            "recipe",
            "add",
            &repo.url,
            "--ref",
            "no-such-ref-stoat-conformance",
        ],
    )?;
    match ran.code() {
        Some("invalid_spec" | "not_found") => {}
        _ => case.fail(
            "/error/code",
            format!(
                "`recipe add` with a ref the repository lacks answered {}; the request names what is not there",
                ran.answer()
            ),
        ),
    }
    if let Some(row) = listed_row(case, &sandbox)? {
        case.fail(
            "/data/recipes",
            format!("a refused `recipe add` left a row in `recipe list`: {row}"),
        );
    }
    Ok(())
}

fn git_required(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    // First without git at all: nothing may be added.
    unlink_git(&sandbox)?;
    let ran = case.json(&sandbox, &["recipe", "add", &repo.url, "--ref", "v1"])?;
    case.expect_error(&ran, "git_required");
    if let Some(row) = listed_row(case, &sandbox)? {
        case.fail(
            "/data/recipes",
            format!("`recipe add` without git left a row in `recipe list`: {row}"),
        );
    }
    // Then a recipe added with git, and an update once git is gone again.
    link_git(&sandbox, &repo.git)?;
    if add(case, &sandbox, &repo, Some("main"))?.is_none() {
        return Ok(());
    }
    repo.commit("a commit the update cannot fetch (stoat-conformance)")?;
    unlink_git(&sandbox)?;
    let ran = case.json(&sandbox, &["recipe", "update"])?;
    case.expect_error(&ran, "git_required");
    if let Some(row) = listed_row(case, &sandbox)? {
        expect_eq(case, &row, "/commit", &json!(&repo.first[..7]));
    }
    Ok(())
}

fn show_remote(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    if add(case, &sandbox, &repo, Some("v1"))?.is_none() {
        return Ok(());
    }
    let ran = case.json(&sandbox, &["recipe", "show", NAME])?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/recipe/name", &json!(NAME));
        expect_eq(
            case,
            &data,
            "/recipe/description",
            &json!("first description (stoat-conformance)"),
        );
        for list in ["depends", "params", "outputs"] {
            expect_eq(case, &data, &format!("/recipe/{list}"), &json!([]));
        }
        expect_eq(case, &data, "/recipe/health", &Value::Null);
    }
    Ok(())
}

fn show_unknown(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let ran = case.json(
        &sandbox,
        &["recipe", "show", "no-such-recipe-stoat-conformance"],
    )?;
    match ran.code() {
        Some("not_found" | "invalid_spec") => {
            case.expect_exit(&ran, 1);
        }
        _ => case.fail(
            "/error/code",
            format!(
                "`recipe show` of a recipe no root holds answered {}; expected not_found or invalid_spec",
                ran.answer()
            ),
        ),
    }
    Ok(())
}

/// The two recipes of the suite's index (names unique to the suite).
const INDEX: &[(&str, &str, &[&str])] = &[
    (
        "confindex-one",
        "first entry of the suite's index",
        &["alpine"],
    ),
    (
        "confindex-two",
        "second entry of the suite's index",
        &["alpine", "debian"],
    ),
];

fn index_source(name: &str) -> String {
    format!("https://example.invalid/stoat-{name}")
}

fn search_index(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let mut sandbox = case.sandbox()?;
    let knob = case.profile().recipe_index.clone();
    let sources: Vec<String> = INDEX
        .iter()
        .map(|(name, _, _)| index_source(name))
        .collect();
    let recipes: Vec<crate::run::profile::IndexRecipe<'_>> = INDEX
        .iter()
        .zip(&sources)
        .map(
            |((name, description, os), source)| crate::run::profile::IndexRecipe {
                name,
                source,
                description,
                os,
            },
        )
        .collect();
    let path = sandbox.root.join("recipe-index");
    std::fs::write(&path, knob.render(&recipes)).map_err(|e| HarnessError::io(&path, e))?;
    sandbox.set_env(&knob.env, &path.to_string_lossy());
    let ran = case.json(&sandbox, &["recipe", "search"])?;
    let rows = ran
        .data()
        .and_then(|d| d.get("recipes"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !rows.iter().any(|r| str_at(r, "/name") == Some(INDEX[0].0)) {
        case.skip(format!(
            "the SUT's `recipe search` does not list the suite's index when {} names it: {} is a knob of the reference, not of the contract; declare how this implementation reads an index in the --profile file's [recipe_index] table",
            knob.env, knob.env
        ));
        return Ok(());
    }
    for ((name, description, os), source) in INDEX.iter().zip(&sources) {
        match rows.iter().position(|r| str_at(r, "/name") == Some(name)) {
            Some(index) => {
                let want =
                    json!({"name": name, "source": source, "description": description, "os": os});
                expect_eq(case, &json!(rows), &format!("/{index}"), &want);
            }
            None => case.fail(
                "/data/recipes",
                format!("`recipe search` with no query does not list the index entry {name}"),
            ),
        }
    }
    Ok(())
}

/// The path of the bundled search root (`recipe list`'s root of scope bundled).
fn bundled_root(case: &mut Case<'_>, sandbox: &Sandbox) -> Result<Option<PathBuf>, HarnessError> {
    let ran = case.json(sandbox, &["recipe", "list"])?;
    Ok(case
        .expect_ok(&ran)
        .and_then(|d| d.get("roots"))
        .and_then(Value::as_array)
        .and_then(|roots| {
            roots
                .iter()
                .find(|r| str_at(r, "/scope") == Some("bundled"))
        })
        .and_then(|r| str_at(r, "/path"))
        .map(PathBuf::from))
}

const STATUSES: &[&str] = &["current", "refreshed", "backed_up", "orphan"];

/// `recipe refresh`'s files, each shape-checked.
fn refreshed(
    case: &mut Case<'_>,
    sandbox: &Sandbox,
) -> Result<Vec<(String, String)>, HarnessError> {
    let ran = case.json(sandbox, &["recipe", "refresh"])?;
    let Some(files) = case
        .expect_ok(&ran)
        .and_then(|d| d.get("files"))
        .and_then(Value::as_array)
        .cloned()
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let (Some(path), Some(status)) = (str_at(file, "/path"), str_at(file, "/status")) else {
            case.fail(
                format!("/data/files/{index}"),
                format!("a RecipeRefreshed without string path and status: {file}"),
            );
            continue;
        };
        case.ensure(
            !path.starts_with('/'),
            &format!("/data/files/{index}/path"),
            format!("path {path:?} is absolute; RecipeRefreshed names a file inside a recipe"),
        );
        case.ensure(
            STATUSES.contains(&status),
            &format!("/data/files/{index}/status"),
            format!("status {status:?} is not one of {STATUSES:?}"),
        );
        out.push((path.to_string(), status.to_string()));
    }
    Ok(out)
}

fn refresh_statuses(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let sandbox = case.sandbox()?;
    let first = refreshed(case, &sandbox)?;
    let Some(root) = bundled_root(case, &sandbox)? else {
        case.skip(
            "`recipe list` names no root of scope bundled, so no bundled file can be changed",
        );
        return Ok(());
    };
    let Some((path, file)) = first
        .iter()
        .map(|(p, _)| (p.clone(), root.join(p)))
        .find(|(_, f)| f.is_file())
    else {
        case.skip(
            "`recipe refresh` named no file found under the bundled root, so none can be changed",
        );
        return Ok(());
    };
    let original = std::fs::read(&file).map_err(|e| HarnessError::io(&file, e))?;
    let mut changed = original.clone();
    changed
        .extend_from_slice(format!("# changed by stoat-conformance {}\n", case.seed()).as_bytes());
    std::fs::write(&file, &changed).map_err(|e| HarnessError::io(&file, e))?;
    let second = refreshed(case, &sandbox)?;
    let Some((_, status)) = second.iter().find(|(p, _)| *p == path) else {
        case.fail(
            "/data/files",
            format!(
                "the second `recipe refresh` does not name {path}, a bundled file the user changed"
            ),
        );
        return Ok(());
    };
    case.ensure(
        status != "current",
        "/data/files",
        format!("{path} was changed by the user, yet refresh calls it current"),
    );
    if matches!(status.as_str(), "refreshed" | "backed_up") {
        let now = std::fs::read(&file).unwrap_or_default();
        case.ensure(
            now == original,
            "filesystem",
            format!(
                "refresh answered {status} for {path}, yet the file still holds the user's text"
            ),
        );
    }
    if status == "backed_up" {
        let dir = file.parent().map(PathBuf::from).unwrap_or_default();
        let backed_up = std::fs::read_dir(&dir)
            .map(|entries| {
                entries.flatten().any(|e| {
                    e.file_name().to_string_lossy().ends_with(".bak")
                        && std::fs::read(e.path()).is_ok_and(|b| b == changed)
                })
            })
            .unwrap_or(false);
        case.ensure(
            backed_up,
            "filesystem",
            format!("refresh answered backed_up for {path}, yet no .bak file beside it holds the user's text"),
        );
    }
    Ok(())
}

fn project_scope(case: &mut Case<'_>) -> Result<(), HarnessError> {
    let Some((sandbox, repo)) = with_repo(case)? else {
        return Ok(());
    };
    let init = case.json(&sandbox, &["init"])?;
    if case.expect_ok(&init).is_none() {
        return Ok(());
    }
    let ran = case.json(
        &sandbox,
        &["recipe", "add", "--project", &repo.url, "--ref", "v1"],
    )?;
    if let Some(data) = case.expect_ok(&ran).cloned() {
        expect_eq(case, &data, "/name", &json!(NAME));
        expect_eq(case, &data, "/scope", &json!("project"));
        expect_eq(case, &data, "/commit", &json!(repo.first));
    } else {
        return Ok(());
    }
    match listed_row(case, &sandbox)? {
        Some(row) => {
            expect_eq(case, &row, "/scope", &json!("project"));
            expect_eq(case, &row, "/ref", &json!("v1"));
            expect_eq(case, &row, "/commit", &json!(&repo.first[..7]));
        }
        None => case.fail(
            "/data/recipes",
            format!("`recipe list` in the project has no row {NAME} after `recipe add --project`"),
        ),
    }
    let lock = case.json(&sandbox, &["recipe", "lock", "--project"])?;
    if let Some(entry) = pinned_entry(case, &lock, "lock --project") {
        expect_eq(case, &entry, "/commit", &json!(repo.first));
        expect_eq(case, &entry, "/scope", &json!("project"));
    }
    Ok(())
}
