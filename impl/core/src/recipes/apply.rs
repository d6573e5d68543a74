//! `apply` (and `up`'s apply after boot): the provision lock, the plan, the run of each recipe
//! over ssh with its log streamed as `stage`/`log` events, outputs read back, health checks,
//! and the per-recipe record in vm.toml. docs/contract.md behaviour#recipes and "Markers → events";
//! json-v3#per-command-data: `apply`, `apply --dry-run`, "Streaming". Decisions: docs/decisions/apply.md.
//!
//! The log `<vm>/last-provision.log` is truncated per run and reads:
//!
//! ```text
//! waiting for ssh on port 2200…
//!
//! === recipe base ===
//! <guest output>
//! health base: ok
//!
//! done
//! ```
//!
//! or ends with `FAILED: ...`. Every line written there is also a `log` event, in order, and a
//! marker line stoat writes is preceded by a `stage` event. `wait --until applied` reads the
//! last non-blank line (`done`).

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use stoat_wire::dto::{ApplyData, ApplyDryRunData, LogData, StageData};

use super::manifest::{Manifest, Runtime};
use super::params::{self, ParamTables};
use super::plan::{self, Step};
use super::seed;
use crate::guests::{self, Registry};
use crate::hint::Spelling;
use crate::ssh::guest_shell::GuestShell;
use crate::vm::{self, AppliedRecipe, StoredVm};
use crate::vm::{Backend, Mode};
use crate::{lock, qemu, Cancel, Env, Error, EventSink, Result, Root};

// The VM directory holds the last apply's log, its failure (JSON `{code, message}`, written
// beside the log when an apply fails and removed when the next one starts, so `wait --until
// applied` answers with that failure instead of waiting it out) and the lock an apply holds:
// VmDir's apply_log, apply_failure and apply_lock.
/// How long apply waits until it can log in to the guest (upstream's value, made for KVM).
pub const SSH_WAIT: Duration = Duration::from_secs(90);
/// The same under TCG: a systemd distribution with cloud-init needs 1-3 minutes to answer
/// ssh without KVM on a 2-core host, so 90 s would fail `up` on a VM that is fine.
pub const TCG_SSH_WAIT: Duration = Duration::from_secs(600);
/// How long the first-boot check may wait for cloud-init to finish.
const FIRST_BOOT_WAIT: Duration = Duration::from_secs(900);
/// The most one recipe's outputs file may hold, in bytes; a larger one fails the recipe
/// before anything is recorded (docs/decisions/runtime.md "Guest-fed buffers").
pub const OUTPUTS_LIMIT: usize = 16 << 10;

/// The most all of a VM's recorded outputs may add up to, in bytes: a quarter of the
/// vm.toml limit, so outputs alone never make a VM unreadable.
pub const ALL_OUTPUTS_LIMIT: usize = 256 << 10;

/// How long reading outputs back may take.
const READ_BACK: Duration = Duration::from_secs(30);
/// How long the dry run's read of the first-boot markers may take.
const DRY_RUN_READ: Duration = Duration::from_secs(10);
/// How long stopping a cancelled script in the guest may take (the signal grace is 5 s).
const STOP_REMOTE: Duration = Duration::from_secs(3);

/// `skipped_reason` when another apply holds the lock.
pub const SKIP_LOCKED: &str = "an apply is already running";
/// `skipped_reason` when cloud-init ran everything at first boot.
pub const SKIP_FIRST_BOOT: &str = "applied at first boot by cloud-init";

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct ApplyRequest {
    pub only: Vec<String>,
    /// Recipe parameters set for this apply.
    pub params: Vec<params::ParamSetting>,
}

