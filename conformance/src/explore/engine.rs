//! Owns running one history against the SUT in a fresh sandbox and judging every step
//! three ways: the oracle (the universal rules), the model's prediction for the step's own
//! answer, and a read-back after it (`get` and `forward show` of the VM it named, its
//! snapshot list after a snapshot command on a disk VM, `status` after a project command,
//! `images` after a pull, then `ls`) that must agree with the model's new state.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::model::{self, Allowed, Cmd, Model, IMAGE};
use crate::capture::Bytes;
use crate::error::HarnessError;
use crate::finding::Level;
use crate::oracle::{Context, Oracle};
use crate::run::sut::{SpawnRequest, StdinPlan, Sut};
use crate::sandbox::{Sandbox, SandboxOptions};
use crate::spec::Edition;

/// The model's verdict on one answer: the new state and the section and words it rests
/// on, or why not.
type Verdict = Result<(Model, &'static str, &'static str), String>;

/// What running a history needs.
pub struct Engine {
    pub sut: Sut,
    /// The `stoat-fake` binary (the sandbox's fake tools), as the suite's scenarios have.
    pub fakes: Option<PathBuf>,
    pub timeout: Duration,
    pub edition: Edition,
    /// The SUT profile's data-root variable (`None`: `STOAT_HOME`).
    pub data_root_var: Option<String>,
    /// Extra environment from the SUT profile (`run --profile`), after the suite's own.
    pub profile_env: Vec<(String, String)>,
    /// Where the SUT's wall time is summed, in microseconds, when a run inside `run` counts
    /// it (the suite's overhead is what is not SUT time).
    pub sut_clock: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// One invocation of a history run: a step or a read-back after one.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The index of the history step it is or follows.
    pub step: usize,
    pub cmd: Cmd,
    pub read_back: bool,
    /// Every answer the model allowed, described.
    pub expected: Vec<String>,
    /// The result line as answered (or how the process ended).
    pub answer: String,
    /// Why it failed, if it did.
    pub problem: Option<String>,
    /// The contract section the model's transition rests on.
    pub spec: &'static str,
    /// The contract's words it rests on, verbatim.
    pub quote: &'static str,
}

/// A history's run: every invocation in order; the last failed when `failed`.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub log: Vec<Invocation>,
    pub failed: bool,
    /// The data root before the first step, redacted (for a transcript's fixture).
    pub fixture: std::collections::BTreeMap<String, Bytes>,
}

impl Run {
    /// The failing invocation, if any.
    pub fn failure(&self) -> Option<&Invocation> {
        self.log.last().filter(|_| self.failed)
    }
}

/// One invocation's answer before the model judges it.
#[derive(Clone, Debug)]
pub struct Answered {
    /// The result line as answered (or how the process ended).
    pub answer: String,
    pub result: Option<Value>,
    /// A failure whatever the state: an oracle MUST finding, or no result line.
    pub problem: Option<String>,
}

impl Engine {
    /// A fresh fake-tier sandbox (the fake tools when the engine has them) holding the image
    /// every history creates from and the fake tools' script ([`model::fake_script`]).
    pub fn sandbox(&self) -> Result<Sandbox, HarnessError> {
        let sandbox = Sandbox::new(SandboxOptions {
            fakes: self.fakes.clone(),
            seed_keys: true,
            data_root_var: self.data_root_var.clone(),
            profile_env: self.profile_env.clone(),
            ..SandboxOptions::default()
        })?;
        let isos = sandbox.data.join("isos");
        std::fs::create_dir_all(&isos).map_err(|e| HarnessError::io(&isos, e))?;
        let image = isos.join(IMAGE);
        std::fs::write(&image, b"fake iso\n").map_err(|e| HarnessError::io(&image, e))?;
        let script = model::fake_script().to_string();
        std::fs::write(&sandbox.fake_script, script)
            .map_err(|e| HarnessError::io(&sandbox.fake_script, e))?;
        Ok(sandbox)
    }

    /// Replays a golden transcript as `golden verify` does; returns its problems.
    pub fn replay(&self, case: &crate::golden::GoldenCase) -> Result<Vec<String>, HarnessError> {
        let config = crate::golden::GoldenConfig {
            sut: self.sut.clone(),
            fakes: self.fakes.clone(),
            dir: PathBuf::new(),
            timeout: self.timeout,
            filter: Vec::new(),
            reference: false,
            edition: Some(self.edition),
        };
        crate::golden::engine::verify_case(&config, case)
    }

