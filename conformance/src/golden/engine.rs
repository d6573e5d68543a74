//! Owns replaying golden cases through the suite's sandbox, SUT spawner and oracle, and the
//! three verbs built on it: `record` (cases.toml or existing files → transcripts, redacted at
//! capture), `verify` (replay every case, judge it, report per case) and `bless` (`.new`
//! files for review; never under `CI`). docs/golden.md describes the format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::capture::{Bytes, Capture};
use crate::error::HarnessError;
use crate::finding::Level;
use crate::oracle::{Context, Oracle};
use crate::run::selection::glob_match;
use crate::run::sut::{SpawnRequest, StdinPlan, Sut};
use crate::sandbox::{Sandbox, SandboxOptions, FAKE_TOOLS};
use crate::spec::Edition;

use super::format::{GoldenCase, FORMAT};
use super::matcher;
use super::redact::Redactor;
use super::spec::{CaseList, CaseSpec};

/// What every golden verb needs.
pub struct GoldenConfig {
    pub sut: Sut,
    /// The `stoat-fake` binary (the sandbox's fake tools).
    pub fakes: Option<PathBuf>,
    /// The golden/ directory.
    pub dir: PathBuf,
    pub timeout: Duration,
    /// Globs over case ids (`ls/empty`, `v3.0/ls/empty`); empty = all.
    pub filter: Vec<String>,
    /// Also verify the reference set (`reference/`: the reference's own choices).
    pub reference: bool,
    /// The edition to judge by; `None`: the one the SUT names in `--json version`.
    pub edition: Option<Edition>,
}

/// The directory of the cases that pin the reference's own choices.
pub const REFERENCE_SET: &str = "reference";

impl GoldenConfig {
    fn selects(&self, id: &str) -> bool {
        let in_reference = id.split('/').next() == Some(REFERENCE_SET);
        (self.reference || !in_reference)
            && (self.filter.is_empty() || self.filter.iter().any(|g| glob_match(g, id)))
    }

    /// The edition transcripts are chosen and judged by: the configured one, else the one
    /// the SUT names (`data.contract`, else `v`), else contract 3.
    pub fn edition(&self) -> Result<Edition, HarnessError> {
        if let Some(edition) = self.edition {
            return Ok(edition);
        }
        let sandbox = Sandbox::new(SandboxOptions::default())?;
        let args = vec!["--json".to_string(), "version".to_string()];
        let spawned = self.sut.spawn(SpawnRequest {
            args: &args,
            env: &sandbox.env(),
            cwd: &sandbox.work,
            stdin: StdinPlan::Null,
            timeout: self.timeout,
            json: true,
            signal: None,
        })?;
        let text = String::from_utf8_lossy(&spawned.capture.stdout.0).into_owned();
        let result: Option<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|l| l.get("type").and_then(Value::as_str) == Some("result"));
        let named = |pointer: &str| {
            result
                .as_ref()
                .and_then(|r| r.pointer(pointer))
                .and_then(Value::as_u64)
                .and_then(Edition::from_number)
        };
        Ok(named("/data/contract")
            .or_else(|| named("/v"))
            .unwrap_or_default())
    }
}

/// One replay: the redacted lines and what the oracle said.
pub struct Replay {
    pub exit: Option<i32>,
    pub ending: String,
    /// Each stdout line, redacted; a line that is not JSON is kept as a string.
    pub lines: Vec<Value>,
    /// MUST findings of the oracle, rendered.
    pub oracle_failures: Vec<String>,
    pub stderr: String,
}

/// The outcome of verifying one case.
pub struct Verdict {
    pub id: String,
    /// Empty when the case passed.
    pub problems: Vec<String>,
}

/// A golden case file on disk.
pub struct CaseFile {
    /// `cmd/name` or `v3.0/cmd/name`.
    pub id: String,
    pub path: PathBuf,
    /// Under a version directory (`v3.0/`): frozen, never re-recorded.
    pub frozen: bool,
}

/// Every `*.json` case under `dir`, sorted by id.
pub fn case_files(dir: &Path) -> Vec<CaseFile> {
    let mut out = Vec::new();
    collect_case_files(dir, dir, &mut out);
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn collect_case_files(root: &Path, dir: &Path, out: &mut Vec<CaseFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_case_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let id = relative.with_extension("").to_string_lossy().into_owned();
            let frozen = is_version_dir(id.split('/').next().unwrap_or(""));
            out.push(CaseFile { id, path, frozen });
        }
    }
}

