//! The sandboxed environment a test runs the real `stoat` binary in: its own HOME, data root,
//! bin directory (where fake host tools go) and TMPDIR, and a cleared, pinned environment.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

use crate::{stoat_fake, JsonRun, Spawned, PLANTED_PASSWORD};

/// The host tools `stoat-fake` answers as, in the order doctor checks them.
pub const FAKE_HOST_TOOLS: &[&str] = &[
    "qemu-system-x86_64",
    "qemu-img",
    "ssh",
    "scp",
    "ssh-keygen",
    "xorriso",
    "passt",
];

/// A temporary HOME, STOAT_HOME and bin directory; removed on drop, even when a test fails.
pub struct TestEnv {
    temp: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
}

impl TestEnv {
    /// Puts a placeholder image file into the data root's isos/ (enough for `create`, which
    /// inspects what it was not given by a verified pull): a real, empty qcow2 for a `.qcow2`
    /// name, a few raw bytes otherwise.
    pub fn plant_image(&self, file: &str) {
        std::fs::create_dir_all(self.root().join("isos")).unwrap();
        let path = self.root().join("isos").join(file);
        if file.ends_with(".qcow2") {
            crate::make_qcow2(&path, "64M");
        } else {
            std::fs::write(path, b"image").unwrap();
        }
    }

    pub fn new() -> TestEnv {
        let temp = tempfile::Builder::new()
            .prefix("stoat-test-")
            .tempdir()
            .unwrap();
        for dir in ["home", "stoat", "bin", "tmp"] {
            std::fs::create_dir_all(temp.path().join(dir)).unwrap();
        }
        TestEnv {
            temp,
            extra_env: Vec::new(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.temp.path().join("home")
    }
    pub fn root(&self) -> PathBuf {
        self.temp.path().join("stoat")
    }
    pub fn bin(&self) -> PathBuf {
        self.temp.path().join("bin")
    }
    pub fn tmp(&self) -> PathBuf {
        self.temp.path().join("tmp")
    }

    /// Sets an extra environment variable for every later run.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.extra_env.push((key.to_owned(), value.to_owned()));
    }

    /// Returns the stoat command with a cleared, pinned environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        Command::from_std(self.std_cmd(args))
    }

    /// [`TestEnv::cmd`] as a std command, for a test that must read a running stoat's output.
    pub fn std_cmd(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.command(assert_cmd::cargo::cargo_bin("stoat"));
        cmd.args(args);
        cmd
    }

    /// Starts stoat with `args` in the background ([`Spawned`]: killed if the test ends first).
    pub fn spawn(&self, args: &[&str]) -> Spawned {
        Spawned::start(&mut self.std_cmd(args))
    }