/// `apply --dry-run`: the plan, computed host-side; the VM need not be running. One guest
/// read is the exception: on a running cloud VM with recipes never recorded, the first-boot
/// markers are listed (read-only, bounded) so that the plan says what the apply would do.
pub fn dry_run(
    root: &Root,
    env: &Env,
    name: &str,
    request: &ApplyRequest,
    cancel: &Cancel,
) -> Result<ApplyDryRunData> {
    let stored = vm::load_ok(root, name)?;
    let (catalog, registry, steps) = plan_for(root, &stored, request)?;
    let mut plan: Vec<_> = steps.iter().map(Step::to_wire).collect();
    if awaits_first_boot(&stored, &steps) && stored.running_pid().is_some() {
        if let Some((view, detected)) =
            first_boot_view(root, env, &stored, &catalog, &registry, cancel)
        {
            let (_, _, steps) = plan_for(root, &view, request)?;
            plan = steps
                .iter()
                .map(|step| {
                    let mut row = step.to_wire();
                    if !step.run && detected.contains(&step.name) {
                        row.reason = SKIP_FIRST_BOOT.to_owned();
                    }
                    row
                })
                .collect();
        }
    }
    Ok(ApplyDryRunData {
        vm: stored.name,
        dry_run: true,
        plan,
    })
}

/// A cloud VM with a recipe to run that was never recorded: its first boot may have run it.
fn awaits_first_boot(stored: &StoredVm, steps: &[Step]) -> bool {
    stored.config.backend == Backend::Cloudinit
        && steps
            .iter()
            .any(|s| s.run && !stored.config.applied.contains_key(&s.name))
}

/// The plan the seed was built from: the stored params, nothing given, nothing narrowed.
fn seed_steps(
    catalog: &super::Catalog,
    registry: &Registry,
    stored: &StoredVm,
) -> Result<Vec<Step>> {
    plan::plan(catalog, registry, stored, &[], &ParamTables::new())
}

/// For the dry run: `stored` as if the recipes the guest marks as run at first boot were
/// recorded (what a real apply records first), and their names. `None` when the guest cannot
/// be asked: the plan then stays host-side.
fn first_boot_view(
    root: &Root,
    env: &Env,
    stored: &StoredVm,
    catalog: &super::Catalog,
    registry: &Registry,
    cancel: &Cancel,
) -> Option<(StoredVm, Vec<String>)> {
    let escalate = registry
        .get(&stored.config.os)
        .map(|g| g.escalate.clone())
        .unwrap_or_default();
    // A guest that cannot be asked at once leaves the plan host-side: no waiting here.
    let shell = GuestShell::new(root, env, stored, &escalate)
        .ok()?
        .retrying_for(Duration::ZERO);
    let captured = shell
        .capture(&list_markers(false), DRY_RUN_READ, cancel)
        .ok()?;
    if !captured.success() {
        return None;
    }
    let markers: Vec<&str> = captured.stdout.lines().map(str::trim).collect();
    let mut view = stored.clone();
    let mut detected = Vec::new();
    for step in seed_steps(catalog, registry, stored).ok()? {
        if step.run && markers.contains(&step.name.as_str()) {
            let record = applied_record(&step, Default::default(), String::new());
            view.config.applied.insert(step.name.clone(), record);
            detected.push(step.name);
        }
    }
    Some((view, detected))
}

/// The guest script that lists the first-boot markers, after cloud-init finished when `wait`.
fn list_markers(wait: bool) -> String {
    let wait = if wait {
        "if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi\n"
    } else {
        ""
    };
    format!("{wait}ls -1 {} 2>/dev/null || true\n", seed::APPLIED_DIR)
}

/// What vm.toml records for a recipe that ran as `step` planned it.
fn applied_record(
    step: &Step,
    outputs: std::collections::BTreeMap<String, String>,
    health: String,
) -> AppliedRecipe {
    AppliedRecipe {
        version: step.manifest.version.clone(),
        hash: step.hash.clone(),
        at: Some(toml::Value::String(crate::log::humanish_now())),
        params: params::recorded(&step.params),
        outputs,
        health,
    }
}

fn plan_for(
    root: &Root,
    stored: &StoredVm,
    request: &ApplyRequest,
) -> Result<(super::Catalog, Registry, Vec<Step>)> {
    let registry = guests::registry(root)?;
    let catalog = super::load_catalog(root)?;
    let targets = if request.only.is_empty() {
        &stored.config.recipes
    } else {
        &request.only
    };
    let given: ParamTables = if request.params.is_empty() {
        ParamTables::new()
    } else {
        let tables = params::tables_of(&request.params, targets)?;
        if let Some(recipe) = tables.keys().find(|r| !stored.config.recipes.contains(r)) {
            return Err(Error::InvalidSpec(format!(
                "a parameter names {recipe}, which is not one of {}'s recipes",
                stored.name
            )));
        }
        tables
    };
    let steps = plan::plan(&catalog, &registry, stored, &request.only, &given)?;
    Ok((catalog, registry, steps))
}

