//! Owns the command line of `stoat-conformance`: `run`, `list`, `check`, `report`, `mutate`,
//! `mutants`, `golden` (its arguments and verbs live in `golden::cli`) and `repro` (in
//! `repro_cli`). Parses, calls the library, maps the outcome to an exit status
//! ([`crate::exit`]). The only module that prints (with `golden::cli`, `repro_cli` and `explore_cli`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::golden::cli::GoldenArgs;

use crate::capture::{Capture, Ending};
use crate::catalog::{self, Tier};
use crate::error::HarnessError;
use crate::exit;
use crate::oracle::{Context, Oracle, Outcome};
use crate::report::{self, Reporter};
use crate::run::sut::{default_fakes, resolve_program};
use crate::run::{self, baseline::Baseline, RunConfig, Selection, Sut};

#[derive(Parser, Debug)]
#[command(
    name = "stoat-conformance",
    version,
    about = "Checks any stoat executable against machine contract v3"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the suite against a SUT: `run [options] -- <stoat argv...>`.
    Run(Box<RunArgs>),
    /// Print the check catalog.
    List(ListArgs),
    /// Judge a captured JSON-lines transcript (a file, or - for stdin) offline.
    Check(CheckArgs),
    /// Render a saved JSON report, or compare two.
    Report(ReportArgs),
    /// Run a failing check of a report again up to its failing invocation and keep the
    /// sandbox: `repro CHECK --report r.json`.
    Repro(crate::repro_cli::ReproArgs),
    /// Wrap a SUT with one mutation operator (the mutant kit): `mutate --op OP -- <sut...>`.
    Mutate(MutateArgs),
    /// List the mutation operators and the checks that must catch each.
    Mutants,
    /// Golden transcripts: `golden record|verify|bless [options] -- <stoat argv...>`.
    Golden(GoldenArgs),
    /// Random command histories checked against a model of the contract, a failure shrunk
    /// to a golden transcript: `explore [--seed N] [--histories H] [--steps S] -- <stoat argv...>`.
    Explore(crate::explore_cli::ExploreArgs),
    /// Time the whole pure + fake run and print the suite's overhead: `bench -- <stoat argv...>`.
    Bench(BenchArgs),
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// The stoat-fake binary (default: next to this executable).
    #[arg(long)]
    fakes: Option<PathBuf>,
    /// The system under test and its fixed leading arguments.
    #[arg(last = true, required = true, value_name = "SUT")]
    sut: Vec<String>,
}

#[derive(Args, Debug, Default)]
struct SelectArgs {
    /// Include checks whose id matches this glob (repeatable; `*` matches anything).
    #[arg(long = "id", value_name = "GLOB")]
    ids: Vec<String>,
    /// Exclude checks whose id matches this glob (repeatable).
    #[arg(long = "skip", value_name = "GLOB")]
    skip: Vec<String>,
    /// Include checks carrying this tag (repeatable; any matches).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Tiers to run (repeatable): pure, fake, real. Default: pure and fake.
    #[arg(long = "tier", value_parser = parse_tier)]
    tiers: Vec<Tier>,
    /// Only checks that rest on the contract alone: none of the suite's own decisions, none
    /// resting on a knob of the SUT's profile.
    #[arg(long)]
    strict_contract: bool,
}

fn parse_shard(text: &str) -> Result<run::selection::Shard, String> {
    run::selection::Shard::parse(text)
        .ok_or_else(|| format!("{text:?} is not K/N with 1 <= K <= N (e.g. 2/4)"))
}