/// `v3.0`, `v3`, `v4.1`...: a frozen older-version corpus.
fn is_version_dir(name: &str) -> bool {
    name.strip_prefix('v')
        .is_some_and(|rest| rest.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// Builds the sandbox a case runs in: tools, fixture tree, work files, env, running VMs.
fn sandbox_for(
    config: &GoldenConfig,
    case: &GoldenCase,
) -> Result<(Sandbox, Redactor), HarnessError> {
    let only_tools = case.tools.as_ref().map(|names| {
        FAKE_TOOLS
            .iter()
            .copied()
            .filter(|tool| names.iter().any(|n| n == tool))
            .collect()
    });
    let mut sandbox = Sandbox::new(SandboxOptions {
        fakes: config.fakes.clone(),
        only_tools,
        seed_keys: false,
        ..SandboxOptions::default()
    })?;
    let redactor = Redactor::for_sandbox(&sandbox);
    write_tree(&sandbox.data, &case.fixture, &redactor)?;
    write_tree(&sandbox.work, &case.work, &redactor)?;
    for (key, value) in &case.env {
        sandbox.set_env(key, &redactor.expand(value));
    }
    for name in &case.running {
        sandbox.start_running(name)?;
    }
    Ok((sandbox, redactor))
}

fn write_tree(
    root: &Path,
    tree: &BTreeMap<String, Bytes>,
    redactor: &Redactor,
) -> Result<(), HarnessError> {
    for (relative, bytes) in tree {
        if relative.split('/').any(|part| part == "..") || relative.starts_with('/') {
            return Err(HarnessError::Other(format!(
                "fixture path {relative:?} leaves its directory"
            )));
        }
        let path = root.join(relative.trim_end_matches('/'));
        if relative.ends_with('/') {
            std::fs::create_dir_all(&path).map_err(|e| HarnessError::io(&path, e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HarnessError::io(parent, e))?;
        }
        std::fs::write(&path, redactor.expand_bytes(&bytes.0))
            .map_err(|e| HarnessError::io(&path, e))?;
        if is_private_key(relative) {
            set_private_mode(&path)?;
        }
    }
    Ok(())
}

fn set_private_mode(path: &Path) -> Result<(), HarnessError> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| HarnessError::io(path, e))
}

/// ssh refuses private keys others can read.
fn is_private_key(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    (name.starts_with("id_") || name.ends_with("_key")) && !name.ends_with(".pub")
}

/// Reads a directory tree back (redacted): relative path → bytes; empty dirs end in `/`.
pub fn snapshot_tree(root: &Path, redactor: &Redactor) -> BTreeMap<String, Bytes> {
    let mut out = BTreeMap::new();
    snapshot_into(root, root, redactor, &mut out);
    out
}

fn snapshot_into(root: &Path, dir: &Path, redactor: &Redactor, out: &mut BTreeMap<String, Bytes>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut empty = true;
    for entry in entries.flatten() {
        empty = false;
        let path = entry.path();
        if path.is_dir() {
            snapshot_into(root, &path, redactor, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            out.insert(
                relative.to_string_lossy().into_owned(),
                Bytes(redactor.redact_bytes(&bytes)),
            );
        }
    }
    if empty && dir != root {
        let relative = dir.strip_prefix(root).unwrap_or(dir);
        out.insert(format!("{}/", relative.to_string_lossy()), Bytes::default());
    }
}

/// Runs a case's inputs once in a fresh sandbox and judges the invocation.
pub fn replay(config: &GoldenConfig, case: &GoldenCase) -> Result<Replay, HarnessError> {
    let (sandbox, redactor) = sandbox_for(config, case)?;
    let mut before_problems = Vec::new();
    for (index, step) in case.before.iter().enumerate() {
        let cmd = crate::run::case::expected_cmd(&step.argv);
        let replay = invoke(
            config,
            &sandbox,
            &redactor,
            &step.argv,
            None,
            cmd,
            case.contract,
        )?;
        let problems = match step.expected(case) {
            Some(expected) => compare(&expected, &replay),
            None => replay.oracle_failures,
        };
        before_problems.extend(
            problems
                .into_iter()
                .map(|p| format!("before {index} ({}): {p}", step.argv.join(" "))),
        );
    }
    let mut replay = invoke(
        config,
        &sandbox,
        &redactor,
        &case.argv,
        case.stdin.as_ref(),
        Some(case.cmd.clone()),
        case.contract,
    )?;
    before_problems.append(&mut replay.oracle_failures);
    replay.oracle_failures = before_problems;
    Ok(replay)
}

/// Runs one invocation of a case in its sandbox and judges it with the oracle.
fn invoke(
    config: &GoldenConfig,
    sandbox: &Sandbox,
    redactor: &Redactor,
    argv: &[String],
    stdin: Option<&Bytes>,
    cmd: Option<String>,
    contract: u32,
) -> Result<Replay, HarnessError> {
    let args: Vec<String> = argv.iter().map(|a| redactor.expand(a)).collect();
    let env = sandbox.env();
    let stdin = match stdin {
        Some(bytes) => StdinPlan::Watched(redactor.expand_bytes(&bytes.0)),
        None => StdinPlan::Null,
    };
    let spawned = config.sut.spawn(SpawnRequest {
        args: &args,
        env: &env,
        cwd: &sandbox.work,
        stdin,
        timeout: config.timeout,
        json: true,
        signal: None,
    })?;
    let capture: Capture = spawned.capture;
    let context = Context {
        expect_cmd: cmd,
        canaries: sandbox.canaries(),
        edition: Edition::from_number(u64::from(contract)).unwrap_or_default(),
    };
    let judgement = Oracle::new().judge(&capture, &context);
    let oracle_failures = judgement
        .findings
        .iter()
        .filter(|f| f.level == Level::Must)
        .map(|f| format!("oracle {} at {}: {}", f.check_id, f.pointer, f.message))
        .collect();
    let stdout = redactor.redact(&String::from_utf8_lossy(&capture.stdout.0));
    let lines = stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.into())))
        .collect();
    Ok(Replay {
        exit: capture.ending.code(),
        ending: capture.ending.describe(),
        lines,
        oracle_failures,
        stderr: redactor.redact(&String::from_utf8_lossy(&capture.stderr.0)),
    })
}