/// `apply <vm>`: runs what the plan says to run, streaming events through `sink`; a failure
/// left for `wait --until applied` is in the caller's `spelling`.
pub fn apply(
    root: &Root,
    env: &Env,
    name: &str,
    request: &ApplyRequest,
    sink: &dyn EventSink,
    cancel: &Cancel,
    spelling: &dyn Spelling,
) -> Result<ApplyData> {
    let stored = vm::load_ok(root, name)?;
    let Some(_lock) = lock::try_exclusive(&stored.files().apply_lock())? else {
        return Ok(skipped(&stored.name, SKIP_LOCKED));
    };
    if stored.running_pid().is_none() {
        return Err(Error::NotRunning { name: stored.name });
    }
    let (_catalog, registry, steps) = plan_for(root, &stored, request)?;
    if steps.is_empty() {
        return Ok(skipped(
            &stored.name,
            &format!("{} has no recipes", stored.name),
        ));
    }
    let first_boot = awaits_first_boot(&stored, &steps);
    if !first_boot && !steps.iter().any(|s| s.run) {
        return Ok(skipped(
            &stored.name,
            "nothing to run: every recipe is already applied or manual",
        ));
    }
    let escalate = registry
        .get(&stored.config.os)
        .map(|g| g.escalate.clone())
        .unwrap_or_default();
    let shell = GuestShell::new(root, env, &stored, &escalate)?;
    let mut log = ProvisionLog::create(&stored, sink)?;
    let run = Run {
        root,
        env,
        stored: &stored,
        catalog: &_catalog,
        registry: &registry,
        shell: &shell,
        request,
        cancel,
        ssh_wait: ssh_wait(env),
    };
    match run.execute(&mut log, steps, first_boot) {
        Ok(outcome) => Ok(outcome.into_data(stored.name.clone())),
        Err(err) => {
            let text = match &err {
                Error::Canceled => "CANCELLED: apply was interrupted".to_owned(),
                other => format!("FAILED: {}", failure_text(other)),
            };
            log.line(&text);
            record_failure(&stored, &err, spelling);
            Err(err)
        }
    }
}

/// Leaves the failure beside the log for `wait --until applied` (best effort: the caller
/// gets the error either way).
fn record_failure(stored: &StoredVm, err: &Error, spelling: &dyn Spelling) {
    let wire = err.to_wire_in(spelling);
    let text = serde_json::json!({"code": wire.code.as_str(), "message": wire.message});
    let _ =
        crate::vm::write_atomically(&stored.files().apply_failure(), text.to_string().as_bytes());
}

/// How the VM's last apply ended, as its log and failure file say.
#[derive(Debug, PartialEq, Eq)]
pub enum LastApply {
    /// The log ends with `done`.
    Done,
    /// It failed (or was interrupted) with this code and message.
    Failed {
        code: stoat_wire::ErrorCode,
        message: String,
    },
    /// Running, never run, or ended without a word (killed).
    Unfinished,
}

/// Reads how the last apply of the VM in `vm_dir` ended.
pub fn last_apply(vm_dir: &std::path::Path) -> LastApply {
    let files = vm::VmDir::at(vm_dir);
    let log = std::fs::read_to_string(files.apply_log()).unwrap_or_default();
    let last = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(str::trim);
    if last == Some("done") {
        return LastApply::Done;
    }
    let failure = std::fs::read_to_string(files.apply_failure())
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    let Some(failure) = failure else {
        return LastApply::Unfinished;
    };
    let code = failure["code"]
        .as_str()
        .and_then(stoat_wire::ErrorCode::from_wire)
        .unwrap_or(stoat_wire::ErrorCode::Internal);
    LastApply::Failed {
        code,
        message: failure["message"].as_str().unwrap_or_default().to_owned(),
    }
}

