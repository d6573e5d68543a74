//! Owns [`Case`]: what one check's scenario works with. It makes sandboxes, runs the SUT
//! (every invocation goes through the oracle), and records the scenario's own findings.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::capture::Capture;
use crate::error::HarnessError;
use crate::finding::{CheckId, Finding};
use crate::ids;
use crate::oracle::{Context, Judgement, Oracle, Outcome};
use crate::sandbox::{changes_between, Sandbox, SandboxOptions, TreeSnapshot};
use crate::spec::Edition;

use super::sut::{SpawnRequest, StdinPlan, Sut};

/// What every case of a run shares.
#[derive(Clone)]
pub struct RunEnv {
    pub sut: Sut,
    pub oracle: std::sync::Arc<Oracle>,
    /// The `stoat-fake` binary.
    pub fakes: Option<std::path::PathBuf>,
    pub timeout: Duration,
    pub seed: u64,
    /// The real tier's guest directory (output of conformance/guest/build.sh).
    pub guest: Option<std::path::PathBuf>,
    /// The contract edition every invocation is judged by.
    pub edition: Edition,
    /// In the migration view, the edition the SUT speaks: every invocation is judged by it
    /// too, so a failure can be told apart from one that edition also forbids.
    pub also_judge: Option<Edition>,
    /// What the implementer declared about the knobs the contract does not name.
    pub profile: std::sync::Arc<super::profile::Profile>,
    /// `repro`: keep every sandbox and stop the scenario after this invocation.
    pub stop: Option<super::stop::StopAt>,
}

/// One invocation to make.
#[derive(Clone, Debug, Default)]
pub struct Inv {
    pub args: Vec<String>,
    pub json: bool,
    pub expect_cmd: Option<String>,
    pub stdin: Option<Vec<u8>>,
    /// Overrides the run's per-invocation timeout (a real boot needs minutes).
    pub timeout: Option<Duration>,
    /// A signal sent to the SUT while it runs.
    pub signal: Option<super::sut::SignalPlan>,
}

impl Inv {
    /// `--json <args>`, expecting the `cmd` the first argument names.
    pub fn json(args: &[&str]) -> Self {
        let args: Vec<String> = std::iter::once("--json")
            .chain(args.iter().copied())
            .map(str::to_string)
            .collect();
        let expect_cmd = expected_cmd(&args);
        Inv {
            args,
            json: true,
            expect_cmd,
            stdin: None,
            timeout: None,
            signal: None,
        }
    }

    /// Exactly `args`, in `--json` mode (the caller placed `--json` itself).
    pub fn json_raw(args: &[&str]) -> Self {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let expect_cmd = expected_cmd(&args);
        Inv {
            args,
            json: true,
            expect_cmd,
            stdin: None,
            timeout: None,
            signal: None,
        }
    }

