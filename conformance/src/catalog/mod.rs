//! Owns the check catalog: every check's stable id, title, level, tier, tags, the contract
//! section and sentence it enforces, and (for scenario checks) the function that runs it.
//! THE table is [`all`]; `docs/checks.md` is generated from it (`stoat-conformance list
//! --format md`) and a lint test keeps ids unique, cited and documented.

mod apply;
mod basics;
mod errors;
mod exec;
mod helpers;
mod leaks;
mod lifecycle;
mod live;
mod mcp;
mod oracle_rules;
mod project;
mod pull;
mod real;
mod remote;
pub use real::GUEST_IMAGE;
mod state;
mod streaming;
mod vms;

use std::sync::OnceLock;

use crate::error::HarnessError;
use crate::finding::Level;
use crate::run::Case;
use crate::spec::{Editions, Source};

/// Where a check can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Needs nothing but the SUT.
    Pure,
    /// Needs the fake host tools on PATH.
    Fake,
    /// Needs QEMU and the test guest.
    Real,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Pure => "pure",
            Tier::Fake => "fake",
            Tier::Real => "real",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pure" => Some(Tier::Pure),
            "fake" => Some(Tier::Fake),
            "real" => Some(Tier::Real),
            _ => None,
        }
    }
}

/// Whether a check is a universal oracle rule or a scenario of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Applied by the oracle to every invocation; its result aggregates them all.
    Oracle,
    /// Runs its own invocations and asserts the command-specific part.
    Scenario,
}

/// The body of a scenario check.
pub type ScenarioFn = fn(&mut Case<'_>) -> Result<(), HarnessError>;

/// One catalog entry.
#[derive(Clone, Copy)]
pub struct CheckDef {
    pub id: &'static str,
    /// What it verifies, one line.
    pub title: &'static str,
    pub level: Level,
    pub tier: Tier,
    pub kind: Kind,
    pub tags: &'static [&'static str],
    /// Section anchor, one of [`crate::spec::SECTIONS`].
    pub spec: &'static str,
    pub source: Source,
    /// The sentence enforced, verbatim (modulo whitespace) from `source`.
    pub quote: &'static str,
    /// The contract editions the rule holds in ([`Editions::Both`] unless marked with
    /// [`v3_only`] or [`v2_only`]).
    pub editions: Editions,
    pub scenario: Option<ScenarioFn>,
}

impl std::fmt::Debug for CheckDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckDef").field("id", &self.id).finish()
    }
}

/// Shorthand for an oracle rule from the contract.
pub(crate) const fn rule(
    id: &'static str,
    level: Level,
    spec: &'static str,
    quote: &'static str,
    title: &'static str,
    tags: &'static [&'static str],
) -> CheckDef {
    CheckDef {
        id,
        title,
        level,
        tier: Tier::Pure,
        kind: Kind::Oracle,
        tags,
        spec,
        source: Source::Contract,
        quote,
        editions: Editions::Both,
        scenario: None,
    }
}

/// Shorthand for a scenario check from the contract.
#[allow(clippy::too_many_arguments)]
pub(crate) const fn scenario(
    id: &'static str,
    level: Level,
    tier: Tier,
    spec: &'static str,
    quote: &'static str,
    title: &'static str,
    tags: &'static [&'static str],
    body: ScenarioFn,
) -> CheckDef {
    CheckDef {
        id,
        title,
        level,
        tier,
        kind: Kind::Scenario,
        tags,
        spec,
        source: Source::Contract,
        quote,
        editions: Editions::Both,
        scenario: Some(body),
    }
}

/// The same entry, citing the decisions in docs/contract.md (design#decisions) instead of the contract.
pub(crate) const fn from_design(mut def: CheckDef) -> CheckDef {
    def.source = Source::Design;
    def
}

/// The same entry, holding in contract 3 only; `change` names what contract 2 says instead
/// (or that contract 2 has no such command, field or code), in a few words.
pub(crate) const fn v3_only(mut def: CheckDef, change: &'static str) -> CheckDef {
    def.editions = Editions::V3 { change };
    def
}

/// The same entry, holding in contract 2 only, quoting the contract-2 edition.
pub(crate) const fn v2_only(mut def: CheckDef) -> CheckDef {
    def.editions = Editions::V2;
    def.source = Source::ContractV2;
    def
}

/// Every check, in catalog order.
pub fn all() -> &'static [CheckDef] {
    static ALL: OnceLock<Vec<CheckDef>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        for part in [
            oracle_rules::CHECKS,
            basics::CHECKS,
            vms::CHECKS,
            exec::CHECKS,
            lifecycle::CHECKS,
            pull::CHECKS,
            apply::CHECKS,
            real::CHECKS,
            leaks::CHECKS,
            state::CHECKS,
            streaming::CHECKS,
            project::CHECKS,
            project::SCENARIOS,
            errors::CHECKS,
            mcp::CHECKS,
            remote::CHECKS,
        ] {
            out.extend_from_slice(part);
        }
        out
    })
}

/// The catalog entry with this id.
pub fn find(id: &str) -> Option<&'static CheckDef> {
    all().iter().find(|d| d.id == id)
}