/// `up`'s apply after boot: nothing when the VM has no recipes; otherwise a full apply
/// (which waits for ssh first), so its events stream under the caller's `cmd`.
pub fn after_boot(
    root: &Root,
    env: &Env,
    name: &str,
    sink: &dyn EventSink,
    cancel: &Cancel,
    spelling: &dyn Spelling,
) -> Result<Option<ApplyData>> {
    let stored = vm::load_ok(root, name)?;
    if stored.config.recipes.is_empty() {
        return Ok(None);
    }
    let request = ApplyRequest::default();
    apply(root, env, name, &request, sink, cancel, spelling).map(Some)
}

fn skipped(vm: &str, reason: &str) -> ApplyData {
    ApplyData {
        vm: vm.to_owned(),
        applied: Vec::new(),
        skipped_reason: reason.to_owned(),
    }
}

/// The text after `FAILED: `: `recipe <n>: <what happened>` for a recipe.
fn failure_text(err: &Error) -> String {
    match err {
        Error::RecipeFailed { recipe, detail, .. } => format!("recipe {recipe}: {detail}"),
        Error::Internal(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What an apply did.
struct Outcome {
    applied: Vec<String>,
    first_boot_only: bool,
}

impl Outcome {
    fn into_data(self, vm: String) -> ApplyData {
        ApplyData {
            vm,
            applied: self.applied,
            skipped_reason: if self.first_boot_only {
                SKIP_FIRST_BOOT.to_owned()
            } else {
                String::new()
            },
        }
    }
}

/// One apply in progress.
struct Run<'a> {
    root: &'a Root,
    env: &'a Env,
    stored: &'a StoredVm,
    catalog: &'a super::Catalog,
    registry: &'a Registry,
    shell: &'a GuestShell,
    request: &'a ApplyRequest,
    cancel: &'a Cancel,
    ssh_wait: Duration,
}

/// How long to wait for sshd: [`TCG_SSH_WAIT`] when the VM runs under TCG, else [`SSH_WAIT`].
pub fn ssh_wait(env: &Env) -> Duration {
    match qemu::Accel::parse(env.get(qemu::accel::ACCEL_ENV)) {
        Ok(qemu::Accel::Tcg) => TCG_SSH_WAIT,
        _ => SSH_WAIT,
    }
}

impl Run<'_> {
    fn execute(
        &self,
        log: &mut ProvisionLog,
        steps: Vec<Step>,
        first_boot: bool,
    ) -> Result<Outcome> {
        let port = self.stored.config.sshport;
        log.line(&format!("waiting for ssh on port {port}\u{2026}"));
        self.wait_for_login()?;
        let mut to_run: Vec<Step> = steps.into_iter().filter(|s| s.run).collect();
        let mut first_boot_only = false;
        if first_boot {
            let detected = self.detect_first_boot(log)?;
            if !detected.is_empty() {
                // Planned again over what first boot recorded: a `--param` that differs from
                // what the seed ran with still runs ("params changed"), the rest is skipped.
                let fresh = vm::load_ok(self.root, &self.stored.name)?;
                let (_, _, steps) = plan_for(self.root, &fresh, self.request)?;
                to_run = steps.into_iter().filter(|s| s.run).collect();
                first_boot_only = to_run.is_empty();
            }
        }
        let mut applied = Vec::new();
        for step in &to_run {
            self.cancel.check()?;
            self.run_step(log, step)?;
            applied.push(step.name.clone());
        }
        self.reboot_if_needed(log, &to_run)?;
        log.line("");
        log.line("done");
        Ok(Outcome {
            applied,
            first_boot_only,
        })
    }

    /// Runs one recipe: marker, script, outputs, health, record.
    fn run_step(&self, log: &mut ProvisionLog, step: &Step) -> Result<()> {
        log.line("");
        log.marker(&step.name);
        if step.manifest.runtime == Runtime::Python3 {
            self.ensure_python(log, &step.name)?;
        }
        let outputs_file = outputs_path(&step.name);
        let pid_file = format!("{outputs_file}.pid");
        let body = format!(
            "{}{}{}",
            params::prelude(step.manifest.runtime, &step.params, &outputs_file),
            record_pid(step.manifest.runtime, &pid_file),
            step.script
        );
        let interpreter: &[&str] = match step.manifest.runtime {
            Runtime::Sh => &["sh", "-s"],
            Runtime::Python3 => &["python3", "-"],
        };
        let streamed = self
            .shell
            .stream(interpreter, &body, self.cancel, |line| log.line(line));
        if matches!(streamed, Err(Error::Canceled)) {
            self.stop_remote(&pid_file);
        }
        let status = streamed?;
        if !status.success() {
            return Err(self.failed(&step.name, exit_text(status)));
        }
        let outputs = self.read_outputs(&step.manifest, &outputs_file)?;
        let health = self.health(log, &step.name, &step.manifest)?;
        self.record(step, outputs, health)
    }

    /// Installs python3 when the guest lacks it (upstream's bootstrap), through the guest
    /// registry's package commands.
    fn ensure_python(&self, log: &mut ProvisionLog, recipe: &str) -> Result<()> {
        log.line("ensuring python3 is installed...");
        let Some(guest) = self.registry.get(&self.stored.config.os) else {
            return Ok(());
        };
        let package = guest
            .pkg
            .runtime_packages
            .get("python3")
            .cloned()
            .unwrap_or_else(|| "python3".into());
        let envs: String = guest
            .pkg
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}; export {k}\n", crate::shell::quote(v)))
            .collect();
        let install: Vec<String> = guest
            .pkg
            .install
            .iter()
            .map(|w| crate::shell::quote(w))
            .collect();
        let body = format!(
            "{envs}command -v python3 >/dev/null 2>&1 && exit 0\n{} {}\n",
            install.join(" "),
            crate::shell::quote(&package)
        );
        let status = self
            .shell
            .stream(&["sh", "-s"], &body, self.cancel, |line| log.line(line))?;
        if status.success() {
            Ok(())
        } else {
            Err(self.failed(recipe, format!("python3 bootstrap: {}", exit_text(status))))
        }
    }

    /// After a cancel: stopping the local ssh does not stop the script in the guest (no pty,
    /// so nothing tells it), so a second ssh stops the interpreter whose PID the script
    /// recorded, and its children (listed first: once the interpreter dies they are orphans).
    /// Best effort and short: the caller still answers `canceled` within the signal grace.
    fn stop_remote(&self, pid_file: &str) {
        let quoted = crate::shell::quote(pid_file);
        let body = format!(
            "p=$(cat {quoted} 2>/dev/null) || exit 0\nrm -f {quoted}\n[ -n \"$p\" ] || exit 0\nkids=$(pgrep -P \"$p\" 2>/dev/null || for s in /proc/[0-9]*/stat; do read -r c _ _ pp _ < \"$s\" && [ \"$pp\" = \"$p\" ] && echo \"$c\"; done 2>/dev/null)\nkill -TERM \"$p\" 2>/dev/null\n[ -z \"$kids\" ] || kill -TERM $kids 2>/dev/null\nexit 0\n"
        );
        let _ = self.shell.capture(&body, STOP_REMOTE, &Cancel::default());
    }

    fn read_outputs(
        &self,
        manifest: &Manifest,
        file: &str,
    ) -> Result<std::collections::BTreeMap<String, String>> {
        let quoted = crate::shell::quote(file);
        // One byte more than the limit is read back, to tell a file over it.
        let captured = self.shell.capture(
            &format!(
                "head -c {} {quoted} 2>/dev/null; rm -f {quoted} {quoted}.pid\n",
                OUTPUTS_LIMIT + 1
            ),
            READ_BACK,
            self.cancel,
        )?;
        if captured.stdout.len() > OUTPUTS_LIMIT {
            return Err(self.failed(
                &manifest.name,
                format!(
                    "its outputs are larger than {} KiB, the most stoat records for one recipe; nothing was recorded",
                    OUTPUTS_LIMIT >> 10
                ),
            ));
        }
        Ok(params::parse_outputs(manifest, &captured.stdout))
    }

    /// Runs the manifest's health check (if any); `ok`, `failed`, or `""` when it has none.
    fn health(&self, log: &mut ProvisionLog, name: &str, manifest: &Manifest) -> Result<String> {
        let Some(health) = &manifest.health else {
            return Ok(String::new());
        };
        let captured = self.shell.capture(
            &format!("{}\n", health.check),
            Duration::from_secs(health.timeout_secs),
            self.cancel,
        )?;
        let verdict = if captured.success() { "ok" } else { "failed" };
        let detail = match captured.status {
            None => format!(" (no answer within {})", health.timeout),
            Some(status) if !status.success() => format!(" ({})", exit_text(status)),
            Some(_) => String::new(),
        };
        log.line(&format!("health {name}: {verdict}{detail}"));
        Ok(verdict.to_owned())
    }

    fn failed(&self, recipe: &str, detail: String) -> Error {
        Error::RecipeFailed {
            vm: self.stored.name.clone(),
            recipe: recipe.to_owned(),
            detail,
        }
    }

    /// Records the run in vm.toml, re-read first so a concurrent `update` is not undone.
    fn record(
        &self,
        step: &Step,
        outputs: std::collections::BTreeMap<String, String>,
        health: String,
    ) -> Result<()> {
        let mut fresh = vm::load_ok(self.root, &self.stored.name)?;
        fresh
            .config
            .applied
            .insert(step.name.clone(), applied_record(step, outputs, health));
        let recorded: usize = fresh
            .config
            .applied
            .values()
            .flat_map(|a| a.outputs.iter())
            .map(|(name, value)| name.len() + value.len())
            .sum();
        if recorded > ALL_OUTPUTS_LIMIT {
            return Err(self.failed(
                &step.name,
                format!(
                    "the VM's recorded outputs would reach {recorded} bytes, over the {} KiB stoat keeps in vm.toml; nothing was recorded",
                    ALL_OUTPUTS_LIMIT >> 10
                ),
            ));
        }
        if step.param_values.is_empty() {
            fresh.config.recipe_params.remove(&step.name);
        } else {
            fresh
                .config
                .recipe_params
                .insert(step.name.clone(), step.param_values.clone());
        }
        vm::save(&fresh)
    }

    /// Cloud VMs run their recipes at first boot (the seed's runcmd). Waits for cloud-init,
    /// lists `/var/lib/stoat/.applied`, and records each recipe found there as the seed ran
    /// it (the stored params, not this call's `--param`), unless it is already recorded.
    fn detect_first_boot(&self, log: &mut ProvisionLog) -> Result<Vec<String>> {
        // The shell tries again a run that ssh could not start (an sshd restarting under
        // cloud-init): reading no markers then would run the seeded recipes a second time.
        let captured = self
            .shell
            .capture(&list_markers(true), FIRST_BOOT_WAIT, self.cancel)?;
        let markers: Vec<&str> = captured.stdout.lines().map(str::trim).collect();
        // A plan that fails put nothing in the seed (seed::cloud_config).
        let seeded = seed_steps(self.catalog, self.registry, self.stored).unwrap_or_default();
        let mut detected = Vec::new();
        for step in seeded.iter().filter(|s| {
            s.run
                && !self.stored.config.applied.contains_key(&s.name)
                && markers.contains(&s.name.as_str())
        }) {
            let outputs = self.read_outputs(&step.manifest, &seed::outputs_file(&step.name))?;
            let health = self.health(log, &step.name, &step.manifest)?;
            self.record(step, outputs, health)?;
            detected.push(step.name.clone());
        }
        if !detected.is_empty() {
            log.line(&format!(
                "applied at first boot by cloud-init: {}",
                detected.join(", ")
            ));
        }
        Ok(detected)
    }

    /// A recipe with `reboot = true` that ran: reboot the guest (not a live VM, whose state
    /// would be lost) and wait for ssh again, before `done`.
    fn reboot_if_needed(&self, log: &mut ProvisionLog, ran: &[Step]) -> Result<()> {
        let Some(step) = ran.iter().find(|s| s.manifest.reboot) else {
            return Ok(());
        };
        if self.stored.config.mode == Mode::Live {
            log.line(&format!(
                "{} asks for a reboot; a live VM keeps no state across one, so reboot it yourself when ready",
                step.name
            ));
            return Ok(());
        }
        log.line(&format!(
            "rebooting {} to finish {}...",
            self.stored.name, step.name
        ));
        let command = self
            .registry
            .get(&self.stored.config.os)
            .and_then(|g| g.cmd.get("reboot").cloned())
            .unwrap_or_else(|| "reboot".into());
        // The connection drops as the guest goes down: the exit status means nothing.
        let _ = self
            .shell
            .capture(&format!("{command}\n"), READ_BACK, self.cancel)?;
        // The master's login went down with the guest; it may not have noticed yet.
        crate::ssh::mux::close(self.env, self.stored);
        std::thread::sleep(Duration::from_secs(2));
        self.wait_for_login()
    }

    /// Waits until stoat can log in to the guest (`ssh::login`: never a bare probe).
    fn wait_for_login(&self) -> Result<()> {
        crate::ssh::login::until_reachable(
            self.root,
            self.env,
            self.stored,
            self.ssh_wait,
            self.cancel,
        )
        .map(|_| ())
    }
}

