//! The command line as a person meets it, through the real binary: image paths relative to
//! where stoat runs, the console password `random` makes (shown once in human mode, never
//! under --json or in a log), shell completions, man pages and `make install`.

use std::path::Path;

use crate::common::{TestEnv, DEBIAN_CLOUD};

fn stdout(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn a_relative_image_path_is_found_from_the_working_directory_and_stored_absolute() {
    let env = TestEnv::new();
    // stoat runs in HOME (see TestEnv).
    let dir = env.home().join("images");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("my-fedora-server.iso"),
        crate::common::iso9660_placeholder(),
    )
    .unwrap();
    let vm = env
        .json(&[
            "create",
            "rel",
            "--image",
            "./images/my-fedora-server.iso",
            "--disk",
            "32M",
        ])
        .data()["vm"]
        .clone();
    assert_eq!(vm["os"], "fedora");
    let absolute = dir.join("my-fedora-server.iso");
    let toml = env.vm_toml("rel");
    assert!(
        toml.contains(&format!("iso = \"{}\"", absolute.display())),
        "{toml}"
    );
    // Without `./` too, and a missing file names the absolute path it looked for.
    env.json(&["create", "rel2", "--image", "images/my-fedora-server.iso"])
        .data();
    let message = env
        .json(&["create", "gone", "--image", "./images/nothing.iso"])
        .error("not_found");
    assert!(
        message.contains(&dir.join("nothing.iso").display().to_string()),
        "{message}"
    );
    assert!(!env.root().join("gone").exists());
}

