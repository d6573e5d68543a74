//! Every shell example in README.md and docs/*.md runs as written (the convention is in
//! docs/usage.md, "Examples in these docs"): a fenced shell block is either marked `example=TIER`
//! and run here, line by line, through bash with the built `stoat` first on PATH, or marked
//! `no-run=REASON`. An unmarked one fails the pure test below, so no example goes unrun.
//!
//! Tiers: `fake` runs in every `cargo test` (the suite's fake host tools, a loopback catalog
//! serving a placeholder `debian-13`); `real` boots the real tier's test guest and `distro` the
//! Debian image (test_distro.rs), each served on loopback as `debian-13`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::common::{http, real_guest, timed, RealGuard, TestEnv, DEBIAN_CLOUD};

/// Fence languages that hold shell commands: each such block must be marked.
const SHELL: &[&str] = &["sh", "bash", "console", "shell", "zsh"];
/// Where a marked example runs.
const TIERS: &[&str] = &["fake", "real", "distro"];
/// Why a shell block is not run, one word each (docs/usage.md lists them).
const REASONS: &[&str] = &["ci", "network", "root", "slow", "content", "output"];
/// A hidden line right above a fence: a command run before the block's own, in its sandbox.
const SETUP: &str = "<!-- example-setup:";

/// One fenced block of a markdown file.
#[derive(Debug)]
struct Block {
    pub file: String,
    /// The fence's line (1-based).
    pub line: usize,
    pub lang: String,
    pub tiers: Vec<String>,
    pub no_run: Option<String>,
    /// `file=PATH`: the block is that file's content; later examples of the same document run
    /// with it written (`~/` is the sandbox's HOME, `$STOAT_HOME/` its data root).
    pub file_path: Option<String>,
    /// (line, command) of the `example-setup` comments above the fence.
    pub setup: Vec<(usize, String)>,
    /// (line, text) of the block's content.
    pub body: Vec<(usize, String)>,
    /// What is wrong with the fence's marking, if anything.
    pub problems: Vec<String>,
}

impl Block {
    pub fn runs_in(&self, tier: &str) -> bool {
        self.tiers.iter().any(|t| t == tier)
    }

    /// The commands a reader would type, with their lines: setup first, then a console
    /// block's `$ ` lines or a script's non-comment lines; a trailing `\` joins the next line.
    pub fn commands(&self) -> Vec<(usize, String)> {
        let mut out = self.setup.clone();
        let mut pending: Option<(usize, String)> = None;
        for (line, text) in &self.body {
            let text = match (&pending, self.lang.as_str()) {
                (Some(_), _) => text.as_str(),
                (None, "console") => match text.strip_prefix("$ ") {
                    Some(cmd) => cmd,
                    None => continue,
                },
                (None, _) if text.trim().is_empty() || text.trim_start().starts_with('#') => {
                    continue
                }
                (None, _) => text.as_str(),
            };
            let (start, mut joined) = pending.take().unwrap_or((*line, String::new()));
            match text.strip_suffix('\\') {
                Some(head) => {
                    joined.push_str(head);
                    pending = Some((start, joined));
                }
                None => {
                    joined.push_str(text);
                    out.push((start, joined));
                }
            }
        }
        out.extend(pending);
        out
    }
}

/// Parses the fenced blocks of `text` (named `file` in messages).
fn parse(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let mut block = fence(file, i + 1, info);
        let mut above = i;
        while above > 0 {
            let Some(rest) = lines[above - 1].trim().strip_prefix(SETUP) else {
                break;
            };
            let cmd = rest.trim().trim_end_matches("-->").trim().to_owned();
            block.setup.insert(0, (above, cmd));
            above -= 1;
        }
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            block.body.push((i + 1, lines[i].to_owned()));
            i += 1;
        }
        if i == lines.len() {
            block.problems.push("the fence is never closed".into());
        }
        i += 1;
        blocks.push(block);
    }
    blocks
}