/// The line that makes a script record its interpreter's PID (for [`Run::stop_remote`]).
fn record_pid(runtime: Runtime, pid_file: &str) -> String {
    match runtime {
        Runtime::Sh => format!("echo $$ > {}\n", crate::shell::quote(pid_file)),
        Runtime::Python3 => format!(
            "open({}, \"w\").write(str(_stoat_os.getpid()))\n",
            serde_json::to_string(pid_file).unwrap_or_default()
        ),
    }
}

/// A unique guest path for one recipe's outputs.
fn outputs_path(recipe: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("/tmp/stoat-outputs.{recipe}.{}.{nanos}", std::process::id())
}

fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(255), _) => "ssh failed (exit status 255)".to_owned(),
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended abnormally".to_owned(),
    }
}

/// `last-provision.log`, written and streamed line by line.
struct ProvisionLog<'s> {
    file: File,
    sink: &'s dyn EventSink,
}

impl<'s> ProvisionLog<'s> {
    fn create(stored: &StoredVm, sink: &'s dyn EventSink) -> Result<ProvisionLog<'s>> {
        let path = stored.files().apply_log();
        let file =
            File::create(&path).map_err(|e| Error::io(format!("write {}", path.display()), e))?;
        let failure = stored.files().apply_failure();
        match std::fs::remove_file(&failure) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                let name = failure.file_name().unwrap_or_default().to_string_lossy();
                return Err(Error::io(format!("remove {name}"), e));
            }
            _ => {}
        }
        Ok(ProvisionLog { file, sink })
    }

    /// Appends one line and emits it as a `log` event.
    fn line(&mut self, text: &str) {
        // A full disk must not stop the apply: the events still tell the caller.
        let _ = writeln!(self.file, "{text}");
        self.sink.log(&LogData {
            line: text.to_owned(),
        });
    }

    /// A recipe boundary: the `stage` event, then the marker line.
    fn marker(&mut self, recipe: &str) {
        self.sink.stage(&StageData {
            recipe: recipe.to_owned(),
        });
        self.line(&format!("=== recipe {recipe} ==="));
    }
}