    /// `bash -c SCRIPT` in the same sandbox, with the built `stoat` first on PATH under its
    /// own name (as a user's shell finds an installed one): how documented examples run.
    pub fn shell(&self, script: &str) -> std::process::Command {
        let link = self.bin().join("stoat");
        if !link.exists() {
            std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("stoat"), &link).unwrap();
        }
        let mut cmd = self.command("bash");
        cmd.args(["-o", "pipefail", "-c", script]);
        cmd
    }

    /// `program` with the sandbox's cleared, pinned environment, run from HOME: THE builder
    /// every run of a test goes through (stoat itself, a shell, a program that starts stoat
    /// such as an MCP client), so the stoat it starts sees the same environment, the fakes'
    /// script and call log included. A test that needs more sets it on what this returns.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.env_clear()
            .env("HOME", self.home())
            .env("STOAT_HOME", self.root())
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()))
            .env("STOAT_ACCEL", "tcg")
            .env("STOAT_GRAPHICAL", "0")
            .env("TMPDIR", self.tmp())
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .env(stoat_fakes::LOG_ENV, self.fake_log())
            .current_dir(self.home());
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs stoat in human mode (within the limit [`crate::bounded`] set, if any).
    #[track_caller]
    pub fn run(&self, args: &[&str]) -> Output {
        match crate::bound::limit() {
            Some(limit) => {
                let shown = std::iter::once("stoat").chain(args.iter().copied());
                let shown = shown.collect::<Vec<_>>().join(" ");
                crate::bound::output_within(self.std_cmd(args), &shown, limit)
            }
            None => self.cmd(args).output().unwrap(),
        }
    }

    /// Runs stoat with `--json` appended and checks the contract on the output.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> JsonRun {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--json");
        self.json_raw(&all)
    }

    /// Runs stoat with exactly `args` (place `--json` yourself) and checks the contract.
    #[track_caller]
    pub fn json_raw(&self, args: &[&str]) -> JsonRun {
        JsonRun::check(self.run(args))
    }

    /// Makes `bin/<tool>` the multi-call fake host tool ([`stoat_fake`]) answering as `tool`
    /// (ssh, scp, ssh-keygen, qemu-img, qemu-system-x86_64, xorriso). A one-line `exec`, not a
    /// symlink: a test that later writes its own `bin/<tool>` must not write through a link
    /// into the shared binary.
    /// stoat-fake as `tool` on this environment's PATH. Its ssh and scp reach the server first,
    /// as the real ones do (a guest that never booted is never reachable).
    pub fn fake_tool(&self, tool: &str) {
        let connect: &[(&str, &str)] = if tool == "ssh" || tool == "scp" {
            &[(stoat_fakes::SSH_CONNECT_ENV, "1")]
        } else {
            &[]
        };
        self.fake_tool_with_env(tool, connect);
    }

    /// [`TestEnv::fake_tool`] with `vars` set for that tool alone (the fakes' switches, see
    /// docs/conformance-fakes.md), whatever environment stoat hands it.
    pub fn fake_tool_with_env(&self, tool: &str, vars: &[(&str, &str)]) {
        use std::os::unix::fs::PermissionsExt;
        let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''"));
        let path = self.bin().join(tool);
        let fake = quote(&stoat_fake().display().to_string());
        let exports: String = vars
            .iter()
            .map(|(key, value)| format!("export {key}={}\n", quote(value)))
            .collect();
        std::fs::write(
            &path,
            format!("#!/bin/sh\n{exports}exec {fake} --as {tool} \"$@\"\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Where the fakes log their calls (`STOAT_FAKE_LOG`, set for every run).
    fn fake_log(&self) -> PathBuf {
        self.tmp().join("fake-calls.jsonl")
    }

    /// The argv of every call the fakes logged for `tool`, oldest first.
    pub fn fake_argvs(&self, tool: &str) -> Vec<Vec<String>> {
        self.fake_calls()
            .iter()
            .filter(|call| call["tool"] == tool)
            .map(|call| {
                call["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect()
            })
            .collect()
    }

    /// Forgets the calls logged so far: the next [`TestEnv::fake_calls`] starts empty.
    pub fn clear_fake_calls(&self) {
        let _ = std::fs::remove_file(self.fake_log());
    }

    /// Makes every host tool stoat runs the multi-call fake ([`FAKE_HOST_TOOLS`]).
    pub fn fake_host_tools(&self) {
        for tool in FAKE_HOST_TOOLS {
            self.fake_tool(tool);
        }
    }

    /// Every call the fakes logged so far, oldest first: one JSON object a call (`tool`,
    /// `argv`, ssh's `remote_command`...; docs/conformance-fakes.md, "Call log line").
    pub fn fake_calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.fake_log())
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Writes the fakes' script (docs/conformance-fakes.md) and points every later run at it.
    pub fn fake_script(&mut self, script: &Value) {
        let path = self.tmp().join("fake-script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        self.set_env(stoat_fakes::SCRIPT_ENV, path.to_str().unwrap());
    }

    /// Writes `<root>/<name>/vm.toml`.
    pub fn write_vm(&self, name: &str, toml: &str) {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vm.toml"), toml).unwrap();
    }

    /// Writes a typical stopped VM with a planted console password.
    pub fn write_basic_vm(&self, name: &str, port: u16) {
        self.write_vm(
            name,
            &format!(
                "name = \"{name}\"\nmode = \"cloud\"\nos = \"debian\"\nbackend = \"cloudinit\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = {port}\nsshuser = \"stoat\"\nconsole_password = \"{PLANTED_PASSWORD}\"\nbase = \"{}/isos/base.qcow2\"\n",
                self.root().display()
            ),
        );
    }

    /// Makes a tiny real ISO9660 at `path` (with xorriso) holding `/boot/vmlinuz-virt` and
    /// `/boot/initramfs-virt`: enough for the apkovl backend's kernel extraction.
    pub fn fake_alpine_iso(&self, path: &Path) {
        let src = self.tmp().join(".fake-iso-src");
        std::fs::create_dir_all(src.join("boot")).unwrap();
        std::fs::write(src.join("boot/vmlinuz-virt"), "fake kernel\n").unwrap();
        std::fs::write(src.join("boot/initramfs-virt"), "fake initramfs\n").unwrap();
        let made = std::process::Command::new("xorriso")
            .env("HOME", self.home())
            .args(["-as", "mkisofs", "-r", "-V", "alpine-virt", "-o"])
            .arg(path)
            .arg(&src)
            .output()
            .expect("xorriso runs (apt install xorriso)");
        assert!(
            made.status.success(),
            "xorriso {}: {}{}",
            made.status,
            String::from_utf8_lossy(&made.stdout),
            String::from_utf8_lossy(&made.stderr)
        );
    }

    /// Writes `<vm>/vmlinuz` and `<vm>/initramfs`, so `up` on a live VM skips the extraction
    /// (the conformance suite's trick) and its ISO may be any file.
    pub fn seed_boot_files(&self, name: &str) {
        let dir = self.root().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vmlinuz"), "fake kernel\n").unwrap();
        std::fs::write(dir.join("initramfs"), "fake initramfs\n").unwrap();
    }

    /// Writes a local recipe `<root>/recipes/<name>/`: `manifest` as its recipe.toml and
    /// `script` as its install.sh ([`write_recipe_in`]); returns the recipe's directory.
    pub fn write_recipe(&self, name: &str, manifest: &str, script: &str) -> PathBuf {
        write_recipe_in(&self.root().join("recipes"), name, manifest, script)
    }

    /// Writes a vm.toml that does not parse.
    pub fn write_broken_vm(&self, name: &str) {
        self.write_vm(name, "name = \"x\"\nmode = \"disk\n");
    }

    pub fn vm_toml(&self, name: &str) -> String {
        std::fs::read_to_string(self.root().join(name).join("vm.toml")).unwrap()
    }

    /// insta settings that mask, in every snapshot taken while they are bound, what is this
    /// sandbox's or this build's: the stoat binary's path (`[STOAT]`), the data root
    /// (`[ROOT]`), HOME (`[HOME]`), TMPDIR (`[TMP]`), the bin directory of the fakes (`[BIN]`)
    /// and stoat's version (`stoat [VERSION]`).
    /// A test adds the filters of its own (ports, times) and binds them:
    /// `let _masked = settings.bind_to_scope();`.
    pub fn snapshot_settings(&self) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        let binary = std::fs::canonicalize(assert_cmd::cargo::cargo_bin("stoat")).unwrap();
        for (path, name) in [
            (binary, "[STOAT]"),
            (self.root(), "[ROOT]"),
            (self.home(), "[HOME]"),
            (self.tmp(), "[TMP]"),
            (self.bin(), "[BIN]"),
        ] {
            settings.add_filter(&regex::escape(&path.display().to_string()), name);
        }
        settings.add_filter(r"stoat \d+\.\d+\.\d+", "stoat [VERSION]");
        settings
    }

    pub fn path_str(&self, path: &Path) -> String {
        path.display().to_string()
    }
}

impl Default for TestEnv {
    fn default() -> TestEnv {
        TestEnv::new()
    }
}

/// Writes the recipe directory `<dir>/<name>/` (`recipe.toml` is `manifest`, `install.sh` is
/// `script`), for a recipe root other than the data root's (a project's, a remote's).
pub fn write_recipe_in(dir: &Path, name: &str, manifest: &str, script: &str) -> PathBuf {
    let recipe = dir.join(name);
    std::fs::create_dir_all(&recipe).unwrap();
    std::fs::write(recipe.join("recipe.toml"), manifest).unwrap();
    std::fs::write(recipe.join("install.sh"), script).unwrap();
    recipe
}