fn parse_tier(text: &str) -> Result<Tier, String> {
    Tier::parse(text).ok_or_else(|| format!("unknown tier {text:?} (pure, fake, real)"))
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection {
            include: self.ids.clone(),
            exclude: self.skip.clone(),
            tags: self.tags.clone(),
            tiers: self.tiers.clone(),
            only_ids: None,
            rejudge: Vec::new(),
            strict_contract: self.strict_contract,
            shard: None,
        }
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    select: SelectArgs,
    /// Parallel scenarios (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seed for generated cases: a number, or `random` to explore (default: the suite's
    /// fixed seed, so every run without it judges the same cases; printed in the header).
    #[arg(long, value_name = "N|random", value_parser = parse_seed)]
    seed: Option<run::Seed>,
    /// Per-invocation timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Re-run only the checks that failed (or crashed, errored, went stale) in this report.
    #[arg(long, value_name = "REPORT.json")]
    rerun_failed: Option<PathBuf>,
    /// Run only the K-th of N contiguous, equal parts of the selected scenarios (oracle
    /// rules judge this part's invocations); `report --merge` joins the N JSON reports.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<run::selection::Shard>,
    /// Expected failures (TOML `[[expected]] id reason`): listed failures pass, listed passes fail as stale.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// The stoat-fake binary (default: next to this executable).
    #[arg(long)]
    fakes: Option<PathBuf>,
    /// The real tier's guest directory (output of conformance/guest/build.sh, holding
    /// stoat-testguest-cloud.qcow2). Given without --tier, the run adds the real tier.
    #[arg(long, value_name = "DIR")]
    guest: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long, value_name = "PATH", visible_alias = "report-json")]
    json_report: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write TAP here (version 13 by default: see --tap-version); `-` streams it on stdout
    /// as checks finish (the human report then goes to stderr).
    #[arg(long, value_name = "PATH")]
    tap: Option<PathBuf>,
    /// The TAP version line: 13 (prove/TAP::Harness and tap-parser) or 14 (tap-parser only).
    #[arg(long, value_name = "13|14", default_value = "13", value_parser = parse_tap_version)]
    tap_version: report::tap::Version,
    /// Write the HTML page (check matrix, one self-contained file) here.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Also print passing checks.
    #[arg(short, long)]
    verbose: bool,
    /// The contract edition to judge by: auto (the one the SUT names in `--json version`),
    /// 2 or 3. Naming an edition the SUT does not speak gives the migration view.
    #[arg(long, value_name = "auto|2|3", default_value = "auto", value_parser = parse_contract)]
    contract: run::Contract,
    /// The SUT profile (TOML, see docs/conformance.md): how this implementation moves its
    /// data root, reads an image catalog, and what extra environment it needs.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Pass a run that judged nothing it was asked to (a selected tier that ran nothing, no
    /// MUST check run, a selection that matched nothing); by default such a run fails.
    #[arg(long)]
    allow_empty: bool,
    /// The system under test and its fixed leading arguments.
    #[arg(last = true, required = true, value_name = "SUT")]
    sut: Vec<String>,
}

fn parse_seed(text: &str) -> Result<run::Seed, String> {
    if text == "random" {
        return Ok(run::Seed::Random);
    }
    text.parse::<u64>()
        .map(run::Seed::Fixed)
        .map_err(|_| format!("--seed takes a number or `random`, not {text:?}"))
}

