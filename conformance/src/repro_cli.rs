//! Owns `stoat-conformance repro CHECK --report r.json`: finds the failing row's
//! reproduction in the report, runs the check's scenario again with the report's SUT, seed
//! and edition up to the failing invocation (fixture VMs, fakes and environment rebuilt as
//! the run made them), prints what it ran, its environment and output, and leaves the
//! sandbox with a `repro.sh` that makes the invocation again. Prints (like `cli`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::HarnessError;
use crate::exit;
use crate::report::{self, text};
use crate::run::{self, RunConfig, Selection, Sut};

#[derive(Args, Debug)]
pub struct ReproArgs {
    /// The failing check's id, as the report names it.
    check: String,
    /// The JSON report of the run that failed it.
    #[arg(long, value_name = "r.json")]
    report: PathBuf,
    /// The stoat-fake binary (default: next to this executable).
    #[arg(long)]
    fakes: Option<PathBuf>,
    /// The profile file (default: the one the report names).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// The real tier's guest directory, for a real check.
    #[arg(long)]
    guest: Option<PathBuf>,
    /// Seconds each invocation may take.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

pub fn command(args: ReproArgs) -> Result<u8, HarnessError> {
    let saved = report::Report::load(&args.report)?;
    let rows = saved.rows();
    let Some(row) = rows.iter().find(|r| r.id == args.check) else {
        eprintln!(
            "stoat-conformance repro: {} has no row {}",
            args.report.display(),
            args.check
        );
        return Ok(exit::USAGE);
    };
    let Some(repro) = &row.repro else {
        eprintln!(
            "stoat-conformance repro: {} is {} in {}: only a failing row has a reproduction",
            row.id,
            row.status.label(),
            args.report.display()
        );
        return Ok(exit::USAGE);
    };
    let info = saved.info.as_ref();
    let Some(sut) = info.and_then(|i| Sut::from_argv(&i.sut_argv)) else {
        eprintln!(
            "stoat-conformance repro: {} does not name the SUT's argv (a report of an older suite); run the row's command instead: {}",
            args.report.display(),
            repro.command
        );
        return Ok(exit::USAGE);
    };
    let (seed, contract) = info.map_or((run::DEFAULT_SEED, 3), |i| (i.seed, i.contract));
    let edition = crate::spec::Edition::from_number(contract).unwrap_or_default();
    let profile_path = args
        .profile
        .clone()
        .or_else(|| info.and_then(|i| i.profile.clone()).map(PathBuf::from));
    let profile = profile_path
        .as_deref()
        .map(run::profile::Profile::load)
        .transpose()?
        .unwrap_or_default();
    let fakes = match &args.fakes {
        Some(path) if path.exists() => Some(path.clone()),
        Some(path) => return Err(HarnessError::FakesMissing(path.clone())),
        None => crate::run::sut::default_fakes(),
    };
    let config = RunConfig {
        sut,
        fakes,
        selection: Selection::default(),
        jobs: 1,
        seed,
        seed_source: run::SeedSource::Flag,
        timeout: Duration::from_secs(args.timeout.max(1)),
        baseline: None,
        skip_smoke: true,
        oracle: None,
        guest: args.guest.clone(),
        contract: run::Contract::Fixed(edition),
        allow_empty: true,
        profile,
        profile_path: profile_path.map(|p| p.display().to_string()),
    };
    println!(
        "Reproducing {} ({}): scenario {}{}, seed {seed}, contract {contract}",
        row.id,
        row.status.label(),
        repro.scenario,
        repro
            .invocation
            .map(|i| format!(", up to its invocation {}", i + 1))
            .unwrap_or_default()
    );
    let Some(reached) = run::runner::reproduce(config, &repro.scenario, repro.invocation)? else {
        println!("The scenario made no invocation (it skipped, or needs what this machine lacks): nothing to reproduce.");
        return Ok(exit::HARNESS_ERROR);
    };
    let script = reached.root.join("repro.sh");
    std::fs::write(&script, run::repro::script(&reached))
        .map_err(|e| HarnessError::io(&script, e))?;
    crate::sandbox::set_mode(&script, 0o755)?;
    println!("sandbox (kept): {}", reached.root.display());
    println!("cwd: {}", reached.cwd.display());
    println!("environment (nothing else is set):");
    for (key, value) in &reached.env {
        println!("  {key}={}", text::one_line(value));
    }
    let argv: Vec<String> = reached
        .args
        .iter()
        .map(|a| crate::capture::shell_quote(a))
        .collect();
    println!("$ {} {}", reached.program.display(), argv.join(" "));
    println!("-> {}", reached.capture.ending.describe());
    if let Some(before) = &repro.ending {
        if *before != reached.capture.ending.describe() {
            println!("   (the report's run ended: {before})");
        }
    }
    for (name, bytes) in [
        ("stdout", &reached.capture.stdout.0),
        ("stderr", &reached.capture.stderr.0),
    ] {
        println!("{name}:");
        for line in String::from_utf8_lossy(bytes).lines() {
            println!("  {}", text::one_line(line));
        }
    }
    println!(
        "Processes the sandbox started (running fixture VMs, fake daemons) were stopped; its files stay."
    );
    println!("run the invocation again: {}", script.display());
    println!("remove the sandbox: rm -rf {}", reached.root.display());
    Ok(exit::PASS)
}
