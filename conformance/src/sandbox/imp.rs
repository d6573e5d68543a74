//! Owns [`Sandbox`]: directories, canaries, the pinned environment and cleanup.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::HarnessError;
use crate::fakes::script::{FakeCall, FakeScript};
use crate::oracle::{Canaries, Canary};

use super::running::RunningVm;

/// The tools the fake multi-call binary answers to.
pub const FAKE_TOOLS: &[&str] = &[
    "ssh",
    "scp",
    "ssh-keygen",
    "qemu-img",
    "qemu-system-x86_64",
    "xorriso",
    "passt",
];

/// Environment every SUT invocation gets, after `env_clear`.
pub const PINNED_ENV: &[(&str, &str)] = &[
    ("STOAT_ACCEL", "tcg"),
    ("STOAT_GRAPHICAL", "0"),
    ("NO_COLOR", "1"),
    ("LANG", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("TZ", "UTC"),
    ("COLUMNS", "100"),
    ("TERM", "dumb"),
];

/// What a sandbox gets.
#[derive(Clone, Debug, Default)]
pub struct SandboxOptions {
    /// The `stoat-fake` binary to link under each tool name; `None` leaves PATH empty.
    pub fakes: Option<PathBuf>,
    /// Install only these tools (default: all of [`FAKE_TOOLS`]).
    pub only_tools: Option<Vec<&'static str>>,
    /// Pre-seed `id_stoat{,.pub}` so no keygen is needed.
    pub seed_keys: bool,
    /// The real tier: PATH is the host's `/usr/bin:/bin` (real QEMU, ssh, qemu-img...).
    pub real_tools: bool,
    /// Where to make the temp root (default: [`default_parent`]). The real tier needs a
    /// filesystem with user xattrs, so not a tmpfs.
    pub parent: Option<PathBuf>,
    /// The variable that names the data root (`None`: `STOAT_HOME`; `""`: none, the data
    /// root is then `$HOME/.stoat`), from the SUT profile.
    pub data_root_var: Option<String>,
    /// Extra environment from the SUT profile, after the suite's own.
    pub profile_env: Vec<(String, String)>,
}

/// PATH in a real-tier sandbox.
pub const REAL_PATH: &str = "/usr/bin:/bin";

/// One scenario's private world. Dropping it kills what it started and deletes it.
pub struct Sandbox {
    dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    /// `STOAT_HOME`, the data root.
    pub data: PathBuf,
    pub tmp: PathBuf,
    /// The SUT's working directory.
    pub work: PathBuf,
    /// The fake-tools PATH directory.
    pub bin: PathBuf,
    pub fake_script: PathBuf,
    pub fake_log: PathBuf,
    pub fake_pids: PathBuf,
    /// Where the suite and the fake tools hand each other gate files (a scripted start
    /// gate): their files, not the SUT's, so writes there are never the SUT's findings.
    pub fake_gates: PathBuf,
    /// A directory outside every path the SUT is told about, with a planted file: nothing
    /// may touch it (nor HOME, bin or the sandbox root itself).
    pub canary_dir: PathBuf,
    /// Where bring-your-own images are planted: a canary path too, so a BYO image's
    /// absolute path in any payload is a host path the oracle finds.
    pub byo_dir: PathBuf,
    /// The console password planted in every fixture VM.
    pub console_password: String,
    fakes: Option<PathBuf>,
    real_tools: bool,
    extra_env: Vec<(String, String)>,
    /// The data-root variable (`""`: none).
    data_root_var: String,
    running: Vec<RunningVm>,
    /// `repro`: leave the directory for a person to look at (its processes still stop).
    keep: std::sync::atomic::AtomicBool,
}

impl Sandbox {
    /// Creates the directories, links the fakes and seeds the keys.
    pub fn new(options: SandboxOptions) -> Result<Self, HarnessError> {
        let token = unique_token();
        let mut builder = tempfile::Builder::new();
        let prefix = format!("stoat-conf-{token}-");
        builder.prefix(&prefix);
        let dir = match &options.parent {
            Some(parent) => {
                fs::create_dir_all(parent).map_err(HarnessError::Sandbox)?;
                builder.tempdir_in(parent)
            }
            None => builder.tempdir_in(default_parent()),
        }
        .map_err(HarnessError::Sandbox)?;
        // Canonical, so the canaries match what the SUT sees after resolving symlinks.
        let root = fs::canonicalize(dir.path()).map_err(HarnessError::Sandbox)?;
        let data_root_var = options
            .data_root_var
            .clone()
            .unwrap_or_else(|| crate::run::profile::DEFAULT_DATA_ROOT_VAR.to_string());
        let home = root.join(format!("home-{token}"));
        let data = if data_root_var.is_empty() {
            home.join(".stoat")
        } else {
            root.join(format!("data-{token}"))
        };
        let sandbox = Sandbox {
            home,
            data,
            tmp: root.join(format!("tmp-{token}")),
            work: root.join("work"),
            bin: root.join("bin"),
            fake_script: root.join("fake-script.json"),
            fake_log: root.join("fake-log.jsonl"),
            fake_pids: root.join("fake-pids"),
            fake_gates: root.join("fake-gates"),
            canary_dir: root.join(format!("canary-{token}")),
            // No token: the sandbox root already makes it unique, and a BYO path shows in
            // reproduction argv, which must read the same in two runs.
            byo_dir: root.join("byo"),
            console_password: format!("cpw-{token}"),
            fakes: options.fakes.clone(),
            real_tools: options.real_tools,
            extra_env: options.profile_env.clone(),
            data_root_var,
            running: Vec::new(),
            keep: Default::default(),
            root,
            dir,
        };
        for path in [
            &sandbox.home,
            &sandbox.data,
            &sandbox.tmp,
            &sandbox.work,
            &sandbox.bin,
            &sandbox.canary_dir,
            &sandbox.byo_dir,
        ] {
            fs::create_dir_all(path).map_err(HarnessError::Sandbox)?;
        }
        let planted = sandbox.canary_dir.join("canary.txt");
        fs::write(&planted, format!("canary {token}\n"))
            .map_err(|e| HarnessError::io(&planted, e))?;
        if let Some(fake_binary) = options.fakes.as_ref().filter(|_| !options.real_tools) {
            let tools: Vec<&str> = options
                .only_tools
                .clone()
                .unwrap_or_else(|| FAKE_TOOLS.to_vec());
            for tool in tools {
                std::os::unix::fs::symlink(fake_binary, sandbox.bin.join(tool))
                    .map_err(HarnessError::Sandbox)?;
            }
        }
        sandbox.write_script(&FakeScript::default())?;
        if options.seed_keys {
            sandbox.seed_keys()?;
        }
        Ok(sandbox)
    }

    /// Writes `id_stoat{,.pub}` and the guest host key into the data root.
    pub fn seed_keys(&self) -> Result<(), HarnessError> {
        let private = "-----BEGIN OPENSSH PRIVATE KEY-----\nc3RvYXQtY29uZm9ybWFuY2UtZmFrZS1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n";
        let public =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHN0b2F0LWNvbmZvcm1hbmNlLWZha2Uta2V5 stoat\n";
        for (name, text) in [
            ("id_stoat", private),
            ("id_stoat.pub", public),
            ("guest_host_ed25519_key", private),
            ("guest_host_ed25519_key.pub", public),
        ] {
            let path = self.data.join(name);
            fs::write(&path, text).map_err(|e| HarnessError::io(&path, e))?;
            let mode = if name.ends_with(".pub") { 0o644 } else { 0o600 };
            set_mode(&path, mode)?;
        }
        Ok(())
    }

    /// Adds or replaces one environment variable for every later invocation.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.extra_env.retain(|(k, _)| k != key);
        self.extra_env.push((key.to_string(), value.to_string()));
    }

    /// The full environment a SUT invocation gets (after `env_clear`).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = PINNED_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let path = |p: &Path| p.to_string_lossy().into_owned();
        env.push(("HOME".into(), path(&self.home)));
        if !self.data_root_var.is_empty() {
            env.push((self.data_root_var.clone(), path(&self.data)));
        }
        env.push(("TMPDIR".into(), path(&self.tmp)));
        let search = if self.real_tools {
            REAL_PATH.to_string()
        } else {
            path(&self.bin)
        };
        env.push(("PATH".into(), search));
        env.push(("STOAT_FAKE_SCRIPT".into(), path(&self.fake_script)));
        env.push(("STOAT_FAKE_LOG".into(), path(&self.fake_log)));
        env.push(("STOAT_FAKE_PIDS".into(), path(&self.fake_pids)));
        for (key, value) in &self.extra_env {
            env.retain(|(k, _)| k != key);
            env.push((key.clone(), value.clone()));
        }
        env
    }

    /// The canaries the oracle searches for in this sandbox's invocations.
    pub fn canaries(&self) -> Canaries {
        let path = |label: &str, p: &Path| Canary {
            label: label.to_string(),
            value: p.to_string_lossy().into_owned(),
        };
        Canaries {
            paths: vec![
                path("STOAT_HOME", &self.data),
                path("HOME", &self.home),
                path("TMPDIR", &self.tmp),
                path("BYO image directory", &self.byo_dir),
            ],
            secrets: vec![Canary {
                label: "console password".into(),
                value: self.console_password.clone(),
            }],
            vm_dirs: self.vm_dirs(),
        }
    }

    /// The directory of every VM under the data root (a directory holding a `vm.toml`).
    fn vm_dirs(&self) -> Vec<Canary> {
        let Ok(entries) = fs::read_dir(&self.data) else {
            return Vec::new();
        };
        let mut dirs: Vec<Canary> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.join("vm.toml").is_file())
            .map(|path| Canary {
                label: format!(
                    "VM {}",
                    path.file_name().unwrap_or_default().to_string_lossy()
                ),
                value: path.to_string_lossy().into_owned(),
            })
            .collect();
        dirs.sort_by(|a, b| a.value.cmp(&b.value));
        dirs
    }

    /// The directory of VM `name`.
    pub fn vm_dir(&self, name: &str) -> PathBuf {
        self.data.join(name)
    }

    /// Replaces the fakes' script.
    pub fn write_script(&self, script: &FakeScript) -> Result<(), HarnessError> {
        let text =
            serde_json::to_string_pretty(script).map_err(|e| HarnessError::Other(e.to_string()))?;
        fs::write(&self.fake_script, text).map_err(|e| HarnessError::io(&self.fake_script, e))
    }

    /// Every fake-tool invocation so far, in order.
    pub fn fake_calls(&self) -> Vec<FakeCall> {
        crate::fakes::log::read(&self.fake_log)
    }

    /// Starts a fake "running" qemu for VM `name` and writes its pidfile once it counts.
    pub fn start_running(&mut self, name: &str) -> Result<u32, HarnessError> {
        let holder = self
            .fakes
            .clone()
            .ok_or_else(|| HarnessError::FakesMissing(PathBuf::from("stoat-fake")))?;
        let vm = RunningVm::start(&holder, &self.vm_dir(name))?;
        let pid = vm.pid();
        self.running.push(vm);
        Ok(pid)
    }

    /// Kills the fake running VM of `name` (if this sandbox started one).
    pub fn stop_running(&mut self, name: &str) {
        let dir = self.vm_dir(name);
        self.running.retain(|vm| vm.vm_dir() != dir);
    }

    /// The variable naming the data root (`""` when the SUT has none).
    /// Keeps the directory when the sandbox drops (`repro`).
    pub fn keep(&self) {
        self.keep.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn data_root_var(&self) -> &str {
        &self.data_root_var
    }

    /// Files created under HOME (nothing should be: the data root is STOAT_HOME).
    pub fn home_entries(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        collect_files(&self.home, &mut out);
        out
    }

    /// Every path outside the areas the SUT may write (STOAT_HOME, TMPDIR, its cwd, the
    /// fakes' log, pid and gate files), with size and mtime: compare two with
    /// [`changes_between`].
    pub fn outside_snapshot(&self) -> TreeSnapshot {
        let mut out = TreeSnapshot::new();
        let allowed = [
            &self.data,
            &self.tmp,
            &self.work,
            &self.fake_log,
            &self.fake_pids,
            &self.fake_gates,
        ];
        snapshot_into(&self.root, &allowed, &mut out);
        out
    }

    /// The temp directory itself (kept alive by the sandbox).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Kills every daemon the fakes recorded, after checking it still belongs to us.
    fn kill_fake_daemons(&self) {
        let Ok(text) = fs::read_to_string(&self.fake_pids) else {
            return;
        };
        let root = self.root.to_string_lossy().into_owned();
        for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if pid <= 1 {
                continue;
            }
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&root) {
                // A pid we verified carries our sandbox path.
                kill_now(pid);
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if *self.keep.get_mut() {
            self.dir.disable_cleanup(true);
        }
        self.running.clear();
        self.kill_fake_daemons();
        self.kill_leftover_qemus();
    }
}

