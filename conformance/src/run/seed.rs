//! Owns the seed of generated cases. A run without `--seed` uses the suite's fixed
//! [`DEFAULT_SEED`], so the same SUT and suite judge the same cases on every run (a verdict
//! never depends on the clock); `--seed N` replays another set and `--seed random` explores.
//! A generated case that finds something new is a reason to add a fixed case.

use serde::{Deserialize, Serialize};

/// The seed every run without `--seed` uses. Changing it changes the generated cases, so it
/// changes only with a suite version.
pub const DEFAULT_SEED: u64 = 1;

/// What `--seed` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    Fixed(u64),
    /// A fresh seed for exploration, printed so a finding can be replayed.
    Random,
}

/// Where a run's seed came from (stored in every report next to the seed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedSource {
    /// The suite's fixed seed.
    #[default]
    Default,
    /// `--seed N`.
    Flag,
    /// `--seed random`.
    Random,
}

impl SeedSource {
    /// The name the JSON report stores.
    pub fn name(self) -> &'static str {
        match self {
            SeedSource::Default => "default",
            SeedSource::Flag => "flag",
            SeedSource::Random => "random",
        }
    }

    /// How the human formats say it, after the seed.
    pub fn as_str(self) -> &'static str {
        match self {
            SeedSource::Default => "default",
            SeedSource::Flag => "--seed",
            SeedSource::Random => "--seed random",
        }
    }
}

impl Seed {
    /// The seed a run uses and where it came from.
    pub fn resolve(asked: Option<Seed>) -> (u64, SeedSource) {
        match asked {
            None => (DEFAULT_SEED, SeedSource::Default),
            Some(Seed::Fixed(seed)) => (seed, SeedSource::Flag),
            Some(Seed::Random) => (random_seed(), SeedSource::Random),
        }
    }
}

/// A seed nobody chose: std's per-process random hash keys, kept short enough to retype.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id().into());
    hasher.finish() % 1_000_000_000
}