/// Compares a replay with the case's expectation; returns every problem.
pub fn compare(case: &GoldenCase, replay: &Replay) -> Vec<String> {
    let mut problems = replay.oracle_failures.clone();
    if replay.exit != Some(case.exit) {
        problems.push(format!(
            "exit: expected {}, got {}",
            case.exit, replay.ending
        ));
    }
    let extra = case.extra_keys_allowed();
    let (expected_events, expected_result) =
        case.lines.split_at(case.lines.len().saturating_sub(1));
    let is_result = |line: &Value| line.get("type").and_then(Value::as_str) == Some("result");
    match (
        expected_result.first(),
        replay.lines.iter().rev().find(|l| is_result(l)),
    ) {
        (Some(want), Some(got)) => matcher::check(want, got, extra, "result", &mut problems),
        (Some(_), None) => problems.push(format!(
            "result: no result line ({}); stderr: {}",
            replay.ending,
            crate::oracle::excerpt(replay.stderr.trim())
        )),
        (None, _) => problems.push("the transcript expects no lines".into()),
    }
    // Events: the expected ones in order, as a subsequence (new event types may appear).
    let mut actual_events = replay.lines.iter().filter(|l| !is_result(l));
    for (index, want) in expected_events.iter().enumerate() {
        if !actual_events.any(|got| matcher::matches(want, got, extra)) {
            problems.push(format!(
                "event {index}: no later line matches {}",
                matcher::short(want)
            ));
        }
    }
    problems
}

/// Replays one case and compares.
pub fn verify_case(config: &GoldenConfig, case: &GoldenCase) -> Result<Vec<String>, HarnessError> {
    Ok(compare(case, &replay(config, case)?))
}

/// Verifies every selected case file; `report` is called once per case.
pub fn verify(
    config: &GoldenConfig,
    report: &mut dyn FnMut(&Verdict),
) -> Result<Vec<Verdict>, HarnessError> {
    let mut verdicts = Vec::new();
    let edition = config.edition()?;
    for file in case_files(&config.dir) {
        if !config.selects(&file.id) {
            continue;
        }
        let problems = match GoldenCase::load(&file.path) {
            // A transcript is recorded under one edition; the SUT is held to its own.
            Ok(case) if u64::from(case.contract) != edition.number() => continue,
            Ok(case) => verify_case(config, &case)?,
            Err(error) => vec![format!("unreadable transcript: {error}")],
        };
        let verdict = Verdict {
            id: file.id,
            problems,
        };
        report(&verdict);
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

/// The recorder's rules for one case (defaults plus the spec's `loose` and `grow`).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub loose: Vec<String>,
    pub grow: Vec<String>,
}

/// Keys whose values change from run to run whatever the case.
const VOLATILE_INT_KEYS: &[&str] = &["waited_ms", "duration_ms", "elapsed_ms", "pid"];

/// A broken VM states only its name, its state, that it has an error, and display "": every
/// other field is the reference's filler.
fn loosen_broken_vms(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("state").and_then(Value::as_str) == Some("broken") {
                for (key, field) in map.iter_mut() {
                    if !matches!(key.as_str(), "name" | "state" | "display") {
                        *field = matcher::shape_only(field);
                    }
                }
            }
            map.values_mut().for_each(loosen_broken_vms);
        }
        Value::Array(items) => items.iter_mut().for_each(loosen_broken_vms),
        _ => {}
    }
}