    /// Exactly `args`, in human mode (the oracle does not apply).
    pub fn human(args: &[&str]) -> Self {
        Inv {
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    pub fn cmd(mut self, cmd: Option<&str>) -> Self {
        self.expect_cmd = cmd.map(str::to_string);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    pub fn args(mut self, more: &[String]) -> Self {
        self.args.extend(more.iter().cloned());
        self
    }
}

/// The contract `cmd` a command line should answer with, when this suite knows it.
pub fn expected_cmd(args: &[String]) -> Option<String> {
    let first = args.iter().find(|a| !a.starts_with('-'))?;
    let cmd = match first.as_str() {
        "provision" => "apply",
        known @ ("ls" | "get" | "create" | "update" | "up" | "down" | "wait" | "rm" | "clone"
        | "exec" | "ssh-command" | "cp" | "forward" | "images" | "pull" | "snapshot"
        | "prune" | "apply" | "recipes" | "check-recipes" | "guest" | "recipe"
        | "screenshot" | "logs" | "doctor" | "version" | "help" | "capabilities"
        | "init" | "status") => known,
        _ => return None,
    };
    Some(cmd.to_string())
}

/// The `cmd` an invocation should answer with in `edition`: contract 2's `provision` is a
/// command of its own, contract 3's answers as `apply`.
fn edition_cmd(inv: &Inv, edition: Edition) -> Option<String> {
    let provision = inv
        .args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
        == Some("provision");
    match edition {
        Edition::V2 if provision && inv.expect_cmd.as_deref() == Some("apply") => {
            Some("provision".to_string())
        }
        _ => inv.expect_cmd.clone(),
    }
}

/// One invocation made, judged.
pub struct Ran {
    pub capture: Capture,
    pub judgement: Judgement,
    /// For watched stdin: the bytes the SUT did not read.
    pub stdin_unread: Option<Vec<u8>>,
    /// With [`Inv::signal`]: whether the signal was sent.
    pub signaled: Option<bool>,
}

impl Ran {
    /// What the invocation answered, in words for a finding: `error usage`, `ok:true`, or
    /// that no result line came (never Rust's debug text).
    pub fn answer(&self) -> String {
        match &self.judgement.outcome {
            Outcome::Ok => "ok:true".to_string(),
            Outcome::Failed { code: Some(code) } => format!("error {code}"),
            Outcome::Failed { code: None } => "ok:false without an error code".to_string(),
            Outcome::Crashed => format!("no result line ({})", self.capture.ending.describe()),
            Outcome::Human => "human output".to_string(),
        }
    }

    pub fn data(&self) -> Option<&Value> {
        self.judgement.data()
    }

    pub fn code(&self) -> Option<&str> {
        self.judgement.code()
    }

    pub fn exit(&self) -> Option<i32> {
        self.capture.ending.code()
    }
}

/// One invocation as a report keeps it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct InvocationRecord {
    pub capture: Capture,
    pub outcome: Outcome,
}

/// The working state of one check.
pub struct Case<'a> {
    pub id: CheckId,
    env: &'a RunEnv,
    pub findings: Vec<Finding>,
    /// Oracle findings with the index of the invocation they came from.
    pub oracle_findings: Vec<(usize, Finding)>,
    pub exercised: BTreeSet<&'static str>,
    pub invocations: Vec<InvocationRecord>,
    pub crashed: bool,
    pub skipped: Option<String>,
    /// Per invocation (by index), the oracle rules the `also_judge` edition flagged there.
    pub also_flagged: Vec<BTreeSet<String>>,
    /// Microseconds the SUT ran in invocations a scenario watched itself (`catalog::live`),
    /// which [`Case::run`] does not record: the benchmark counts them as SUT time.
    pub watched_us: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The invocation (by index) the first finding came after: the failing one.
    pub first_failing: Option<usize>,
}

impl<'a> Case<'a> {
    pub fn new(id: CheckId, env: &'a RunEnv) -> Self {
        Case {
            id,
            env,
            findings: Vec::new(),
            oracle_findings: Vec::new(),
            exercised: BTreeSet::new(),
            invocations: Vec::new(),
            crashed: false,
            skipped: None,
            also_flagged: Vec::new(),
            watched_us: Default::default(),
            first_failing: None,
        }
    }

    pub fn seed(&self) -> u64 {
        self.env.seed
    }

    /// A sandbox with the fake tools on PATH and pre-seeded keys.
    pub fn sandbox(&self) -> Result<Sandbox, HarnessError> {
        self.sandbox_from(SandboxOptions {
            fakes: self.env.fakes.clone(),
            only_tools: None,
            seed_keys: true,
            ..Default::default()
        })
    }

    /// The system under test (for the invocations a scenario watches while they run).
    pub fn sut(&self) -> &Sut {
        &self.env.sut
    }

    /// The run's per-invocation timeout.
    pub fn timeout(&self) -> Duration {
        self.env.timeout
    }

    /// A sandbox with these options and the SUT profile's data-root variable and environment.
    pub fn sandbox_from(&self, options: SandboxOptions) -> Result<Sandbox, HarnessError> {
        Sandbox::new(SandboxOptions {
            data_root_var: Some(self.env.profile.data_root_var.clone()),
            profile_env: self
                .env
                .profile
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ..options
        })
    }

    /// The SUT profile.
    pub fn profile(&self) -> &super::profile::Profile {
        &self.env.profile
    }

    /// The guest directory of the real tier (`--guest`), when given.
    pub fn guest(&self) -> Option<&std::path::Path> {
        self.env.guest.as_deref()
    }

    /// A real-tier sandbox: PATH `/usr/bin:/bin`, no fakes, no seeded keys, its root under
    /// `/var/tmp` (user xattrs for 9p shares; not a tmpfs) or `STOAT_CONFORMANCE_REAL_TMP`.
    pub fn real_sandbox(&self) -> Result<Sandbox, HarnessError> {
        let parent = std::env::var_os("STOAT_CONFORMANCE_REAL_TMP")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from("/var/tmp"));
        self.sandbox_from(SandboxOptions {
            real_tools: true,
            parent: Some(parent),
            ..Default::default()
        })
    }

    /// A sandbox with an empty PATH (no host tools at all) and pre-seeded keys.
    pub fn bare_sandbox(&self) -> Result<Sandbox, HarnessError> {
        self.sandbox_from(SandboxOptions {
            fakes: self.env.fakes.clone(),
            only_tools: Some(Vec::new()),
            seed_keys: true,
            ..Default::default()
        })
    }

    /// Marks this check skipped, with the reason reported (temporary paths shown as
    /// `<temp>`, so one cause reads the same in every check).
    pub fn skip(&mut self, reason: impl Into<String>) {
        self.skipped = Some(crate::report::text::without_temp_paths(&reason.into()));
    }

