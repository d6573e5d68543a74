//! stoat-fixture-sut: a small, deliberately plain stoat that keeps contract v3 for the
//! commands the conformance catalog exercises. The self-test runs the suite against it
//! (everything must pass) and against it wrapped by each mutation operator (each must be
//! caught). It is written from the contract text alone and shares no code with the oracle,
//! so a misreading in one cannot hide in the other.
//!
//! Given `--fixture-speaks-contract-2` as its first argument it keeps contract 2 instead (the
//! previous edition, as published): `v` 2, contract 2's code table (anything else is
//! `internal`), its data shapes (no agent_access/project fields, get answers a VM, Check has
//! no optional, recipe list is {dir, recipes}, provision answers for itself), and none of the
//! commands contract 2 lacks. The editions tests judge it both ways.

#![forbid(unsafe_code)]

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Map, Value};

#[path = "fixture_streams.rs"]
mod streams;

type Answer = Result<Value, Failure>;

/// Set once at start: this process speaks contract 2.
static SPEAKS_V2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

fn v2() -> bool {
    SPEAKS_V2.get().copied().unwrap_or(false)
}

/// The envelope's `v`.
fn contract() -> u64 {
    if v2() {
        2
    } else {
        3
    }
}

/// Contract 2's code table; any other code answers `internal` there.
const V2_CODES: &[&str] = &[
    "already_running",
    "applied_at_boot",
    "broken",
    "canceled",
    "cannot_reach",
    "confirmation_required",
    "disk_shrink",
    "image_not_downloaded",
    "immutable_field",
    "internal",
    "invalid_spec",
    "name_taken",
    "no_disk",
    "not_found",
    "not_running",
    "recipe_not_applicable",
    "timeout",
    "unknown_log",
    "usage",
];

struct Failure {
    code: &'static str,
    message: String,
}

fn fail(code: &'static str, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

fn usage(message: impl Into<String>) -> Failure {
    fail("usage", message)
}

const VALUE_FLAGS: &[&str] = &[
    "--agent-access",
    "--add",
    "--remove",
    "--ram",
    "--cpus",
    "--disk",
    "--ssh-port",
    "--until",
    "--timeout",
    "--which",
    "-n",
    "--image",
    "--mode",
    "--os",
    "--backend",
    "--share",
    "--recipes",
    "--only",
    "--vm",
    "--direction",
    "--local",
    "--remote",
];
const BOOL_FLAGS: &[&str] = &[
    "-y",
    "--clear",
    "--restore",
    "--delete",
    "--apply",
    "--dry-run",
    "--no-apply",
    "--broken",
    "--images",
    "-h",
    "--help",
];

const USAGE_TEXT: &str = "usage: stoat [--json] [-q] <command>\ncommands: ls get create update up down wait rm clone exec ssh ssh-command cp forward images pull snapshot prune apply recipes check-recipes recipe logs doctor screenshot capabilities guest version help";
const USAGE_TEXT_V2: &str = "usage: stoat [--json] [-q] <command>\ncommands: ls get create update up down wait rm clone exec ssh ssh-command cp forward images pull snapshot prune apply provision recipes check-recipes recipe logs doctor version help";

fn usage_text() -> &'static str {
    if v2() {
        USAGE_TEXT_V2
    } else {
        USAGE_TEXT
    }
}

struct Parsed {
    positionals: Vec<String>,
    flags: Map<String, Value>,
}

impl Parsed {
    fn flag(&self, name: &str) -> Option<&str> {
        self.flags.get(name).and_then(Value::as_str)
    }
    fn has(&self, name: &str) -> bool {
        self.flags.contains_key(name)
    }
}

fn parse(tokens: &[String]) -> Result<Parsed, Failure> {
    let mut parsed = Parsed {
        positionals: Vec::new(),
        flags: Map::new(),
    };
    let mut index = 0;
    while index < tokens.len() {
        let token = &tokens[index];
        if token.starts_with('-') && token.len() > 1 {
            let (name, inline) = match token.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (token.clone(), None),
            };
            if BOOL_FLAGS.contains(&name.as_str()) {
                parsed.flags.insert(name, json!(true));
            } else if VALUE_FLAGS.contains(&name.as_str()) {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        index += 1;
                        tokens
                            .get(index)
                            .cloned()
                            .ok_or_else(|| usage(format!("{name} needs a value")))?
                    }
                };
                parsed.flags.insert(name, json!(value));
            } else {
                return Err(usage(format!("unknown flag {name}")));
            }
        } else {
            parsed.positionals.push(token.clone());
        }
        index += 1;
    }
    Ok(parsed)
}

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    let speaks_v2 = argv.first().map(String::as_str) == Some("--fixture-speaks-contract-2");
    if speaks_v2 {
        argv.remove(0);
    }
    let _ = SPEAKS_V2.set(speaks_v2);
    // The --json scan: anywhere except after exec's VM name; -q is a no-op everywhere before it.
    let mut json_mode = false;
    let mut rest = Vec::new();
    let mut guest: Option<Vec<String>> = None;
    let mut command: Option<String> = None;
    let mut exec_name: Option<String> = None;
    for token in argv {
        if let Some(guest_args) = guest.as_mut() {
            guest_args.push(token);
            continue;
        }
        if token == "--json" {
            json_mode = true;
            continue;
        }
        if token == "-q" || token == "--quiet" {
            continue;
        }
        if command.as_deref() == Some("exec") && exec_name.is_none() {
            exec_name = Some(token);
            guest = Some(Vec::new());
            continue;
        }
        if command.is_none() && !token.starts_with('-') {
            command = Some(token.clone());
            if token == "exec" {
                continue;
            }
        }
        rest.push(token);
    }
    let cmd = command.clone().unwrap_or_default();
    let wire_cmd = match cmd.as_str() {
        "provision" if !v2() => "apply".to_string(),
        other => other.to_string(),
    };
    if cmd == "exec" {
        let name = exec_name.unwrap_or_default();
        let mut guest_args = guest.unwrap_or_default();
        if guest_args.first().map(String::as_str) == Some("--") {
            guest_args.remove(0);
        }
        let code = exec(&name, &guest_args, json_mode);
        std::process::exit(code);
    }
    let args: Vec<String> = rest.into_iter().skip(1).collect();
    let answer = if command.is_none() {
        Err(usage("no command given"))
    } else {
        dispatch(&cmd, &args, json_mode)
    };
    std::process::exit(finish(&wire_cmd, answer, json_mode));
}

