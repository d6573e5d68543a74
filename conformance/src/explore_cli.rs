//! Owns the command line of `stoat-conformance explore [--seed N] [--histories H] [--steps S]
//! [--concurrent K] -- <stoat argv...>`: runs the exploration ([`crate::explore`]), prints
//! the shrunk failing history step by step and where its transcript went; exit 0 when every
//! history agreed with the model, 1 when one did not, 3 on a harness error.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;

use crate::error::HarnessError;
use crate::exit;
use crate::explore::{self, concurrent, Budget, Engine};
use crate::run::sut::{default_fakes, resolve_program, Sut};
use crate::spec::Edition;

#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Seed of the generated histories (default: the suite's fixed seed).
    #[arg(long, default_value_t = explore::DEFAULT_SEED)]
    seed: u64,
    /// How many histories to run (default: 200; 40 with --concurrent).
    #[arg(long)]
    histories: Option<u64>,
    /// Commands per history (default: 12); with --concurrent, commands per client (default: 5).
    #[arg(long)]
    steps: Option<usize>,
    /// K clients issue their commands against one data root at once, round by round; every
    /// history must be linearizable: some order of its operations that keeps their
    /// real-time order is one the contract's model accepts.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u8).range(2..=8))]
    concurrent: Option<u8>,
    /// Where a failing history's golden transcript goes (`DIR/<cmd>/explore-seed-...json`;
    /// replay it with `golden verify --dir DIR`).
    #[arg(long, value_name = "DIR", default_value = "explore-failures")]
    out: PathBuf,
    /// The stoat-fake binary (default: next to this executable).
    #[arg(long)]
    fakes: Option<PathBuf>,
    /// Per-invocation timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The system under test and its fixed leading arguments.
    #[arg(last = true, required = true, value_name = "SUT")]
    sut: Vec<String>,
}

/// Runs `explore`; returns the exit status.
pub fn command(args: ExploreArgs) -> Result<u8, HarnessError> {
    let Some(sut) = Sut::from_argv(&args.sut) else {
        eprintln!("stoat-conformance explore: name the SUT after --");
        return Ok(exit::USAGE);
    };
    let engine = Engine {
        sut: Sut {
            program: resolve_program(&sut.program),
            leading: sut.leading,
        },
        fakes: args.fakes.clone().or_else(default_fakes),
        timeout: Duration::from_secs(args.timeout),
        edition: Edition::default(),
        data_root_var: None,
        profile_env: Vec::new(),
        sut_clock: None,
    };
    if let Some(clients) = args.concurrent {
        return concurrent(&engine, &args, clients as usize);
    }
    let budget = Budget {
        seed: args.seed,
        histories: args.histories.unwrap_or(explore::DEFAULT_HISTORIES),
        steps: args.steps.unwrap_or(explore::DEFAULT_STEPS),
    };
    let started = Instant::now();
    let summary = explore::explore(&engine, budget)?;
    let took = started.elapsed().as_secs_f64();
    let Some(found) = &summary.found else {
        println!(
            "explore --seed {} --histories {} --steps {}: {} histories, {} invocations, all agree with the model ({took:.1}s)",
            budget.seed, budget.histories, budget.steps, summary.histories, summary.invocations
        );
        return Ok(exit::PASS);
    };
    println!(
        "explore --seed {}: history {} of {} disagrees with the contract model (shrunk from {} to {} steps, {took:.1}s)",
        budget.seed,
        found.index,
        budget.histories,
        found.original.len(),
        found.shrunk.len()
    );
    print!("{}", explore::shrink::render(&found.shrunk, &found.run));
    match explore::write_transcript(&args.out, budget.seed, found)? {
        Some(path) if !found.reproduces => println!(
            "transcript: {} (replaying it does NOT fail on this SUT: the failure rests on a value the contract leaves open)",
            path.display()
        ),
        Some(path) => println!(
            "transcript: {} ({} steps before, ends with: stoat {})\nreplay: stoat-conformance golden verify --dir {} -- {}",
            path.display(),
            found.transcript.as_ref().map_or(0, |c| c.before.len()),
            found.transcript.as_ref().map(|c| c.argv.join(" ")).unwrap_or_default(),
            args.out.display(),
            args.sut.join(" ")
        ),
        None => println!(
            "no transcript: the model allows more than one answer to the failing invocation"
        ),
    }
    Ok(exit::VIOLATIONS)
}

/// Runs `explore --concurrent K`.
fn concurrent(engine: &Engine, args: &ExploreArgs, clients: usize) -> Result<u8, HarnessError> {
    let budget = concurrent::Budget {
        seed: args.seed,
        histories: args.histories.unwrap_or(concurrent::DEFAULT_HISTORIES),
        rounds: args.steps.unwrap_or(concurrent::DEFAULT_ROUNDS),
        clients,
    };
    let started = Instant::now();
    let summary = concurrent::explore(engine, budget)?;
    let took = started.elapsed().as_secs_f64();
    let Some(found) = &summary.found else {
        println!(
            "explore --concurrent {clients} --seed {} --histories {} --steps {}: {} histories, {} invocations, every one linearizable against the model ({took:.1}s)",
            budget.seed, budget.histories, budget.rounds, summary.histories, summary.invocations
        );
        return Ok(exit::PASS);
    };
    println!(
        "explore --concurrent {clients} --seed {}: history {} of {} is not explained by the contract model (shrunk from {} to {} commands, {took:.1}s)",
        budget.seed,
        found.index,
        budget.histories,
        concurrent::size(&found.original),
        concurrent::size(&found.shrunk)
    );
    print!("{}", concurrent::render(&found.shrunk, &found.run));
    let path = concurrent::write(&args.out, &budget, found)?;
    println!(
        "history: {} (concurrent histories have no golden form: the order is the OS's)",
        path.display()
    );
    Ok(exit::VIOLATIONS)
}
