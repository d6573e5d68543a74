//! Owns running checks: the SUT process ([`sut`]), one check's context ([`case`]), selection,
//! the scheduler ([`runner`]) and the events it emits ([`events`]). Never prints: reporters
//! consume the events.

pub mod baseline;
pub mod case;
pub mod events;
pub mod profile;
pub mod repro;
pub mod runner;
pub mod seed;
pub mod selection;
pub mod stop;
pub mod sut;

pub use case::{Case, Inv, Ran};
pub use events::{CheckResult, Event, Status, Summary};
pub use runner::{run, Contract, RunConfig};
pub use seed::{Seed, SeedSource, DEFAULT_SEED};
pub use selection::Selection;
pub use sut::{SignalPlan, Sut};