fn finish(cmd: &str, answer: Answer, json_mode: bool) -> i32 {
    let mut out = std::io::stdout();
    match answer {
        Ok(data) => {
            if json_mode {
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"v": contract(), "type": "result", "cmd": cmd, "ok": true, "data": data})
                );
            } else {
                let _ = writeln!(out, "{data}");
            }
            0
        }
        Err(mut failure) => {
            if v2() && !V2_CODES.contains(&failure.code) {
                failure.code = "internal";
            }
            if json_mode {
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"v": contract(), "type": "result", "cmd": cmd, "ok": false, "error": {"code": failure.code, "message": failure.message}})
                );
            } else {
                eprintln!("stoat: {cmd}: {}", failure.message);
            }
            if failure.code == "usage" {
                2
            } else {
                1
            }
        }
    }
}

fn root() -> PathBuf {
    match std::env::var_os("STOAT_HOME").filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".stoat"),
    }
}

fn ensure_root() {
    let root = root();
    for dir in ["isos", "recipes", "logs"] {
        let _ = std::fs::create_dir_all(root.join(dir));
    }
}

/// Commands that read or change VM records run one at a time: an exclusive flock on
/// `logs/fixture.lock`, held until the returned file is dropped at the command's end. So
/// concurrent commands on one data root answer as some order of them would
/// (EXPLORE.concurrent), as the reference's data-root and VM locks make its. `up` and
/// `down` take it too (a start never meets an rm halfway); `wait` and `exec` take none: a
/// `wait` must not hold up the `down` it waits for.
fn records_lock(cmd: &str) -> Option<std::fs::File> {
    if !matches!(
        cmd,
        "create"
            | "clone"
            | "update"
            | "rm"
            | "forward"
            | "snapshot"
            | "get"
            | "ls"
            | "up"
            | "down"
    ) {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root().join("logs").join("fixture.lock"))
        .ok()?;
    // The lock goes with the file.
    let _ = rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive);
    Some(file)
}

fn log_line(line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(root().join("logs").join("stoat.log"))
    {
        let _ = writeln!(file, "{line}");
    }
}

fn dispatch(cmd: &str, args: &[String], json_mode: bool) -> Answer {
    let parsed = parse(args)?;
    if parsed.has("-h") || parsed.has("--help") {
        return Ok(json!({"usage": usage_text()}));
    }
    if v2() && matches!(cmd, "guest" | "capabilities" | "screenshot") {
        return Err(usage(format!("unknown command {cmd:?}")));
    }
    if cmd != "version" && cmd != "help" {
        ensure_root();
        log_line(&format!("cli cmd={cmd}"));
    }
    let _records = records_lock(cmd);
    let name = parsed.positionals.first().cloned();
    let need_name = || {
        name.clone()
            .ok_or_else(|| usage(format!("{cmd}: missing VM name")))
    };
    match cmd {
        "version" => Ok(json!({"version": "0.1.0-fixture", "contract": contract()})),
        "help" => Ok(json!({"usage": usage_text()})),
        "ls" => ls(),
        "get" => {
            let vm = load(&need_name()?)?;
            let mut dto = vm.dto();
            if !v2() {
                dto["health"] = json!("unknown");
                dto["recipes_detail"] = json!([]);
            }
            Ok(json!({"vm": dto}))
        }
        "create" => create(&need_name()?, &parsed),
        "clone" => clone(&parsed),
        "update" => update(&need_name()?, &parsed),
        "rm" => rm(&need_name()?, &parsed, json_mode),
        "up" => up(&need_name()?),
        "down" if name.is_none() && !v2() => project_down(),
        "down" => down(&need_name()?),
        "init" if !v2() => init(),
        "status" if !v2() => status(),
        "wait" => wait(&need_name()?, &parsed),
        "ssh" => {
            need_name()?;
            Err(usage(
                "ssh replaces the process and cannot answer under --json; use exec or ssh-command",
            ))
        }
        "ssh-command" => {
            let vm = load(&need_name()?)?.good()?;
            Ok(json!({"argv": ssh_argv(&vm)}))
        }
        "cp" => cp(&parsed),
        "forward" => forward(&need_name()?, &parsed),
        "images" => streams::images(),
        "pull" => streams::pull(&need_name()?, json_mode),
        "snapshot" => snapshot(&need_name()?, &parsed),
        "prune" => Ok(json!({"dry_run": !parsed.has("--apply"), "items": []})),
        "apply" | "provision" => {
            let vm = load(&need_name()?)?.good()?;
            streams::apply(vm, &parsed, json_mode, cmd == "provision")
        }
        "recipes" => Ok(json!({"recipes": []})),
        "check-recipes" => {
            if parsed.positionals.is_empty() || parsed.flag("--os").is_none() {
                return Err(usage("check-recipes needs names and --os"));
            }
            let issues: Vec<Value> = parsed
                .positionals
                .iter()
                .map(|n| json!({"name": n, "reason": format!("{n} is not installed")}))
                .collect();
            Ok(json!({"applicable": issues.is_empty(), "issues": issues}))
        }
        "recipe" => match parsed.positionals.first().map(String::as_str) {
            Some("list") if v2() => {
                Ok(json!({"dir": root().join("recipes").display().to_string(), "recipes": []}))
            }
            Some("list") => Ok(
                json!({"roots": [{"path": root().join("recipes").display().to_string(), "scope": "global"}], "recipes": []}),
            ),
            // The fixture ships no recipes (`recipes` lists none), so none can be shown.
            Some("show") => match parsed.positionals.get(1) {
                Some(recipe) => Err(fail("not_found", format!("no recipe named {recipe}"))),
                None => Err(usage("recipe show needs a name")),
            },
            _ => Err(usage("recipe needs an action")),
        },
        "guest" => match parsed.positionals.first().map(String::as_str) {
            Some("ls") => Ok(json!({"guests": [fixture_guest()]})),
            Some("show") => match parsed.positionals.get(1).map(String::as_str) {
                Some("alpine") => Ok(json!({"guest": fixture_guest()})),
                Some(other) => Err(fail("not_found", format!("no guest called {other:?}"))),
                None => Err(usage("guest show needs a name")),
            },
            _ => Err(usage("guest needs an action")),
        },
        "capabilities" => Ok(capabilities()),
        "logs" => logs(name.as_deref(), &parsed),
        "doctor" => Ok(doctor()),
        "screenshot" => screenshot(&need_name()?),
        other => Err(usage(format!("unknown command {other:?}"))),
    }
}