/// A block's fence line: its language and marks, and what is wrong with them.
fn fence(file: &str, line: usize, info: &str) -> Block {
    let mut words = info.split_whitespace();
    let lang = words.next().unwrap_or("").to_owned();
    let mut block = Block {
        file: file.to_owned(),
        line,
        lang: lang.clone(),
        tiers: Vec::new(),
        no_run: None,
        file_path: None,
        setup: Vec::new(),
        body: Vec::new(),
        problems: Vec::new(),
    };
    if lang.is_empty() {
        block
            .problems
            .push("a fence names its language (`text` for a diagram or a synopsis)".into());
    }
    for word in words {
        if let Some(tiers) = word.strip_prefix("example=") {
            for tier in tiers.split(',') {
                if !TIERS.contains(&tier) {
                    block.problems.push(format!(
                        "unknown tier {tier:?} (one of {})",
                        TIERS.join(", ")
                    ));
                }
                block.tiers.push(tier.to_owned());
            }
        } else if let Some(reason) = word.strip_prefix("no-run=") {
            if !REASONS.contains(&reason) {
                block.problems.push(format!(
                    "unknown no-run reason {reason:?} (one of {})",
                    REASONS.join(", ")
                ));
            }
            block.no_run = Some(reason.to_owned());
        } else if let Some(path) = word.strip_prefix("file=") {
            if !(path.starts_with("~/") || path.starts_with("$STOAT_HOME/")) {
                block
                    .problems
                    .push(format!("file={path} starts with ~/ or $STOAT_HOME/"));
            }
            block.file_path = Some(path.to_owned());
        } else {
            block.problems.push(format!("unknown mark {word:?}"));
        }
    }
    let shell = SHELL.contains(&lang.as_str());
    let marked = !block.tiers.is_empty() || block.no_run.is_some();
    if shell && !marked {
        block.problems.push(
            "a shell block is marked `example=TIER` or `no-run=REASON` (docs/usage.md)".into(),
        );
    }
    if !shell && marked {
        block
            .problems
            .push(format!("only shell blocks are marked, not {lang:?}"));
    }
    if !block.tiers.is_empty() && block.no_run.is_some() {
        block
            .problems
            .push("a block is an example or not run, not both".into());
    }
    block
}