    /// The `stoat-fake` binary, when the run has one.
    pub fn fakes(&self) -> Option<std::path::PathBuf> {
        self.env.fakes.clone()
    }

    /// The contract edition this run judges by. A scenario may read it only to pick what the
    /// judged edition states (a command list, a field that one edition lacks).
    pub fn edition(&self) -> Edition {
        self.env.edition
    }

    /// Whether the fake tools are available (fake-tier scenarios need them).
    pub fn has_fakes(&self) -> bool {
        self.env.fakes.is_some()
    }

    /// Runs the SUT once in `sandbox`; the oracle judges it.
    pub fn run(&mut self, sandbox: &Sandbox, inv: Inv) -> Result<Ran, HarnessError> {
        let env = sandbox.env();
        let outside_before = sandbox.outside_snapshot();
        let stdin = match &inv.stdin {
            Some(bytes) => StdinPlan::Watched(bytes.clone()),
            None => StdinPlan::Null,
        };
        let spawned = self.env.sut.spawn(SpawnRequest {
            args: &inv.args,
            env: &env,
            cwd: &sandbox.work,
            stdin,
            timeout: inv
                .timeout
                .unwrap_or(self.env.timeout)
                .max(self.env.timeout),
            json: inv.json,
            signal: inv.signal.clone(),
        })?;
        let context = Context {
            expect_cmd: edition_cmd(&inv, self.env.edition),
            canaries: sandbox.canaries(),
            edition: self.env.edition,
        };
        let mut judgement = self.env.oracle.judge(&spawned.capture, &context);
        // A process the suite itself signalled, ended by that signal, "died" in the consumer
        // contract's words, which it allows: not a crash. Whether it should have answered
        // is the signal checks' (a SHOULD), not ENV.result-present's.
        let died_of_our_signal = spawned.signaled == Some(true)
            && inv.signal.as_ref().is_some_and(|plan| {
                spawned.capture.ending == crate::capture::Ending::Signaled(plan.signal)
            });
        if died_of_our_signal {
            judgement
                .findings
                .retain(|f| f.check_id != ids::ENV_RESULT_PRESENT.name);
        }
        let index = self.invocations.len();
        if let Some(edition) = self.env.also_judge {
            let other = Context {
                edition,
                expect_cmd: edition_cmd(&inv, edition),
                ..context.clone()
            };
            let flagged = self.env.oracle.judge(&spawned.capture, &other).findings;
            self.also_flagged
                .push(flagged.iter().map(|f| f.check_id.clone()).collect());
        }
        self.oracle_findings
            .extend(judgement.findings.iter().cloned().map(|f| (index, f)));
        self.exercised.extend(judgement.exercised.iter().copied());
        let granted = granted_writes(&inv, &judgement);
        self.judge_outside_writes(index, &outside_before, sandbox, &granted);
        self.invocations.push(InvocationRecord {
            capture: truncated(&spawned.capture),
            outcome: judgement.outcome.clone(),
        });
        if let Some(stop) = &self.env.stop {
            // `repro`: this sandbox stays for the implementer, and the invocation is the
            // latest one reached.
            sandbox.keep();
            if let Ok(mut reached) = stop.reached.lock() {
                *reached = Some(super::stop::Reached {
                    root: sandbox.root.clone(),
                    cwd: sandbox.work.clone(),
                    env: env.clone(),
                    program: self.env.sut.program.clone(),
                    args: self
                        .env
                        .sut
                        .leading
                        .iter()
                        .chain(&inv.args)
                        .cloned()
                        .collect(),
                    capture: spawned.capture.clone(),
                });
            }
            if stop.at == Some(index) {
                return Err(HarnessError::Stopped);
            }
        }
        Ok(Ran {
            capture: spawned.capture,
            judgement,
            stdin_unread: spawned.stdin_unread,
            signaled: spawned.signaled,
        })
    }

    /// SANDBOX.no-writes-outside: the invocation changed nothing outside the areas it may
    /// write (HOME, the canary dir, the fake tools, the sandbox root are all watched).
    fn judge_outside_writes(
        &mut self,
        index: usize,
        before: &TreeSnapshot,
        sandbox: &Sandbox,
        granted: &[std::path::PathBuf],
    ) {
        const ID: CheckId = ids::SANDBOX_NO_WRITES_OUTSIDE;
        self.exercised.insert(ID.name);
        let mut after = sandbox.outside_snapshot();
        let mut before = before.clone();
        // A granted file and the directories created to hold it are the command's job.
        for snapshot in [&mut before, &mut after] {
            snapshot.retain(|path, _| !granted.iter().any(|file| file.starts_with(path)));
        }
        let changes = changes_between(&before, &after);
        if !changes.is_empty() {
            if let Some(flagged) = self.also_flagged.get_mut(index) {
                flagged.insert(ID.name.to_string());
            }
            let finding = Finding::new(
                ID,
                "filesystem",
                format!(
                    "wrote outside STOAT_HOME, TMPDIR and its cwd: {}",
                    changes.join(", ")
                ),
            );
            self.oracle_findings.push((index, finding));
        }
    }