fn parse_contract(text: &str) -> Result<run::Contract, String> {
    if text == "auto" {
        return Ok(run::Contract::Auto);
    }
    text.parse::<u64>()
        .ok()
        .and_then(crate::spec::Edition::from_number)
        .map(run::Contract::Fixed)
        .ok_or_else(|| format!("unknown contract edition {text:?} (auto, 2, 3)"))
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ListFormat {
    Text,
    Json,
    Md,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    format: ListFormat,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// The transcript: stdout of one `--json` invocation (JSON lines), or - for stdin.
    file: String,
    /// The cmd every line must carry.
    #[arg(long)]
    cmd: Option<String>,
    /// The process's exit status (enables the exit-code rules).
    #[arg(long)]
    exit: Option<i32>,
    /// The file is a saved capture (`{"argv", "ending", "stdout", ...}`) rather than raw stdout.
    #[arg(long)]
    capture: bool,
    /// Print findings as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ReportFormat {
    Human,
    Json,
    Junit,
    Tap,
    Md,
    Html,
    /// `name=value` lines of the counts, as a shell or GitHub's `$GITHUB_OUTPUT` reads them.
    Counts,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// A saved JSON report (with --compare: the BEFORE report).
    #[arg(required_unless_present_any = ["matrix", "merge"])]
    report: Option<PathBuf>,
    /// The JSON reports of `run --shard 1/N` to `N/N` of one run, joined into the report
    /// that run would have written unsharded (printed in --format; `json` for the file).
    #[arg(long, num_args = 1.., value_name = "REPORT.json", conflicts_with_all = ["report", "compare", "matrix"])]
    merge: Vec<PathBuf>,
    /// Several implementations' reports side by side: prints the markdown table; with
    /// --out DIR also writes DIR/matrix.html, DIR/matrix.md and DIR/<name>.svg badges.
    #[arg(long, num_args = 1.., value_name = "REPORT.json", conflicts_with_all = ["report", "compare"])]
    matrix: Vec<PathBuf>,
    /// With --matrix: the directory to write the page, the table and the badges into.
    #[arg(long, value_name = "DIR", requires = "matrix")]
    out: Option<PathBuf>,
    /// With --matrix: a column's name, once per report in their order (default: the report's
    /// file name without `.json`).
    #[arg(long = "name", value_name = "NAME", requires = "matrix")]
    names: Vec<String>,
    /// Compare with this AFTER report; prints markdown, exits 1 when something newly fails.
    #[arg(long, value_name = "AFTER.json")]
    compare: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    format: ReportFormat,
    /// With --format tap: the TAP version line, 13 or 14.
    #[arg(long, value_name = "13|14", default_value = "13", value_parser = parse_tap_version)]
    tap_version: report::tap::Version,
}

fn parse_tap_version(text: &str) -> Result<report::tap::Version, String> {
    report::tap::Version::parse(text)
        .ok_or_else(|| format!("unknown TAP version {text:?} (13, 14)"))
}

#[derive(Args, Debug)]
struct MutateArgs {
    #[arg(long)]
    op: String,
    #[arg(last = true, required = true)]
    sut: Vec<String>,
}

/// The counts of a summary as `name=value` lines (names as the JSON report's, `-` for `_`).
fn counts(summary: &crate::run::events::Summary) -> String {
    [
        ("passed", summary.passed),
        ("failed", summary.failed),
        ("crashed", summary.crashed),
        ("warned", summary.warned),
        ("skipped", summary.skipped),
        ("expected-failures", summary.expected_failures),
        ("stale-baseline", summary.stale_baseline),
        ("errored", summary.errored),
        ("invocations", summary.invocations),
    ]
    .iter()
    .map(|(name, count)| format!("{name}={count}\n"))
    .collect()
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                exit::USAGE
            } else {
                exit::PASS
            });
        }
    };
    let code = match cli.command {
        Command::Run(args) => run_command(*args),
        Command::List(args) => list_command(args),
        Command::Check(args) => check_command(args),
        Command::Report(args) => report_command(args),
        Command::Repro(args) => crate::repro_cli::command(args),
        Command::Mutate(args) => match crate::mutate::Op::from_name(&args.op) {
            Some(op) => {
                return ExitCode::from(crate::mutate::run(op, &args.sut).clamp(0, 255) as u8)
            }
            None => {
                eprintln!("stoat-conformance mutate: unknown operator {:?}; see `stoat-conformance mutants`", args.op);
                Ok(exit::USAGE)
            }
        },
        Command::Golden(args) => crate::golden::cli::run(args),
        Command::Bench(args) => bench_command(args),
        Command::Explore(args) => crate::explore_cli::command(args),
        Command::Mutants => {
            for op in crate::mutate::Op::ALL.iter().map(|op| op.about()) {
                let caught = if op.caught_by.is_empty() {
                    "(benign: must pass)".to_string()
                } else {
                    op.caught_by.join(", ")
                };
                println!("{:<26} {:<55} {}", op.name, op.breaks, caught);
            }
            Ok(exit::PASS)
        }
    };
    match code {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("stoat-conformance: harness error: {error}");
            ExitCode::from(exit::HARNESS_ERROR)
        }
    }
}