/// Applies the default and per-case rules to one recorded line.
fn apply_rules(cmd: &str, line: &mut Value, rules: &Rules) {
    // "Branch on code. Never parse message.": wording is not part of the contract.
    matcher::rewrite_at(line, "/error/message", &|_| matcher::any("string"));
    match cmd {
        "help" => matcher::rewrite_at(line, "/data/usage", &|_| matcher::any("string")),
        "version" => matcher::rewrite_at(line, "/data/version", &|_| matcher::any("string")),
        "capabilities" => {
            matcher::rewrite_at(line, "/data/stoat_version", &|_| matcher::any("string"))
        }
        // The reference's own choices, which the contract leaves open: the port a new VM
        // gets, create's defaults and inferences, what a clone may do, the own log's lines.
        "create" => {
            for field in ["ssh_port", "ssh_user", "os", "backend"] {
                matcher::rewrite_at(line, &format!("/data/vm/{field}"), &matcher::shape_only);
            }
        }
        "clone" => {
            for field in ["ssh_port", "allow_exec", "agent_access"] {
                matcher::rewrite_at(line, &format!("/data/vm/{field}"), &matcher::shape_only);
            }
        }
        "logs" if line.pointer("/data/vm").is_none() => {
            matcher::rewrite_at(line, "/data/lines", &|_| matcher::any("array"))
        }
        _ => {}
    }
    loosen_broken_vms(line);
    volatile_keys(line);
    for pattern in &rules.loose {
        matcher::rewrite_at(line, pattern, &matcher::shape_only);
    }
    for pattern in &rules.grow {
        matcher::rewrite_at(line, pattern, &matcher::includes);
    }
}

fn volatile_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if VOLATILE_INT_KEYS.contains(&key.as_str()) && child.is_number() {
                    *child = matcher::any("int");
                } else {
                    volatile_keys(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(volatile_keys),
        _ => {}
    }
}

/// Records a case from its inputs: two replays, differences → `$any`, rules applied, and
/// the matchers of `old` kept where they still hold. Returns the case and warnings.
pub fn record_case(
    config: &GoldenConfig,
    inputs: &GoldenCase,
    rules: &Rules,
    old: Option<&GoldenCase>,
) -> Result<(GoldenCase, Vec<String>), HarnessError> {
    let first = replay(config, inputs)?;
    let second = replay(config, inputs)?;
    let mut warnings = first.oracle_failures.clone();
    if first.exit != second.exit {
        warnings.push(format!(
            "exit differs between two runs ({} vs {})",
            first.ending, second.ending
        ));
    }
    let mut lines: Vec<Value> = if first.lines.len() == second.lines.len() {
        first
            .lines
            .iter()
            .zip(&second.lines)
            .map(|(a, b)| matcher::generalize(a, b))
            .collect()
    } else {
        warnings.push("the two runs printed different numbers of lines".into());
        first.lines.clone()
    };
    if lines.is_empty() {
        warnings.push(format!(
            "no output ({}); stderr: {}",
            first.ending,
            first.stderr.trim()
        ));
        lines.push(Value::Null);
    }
    for line in lines.iter_mut() {
        apply_rules(&inputs.cmd, line, rules);
    }
    if let Some(old) = old {
        if old.lines.len() == lines.len() {
            lines = old
                .lines
                .iter()
                .zip(&lines)
                .map(|(o, n)| matcher::keep_matchers(o, n))
                .collect();
        }
    }
    let case = GoldenCase {
        exit: first.exit.unwrap_or(-1),
        lines,
        ..inputs.clone()
    };
    Ok((case, warnings))
}