    /// Shorthand: `--json <args>`.
    pub fn json(&mut self, sandbox: &Sandbox, args: &[&str]) -> Result<Ran, HarnessError> {
        self.run(sandbox, Inv::json(args))
    }

    /// Records a finding of this check.
    pub fn fail(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        if self.findings.is_empty() {
            self.first_failing = self.invocations.len().checked_sub(1);
        }
        self.findings.push(Finding::new(self.id, pointer, message));
    }

    /// Records a finding unless `holds`.
    pub fn ensure(&mut self, holds: bool, pointer: &str, message: impl Into<String>) -> bool {
        if !holds {
            self.fail(pointer, message);
        }
        holds
    }

    /// Expects `ok:true` and returns `data`; otherwise records why not.
    pub fn expect_ok<'r>(&mut self, ran: &'r Ran) -> Option<&'r Value> {
        match &ran.judgement.outcome {
            Outcome::Ok => ran.data(),
            Outcome::Failed { code } => {
                let message = ran
                    .judgement
                    .result
                    .as_ref()
                    .and_then(|r| r.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.fail(
                    "result",
                    format!(
                        "`{}`: expected ok:true, got error {:?}: {message}",
                        ran.capture.argv_display(),
                        code.as_deref().unwrap_or("?")
                    ),
                );
                None
            }
            Outcome::Crashed => {
                self.crash(ran);
                None
            }
            Outcome::Human => None,
        }
    }

    /// Expects `ok:false` with `code` (exit status is the oracle's business).
    pub fn expect_error(&mut self, ran: &Ran, code: &str) -> bool {
        match &ran.judgement.outcome {
            Outcome::Failed { code: Some(actual) } if actual == code => true,
            Outcome::Failed { code: actual } => {
                self.fail(
                    "/error/code",
                    format!(
                        "`{}`: expected error {code:?}, got {:?}",
                        ran.capture.argv_display(),
                        actual.as_deref().unwrap_or("<none>")
                    ),
                );
                false
            }
            Outcome::Ok => {
                self.fail(
                    "/ok",
                    format!(
                        "`{}`: expected error {code:?}, got ok:true",
                        ran.capture.argv_display()
                    ),
                );
                false
            }
            Outcome::Crashed => {
                self.crash(ran);
                false
            }
            Outcome::Human => false,
        }
    }

    /// Expects a specific exit status.
    pub fn expect_exit(&mut self, ran: &Ran, status: i32) -> bool {
        let holds = ran.exit() == Some(status);
        if !holds {
            self.fail(
                "exit",
                format!(
                    "`{}`: expected exit {status}, got {}",
                    ran.capture.argv_display(),
                    ran.capture.ending.describe()
                ),
            );
        }
        holds
    }

    fn crash(&mut self, ran: &Ran) {
        self.crashed = true;
        let stderr = String::from_utf8_lossy(&ran.capture.stderr.0);
        self.fail(
            "stdout",
            format!(
                "`{}`: no result line ({}); stderr: {}",
                ran.capture.argv_display(),
                ran.capture.ending.describe(),
                crate::oracle::excerpt(stderr.trim())
            ),
        );
    }
}

/// Keeps reports small: at most 16 KiB of each stream.
fn truncated(capture: &Capture) -> Capture {
    const MAX: usize = 16 * 1024;
    let mut out = capture.clone();
    for bytes in [&mut out.stdout.0, &mut out.stderr.0] {
        if bytes.len() > MAX {
            bytes.truncate(MAX);
        }
    }
    out
}

/// Files outside the data root an invocation is asked to write: `mcp install` edits the
/// client's configuration, whose path it answers (json-v3#per-command-data: `mcp install
/// {"client":"cursor","path":"/home/u/.cursor/mcp.json",...}`), so that file (and the
/// directories holding it) may change.
fn granted_writes(inv: &Inv, judgement: &Judgement) -> Vec<std::path::PathBuf> {
    let words: Vec<&str> = inv
        .args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if words.windows(2).any(|w| w == ["mcp", "install"]) {
        if let Some(path) = judgement
            .data()
            .and_then(|d| d.get("path"))
            .and_then(Value::as_str)
        {
            return vec![std::path::PathBuf::from(path)];
        }
    }
    Vec::new()
}