/// The one guest OS this fixture knows (a Guest of the contract's types table).
fn fixture_guest() -> Value {
    json!({"name": "alpine", "init": "openrc", "shell": "/bin/ash", "installer": "",
        "default_backend": "apkovl", "default_ssh_user": "root", "escalate": ["doas", "-n"],
        "capabilities": ["apk"], "aliases": [], "filename_hints": ["alpine"], "seed_packages": [],
        "pkg": {"setup": "", "install": ["apk", "add"], "env": {}, "runtime_packages": {}},
        "svc": {}, "cmd": {}, "backend": {}, "source": "bundled"})
}

struct Vm {
    name: String,
    dir: PathBuf,
    config: Result<toml::Table, String>,
}

impl Vm {
    fn table(&self) -> &toml::Table {
        static EMPTY: std::sync::OnceLock<toml::Table> = std::sync::OnceLock::new();
        self.config
            .as_ref()
            .unwrap_or_else(|_| EMPTY.get_or_init(toml::Table::new))
    }
    fn str(&self, key: &str) -> String {
        self.table()
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    }
    fn int(&self, key: &str) -> i64 {
        self.table()
            .get(key)
            .and_then(|v| v.as_integer())
            .unwrap_or(0)
    }
    fn good(self) -> Result<Vm, Failure> {
        match &self.config {
            Ok(_) => Ok(self),
            Err(error) => Err(fail(
                "broken",
                format!("broken vm.toml: {}: {error}", self.name),
            )),
        }
    }
    fn pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.dir.join("qemu.pid")).ok()?;
        let pid: i32 = text.trim().parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let marker = format!("{}/", self.dir.display());
        String::from_utf8_lossy(&cmdline)
            .contains(&marker)
            .then_some(pid)
    }
    fn running(&self) -> bool {
        self.pid().is_some()
    }
    fn forwards(&self) -> Vec<Value> {
        self.table()
            .get("forwards")
            .and_then(|f| f.as_array())
            .map(|rows| {
                rows.iter()
                    .map(|row| json!({"host_port": row.get("hostport").and_then(|v| v.as_integer()).unwrap_or(0), "guest_port": row.get("guestport").and_then(|v| v.as_integer()).unwrap_or(0)}))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn dto(&self) -> Value {
        let mut dto = self.dto_v3();
        if v2() {
            if let Some(object) = dto.as_object_mut() {
                for field in ["agent_access", "project", "key", "project_missing"] {
                    object.remove(field);
                }
            }
        }
        dto
    }
    fn dto_v3(&self) -> Value {
        if let Err(error) = &self.config {
            return json!({"name": self.name, "os": "", "mode": "", "backend": "", "state": "broken", "cpus": 0, "ram_mb": 0, "disk": "",
                "share": "", "recipes": [], "ssh_port": 0, "ssh_user": "", "installed": false, "forwards": [], "allow_exec": false,
                "agent_access": "manage", "display": "", "project": "", "key": "", "project_missing": false, "error": error});
        }
        let allow_exec = self.table().get("allow_exec").and_then(|v| v.as_bool());
        let recipes: Vec<Value> = self
            .table()
            .get("recipes")
            .and_then(|r| r.as_array())
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str())
                    .map(|s| json!(s))
                    .collect()
            })
            .unwrap_or_default();
        let stored_display = self.str("display");
        let display = if stored_display == "window" || stored_display == "vnc" {
            stored_display
        } else if std::env::var("STOAT_GRAPHICAL").as_deref() == Ok("1") {
            "window".to_string()
        } else {
            "vnc".to_string()
        };
        json!({
            "name": self.name, "os": self.str("os"), "mode": self.str("mode"), "backend": self.str("backend"),
            "state": if self.running() { "running" } else { "stopped" },
            "cpus": self.int("cpus"), "ram_mb": self.int("ram"), "disk": self.str("disk"), "share": self.str("share"),
            "recipes": recipes, "ssh_port": self.int("sshport"), "ssh_user": self.str("sshuser"),
            "installed": self.table().get("installed").and_then(|v| v.as_bool()).unwrap_or(false),
            "forwards": self.forwards(), "allow_exec": allow_exec.unwrap_or(true),
            "agent_access": self.access(allow_exec), "display": display,
            "project": "", "key": "", "project_missing": false,
        })
    }
    /// The stored access level, else the contract's mapping of allow_exec.
    fn access(&self, allow_exec: Option<bool>) -> String {
        match self.table().get("agent_access").and_then(|v| v.as_str()) {
            Some(level) => level.to_string(),
            None if allow_exec == Some(true) => "exec".into(),
            None => "manage".into(),
        }
    }
    fn save(&self, table: &toml::Table) -> Result<(), Failure> {
        let text = toml::to_string(table).map_err(|e| fail("internal", e.to_string()))?;
        std::fs::write(self.dir.join("vm.toml"), text).map_err(|e| fail("internal", e.to_string()))
    }
}

const RESERVED: &[&str] = &["isos", "recipes", "shared", "logs"];

fn load(name: &str) -> Result<Vm, Failure> {
    let dir = root().join(name);
    if name.is_empty() || name.contains('/') || RESERVED.contains(&name) {
        return Err(fail("not_found", format!("not found: {name}")));
    }
    let text = std::fs::read_to_string(dir.join("vm.toml"))
        .map_err(|_| fail("not_found", format!("not found: {name}")))?;
    let config = toml::from_str::<toml::Table>(&text)
        .map_err(|e| e.to_string().lines().next().unwrap_or("").to_string());
    Ok(Vm {
        name: name.to_string(),
        dir,
        config,
    })
}