/// Turns a cases.toml entry into case inputs: builds its fixture with the sandbox's writers
/// and reads the tree back (redacted).
pub fn inputs_from_spec(
    config: &GoldenConfig,
    spec: &CaseSpec,
) -> Result<GoldenCase, HarnessError> {
    let sandbox = Sandbox::new(SandboxOptions {
        fakes: config.fakes.clone(),
        only_tools: None,
        seed_keys: !spec.no_keys,
        ..SandboxOptions::default()
    })?;
    let redactor = Redactor::for_sandbox(&sandbox);
    for vm in &spec.vms {
        sandbox.write_vm(&vm.fixture())?;
    }
    for name in &spec.broken {
        sandbox.write_broken_vm(name)?;
    }
    let text_tree = |files: &BTreeMap<String, String>| -> BTreeMap<String, Bytes> {
        files
            .iter()
            .map(|(k, v)| (k.clone(), Bytes(v.clone().into_bytes())))
            .collect()
    };
    write_tree(&sandbox.data, &text_tree(&spec.files), &redactor)?;
    Ok(GoldenCase {
        format: FORMAT.into(),
        // Recorded under the edition the SUT speaks (or the one `--contract` names).
        contract: config.edition()?.number() as u32,
        cmd: spec.cmd.clone(),
        about: spec.about.clone(),
        argv: spec.argv.clone(),
        env: spec.env.clone(),
        before: Vec::new(),
        stdin: spec.stdin.as_ref().map(|s| Bytes(s.clone().into_bytes())),
        fixture: snapshot_tree(&sandbox.data, &redactor),
        work: text_tree(&spec.work),
        running: spec.running.clone(),
        tools: spec.tools.clone(),
        exit: 0,
        lines: Vec::new(),
        extra_keys: "allowed".into(),
    })
}

/// Where the current (not frozen) transcript of `cmd`/`name` lives.
pub fn case_path(dir: &Path, cmd: &str, name: &str) -> PathBuf {
    dir.join(cmd).join(format!("{name}.json"))
}

/// What `record` or `bless` should do with a freshly recorded case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Overwrite `<case>.json` (record).
    Replace,
    /// Write `<case>.json.new` when it differs (bless).
    Review,
}

/// One recorded case's fate, for the caller to print.
pub struct Recorded {
    pub id: String,
    pub written: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// Records every selected case: from cases.toml when `from_files` is false, else from the
/// inputs of the existing current (not frozen) files.
pub fn record(
    config: &GoldenConfig,
    from_files: bool,
    mode: WriteMode,
    report: &mut dyn FnMut(&Recorded),
) -> Result<Vec<Recorded>, HarnessError> {
    let mut jobs: Vec<(String, GoldenCase, Rules, PathBuf)> = Vec::new();
    if from_files {
        for file in case_files(&config.dir).into_iter().filter(|f| !f.frozen) {
            if config.selects(&file.id) {
                let case = GoldenCase::load(&file.path)?;
                jobs.push((file.id, case, Rules::default(), file.path));
            }
        }
    } else {
        let list = CaseList::load(&config.dir.join("cases.toml"))?;
        for spec in &list.cases {
            let id = format!("{}/{}", spec.cmd, spec.name);
            if config.selects(&id) {
                let rules = Rules {
                    loose: spec.loose.clone(),
                    grow: spec.grow.clone(),
                };
                let dir = if spec.reference {
                    config.dir.join(REFERENCE_SET)
                } else {
                    config.dir.clone()
                };
                let path = case_path(&dir, &spec.cmd, &spec.name);
                jobs.push((id, inputs_from_spec(config, spec)?, rules, path));
            }
        }
    }
    let mut out = Vec::new();
    for (id, inputs, rules, path) in jobs {
        let old = path
            .exists()
            .then(|| GoldenCase::load(&path).ok())
            .flatten();
        let (case, warnings) = record_case(config, &inputs, &rules, old.as_ref())?;
        let written = write_case(&path, &case, old.as_ref(), mode)?;
        let recorded = Recorded {
            id,
            written,
            warnings,
        };
        report(&recorded);
        out.push(recorded);
    }
    Ok(out)
}

fn write_case(
    path: &Path,
    case: &GoldenCase,
    old: Option<&GoldenCase>,
    mode: WriteMode,
) -> Result<Option<PathBuf>, HarnessError> {
    let target = match mode {
        WriteMode::Replace => path.to_path_buf(),
        WriteMode::Review if old == Some(case) => return Ok(None),
        WriteMode::Review => {
            let mut name = path.as_os_str().to_owned();
            name.push(".new");
            PathBuf::from(name)
        }
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| HarnessError::io(parent, e))?;
    }
    std::fs::write(&target, case.render()).map_err(|e| HarnessError::io(&target, e))?;
    Ok(Some(target))
}