impl Sandbox {
    /// Kills any QEMU a SUT left running: each `<data>/<vm>/qemu.pid` whose process's
    /// cmdline names this sandbox (so a recycled pid is never touched), then waits for it.
    fn kill_leftover_qemus(&self) {
        let Ok(entries) = fs::read_dir(&self.data) else {
            return;
        };
        let root = self.root.to_string_lossy().into_owned();
        for entry in entries.flatten() {
            let Ok(text) = fs::read_to_string(entry.path().join("qemu.pid")) else {
                continue;
            };
            let Ok(pid) = text.trim().parse::<i32>() else {
                continue;
            };
            if pid <= 1 || !names_sandbox(pid, &root) {
                continue;
            }
            // A pid whose cmdline we just verified names our sandbox.
            kill_now(pid);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while names_sandbox(pid, &root) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Whether `/proc/<pid>/cmdline` mentions `root` (a zombie's is empty: it no longer counts).
fn names_sandbox(pid: i32, root: &str) -> bool {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains(root)
}

/// Path → (size, mtime) of every file and directory of a tree (directories: size 0, no mtime,
/// because adding an allowed file would change theirs).
pub type TreeSnapshot = std::collections::BTreeMap<PathBuf, (u64, Option<std::time::SystemTime>)>;

fn snapshot_into(dir: &Path, allowed: &[&PathBuf], out: &mut TreeSnapshot) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if allowed.iter().any(|a| **a == path) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            out.insert(path.clone(), (0, None));
            snapshot_into(&path, allowed, out);
        } else {
            out.insert(path, (meta.len(), meta.modified().ok()));
        }
    }
}

/// What changed between two snapshots, one line each (created, modified, deleted).
pub fn changes_between(before: &TreeSnapshot, after: &TreeSnapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (path, stat) in after {
        match before.get(path) {
            None => out.push(format!("created {}", path.display())),
            Some(old) if old != stat => out.push(format!("modified {}", path.display())),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("deleted {}", path.display()));
    }
    out
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        }
        out.push(path);
    }
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), HarnessError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| HarnessError::io(path, e))
}