#[test]
fn a_random_console_password_is_shown_once_to_a_human_and_never_under_json_or_in_logs() {
    let env = TestEnv::new();
    env.plant_image(DEBIAN_CLOUD);
    let human = stdout(&env.run(&[
        "create",
        "r",
        "--image",
        "debian-13",
        "--console-password",
        "random",
    ]));
    let stored = regex::Regex::new(r#"console_password = "([0-9a-f]{32})""#)
        .unwrap()
        .captures(&env.vm_toml("r"))
        .expect("a random password in vm.toml")[1]
        .to_owned();
    assert_eq!(human.matches(&stored).count(), 1, "{human}");
    let mut settings = env.snapshot_settings();
    settings.add_filter(&stored, "<password>");
    settings.add_filter(r"ssh port \d+", "ssh port <port>");
    let _masked = settings.bind_to_scope();
    insta::assert_snapshot!(human, @r"
    created r: debian cloud (cloudinit), 4 cpus, 4096 MB, 8G disk, ssh port <port>
    start it with: stoat up r
    console password (shown only now): <password>
    ");
    let json = env.json(&[
        "create",
        "j",
        "--image",
        "debian-13",
        "--console-password",
        "random",
    ]);
    let generated = regex::Regex::new(r#"console_password = "([0-9a-f]{32})""#)
        .unwrap()
        .captures(&env.vm_toml("j"))
        .expect("a random password")[1]
        .to_owned();
    assert!(!json.stdout.contains(&generated) && !json.stderr.contains(&generated));
    // Later commands never show it again, and the log never had it.
    let get = stdout(&env.run(&["get", "r"]));
    assert!(!get.contains(&stored), "{get}");
    let log = std::fs::read_to_string(env.root().join("logs/stoat.log")).unwrap();
    assert!(!log.contains(&stored) && !log.contains(&generated), "{log}");
    // A password the user chose is theirs already: not echoed.
    let chosen = stdout(&env.run(&[
        "create",
        "c",
        "--image",
        "debian-13",
        "--console-password",
        "mine-0123",
    ]));
    assert!(!chosen.contains("mine-0123"), "{chosen}");
}

#[test]
fn the_default_console_password_is_named_in_create_help_and_is_what_a_cloud_vm_gets() {
    let env = TestEnv::new();
    let help = stdout(&env.run(&["create", "--help"]));
    let flag = help
        .split("--console-password")
        .nth(1)
        .expect("create --help lists --console-password");
    assert!(
        flag.contains("default: stoat") && flag.contains("`stoat`"),
        "{help}"
    );
    assert!(help.contains("--console-password random"), "{help}");
    // A cloud VM made without the flag has that password, and nothing shows it.
    env.plant_image(DEBIAN_CLOUD);
    let human = stdout(&env.run(&["create", "d", "--image", "debian-13"]));
    assert!(!human.contains("password"), "{human}");
    assert!(
        env.vm_toml("d").contains("console_password = \"stoat\""),
        "{}",
        env.vm_toml("d")
    );
}

/// Asks the completion registered by `stoat completions bash` for the words of a command
/// line whose last word is being completed, as bash's `complete -F` calls it.
fn bash_completes(env: &TestEnv, words: &[&str]) -> Vec<String> {
    let script = env.tmp().join("stoat.bash");
    std::fs::write(&script, stdout(&env.run(&["completions", "bash"]))).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let probe = env
        .shell(&format!(
            "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_TYPE=9; \
             _stoat_complete stoat {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            quoted.join(" "),
            words.len() - 1,
            quoted[words.len() - 1],
            quoted[words.len() - 2],
        ))
        .output()
        .unwrap();
    stdout(&probe)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn completions_offer_commands_vm_names_and_image_ids_as_they_are_now() {
    let env = TestEnv::new();
    assert_eq!(bash_completes(&env, &["stoat", "cr"]), ["create"]);
    // No VM yet: only flags to offer; then the names of the VMs that exist at this Tab.
    let offered = bash_completes(&env, &["stoat", "up", ""]);
    assert!(offered.iter().all(|w| w.starts_with('-')), "{offered:?}");
    env.write_basic_vm("work", 2200);
    env.write_basic_vm("web", 2201);
    assert_eq!(bash_completes(&env, &["stoat", "up", "w"]), ["web", "work"]);
    assert_eq!(bash_completes(&env, &["stoat", "exec", "wo"]), ["work"]);
    assert_eq!(
        bash_completes(&env, &["stoat", "exec", "work", "u"]),
        Vec::<String>::new()
    );
    assert_eq!(bash_completes(&env, &["stoat", "cp", "wor"]), ["work:"]);
    let images = bash_completes(&env, &["stoat", "create", "x", "--image", "debian-1"]);
    assert!(images.contains(&"debian-13".to_owned()), "{images:?}");
    for shell in ["zsh", "fish"] {
        let text = stdout(&env.run(&["completions", shell]));
        assert!(text.contains("STOAT_COMPLETE"), "{shell}: {text}");
    }
    let bad = env.run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bash, zsh, fish"));
    env.json(&["completions", "bash"]).error("usage");
}

/// A tmux server of its own (its socket in the sandbox), killed when the test ends.
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    /// Starts `shell` (a command line: the shell without its start-up files) in a detached
    /// 160x20 pane, with the sandbox's environment.
    fn start(env: &TestEnv, shell: &str) -> Tmux {
        let socket = env.tmp().join("tmux.sock");
        let started = env
            .shell(&format!(
                "tmux -f /dev/null -S {} new-session -d -x 160 -y 20 '{shell}'",
                socket.display()
            ))
            .output()
            .unwrap();
        assert!(
            started.status.success(),
            "tmux and {shell} (make host-deps installs them): {started:?}"
        );
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    /// The pane's text once `done` holds for it (within 20 s, or the test fails showing it).
    fn screen_when(&self, done: impl Fn(&str) -> bool) -> String {
        crate::common::eventually(std::time::Duration::from_secs(20), || {
            let shown =
                String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "0"]).stdout)
                    .into_owned();
            if done(&shown) {
                Ok(shown)
            } else {
                Err(format!("the pane shows:\n{shown}"))
            }
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// In a real terminal, `shell` with stoat's completion loaded by `setup` (which names the
/// script `stoat completions <name>` wrote as SCRIPT): Tab completes a VM's name and a file
/// name with a space, typed plain and typed half quoted.
fn completes_in_a_terminal(name: &str, shell: &str, setup: &str) {
    let env = TestEnv::new();
    env.write_basic_vm("workbench", 2200);
    std::fs::write(env.home().join("my notes.txt"), "x").unwrap();
    let script = env.tmp().join(format!("stoat.{name}"));
    std::fs::write(&script, stdout(&env.run(&["completions", name]))).unwrap();
    let term = Tmux::start(&env, shell);
    let setup = setup.replace("SCRIPT", &script.display().to_string());
    term.keys(&[
        &format!("{setup}; cd {}; clear", env.home().display()),
        "Enter",
    ]);
    let shown = term.screen_when(|s| s.trim() == "$");
    assert_eq!(shown.trim(), "$");
    term.keys(&["stoat up work", "Tab"]);
    let shown = term.screen_when(|s| s.contains("stoat up workbench"));
    assert!(shown.contains("$ stoat up workbench"), "{name}: {shown}");
    term.keys(&["C-u", "stoat cp my", "Tab"]);
    let shown = term.screen_when(|s| s.contains("notes.txt"));
    assert!(
        shown.contains("$ stoat cp my\\ notes.txt"),
        "{name}: {shown}"
    );
    term.keys(&["C-u", "clear", "Enter"]);
    let shown = term.screen_when(|s| s.trim() == "$");
    assert_eq!(shown.trim(), "$");
    term.keys(&["stoat cp my\\ n", "Tab"]);
    let shown = term.screen_when(|s| s.contains("notes.txt"));
    assert!(
        shown.contains("$ stoat cp my\\ notes.txt"),
        "{name}: {shown}"
    );
}

#[test]
#[ignore = "needs tmux (make host-deps)"]
fn completion_in_a_terminal_completes_a_vm_name_and_a_file_name_with_a_space() {
    completes_in_a_terminal(
        "bash",
        "bash --norc --noprofile",
        "source SCRIPT; PS1=\"$ \"",
    );
}

#[test]
#[ignore = "needs tmux and zsh (make host-deps)"]
fn zsh_completion_in_a_terminal_completes_a_vm_name_and_a_file_name_with_a_space() {
    completes_in_a_terminal(
        "zsh",
        "zsh -f",
        "autoload -Uz compinit; compinit -u; source SCRIPT; PS1=\"$ \"",
    );
}

#[test]
#[ignore = "needs tmux and fish (make host-deps)"]
fn fish_completion_in_a_terminal_completes_a_vm_name_and_a_file_name_with_a_space() {
    completes_in_a_terminal(
        "fish",
        "fish --no-config",
        "source SCRIPT; function fish_prompt; echo -n \"\\$ \"; end",
    );
}

#[test]
fn man_prints_a_page_per_command_and_writes_them_all() {
    let env = TestEnv::new();
    let page = stdout(&env.run(&["man", "recipe", "add"]));
    assert!(page.contains(".TH stoat-recipe-add 1"), "{page}");
    let create = stdout(&env.run(&["man", "create"]));
    assert!(create.contains("console\\-password"), "{create}");
    let dir = env.tmp().join("man1");
    stdout(&env.run(&["man", "--dir", dir.to_str().unwrap()]));
    for name in [
        "stoat.1",
        "stoat-create.1",
        "stoat-recipe-add.1",
        "stoat-ssh-command.1",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(text.contains(".SH NAME"), "{name}");
    }
    assert!(
        !dir.join("stoat-provision.1").exists(),
        "hidden aliases get no page"
    );
    // stoat.1 says which variables stoat reads and where it keeps what, as man pages do.
    let top = stdout(&env.run(&["man"]));
    for needed in [
        ".SH ENVIRONMENT",
        "STOAT_HOME",
        "STOAT_ACCEL",
        ".SH FILES",
        "vm.toml",
        "stoat.toml",
    ] {
        assert!(top.contains(needed), "man stoat lacks {needed}: {top}");
    }
    assert!(
        top.find(".SH ENVIRONMENT") < top.find(".SH FILES"),
        "ENVIRONMENT comes before FILES"
    );
    let bad = env.run(&["man", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no command `nope`"));
}

/// The commands a `--help` lists under `Commands:` (name only).
fn listed_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// An `Examples:` block whose first line runs stoat.
fn has_examples(help: &str) -> bool {
    help.split("\nExamples:\n")
        .nth(1)
        .and_then(|block| block.lines().next())
        .is_some_and(|line| line.starts_with("  ") && line.contains("stoat "))
}

#[test]
fn every_command_shows_examples_in_its_help_and_its_man_page() {
    let env = TestEnv::new();
    // Every command a person can find from `stoat --help`, nested ones included.
    let mut commands: Vec<String> = Vec::new();
    let mut todo: Vec<String> = listed_commands(&stdout(&env.run(&["--help"])));
    while let Some(path) = todo.pop() {
        let words: Vec<&str> = path.split(' ').collect();
        let mut args = words.clone();
        args.push("--help");
        let help = stdout(&env.run(&args));
        assert!(
            has_examples(&help),
            "`stoat {path} --help` has no examples:\n{help}"
        );
        // `stoat help <cmd>` is the same text (for `help` itself: stoat's own).
        let mut via_help = vec!["help"];
        via_help.extend(&words);
        if path != "help" {
            assert_eq!(stdout(&env.run(&via_help)), help, "stoat help {path}");
        }
        if path != "help" {
            todo.extend(
                listed_commands(&help)
                    .into_iter()
                    .filter(|sub| sub != "help")
                    .map(|sub| format!("{path} {sub}")),
            );
        }
        commands.push(path);
    }
    assert!(commands.len() > 40, "{commands:?}");
    for nested in ["recipe add", "guest show", "mcp install", "exec", "version"] {
        assert!(
            commands.iter().any(|c| c == nested),
            "{nested}: {commands:?}"
        );
    }
    // stoat itself.
    let top = stdout(&env.run(&["--help"]));
    assert!(has_examples(&top), "{top}");
    // A man page per command, each with EXAMPLES; stoat.1 keeps its note as NOTES.
    let dir = env.tmp().join("man1");
    stdout(&env.run(&["man", "--dir", dir.to_str().unwrap()]));
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let mut expected: Vec<String> = commands
        .iter()
        .map(|path| format!("stoat-{}.1", path.replace(' ', "-")))
        .chain(["stoat.1".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(pages, expected);
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        let examples = text
            .split(".SH EXAMPLES\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{page} has no EXAMPLES"));
        assert!(
            examples
                .lines()
                .nth(1)
                .is_some_and(|l| l.contains("stoat ")),
            "{page}: {examples}"
        );
    }
    let stoat_1 = std::fs::read_to_string(dir.join("stoat.1")).unwrap();
    assert!(
        stoat_1.contains(".SH NOTES") && !stoat_1.contains("Examples:"),
        "{stoat_1}"
    );
}

#[test]
fn make_install_puts_binaries_man_pages_and_completions_under_the_prefix() {
    let env = TestEnv::new();
    let prefix = env.tmp().join("prefix");
    let stoat = assert_cmd::cargo::cargo_bin("stoat");
    let bin_dir = stoat.parent().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let made = std::process::Command::new("make")
        .arg("-C")
        .arg(&workspace)
        .arg("install")
        .arg(format!("PREFIX={}", prefix.display()))
        .arg(format!("BIN_DIR={}", bin_dir.display()))
        .arg("INSTALL_BINS=stoat")
        .output()
        .unwrap();
    stdout(&made);
    let installed = prefix.join("bin/stoat");
    let version = env.command(&installed).arg("version").output().unwrap();
    assert!(stdout(&version).starts_with("stoat "));
    for file in [
        "share/man/man1/stoat.1",
        "share/man/man1/stoat-up.1",
        "share/bash-completion/completions/stoat",
        "share/zsh/site-functions/_stoat",
        "share/fish/vendor_completions.d/stoat.fish",
    ] {
        let len = std::fs::metadata(prefix.join(file))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(len > 0, "{file} installed");
    }
}

/// The `stoat init` template with its example VM uncommented, as a user would.
fn uncomment_example(template: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in template.lines() {
        if line.starts_with("# [vm.") {
            inside = true;
        } else if line.is_empty() {
            inside = false;
        }
        let line = if inside {
            line.strip_prefix("# ")
                .unwrap_or(line.trim_start_matches('#'))
        } else {
            line
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn the_init_template_uncommented_creates_its_vm_with_a_catalog_image_and_real_recipe_params() {
    let env = TestEnv::new();
    let dir = env.home().join("shop");
    std::fs::create_dir_all(&dir).unwrap();
    let mut init = env.cmd(&["init"]);
    init.current_dir(&dir);
    assert!(init.output().unwrap().status.success());
    let template = std::fs::read_to_string(dir.join("stoat.toml")).unwrap();
    let edited = uncomment_example(&template);
    assert!(edited.contains("\n[vm.dev]\n"), "{edited}");
    // No guest boots here: the template's forward moves to a host port this test holds, so
    // the fan-out creates the VM and `up` refuses to start it (8080 itself may be anyone's).
    assert!(edited.contains("\"8080:80\""), "{edited}");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = held.local_addr().unwrap().port();
    let edited = edited.replace("\"8080:80\"", &format!("\"{host_port}:80\""));
    std::fs::write(dir.join("stoat.toml"), &edited).unwrap();
    // The catalog image the template names, as `pull` leaves it (a real qcow2).
    std::fs::create_dir_all(env.root().join("isos")).unwrap();
    let base = env.root().join("isos").join(DEBIAN_CLOUD);
    crate::common::make_qcow2(&base, "64M");
    let mut up = env.cmd(&["up", "--no-wait", "--no-apply"]);
    up.current_dir(&dir);
    let out = up.output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("created shop-dev"), "{said}");
    assert!(
        said.contains(&format!("host port {host_port} (a forward) is in use")),
        "{said}"
    );
    drop(held);
    let toml = env.vm_toml("shop-dev");
    for field in [
        "cpus = 2",
        "ram = 2048",
        "disk = \"16G\"",
        "[recipe_params.docker]",
        "user = \"stoat\"",
        host_port.to_string().as_str(),
    ] {
        assert!(toml.contains(field), "{field} in {toml}");
    }
}

#[test]
fn ssh_command_in_human_mode_is_one_line_a_shell_reads_back_as_the_argv() {
    let mut env = TestEnv::new();
    // A data root whose path needs quoting: the key path has a space and a quote in it.
    let root = env.tmp().join("my stoat's root");
    env.set_env("STOAT_HOME", root.to_str().unwrap());
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::fs::write(
        root.join("work/vm.toml"),
        "name = \"work\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = 2207\nsshuser = \"stoat\"\n",
    )
    .unwrap();
    let argv: Vec<String> = env.json(&["ssh-command", "work"]).data()["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect();
    assert!(
        argv.iter().any(|w| w.contains("my stoat's root")),
        "{argv:?}"
    );
    let line = stdout(&env.run(&["ssh-command", "work"]));
    let words = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {}", line.trim_end()))
        .output()
        .unwrap();
    let read_back: Vec<String> = stdout(&words).lines().map(str::to_owned).collect();
    assert_eq!(read_back, argv, "{line}");
}

/// A clone is an independent copy (docs/decisions/vmops.md): its help, its man page and the
/// MCP tool's description must not call its disk an overlay of the source's.
#[test]
fn clone_is_described_as_an_independent_copy_everywhere() {
    let env = TestEnv::new();
    let help = stdout(&env.run(&["clone", "--help"]));
    let page = stdout(&env.run(&["man", "clone"]));
    for text in [&help, &page] {
        assert!(!text.to_lowercase().contains("overlay"), "{text}");
        assert!(text.contains("share nothing writable"), "{text}");
    }
}