fn all_vms() -> Vec<Vm> {
    let mut names: Vec<String> = std::fs::read_dir(root())
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter(|n| !RESERVED.contains(&n.as_str()))
        .filter_map(|n| load(&n).ok())
        .collect()
}

fn ls() -> Answer {
    Ok(json!({"vms": all_vms().iter().map(Vm::dto).collect::<Vec<_>>()}))
}

fn parse_size(text: &str) -> Option<u64> {
    let upper = text.trim().to_ascii_uppercase();
    if upper.starts_with('+') || upper.starts_with('-') {
        return None;
    }
    let (number, multiplier) = match upper.chars().last()? {
        'K' => (&upper[..upper.len() - 1], 1u64 << 10),
        'M' => (&upper[..upper.len() - 1], 1 << 20),
        'G' => (&upper[..upper.len() - 1], 1 << 30),
        'T' => (&upper[..upper.len() - 1], 1 << 40),
        _ => (upper.as_str(), 1),
    };
    let value: f64 = number.parse().ok()?;
    (value > 0.0).then_some((value * multiplier as f64) as u64)
}

fn free_port() -> i64 {
    let used: Vec<i64> = all_vms().iter().map(|vm| vm.int("sshport")).collect();
    (2200..2300).find(|p| !used.contains(p)).unwrap_or(2299)
}

/// An integer flag at least `min`, if given.
fn int_flag(parsed: &Parsed, flag: &str, min: i64) -> Result<Option<i64>, Failure> {
    let Some(text) = parsed.flag(flag) else {
        return Ok(None);
    };
    let value: i64 = text
        .parse()
        .map_err(|_| usage(format!("{flag} needs an integer")))?;
    if value < min {
        return Err(fail("invalid_spec", format!("{flag} {value} is too small")));
    }
    Ok(Some(value))
}

/// `--agent-access LEVEL`, if given.
fn access_flag(parsed: &Parsed) -> Result<Option<String>, Failure> {
    match parsed.flag("--agent-access") {
        None => Ok(None),
        Some(level) if ["none", "observe", "manage", "exec"].contains(&level) => {
            Ok(Some(level.to_string()))
        }
        Some(level) => Err(usage(format!("--agent-access {level:?} is not a level"))),
    }
}