fn run_command(args: RunArgs) -> Result<u8, HarnessError> {
    let Some(sut) = Sut::from_argv(&args.sut) else {
        eprintln!("stoat-conformance run: name the SUT after --");
        return Ok(exit::USAGE);
    };
    let sut = Sut {
        program: resolve_program(&sut.program),
        leading: sut.leading,
    };
    let mut selection = args.select.selection();
    selection.shard = args.shard;
    if args.guest.is_some() && selection.tiers.is_empty() {
        selection.tiers = vec![Tier::Pure, Tier::Fake, Tier::Real];
    }
    let guest = args
        .guest
        .as_deref()
        .map(|dir| std::fs::canonicalize(dir).map_err(|e| HarnessError::io(dir, e)))
        .transpose()?;
    if let Some(path) = &args.rerun_failed {
        let previous = report::Report::load(path)?;
        let failed = previous
            .checks
            .iter()
            .filter(|c| c.status.fails_run() || c.status == run::Status::Errored);
        let mut ids = Vec::new();
        for check in failed {
            ids.push(check.id.clone());
            // An oracle rule is judged again only over the scenarios that failed it.
            if catalog::find(&check.id).is_some_and(|d| d.kind == catalog::Kind::Oracle) {
                selection
                    .rejudge
                    .push((check.id.clone(), check.scenarios.clone()));
            }
        }
        selection.only_ids = Some(ids);
    }
    let fakes = match &args.fakes {
        Some(path) if path.exists() => Some(path.clone()),
        Some(path) => return Err(HarnessError::FakesMissing(path.clone())),
        None => default_fakes(),
    };
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    let profile = args
        .profile
        .as_deref()
        .map(run::profile::Profile::load)
        .transpose()?
        .unwrap_or_default();
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let (seed, seed_source) = run::Seed::resolve(args.seed);
    // `--tap -` streams TAP on stdout; the human report then goes to stderr.
    let tap_to_stdout = args.tap.as_deref() == Some(Path::new("-"));
    let mut reporters: Vec<Box<dyn Reporter>> = if tap_to_stdout {
        vec![
            Box::new(report::tap::Stream::new(
                std::io::stdout(),
                args.tap_version,
            )),
            Box::new(report::human::Human::new(
                std::io::stderr(),
                false,
                args.verbose,
            )),
        ]
    } else {
        vec![Box::new(report::human::Human::new(
            std::io::stdout(),
            report::human::wants_colour(),
            args.verbose,
        ))]
    };
    let tap_file = args.tap.filter(|_| !tap_to_stdout);
    for (path, format) in [
        (args.json_report, report::formats::Format::Json),
        (args.junit, report::formats::Format::Junit),
        (tap_file, report::formats::Format::Tap(args.tap_version)),
        (args.html, report::formats::Format::Html),
    ] {
        if let Some(path) = path {
            reporters.push(Box::new(report::formats::FileReporter::new(path, format)));
        }
    }
    let config = RunConfig {
        sut,
        fakes,
        selection,
        jobs,
        seed,
        seed_source,
        timeout: Duration::from_secs(args.timeout.max(1)),
        baseline,
        skip_smoke: false,
        oracle: None,
        guest,
        contract: args.contract,
        allow_empty: args.allow_empty,
        profile,
        profile_path: args.profile.as_ref().map(|p| p.display().to_string()),
    };
    let (summary, smoke_failed) = run::run(config, &mut |event| {
        for reporter in reporters.iter_mut() {
            reporter.event(event);
        }
    })?;
    for reporter in reporters.iter_mut() {
        reporter
            .finish()
            .map_err(|e| HarnessError::Other(format!("writing a report: {e}")))?;
    }
    Ok(summary.exit_code(smoke_failed))
}

fn bench_command(args: BenchArgs) -> Result<u8, HarnessError> {
    let Some(sut) = Sut::from_argv(&args.sut) else {
        eprintln!("stoat-conformance bench: name the SUT after --");
        return Ok(exit::USAGE);
    };
    let sut = Sut {
        program: resolve_program(&sut.program),
        leading: sut.leading,
    };
    let fakes = args.fakes.or_else(default_fakes);
    let timings = crate::bench::measure(&sut, fakes)?;
    print!("{}", crate::bench::render(&sut, &timings));
    Ok(exit::PASS)
}

fn list_command(args: ListArgs) -> Result<u8, HarnessError> {
    let selection = args.select.selection();
    let mut selection = selection;
    if selection.tiers.is_empty() {
        selection.tiers = vec![Tier::Pure, Tier::Fake, Tier::Real];
    }
    let defs: Vec<&catalog::CheckDef> = catalog::all()
        .iter()
        .filter(|d| selection.selects(d))
        .collect();
    let text = match args.format {
        ListFormat::Text => report::catalog_doc::text(&defs),
        ListFormat::Json => report::catalog_doc::json(&defs),
        ListFormat::Md => report::catalog_doc::markdown_of(&defs),
    };
    print!("{text}");
    Ok(exit::PASS)
}