/// The repository's root (two levels above this crate).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every fenced block of README.md and docs/*.md, in file order.
fn doc_blocks() -> Vec<Block> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .iter()
        .flat_map(|path| {
            let name = path.strip_prefix(repo()).unwrap().display().to_string();
            parse(&name, &std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

/// Writes the `file=` blocks of `block`'s document that come before it into the sandbox.
fn write_files(env: &TestEnv, blocks: &[Block], block: &Block) {
    for earlier in blocks
        .iter()
        .filter(|b| b.file == block.file && b.line < block.line)
    {
        let Some(path) = &earlier.file_path else {
            continue;
        };
        let path = match (path.strip_prefix("~/"), path.strip_prefix("$STOAT_HOME/")) {
            (Some(rest), _) => env.home().join(rest),
            (_, Some(rest)) => env.root().join(rest),
            _ => panic!("{}:{}: file={path}", earlier.file, earlier.line),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = earlier.body.iter().map(|(_, l)| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
    }
}

/// Runs a block's commands one by one, as a reader would paste them: each through
/// `bash -o pipefail -c`, from where the previous one left off (a `cd` carries over). Returns
/// the first failure with its file, line, command and output.
/// The last `n` lines of a command's output, as text.
fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].iter().map(|l| format!("{l}\n")).collect()
}

fn run_block(env: &TestEnv, block: &Block) -> Result<(), String> {
    let state = env.tmp().join(".example-cwd");
    std::fs::write(&state, env.home().display().to_string()).unwrap();
    for (line, cmd) in block.commands() {
        let out = run_line(env, &state, &block.file, line, &cmd);
        if !out.status.success() {
            // The last lines only: a CI log that keeps only the end of a run still shows why.
            return Err(format!(
                "{}:{line}: `{cmd}` failed ({})\n--- stdout (end)\n{}--- stderr (end)\n{}",
                block.file,
                out.status,
                last_lines(&out.stdout, 15),
                last_lines(&out.stderr, 15)
            ));
        }
    }
    Ok(())
}

/// Runs one command from the directory in `state`, leaving the directory it ended in there.
fn run_line(env: &TestEnv, state: &Path, file: &str, line: usize, cmd: &str) -> Output {
    let cwd = std::fs::read_to_string(state).unwrap();
    let script = format!(
        "{cmd}\n__status=$?; pwd > '{}'; exit $__status",
        state.display()
    );
    let started = Instant::now();
    let out = env.shell(&script).current_dir(cwd.trim()).output().unwrap();
    println!("TIMING {file}:{line} {cmd}: {:.2?}", started.elapsed());
    out
}

/// Stops every VM the sandbox still has running when dropped, pass or fail: `stoat down`
/// first, then SIGKILL by the PID in its pidfile ([`RealGuard`]) for one that did not stop.
struct StopAll<'a>(pub &'a TestEnv);

impl Drop for StopAll<'_> {
    fn drop(&mut self) {
        let Ok(dirs) = std::fs::read_dir(self.0.root()) else {
            return;
        };
        for dir in dirs.flatten().map(|e| e.path()) {
            if !dir.join("qemu.pid").exists() {
                continue;
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let _ = self.0.run(&["down", &name]);
            drop(RealGuard(dir));
        }
    }
}

/// A `[[image]]` catalog table serving `file` from `base` with its sha256.
fn catalog_entry(id: &str, os: &str, variant: &str, base: &str, file: &str, body: &[u8]) -> String {
    use sha2::Digest;
    format!(
        "[[image]]\nid = \"{id}\"\nos = \"{os}\"\nvariant = \"{variant}\"\nbackend = \"cloudinit\"\nurl = \"{base}/{file}\"\nsha256 = \"{}\"\nbytes = {}\n",
        hex::encode(sha2::Sha256::digest(body)),
        body.len()
    )
}

/// Points the sandbox's STOAT_CATALOG at a catalog of exactly `entries`.
fn use_catalog(env: &mut TestEnv, entries: &[String]) {
    let path = env.tmp().join("catalog.toml");
    std::fs::write(&path, entries.join("\n")).unwrap();
    env.set_env("STOAT_CATALOG", path.to_str().unwrap());
}

/// The fake tier's sandbox: every host tool faked (QEMU "boots" and answers ssh's banner,
/// ssh succeeds), a loopback catalog whose `debian-13` is a small placeholder file, and this
/// test's turn: examples run verbatim, so their VMs keep the ssh port `create` picked (the
/// first free one from 2200), and two sandboxes booting at once would both pick it.
fn fake_sandbox() -> (TestEnv, http::Server, MutexGuard<'static, ()>) {
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut env = TestEnv::new();
    env.fake_host_tools();
    env.set_env("STOAT_FAKE_MAX_SECS", "120");
    let server = http::Server::start();
    let entry = serve_as_debian_13(&server, b"placeholder debian-13 image\n".to_vec());
    use_catalog(&mut env, &[entry]);
    (env, server, turn)
}

/// Serves `body` from `server` under `debian-13`'s file name and returns the catalog entry
/// that names it, with its sha256.
fn serve_as_debian_13(server: &http::Server, body: Vec<u8>) -> String {
    let entry = catalog_entry(
        "debian-13",
        "debian",
        "13 (trixie)",
        &server.base(),
        DEBIAN_CLOUD,
        &body,
    );
    server.route(&format!("/{DEBIAN_CLOUD}"), body, http::Behaviour::Normal);
    entry
}

#[test]
fn doc_examples_every_shell_block_is_marked() {
    let blocks = doc_blocks();
    assert!(
        blocks.iter().any(|b| b.file == "README.md"),
        "found no blocks"
    );
    let wrong: Vec<String> = blocks
        .iter()
        .flat_map(|b| {
            b.problems
                .iter()
                .map(move |p| format!("{}:{}: {p}", b.file, b.line))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn doc_examples_the_parser_reads_marks_setup_console_and_continuations() {
    let text = "x\n<!-- example-setup: touch a -->\n```console example=fake\n$ stoat ls \\\n  --json\noutput line\n$ cd /tmp\n```\n\n```sh\nstoat ls\n```\n\n```\nplain\n```\n```sh no-run=later\n```\n";
    let blocks = parse("t.md", text);
    assert_eq!(blocks.len(), 4);
    assert_eq!(blocks[0].tiers, ["fake"]);
    assert!(blocks[0].problems.is_empty(), "{:?}", blocks[0].problems);
    assert_eq!(
        blocks[0].commands(),
        [
            (2, "touch a".to_owned()),
            (4, "stoat ls   --json".to_owned()),
            (7, "cd /tmp".to_owned())
        ]
    );
    assert!(blocks[1].problems[0].contains("is marked"), "{blocks:?}");
    assert!(blocks[2].problems[0].contains("names its language"));
    assert!(blocks[3].problems[0].contains("unknown no-run reason"));
}

/// A `cd` carries over to the next line; a failing line is reported with its file, line and
/// output, and the lines after it never run.
#[test]
fn doc_examples_a_failing_line_names_file_line_and_output() {
    let env = TestEnv::new();
    let text = "```sh example=fake\nmkdir sub\ncd sub\ntouch here\nstoat get nosuchvm\ntouch ran-after\n```\n";
    let block = &parse("t.md", text)[0];
    let err = run_block(&env, block).unwrap_err();
    assert!(
        err.starts_with("t.md:5: `stoat get nosuchvm` failed"),
        "{err}"
    );
    assert!(err.contains("nosuchvm"), "{err}");
    assert!(env.home().join("sub/here").exists());
    assert!(!env.home().join("sub/ran-after").exists());
}

/// Every `example=fake` block, each in a fresh sandbox.
#[test]
fn doc_examples_fake_tier_run_as_written() {
    let all = doc_blocks();
    let blocks: Vec<&Block> = all.iter().filter(|b| b.runs_in("fake")).collect();
    assert!(
        blocks.iter().any(|b| b.file == "README.md"),
        "the README's example is in the fake tier"
    );
    let mut failures = Vec::new();
    for block in blocks {
        let (env, _server, _turn) = fake_sandbox();
        let _stop = StopAll(&env);
        write_files(&env, &all, block);
        if let Err(why) = run_block(&env, block) {
            failures.push(why);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The commented stoat.toml `init` writes, uncommented as a user would (every `# key = ...`
/// and `# [table]` line), is a valid project whose image, recipe and params exist: `status`
/// reads it and `up` creates and starts its VM with every field as declared.
#[test]
fn doc_examples_the_init_template_uncommented_is_a_valid_project() {
    let (env, _server, _turn) = fake_sandbox();
    let _stop = StopAll(&env);
    let dir = env.home().join("shop");
    std::fs::create_dir(&dir).unwrap();
    let init = crate::common::JsonRun::check(
        env.cmd(&["init", "--json"])
            .current_dir(&dir)
            .output()
            .unwrap(),
    );
    assert!(init.ok(), "{}", init.stdout);
    let path = dir.join("stoat.toml");
    let template = std::fs::read_to_string(&path).unwrap();
    let setting = regex::Regex::new(r"^# (\[[a-z.]+\]|[a-z_]+ = )").unwrap();
    let mut uncommented = 0;
    let text: String = template
        .lines()
        .map(|line| match setting.is_match(line) {
            true => {
                uncommented += 1;
                format!("{}\n", &line[2..])
            }
            false => format!("{line}\n"),
        })
        .collect();
    assert!(
        uncommented >= 13,
        "{uncommented} lines uncommented:\n{text}"
    );
    std::fs::write(&path, &text).unwrap();
    let in_shop = |args: &[&str]| {
        crate::common::JsonRun::check(env.cmd(args).current_dir(&dir).output().unwrap())
    };

    let status = in_shop(&["status", "--json"]);
    assert_eq!(
        status.data()["vms"][0]["name"],
        "shop-dev",
        "{}",
        status.stdout
    );

    // The names it uses exist: the image in the built-in catalog, the recipe and its param.
    let builtin = TestEnv::new().json(&["images"]);
    let ids: Vec<&str> = builtin.data()["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"debian-13"), "{ids:?}");
    let docker = in_shop(&["recipe", "show", "docker", "--json"]);
    assert_eq!(docker.data()["recipe"]["params"][0]["name"], "user");

    // `up` validates everything `create` would (recipe, params, forwards), then starts it.
    assert!(in_shop(&["pull", "debian-13", "--json"]).ok());
    let up = in_shop(&["up", "--json"]);
    assert_eq!(up.data()["vms"][0]["status"], "ok", "{}", up.stdout);
    let vm = env.json(&["get", "shop-dev"]).data()["vm"].clone();
    assert_eq!(vm["state"], "running", "{vm}");
    assert_eq!(
        (&vm["cpus"], &vm["ram_mb"], &vm["disk"]),
        (&2.into(), &2048.into(), &"16G".into()),
        "{vm}"
    );
    assert_eq!(vm["share"], dir.display().to_string());
    assert_eq!(
        vm["forwards"],
        serde_json::json!([{"host_port": 8080, "guest_port": 80}])
    );
    assert_eq!(vm["recipes_detail"][0]["name"], "docker");
    assert_eq!(vm["recipes_detail"][0]["params"]["user"], "stoat");
    assert_eq!(
        in_shop(&["down", "--json"]).data()["vms"][0]["status"],
        "ok"
    );
}

/// Every block marked for `tier`, each in a fresh sandbox whose catalog serves `image` as
/// `debian-13` (with its sha256, so `pull` downloads and verifies it for real) and whose VMs
/// are stopped (down, then by PID) when the block ends, pass or fail.
pub(crate) fn run_booting_tier(tier: &str, image: &Path) {
    let all = doc_blocks();
    let blocks: Vec<&Block> = all.iter().filter(|b| b.runs_in(tier)).collect();
    assert!(!blocks.is_empty(), "no block is marked example={tier}");
    let server = http::Server::start();
    let entry = serve_as_debian_13(&server, std::fs::read(image).unwrap());
    for block in blocks {
        let mut env = TestEnv::new();
        env.set_env("STOAT_DOWN_TIMEOUT_SECS", "300");
        use_catalog(&mut env, std::slice::from_ref(&entry));
        let _stop = StopAll(&env);
        write_files(&env, &all, block);
        timed(&format!("{tier} {}:{}", block.file, block.line), || {
            run_block(&env, block).unwrap_or_else(|why| panic!("{why}"))
        });
        let pulls = block
            .commands()
            .iter()
            .any(|(_, c)| c.contains("pull debian-13"));
        assert!(
            !pulls
                || server
                    .requested_paths()
                    .contains(&format!("/{DEBIAN_CLOUD}")),
            "{}:{}: pull never downloaded the image",
            block.file,
            block.line
        );
        server.clear_log();
    }
}

/// Every `example=real` block, on the real tier's test guest.
#[test]
#[ignore = "needs STOAT_REAL_GUEST"]
fn real_doc_examples_run_as_written() {
    let guest = real_guest();
    run_booting_tier("real", &guest.image);
}

/// A block that fails after starting a VM leaves nothing running: [`StopAll`] stops it.
#[test]
fn doc_examples_a_failed_block_leaves_no_vm_running() {
    let (env, _server, _turn) = fake_sandbox();
    let text = "```sh example=fake\nstoat pull debian-13\nstoat create x --image debian-13\nstoat up x\nfalse\n```\n";
    let stop = StopAll(&env);
    let err = run_block(&env, &parse("t.md", text)[0]).unwrap_err();
    assert!(err.starts_with("t.md:5: `false` failed"), "{err}");
    let vm_dir = env.root().join("x");
    let pid = std::fs::read_to_string(vm_dir.join("qemu.pid")).unwrap();
    let cmdline = || std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap_or_default();
    let ours = |c: Vec<u8>| String::from_utf8_lossy(&c).contains(&format!("{}/", vm_dir.display()));
    assert!(ours(cmdline()), "the VM runs before the guard drops");
    drop(stop);
    assert!(!ours(cmdline()), "pid {pid} still runs");
    assert!(!vm_dir.join("qemu.pid").exists());
}
