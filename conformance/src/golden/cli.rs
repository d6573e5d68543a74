//! Owns `stoat-conformance golden record|verify|bless [options] -- <stoat argv...>`: the
//! arguments, printing per case, and exit statuses (0 all good, 1 a case failed, 2 usage —
//! including `bless` under `CI` — 3 harness error).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::error::HarnessError;
use crate::exit;
use crate::run::Sut;

use super::engine::{self, GoldenConfig, WriteMode};

#[derive(Args, Debug)]
pub struct GoldenArgs {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand, Debug)]
enum Verb {
    /// Record transcripts from a SUT (golden/cases.toml, or --from-files), redacted at capture.
    Record(VerbArgs),
    /// Replay every transcript (current and older versions) and judge each case.
    Verify(VerbArgs),
    /// Re-record into `<case>.json.new` for review; refuses when CI is set.
    Bless(VerbArgs),
}

#[derive(Args, Debug)]
struct VerbArgs {
    /// The golden directory.
    #[arg(long, default_value = "golden")]
    dir: PathBuf,
    /// Only cases whose id (`ls/empty`, `v3.0/ls/empty`) matches this glob (repeatable).
    #[arg(long = "case", value_name = "GLOB")]
    cases: Vec<String>,
    /// record: re-record the existing transcripts from their own inputs, not cases.toml.
    #[arg(long)]
    from_files: bool,
    /// The stoat-fake binary (default: next to this executable).
    #[arg(long)]
    fakes: Option<PathBuf>,
    /// Per-invocation timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// verify: also replay the reference set (`reference/`: cases that pin choices of the
    /// reference the contract leaves open).
    #[arg(long)]
    reference: bool,
    /// verify: the contract edition whose transcripts are replayed: auto (the one the SUT
    /// names in `--json version`), 2 or 3.
    #[arg(long, value_name = "auto|2|3", default_value = "auto")]
    contract: String,
    /// The system under test and its fixed leading arguments.
    #[arg(last = true, required = true, value_name = "SUT")]
    sut: Vec<String>,
}

/// Runs one golden verb; returns the exit status.
pub fn run(args: GoldenArgs) -> Result<u8, HarnessError> {
    match args.verb {
        Verb::Verify(verb) => verify(&config(&verb)?),
        Verb::Record(verb) => record(&config(&verb)?, verb.from_files, WriteMode::Replace),
        Verb::Bless(verb) => {
            if std::env::var_os("CI").is_some() {
                eprintln!("stoat-conformance golden bless: refusing to write transcripts because CI is set; bless locally and commit the reviewed files");
                return Ok(exit::USAGE);
            }
            record(&config(&verb)?, verb.from_files, WriteMode::Review)
        }
    }
}

fn config(verb: &VerbArgs) -> Result<GoldenConfig, HarnessError> {
    let sut = Sut::from_argv(&verb.sut)
        .ok_or_else(|| HarnessError::Other("name the SUT after --".into()))?;
    let fakes = match &verb.fakes {
        Some(path) if path.exists() => Some(path.clone()),
        Some(path) => return Err(HarnessError::FakesMissing(path.clone())),
        None => crate::run::sut::default_fakes(),
    };
    Ok(GoldenConfig {
        sut: Sut {
            program: crate::run::sut::resolve_program(&sut.program),
            leading: sut.leading,
        },
        fakes,
        dir: verb.dir.clone(),
        timeout: Duration::from_secs(verb.timeout.max(1)),
        filter: verb.cases.clone(),
        reference: verb.reference,
        edition: match verb.contract.as_str() {
            "auto" => None,
            text => Some(
                text.parse::<u64>()
                    .ok()
                    .and_then(crate::spec::Edition::from_number)
                    .ok_or_else(|| {
                        HarnessError::Other(format!(
                            "unknown contract edition {text:?} (auto, 2, 3)"
                        ))
                    })?,
            ),
        },
    })
}

fn verify(config: &GoldenConfig) -> Result<u8, HarnessError> {
    let verdicts = engine::verify(config, &mut |verdict| {
        if verdict.problems.is_empty() {
            println!("PASS {}", verdict.id);
        } else {
            println!("FAIL {}", verdict.id);
            for problem in &verdict.problems {
                println!("     {problem}");
            }
        }
    })?;
    let failed = verdicts.iter().filter(|v| !v.problems.is_empty()).count();
    println!("{} passed, {failed} failed", verdicts.len() - failed);
    if verdicts.is_empty() {
        eprintln!(
            "stoat-conformance golden verify: no transcripts of contract {} selected under {}",
            config.edition()?,
            config.dir.display()
        );
        return Ok(exit::VIOLATIONS);
    }
    Ok(if failed > 0 {
        exit::VIOLATIONS
    } else {
        exit::PASS
    })
}

fn record(config: &GoldenConfig, from_files: bool, mode: WriteMode) -> Result<u8, HarnessError> {
    let recorded = engine::record(config, from_files, mode, &mut |recorded| {
        match &recorded.written {
            Some(path) => println!("wrote {} ({})", recorded.id, path.display()),
            None => println!("same  {}", recorded.id),
        }
        for warning in &recorded.warnings {
            println!("     warning: {warning}");
        }
    })?;
    let warned = recorded.iter().filter(|r| !r.warnings.is_empty()).count();
    println!("{} recorded, {warned} with warnings", recorded.len());
    Ok(if warned > 0 {
        exit::VIOLATIONS
    } else {
        exit::PASS
    })
}