fn check_command(args: CheckArgs) -> Result<u8, HarnessError> {
    let bytes = if args.file == "-" {
        let mut buffer = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buffer)
            .map_err(|e| HarnessError::io("-", e))?;
        buffer
    } else {
        std::fs::read(&args.file).map_err(|e| HarnessError::io(&args.file, e))?
    };
    let mut capture = if args.capture {
        serde_json::from_slice::<Capture>(&bytes).map_err(|e| HarnessError::BadInput {
            path: PathBuf::from(&args.file),
            message: e.to_string(),
        })?
    } else {
        // Without --exit the exit rules have nothing to judge: a signal ending skips them.
        Capture::from_stdout(
            bytes,
            args.exit.map(Ending::Exited).unwrap_or(Ending::Signaled(0)),
        )
    };
    if let Some(code) = args.exit {
        capture.ending = Ending::Exited(code);
    }
    let context = Context {
        expect_cmd: args.cmd.clone(),
        canaries: Default::default(),
        edition: Default::default(),
    };
    let judgement = Oracle::new().judge(&capture, &context);
    let must = judgement
        .findings
        .iter()
        .filter(|f| f.level == crate::Level::Must)
        .count();
    if args.json {
        let out = serde_json::json!({"outcome": judgement.outcome, "findings": judgement.findings});
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        let outcome = match &judgement.outcome {
            Outcome::Ok => "ok".to_string(),
            Outcome::Failed { code } => format!("failed ({})", code.as_deref().unwrap_or("?")),
            Outcome::Crashed => "CRASHED (no result line)".to_string(),
            Outcome::Human => "human mode".to_string(),
        };
        println!("outcome: {outcome}");
        for finding in &judgement.findings {
            println!(
                "{} {} {}: {} [{}]",
                finding.level.as_str(),
                finding.check_id,
                finding.pointer,
                finding.message,
                finding.spec_ref
            );
        }
        println!(
            "{} MUST, {} SHOULD findings",
            must,
            judgement.findings.len() - must
        );
    }
    Ok(if must > 0 {
        exit::VIOLATIONS
    } else {
        exit::PASS
    })
}

fn report_command(args: ReportArgs) -> Result<u8, HarnessError> {
    if !args.matrix.is_empty() {
        let names = report::matrix::names(&args.matrix, &args.names);
        let reports = names
            .into_iter()
            .zip(&args.matrix)
            .map(|(name, path)| Ok((name, report::Report::load(path)?)))
            .collect::<Result<Vec<_>, HarnessError>>()?;
        if let Some(dir) = &args.out {
            report::matrix::write(dir, &reports).map_err(|e| HarnessError::io(dir, e))?;
        }
        print!("{}", report::matrix::markdown(&reports));
        return Ok(exit::PASS);
    }
    let before = if args.merge.is_empty() {
        let Some(path) = &args.report else {
            return Ok(exit::USAGE);
        };
        report::Report::load(path)?
    } else {
        let shards = args
            .merge
            .iter()
            .map(|path| report::Report::load(path))
            .collect::<Result<Vec<_>, HarnessError>>()?;
        report::merge::merge(shards)?
    };
    if let Some(after_path) = &args.compare {
        let after = report::Report::load(after_path)?;
        print!("{}", report::compare::compare(&before, &after));
        return Ok(if report::compare::regressed(&before, &after) {
            exit::VIOLATIONS
        } else {
            exit::PASS
        });
    }
    let format = match args.format {
        ReportFormat::Human => {
            let mut human =
                report::human::Human::new(std::io::stdout(), report::human::wants_colour(), true);
            for event in &before.replay() {
                human.event(event);
            }
            human.finish().map_err(|e| HarnessError::io("stdout", e))?;
            None
        }
        ReportFormat::Json => Some(report::formats::Format::Json),
        ReportFormat::Junit => Some(report::formats::Format::Junit),
        ReportFormat::Tap => Some(report::formats::Format::Tap(args.tap_version)),
        ReportFormat::Md => Some(report::formats::Format::Markdown),
        ReportFormat::Html => Some(report::formats::Format::Html),
        ReportFormat::Counts => {
            print!("{}", counts(&before.summary));
            None
        }
    };
    if let Some(format) = format {
        print!("{}", report::formats::render(&before, format));
    }
    Ok(before.summary.exit_code(before.smoke_failed))
}