/// Where pure and fake sandboxes live: `STOAT_CONFORMANCE_TMP` when set, else `/dev/shm`
/// when it is a writable tmpfs with room to spare, else the system temp dir. A sandbox holds
/// a few small files and nothing there needs a disk; on a disk filesystem mounted with
/// `discard`, deleting each sandbox's directories waited tens of milliseconds (the largest
/// single cost of a whole run), on a tmpfs it takes a fraction of one.
pub fn default_parent() -> PathBuf {
    static PARENT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PARENT
        .get_or_init(|| match std::env::var_os("STOAT_CONFORMANCE_TMP") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ if roomy_tmpfs(Path::new(SHM)) => PathBuf::from(SHM),
            _ => std::env::temp_dir(),
        })
        .clone()
}

const SHM: &str = "/dev/shm";

/// Whether `dir` is a tmpfs this process may write, with at least 256 MiB free (a container's
/// default 64 MiB /dev/shm is passed over).
// statfs field types differ between architectures, so the casts are not always no-ops.
#[allow(clippy::unnecessary_cast)]
fn roomy_tmpfs(dir: &Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const ROOM: u64 = 256 << 20;
    let stat = rustix::fs::statfs(dir).ok();
    let writable = rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok();
    stat.is_some_and(|s| {
        s.f_type as i64 == TMPFS_MAGIC
            && (s.f_bavail as u64).saturating_mul(s.f_bsize as u64) >= ROOM
    }) && writable
}

/// A short token unique to this process and moment, used in canaries.
pub(crate) fn unique_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:x}{:x}{:x}", std::process::id(), nanos, count)
}

/// SIGKILL to `pid`, if it still names a process.
fn kill_now(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}