fn create(name: &str, parsed: &Parsed) -> Answer {
    let image = parsed
        .flag("--image")
        .ok_or_else(|| usage("create needs --image"))?;
    if root().join(name).exists() {
        return Err(fail("name_taken", format!("{name} already exists")));
    }
    // A file on disk, else a file of that name under isos/ (a downloaded image by name).
    if !Path::new(image).is_file() && !root().join("isos").join(image).is_file() {
        return Err(fail(
            "image_not_downloaded",
            format!("image {image} is not downloaded"),
        ));
    }
    let mode = parsed.flag("--mode").unwrap_or("live");
    let mut table = toml::Table::new();
    let cpus = int_flag(parsed, "--cpus", 1)?.unwrap_or(4);
    let ram = int_flag(parsed, "--ram", 256)?.unwrap_or(4096);
    let access = access_flag(parsed)?;
    table.insert("name".into(), name.into());
    table.insert("mode".into(), mode.into());
    table.insert("os".into(), "alpine".into());
    table.insert("iso".into(), image.into());
    table.insert("ram".into(), ram.into());
    table.insert("cpus".into(), cpus.into());
    table.insert(
        "disk".into(),
        (if mode == "live" { "" } else { "8G" }).into(),
    );
    table.insert("sshport".into(), free_port().into());
    table.insert("backend".into(), "apkovl".into());
    table.insert("sshuser".into(), "root".into());
    table.insert(
        "allow_exec".into(),
        access.as_deref().is_none_or(|a| a == "exec").into(),
    );
    if let Some(access) = access {
        table.insert("agent_access".into(), access.into());
    }
    let dir = root().join(name);
    std::fs::create_dir_all(&dir).map_err(|e| fail("internal", e.to_string()))?;
    if mode != "live" {
        // The disk the snapshots live in (the fake qemu-img keeps them beside it).
        let made = Command::new("qemu-img")
            .args(["create", "-f", "qcow2"])
            .arg(dir.join("disk.qcow2"))
            .arg(parsed.flag("--disk").unwrap_or("8G"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !made.map(|s| s.success()).unwrap_or(false) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(fail("internal", "qemu-img create failed"));
        }
    }
    let vm = Vm {
        name: name.to_string(),
        dir,
        config: Ok(table.clone()),
    };
    vm.save(&table)?;
    Ok(json!({"vm": vm.dto()}))
}

fn clone(parsed: &Parsed) -> Answer {
    let (Some(source), Some(new)) = (parsed.positionals.first(), parsed.positionals.get(1)) else {
        return Err(usage("clone <source> <name>"));
    };
    let vm = load(source)?.good()?;
    if vm.running() {
        return Err(fail("already_running", format!("{source} is running")));
    }
    if root().join(new).exists() {
        return Err(fail("name_taken", format!("{new} already exists")));
    }
    let mut table = vm.table().clone();
    table.remove("forwards");
    table.insert("name".into(), new.as_str().into());
    table.insert("sshport".into(), free_port().into());
    let dir = root().join(new);
    std::fs::create_dir_all(&dir).map_err(|e| fail("internal", e.to_string()))?;
    // The disk and what the fake qemu-img keeps beside it (its snapshots) are copied.
    for entry in std::fs::read_dir(&vm.dir).into_iter().flatten().flatten() {
        let file = entry.file_name();
        if file.to_string_lossy().starts_with("disk") {
            std::fs::copy(entry.path(), dir.join(&file))
                .map_err(|_| fail("internal", format!("copying {source}'s disk failed")))?;
        }
    }
    let copy = Vm {
        name: new.clone(),
        dir,
        config: Ok(table.clone()),
    };
    copy.save(&table)?;
    Ok(json!({"vm": copy.dto(), "source": source, "forwards_copied": false}))
}

fn update(name: &str, parsed: &Parsed) -> Answer {
    let given: Vec<&str> = ["--cpus", "--disk", "--ram", "--ssh-port", "--agent-access"]
        .into_iter()
        .filter(|f| parsed.has(f))
        .collect();
    if given.is_empty() {
        return Err(usage("update: nothing to change"));
    }
    let vm = load(name)?.good()?;
    let mut table = vm.table().clone();
    let mut changed = Vec::new();
    for (flag, key, wire) in [
        ("--cpus", "cpus", "cpus"),
        ("--ram", "ram", "ram"),
        ("--ssh-port", "sshport", "ssh_port"),
    ] {
        if let Some(text) = parsed.flag(flag) {
            let value: i64 = text
                .parse()
                .map_err(|_| usage(format!("{flag} needs an integer")))?;
            if (key == "ram" && value < 256) || (key == "cpus" && value < 1) {
                return Err(fail("invalid_spec", format!("{flag} {value} is too small")));
            }
            if vm.int(key) != value {
                table.insert(key.into(), value.into());
                changed.push(wire);
            }
        }
    }
    if let Some(level) = access_flag(parsed)? {
        if vm.access(vm.table().get("allow_exec").and_then(|v| v.as_bool())) != level {
            table.insert("allow_exec".into(), (level == "exec").into());
            table.insert("agent_access".into(), level.into());
            changed.push("agent_access");
        }
    }
    if let Some(text) = parsed.flag("--disk") {
        if text != vm.str("disk") {
            if vm.str("mode") == "live" {
                return Err(fail("invalid_spec", "a live VM has no disk"));
            }
            let new_size =
                parse_size(text).ok_or_else(|| fail("invalid_spec", format!("bad size {text}")))?;
            if vm.running() {
                return Err(fail("already_running", format!("{name} is running")));
            }
            let current = parse_size(&vm.str("disk"))
                .ok_or_else(|| fail("invalid_spec", "the current size does not parse"))?;
            if new_size < current {
                return Err(fail(
                    "disk_shrink",
                    format!("{text} is smaller than {}", vm.str("disk")),
                ));
            }
            let disk = vm.dir.join("disk.qcow2");
            let status = Command::new("qemu-img")
                .arg("resize")
                .arg(&disk)
                .arg(text)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if !status.map(|s| s.success()).unwrap_or(false) {
                return Err(fail("internal", "qemu-img resize failed"));
            }
            table.insert("disk".into(), text.into());
            changed.push("disk");
        }
    }
    changed.sort();
    vm.save(&table)?;
    let applies_at = if vm.running() { "next_start" } else { "now" };
    let updated = load(name)?;
    Ok(json!({"vm": updated.dto(), "changed": changed, "applies_at": applies_at}))
}

fn rm(name: &str, parsed: &Parsed, json_mode: bool) -> Answer {
    let vm = load(name)?;
    if vm.running() {
        return Err(fail(
            "already_running",
            format!("{name} is running; stop it first"),
        ));
    }
    if !parsed.has("-y") {
        if json_mode {
            return Err(fail(
                "confirmation_required",
                format!("rm {name} needs -y under --json"),
            ));
        }
        return Err(fail(
            "confirmation_required",
            "refusing to delete without -y",
        ));
    }
    let _ = std::fs::remove_dir_all(root().join("shared").join(name));
    std::fs::remove_dir_all(&vm.dir).map_err(|e| fail("internal", e.to_string()))?;
    Ok(json!({"name": name, "deleted": true}))
}

fn on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn up(name: &str) -> Answer {
    let vm = load(name)?.good()?;
    if vm.running() {
        return Err(fail("already_running", format!("{name} is running")));
    }
    if on_path("qemu-system-x86_64").is_none() {
        return Err(fail("qemu_missing", "qemu-system-x86_64 is not on PATH"));
    }
    let dir = vm.dir.display().to_string();
    let output = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "tcg",
            "-m",
            &vm.int("ram").to_string(),
            "-daemonize",
            "-pidfile",
            &format!("{dir}/qemu.pid"),
        ])
        .args([
            "-qmp",
            &format!("unix:{dir}/qmp.sock,server,nowait"),
            "-monitor",
            &format!("unix:{dir}/monitor.sock,server,nowait"),
        ])
        .args([
            "-display",
            "none",
            "-kernel",
            &format!("{dir}/vmlinuz"),
            "-initrd",
            &format!("{dir}/initramfs"),
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail("qemu_missing", e.to_string()))?;
    if !output.status.success() {
        return Err(fail(
            "qemu_start_failed",
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !vm.running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::write(
        vm.dir.join("started-forwards.json"),
        Value::Array(vm.forwards()).to_string(),
    );
    Ok(json!({"vm": load(name)?.dto()}))
}

fn qmp(vm: &Vm, commands: &[Value]) -> Result<Vec<Value>, Failure> {
    let mut stream = UnixStream::connect(vm.dir.join("qmp.sock"))
        .map_err(|e| fail("monitor_unreachable", e.to_string()))?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut reader = std::io::BufReader::new(
        stream
            .try_clone()
            .map_err(|e| fail("monitor_unreachable", e.to_string()))?,
    );
    let read_reply = |reader: &mut std::io::BufReader<UnixStream>| -> Result<Value, Failure> {
        loop {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(reader, &mut line)
                .map_err(|e| fail("monitor_unreachable", e.to_string()))?;
            if n == 0 {
                return Err(fail("monitor_unreachable", "qmp closed"));
            }
            let value: Value = serde_json::from_str(line.trim())
                .map_err(|e| fail("monitor_rejected", e.to_string()))?;
            if value.get("event").is_none() {
                return Ok(value);
            }
        }
    };
    read_reply(&mut reader)?;
    let mut replies = Vec::new();
    for command in std::iter::once(&json!({"execute": "qmp_capabilities"})).chain(commands) {
        stream
            .write_all(format!("{command}\n").as_bytes())
            .map_err(|e| fail("monitor_unreachable", e.to_string()))?;
        let reply = read_reply(&mut reader)?;
        if let Some(error) = reply.get("error") {
            return Err(fail(
                "monitor_rejected",
                error
                    .get("desc")
                    .and_then(Value::as_str)
                    .unwrap_or("qmp error")
                    .to_string(),
            ));
        }
        replies.push(reply);
    }
    replies.remove(0);
    Ok(replies)
}

/// The working directory's stoat.toml and the project's name (the directory's), if any: a
/// project here declares no VMs (the fixture reads no declarations).
fn project() -> Option<(PathBuf, String)> {
    let dir = std::env::current_dir().ok()?;
    let file = dir.join("stoat.toml");
    let name = dir.file_name()?.to_string_lossy().into_owned();
    file.is_file().then_some((dir, name))
}

/// `init`: writes an empty stoat.toml where there is none.
fn init() -> Answer {
    if project().is_some() {
        return Err(fail("invalid_spec", "stoat.toml already exists"));
    }
    let dir = std::env::current_dir().map_err(|e| fail("internal", e.to_string()))?;
    let file = dir.join("stoat.toml");
    std::fs::write(&file, "[project]\n").map_err(|e| fail("internal", e.to_string()))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(json!({"path": file.display().to_string(), "project": name, "gitignore_updated": false}))
}

/// `status`: the project's (empty) declarations.
fn status() -> Answer {
    let (dir, name) = project().ok_or_else(|| fail("invalid_spec", "no stoat.toml here"))?;
    Ok(json!({"project": name, "dir": dir.display().to_string(), "vms": []}))
}

/// `down` with no VM: the fan-out over the project's (empty) declarations.
fn project_down() -> Answer {
    let (_, name) = project().ok_or_else(|| usage("down: missing VM name (no stoat.toml here)"))?;
    Ok(json!({"project": name, "vms": []}))
}

fn down(name: &str) -> Answer {
    let vm = load(name)?.good()?;
    let Some(pid) = vm.pid() else {
        return Err(fail("not_running", format!("{name} is not running")));
    };
    qmp(&vm, &[json!({"execute": "system_powerdown"})])?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while vm.running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if vm.running() {
        // The pid our pidfile names and whose cmdline is this VM's.
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    Ok(json!({"vm": load(name)?.dto()}))
}

fn parse_duration(text: &str) -> Option<Duration> {
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| text.split_at(i))
        .unwrap_or((text, "s"));
    let value: u64 = number.parse().ok()?;
    let duration = match unit {
        "ms" => Duration::from_millis(value),
        "s" => Duration::from_secs(value),
        "m" => Duration::from_secs(value * 60),
        _ => return None,
    };
    (!duration.is_zero()).then_some(duration)
}

fn wait(name: &str, parsed: &Parsed) -> Answer {
    let until = parsed.flag("--until").unwrap_or("reachable");
    if !["reachable", "applied", "stopped"].contains(&until) {
        return Err(usage(format!(
            "--until {until:?} is not reachable, applied or stopped"
        )));
    }
    let timeout = match parsed.flag("--timeout") {
        Some(text) => parse_duration(text).ok_or_else(|| usage(format!("bad --timeout {text}")))?,
        None => Duration::from_secs(120),
    };
    let vm = load(name)?.good()?;
    let started = Instant::now();
    loop {
        let reached = match until {
            "stopped" => !vm.running(),
            "reachable" if !vm.running() => {
                return Err(fail("cannot_reach", format!("{name} is not running")))
            }
            "reachable" => {
                std::net::TcpStream::connect(("127.0.0.1", vm.int("sshport") as u16)).is_ok()
            }
            _ => return Err(fail("cannot_reach", format!("{name} has no recipes"))),
        };
        if reached {
            return Ok(
                json!({"vm": name, "until": until, "reached": true, "waited_ms": started.elapsed().as_millis() as u64}),
            );
        }
        if started.elapsed() >= timeout {
            return Err(fail("timeout", "context deadline exceeded"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ssh_argv(vm: &Vm) -> Vec<String> {
    let user = match vm.str("sshuser").as_str() {
        "" => "root".to_string(),
        other => other.to_string(),
    };
    let mut argv: Vec<String> = vec!["ssh".into(), "-p".into(), vm.int("sshport").to_string()];
    for option in [
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "LogLevel=ERROR",
        "BatchMode=yes",
    ] {
        argv.push("-o".into());
        argv.push(option.into());
    }
    argv.push("-i".into());
    argv.push(root().join("id_stoat").display().to_string());
    argv.push(format!("{user}@127.0.0.1"));
    argv
}

/// Single-quotes a word for the guest's shell; the fixture is written from the contract alone
/// and shares no code with stoat, so it keeps its own.
fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

fn exec(name: &str, guest: &[String], json_mode: bool) -> i32 {
    ensure_root();
    let prepared = (|| -> Result<Vec<String>, Failure> {
        if name.is_empty() || guest.is_empty() {
            return Err(usage("exec <vm> <command...>"));
        }
        let vm = load(name)?.good()?;
        if !vm.running() {
            return Err(fail("not_running", format!("{name} is not running")));
        }
        Ok(ssh_argv(&vm))
    })();
    let argv = match prepared {
        Ok(argv) => argv,
        Err(failure) => return finish("exec", Err(failure), json_mode),
    };
    let remote = guest.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ");
    let output = Command::new(&argv[0])
        .args(&argv[1..])
        .arg(remote)
        .stdin(Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            return finish(
                "exec",
                Err(fail("internal", format!("{name}: ssh: {error}"))),
                json_mode,
            )
        }
    };
    let status = output.status.code().unwrap_or(255);
    if !json_mode {
        let _ = std::io::stdout().write_all(&output.stdout);
        let _ = std::io::stderr().write_all(&output.stderr);
        return status;
    }
    let mut data = json!({"vm": name, "exit_code": status});
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        match std::str::from_utf8(bytes) {
            Ok(text) => data[stream] = json!(text),
            Err(_) => {
                data[format!("{stream}_base64")] =
                    json!(base64::engine::general_purpose::STANDARD.encode(bytes));
                data[format!("{stream}_encoding")] = json!("base64");
            }
        }
    }
    finish("exec", Ok(data), true)
}

fn cp(parsed: &Parsed) -> Answer {
    let (Some(source), Some(destination)) = (parsed.positionals.first(), parsed.positionals.get(1))
    else {
        return Err(usage("cp <src> <dst>"));
    };
    fn remote_side(s: &str) -> Option<(&str, &str)> {
        s.split_once(':')
            .filter(|(vm, _)| !vm.is_empty() && !vm.contains('/'))
    }
    let (vm_name, remote, local, direction) = match (remote_side(source), remote_side(destination))
    {
        (None, Some((vm, remote))) => (vm, remote, source.as_str(), "to_guest"),
        (Some((vm, remote)), None) => (vm, remote, destination.as_str(), "from_guest"),
        _ => return Err(usage("exactly one side of cp names <vm>:<path>")),
    };
    let cwd = std::env::current_dir().map_err(|e| usage(e.to_string()))?;
    let local = cwd.join(local).display().to_string();
    let vm = load(vm_name)?.good()?;
    if !vm.running() {
        return Err(fail("not_running", format!("{vm_name} is not running")));
    }
    let spec = format!(
        "{}@127.0.0.1:{remote}",
        if vm.str("sshuser").is_empty() {
            "root".to_string()
        } else {
            vm.str("sshuser")
        }
    );
    let (from, to) = if direction == "to_guest" {
        (local.clone(), spec)
    } else {
        (spec, local.clone())
    };
    let output = Command::new("scp")
        .args([
            "-P",
            &vm.int("sshport").to_string(),
            "-q",
            "-i",
            &root().join("id_stoat").display().to_string(),
            &from,
            &to,
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail("internal", format!("scp: {e}")))?;
    if !output.status.success() {
        return Err(fail(
            "internal",
            format!(
                "{vm_name}: scp: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    Ok(json!({"vm": vm_name, "direction": direction, "local": local, "remote": remote}))
}

fn forward(name: &str, parsed: &Parsed) -> Answer {
    let pairs = &parsed.positionals[1..];
    if parsed.has("--clear") && !pairs.is_empty() {
        return Err(usage("--clear takes no pairs"));
    }
    let mut requested: Vec<(i64, i64)> = Vec::new();
    for pair in pairs {
        let parsed_pair = pair.split_once(':').and_then(|(h, g)| {
            Some((h.trim().parse::<i64>().ok()?, g.trim().parse::<i64>().ok()?))
        });
        let Some((host, guest)) = parsed_pair else {
            return Err(usage(format!("{pair:?} is not HOST:GUEST")));
        };
        requested.push((host, guest));
    }
    let vm = load(name)?;
    if vm.config.is_err() {
        return Ok(json!({"vm": name, "forwards": [], "active": false}));
    }
    let running = vm.running();
    let saved = pairs_of(&vm.forwards());
    // A running VM forwards what it started with (up writes it down); a saved change waits
    // for the next start.
    let started = std::fs::read_to_string(vm.dir.join("started-forwards.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Vec<Value>>(&text).ok())
        .map(|rows| pairs_of(&rows))
        .unwrap_or_else(|| saved.clone());
    let same = |a: &[(i64, i64)], b: &[(i64, i64)]| {
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort_unstable();
        b.sort_unstable();
        a == b
    };
    let one_pair = |text: &str| {
        text.split_once(':')
            .and_then(|(h, g)| Some((h.trim().parse::<i64>().ok()?, g.trim().parse::<i64>().ok()?)))
            .ok_or_else(|| usage(format!("{text:?} is not HOST:GUEST")))
    };
    if let Some(text) = parsed.flag("--add") {
        let (host, guest) = one_pair(text)?;
        requested = saved.iter().copied().filter(|(h, _)| *h != host).collect();
        requested.push((host, guest));
    } else if let Some(text) = parsed.flag("--remove") {
        let host: i64 = text
            .trim()
            .parse()
            .map_err(|_| usage(format!("{text:?} is not a port")))?;
        requested = saved.iter().copied().filter(|(h, _)| *h != host).collect();
    } else if pairs.is_empty() && !parsed.has("--clear") {
        // Active: forwarding now, which a stopped VM does not.
        let active = running && same(&saved, &started);
        return Ok(json!({"vm": name, "forwards": vm.forwards(), "active": active}));
    }
    for (host, guest) in &requested {
        if !(1..=65535).contains(host) || !(1..=65535).contains(guest) {
            return Err(fail("invalid_spec", format!("{name}: port out of range")));
        }
        if *host < 1024 {
            return Err(fail(
                "invalid_spec",
                format!("{name}: host port {host} needs root"),
            ));
        }
    }
    let mut table = vm.table().clone();
    let rows: Vec<toml::Value> = requested
        .iter()
        .map(|(h, g)| {
            let mut row = toml::Table::new();
            row.insert("hostport".into(), (*h).into());
            row.insert("guestport".into(), (*g).into());
            toml::Value::Table(row)
        })
        .collect();
    table.insert("forwards".into(), toml::Value::Array(rows));
    vm.save(&table)?;
    let forwards: Vec<Value> = requested
        .iter()
        .map(|(h, g)| json!({"host_port": h, "guest_port": g}))
        .collect();
    // Active now when stopped (the next start uses it) or when it is what the VM runs with.
    let now = !running || same(&requested, &started);
    Ok(
        json!({"vm": name, "forwards": forwards, "active": now, "applies_at": if now { "now" } else { "next_start" }}),
    )
}

/// The (host, guest) pairs of forward rows as the wire shows them.
fn pairs_of(rows: &[Value]) -> Vec<(i64, i64)> {
    rows.iter()
        .filter_map(|row| Some((row["host_port"].as_i64()?, row["guest_port"].as_i64()?)))
        .collect()
}

fn snapshot(name: &str, parsed: &Parsed) -> Answer {
    let tag = parsed.positionals.get(1);
    if parsed.has("--restore") && parsed.has("--delete") {
        return Err(usage("--restore and --delete are exclusive"));
    }
    if (parsed.has("--restore") || parsed.has("--delete")) && tag.is_none() {
        return Err(usage("--restore/--delete need a tag"));
    }
    let vm = load(name)?.good()?;
    if vm.str("mode") == "live" {
        return Err(fail(
            "no_disk",
            format!("{name} is a live VM and has no disk"),
        ));
    }
    let disk = vm.dir.join("disk.qcow2");
    let Some(tag) = tag else {
        return Ok(json!({"vm": name, "snapshots": snapshot_rows(&disk)?}));
    };
    if vm.running() {
        return Err(fail(
            "already_running",
            format!("{name} is running; stop it to act on its snapshots"),
        ));
    }
    let exists = snapshot_rows(&disk)?
        .iter()
        .any(|row| row["tag"].as_str() == Some(tag.as_str()));
    if (parsed.has("--restore") || parsed.has("--delete")) && !exists {
        return Err(fail("not_found", format!("{name} has no snapshot {tag}")));
    }
    if !parsed.has("--restore") && !parsed.has("--delete") && exists {
        return Err(fail(
            "invalid_spec",
            format!("{name} has a snapshot {tag} already"),
        ));
    }
    let (flag, action) = if parsed.has("--restore") {
        ("-a", "restore")
    } else if parsed.has("--delete") {
        ("-d", "delete")
    } else {
        ("-c", "save")
    };
    let output = Command::new("qemu-img")
        .arg("snapshot")
        .arg(flag)
        .arg(tag)
        .arg(&disk)
        .output()
        .map_err(|e| fail("internal", e.to_string()))?;
    if !output.status.success() {
        // qemu-img's own words name the disk's host path, which never reaches the wire.
        return Err(fail(
            "internal",
            format!("qemu-img snapshot {flag} {tag} failed"),
        ));
    }
    Ok(json!({"vm": name, "tag": tag, "action": action}))
}

/// The snapshots `qemu-img snapshot -l` lists for `disk`.
fn snapshot_rows(disk: &Path) -> Result<Vec<Value>, Failure> {
    {
        let output = Command::new("qemu-img")
            .arg("snapshot")
            .arg("-l")
            .arg(disk)
            .output()
            .map_err(|e| fail("internal", e.to_string()))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let rows: Vec<Value> = text
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                (f.len() >= 6 && f[4].len() == 10 && f[4].as_bytes()[4] == b'-').then(|| {
                    json!({"tag": f[1], "vm_state": !f[2].starts_with('0'), "size_display": format!("{} {}", f[2], f[3]), "created_display": format!("{} {}", f[4], f[5])})
                })
            })
            .collect();
        Ok(rows)
    }
}

fn logs(name: Option<&str>, parsed: &Parsed) -> Answer {
    let which = parsed.flag("--which").unwrap_or("console");
    let file = match which {
        "console" => "console.log",
        "apply" => "last-provision.log",
        other => return Err(fail("unknown_log", format!("unknown log {other:?}"))),
    };
    let n: usize = parsed
        .flag("-n")
        .map(|t| t.parse().map_err(|_| usage("-n needs an integer")))
        .transpose()?
        .unwrap_or(50);
    let (path, vm) = match name {
        None => (root().join("logs").join("stoat.log"), None),
        Some(name) => (load(name)?.dir.join(file), Some(name)),
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text
        .trim_end_matches('\n')
        .split('\n')
        .filter(|l| !text.is_empty() || !l.is_empty())
        .collect();
    let lines: Vec<&str> = if n > 0 && all.len() > n {
        all[all.len() - n..].to_vec()
    } else {
        all
    };
    Ok(match vm {
        None => json!({"lines": lines}),
        Some(vm) => json!({"vm": vm, "which": which, "lines": lines}),
    })
}

fn doctor() -> Value {
    let mut checks = Vec::new();
    for tool in ["qemu-system-x86_64", "qemu-img", "ssh", "xorriso"] {
        let found = on_path(tool);
        checks.push(json!({"name": tool, "ok": found.is_some(), "detail": if found.is_some() { "found" } else { "not found" },
            "fix": if found.is_some() { json!([]) } else { json!([format!("install {tool}")]) }, "optional": false}));
    }
    let tcg = std::env::var("STOAT_ACCEL").as_deref() == Ok("tcg");
    let kvm = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    checks.push(json!({"name": "/dev/kvm", "ok": kvm, "detail": if kvm { "read/write" } else { "cannot open" }, "fix": [], "optional": tcg}));
    let healthy = checks
        .iter()
        .all(|c| c["ok"] == json!(true) || c["optional"] == json!(true));
    if v2() {
        for check in &mut checks {
            if let Some(object) = check.as_object_mut() {
                object.remove("optional");
            }
        }
    }
    json!({"healthy": healthy, "checks": checks})
}

fn capabilities() -> Value {
    let unavailable: Vec<Value> = ["runtime.fork", "runtime.continuation"]
        .iter()
        .map(|name| json!({"name": name, "status": "unsupported", "scope": "runtime", "requirements": [], "limits": [], "reason": {"code": "not_implemented"},
            "evidence": [{"kind": "implementation", "source": name, "result": "not_implemented"}]}))
        .collect();
    json!({"schema": 1, "stoat_version": "0.1.0-fixture", "host": {"os": "linux", "arch": "amd64", "project_state": "absent"},
        "access_policy": {"mcp_agent_access_enforced": true, "cli_agent_access_enforced": false, "cli_commands": ["exec", "cp"]},
        "profiles": [], "capabilities": [], "unavailable": unavailable})
}

fn screenshot(name: &str) -> Answer {
    let vm = load(name)?.good()?;
    if !vm.running() {
        return Err(fail("not_running", format!("{name} is not running")));
    }
    let dir = vm.dir.join("screenshots");
    std::fs::create_dir_all(&dir).map_err(|e| fail("internal", e.to_string()))?;
    let path = dir.join("shot.png");
    qmp(&vm, &[json!({"execute": "screendump", "arguments": {"filename": path.display().to_string(), "format": "png"}})])
        .map_err(|f| if f.code == "monitor_rejected" { fail("screenshot_failed", f.message) } else { f })?;
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| fail("screenshot_failed", e.to_string()))?;
    if bytes.len() < 24 {
        return Err(fail("screenshot_failed", "not a PNG"));
    }
    let width = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let height = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Ok(
        json!({"vm": name, "path": path.display().to_string(), "bytes": bytes.len(), "width": width, "height": height}),
    )
}
