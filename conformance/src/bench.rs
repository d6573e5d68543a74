//! Owns the suite's benchmark: the whole pure + fake run against a SUT, timed, with the
//! summed wall time of the SUT processes it ran, so the suite's own overhead shows. It
//! prints numbers and never asserts a time (the machine is shared; the aim is a guide:
//! whole run under 60 s, overhead under 10%). Used by `stoat-conformance bench -- <sut>`
//! and `cargo bench -p stoat-conformance` (benches/suite.rs).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::report::Report;
use crate::run::{self, RunConfig, Selection, Sut};

/// One timed run.
#[derive(Clone, Debug)]
pub struct Timing {
    pub jobs: usize,
    pub wall: Duration,
    pub sut: Duration,
    pub invocations: usize,
    pub checks: usize,
    pub failed: usize,
}

impl Timing {
    /// The share of worker time not spent inside the SUT: `1 - SUT / (wall × jobs)`.
    pub fn overhead(&self) -> f64 {
        let capacity = self.wall.as_secs_f64() * self.jobs as f64;
        if capacity <= 0.0 {
            return 0.0;
        }
        (1.0 - self.sut.as_secs_f64() / capacity).max(0.0)
    }
}

/// Runs the pure + fake catalog once with `jobs` workers.
pub fn time_run(sut: &Sut, fakes: Option<PathBuf>, jobs: usize) -> Result<Timing, HarnessError> {
    let config = RunConfig {
        sut: sut.clone(),
        fakes,
        selection: Selection::default(),
        jobs,
        seed: crate::run::DEFAULT_SEED,
        seed_source: Default::default(),
        timeout: Duration::from_secs(60),
        baseline: None,
        skip_smoke: false,
        oracle: None,
        guest: None,
        contract: Default::default(),
        allow_empty: false,
        profile: Default::default(),
        profile_path: None,
    };
    let started = Instant::now();
    let mut report = Report::default();
    run::run(config, &mut |event| report.absorb(event))?;
    let summary = &report.summary;
    Ok(Timing {
        jobs,
        wall: started.elapsed(),
        sut: Duration::from_millis(summary.sut_ms),
        invocations: summary.invocations,
        checks: report.checks.len(),
        failed: summary.failed + summary.crashed,
    })
}

/// The parallel run (cores) and a one-worker run, where overhead reads most plainly.
pub fn measure(sut: &Sut, fakes: Option<PathBuf>) -> Result<Vec<Timing>, HarnessError> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut out = vec![time_run(sut, fakes.clone(), cores)?];
    if cores > 1 {
        out.push(time_run(sut, fakes, 1)?);
    }
    Ok(out)
}

/// The printed lines (numbers only; no verdict on time).
pub fn render(sut: &Sut, timings: &[Timing]) -> String {
    let mut out = format!(
        "stoat-conformance bench: pure + fake tiers against {}\n",
        sut.display()
    );
    for t in timings {
        out.push_str(&format!(
            "jobs {}: whole run {:.2} s wall, SUT {:.2} s summed over {} invocations ({} checks, {} failing); suite overhead {:.1}% (1 - SUT / (wall x jobs))\n",
            t.jobs,
            t.wall.as_secs_f64(),
            t.sut.as_secs_f64(),
            t.invocations,
            t.checks,
            t.failed,
            t.overhead() * 100.0
        ));
    }
    out.push_str("aim: whole run under 60 s, overhead under 10% (printed, never asserted)\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_the_idle_share_of_worker_time() {
        let t = Timing {
            jobs: 2,
            wall: Duration::from_secs(10),
            sut: Duration::from_secs(17),
            invocations: 1,
            checks: 1,
            failed: 0,
        };
        assert!((t.overhead() - 0.15).abs() < 1e-9);
    }
}