    /// Runs `history` in a fresh sandbox, stopping at the first invocation that fails.
    pub fn run(&self, history: &[Cmd]) -> Result<Run, HarnessError> {
        let sandbox = self.sandbox()?;
        let redactor = crate::golden::redact::Redactor::for_sandbox(&sandbox);
        let mut run = Run {
            fixture: crate::golden::engine::snapshot_tree(&sandbox.data, &redactor),
            ..Run::default()
        };
        let mut state = Model::default();
        for (step, cmd) in history.iter().enumerate() {
            if !self.check(&sandbox, &mut state, cmd, step, false, &mut run)? {
                return Ok(run);
            }
            let mut reads = Vec::new();
            if let Some(name) = cmd.target() {
                reads.push(Cmd::Get { name: name.into() });
                if let Some(vm) = state.vms.get(name) {
                    reads.push(Cmd::ForwardShow { name: name.into() });
                    if cmd.is_snapshot() && vm.disk == Some(true) {
                        reads.push(Cmd::SnapshotList { name: name.into() });
                    }
                }
            }
            match cmd {
                Cmd::Init | Cmd::ProjectDown => reads.push(Cmd::Status),
                Cmd::Pull { .. } => reads.push(Cmd::Images),
                _ => {}
            }
            reads.push(Cmd::Ls);
            for read in &reads {
                if !self.check(&sandbox, &mut state, read, step, true, &mut run)? {
                    return Ok(run);
                }
            }
        }
        Ok(run)
    }

    /// Runs one invocation and judges it; false when it failed (the run stops there).
    fn check(
        &self,
        sandbox: &Sandbox,
        state: &mut Model,
        cmd: &Cmd,
        step: usize,
        read_back: bool,
        run: &mut Run,
    ) -> Result<bool, HarnessError> {
        let allowed = state.predict(cmd);
        let (answer, verdict) = self.invoke(sandbox, cmd, &allowed)?;
        let (problem, spec, quote) = match verdict {
            Ok((next, spec, quote)) => {
                *state = next;
                (None, spec, quote)
            }
            Err(problem) => {
                let first = allowed.first();
                (
                    Some(problem),
                    first.map(|a| a.spec).unwrap_or(""),
                    first.map(|a| a.quote).unwrap_or(""),
                )
            }
        };
        let failed = problem.is_some();
        run.log.push(Invocation {
            step,
            cmd: cmd.clone(),
            read_back,
            expected: allowed.iter().map(Allowed::describe).collect(),
            answer,
            problem,
            spec,
            quote,
        });
        run.failed = failed;
        Ok(!failed)
    }

    fn invoke(
        &self,
        sandbox: &Sandbox,
        cmd: &Cmd,
        allowed: &[Allowed],
    ) -> Result<(String, Verdict), HarnessError> {
        let answered = self.answer(sandbox, cmd)?;
        if let Some(problem) = answered.problem {
            return Ok((answered.answer, Err(problem)));
        }
        let Some(result) = answered.result else {
            return Ok((answered.answer, Err("no result line".into())));
        };
        Ok((answered.answer, model::judge(allowed, &result)))
    }

    /// Runs one command in `sandbox` and judges what holds whatever the state: the oracle's
    /// universal rules and a result line at all. The model's judgement is the caller's.
    pub fn answer(&self, sandbox: &Sandbox, cmd: &Cmd) -> Result<Answered, HarnessError> {
        let args = cmd.argv();
        let spawned = self.sut.spawn(SpawnRequest {
            args: &args,
            env: &sandbox.env(),
            cwd: &sandbox.work,
            stdin: StdinPlan::Null,
            timeout: self.timeout,
            json: true,
            signal: None,
        })?;
        let capture = spawned.capture;
        if let Some(clock) = &self.sut_clock {
            clock.fetch_add(
                capture.duration_ms * 1000,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let context = Context {
            expect_cmd: Some(cmd.cmd().to_string()),
            canaries: sandbox.canaries(),
            edition: self.edition,
        };
        let judgement = Oracle::new().judge(&capture, &context);
        let stdout = String::from_utf8_lossy(&capture.stdout.0).into_owned();
        let result = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|l| l.get("type").and_then(Value::as_str) == Some("result"));
        let answer = match &result {
            Some(line) => line.to_string(),
            None => format!("no result line ({})", capture.ending.describe()),
        };
        let problem = match judgement.findings.iter().find(|f| f.level == Level::Must) {
            Some(finding) => Some(format!(
                "oracle {} at {}: {}",
                finding.check_id, finding.pointer, finding.message
            )),
            None if result.is_none() => Some("no result line".into()),
            None => None,
        };
        Ok(Answered {
            answer,
            result,
            problem,
        })
    }
}