/// The recipe name of a marker line `=== recipe <name> ===` (upstream ParseRecipeMarker).
#[cfg(test)]
pub fn parse_marker(line: &str) -> Option<&str> {
    let line = line.trim();
    let name = line.strip_prefix("=== recipe ")?.strip_suffix(" ===")?;
    (!name.trim().is_empty()).then(|| name.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_parse() {
        assert_eq!(parse_marker("=== recipe xfce ==="), Some("xfce"));
        assert_eq!(parse_marker("  === recipe a b ===\r"), Some("a b"));
        assert_eq!(parse_marker("=== recipe  ==="), None);
        assert_eq!(parse_marker("=== recipe ==="), None);
        assert_eq!(parse_marker("== recipe x ==="), None);
    }

    #[test]
    fn ssh_wait_is_longer_under_tcg() {
        assert_eq!(ssh_wait(&Env::from_pairs([])), SSH_WAIT);
        assert_eq!(
            ssh_wait(&Env::from_pairs([("STOAT_ACCEL", "kvm")])),
            SSH_WAIT
        );
        assert_eq!(
            ssh_wait(&Env::from_pairs([("STOAT_ACCEL", " TCG ")])),
            TCG_SSH_WAIT
        );
        assert_eq!(
            ssh_wait(&Env::from_pairs([("STOAT_ACCEL", "bogus")])),
            SSH_WAIT
        );
    }
}
