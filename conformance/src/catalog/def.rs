//! Owns what one catalog entry is ([`CheckDef`]: id, level, tier, kind, tags, section,
//! quote, editions, requirement, scenario body) and the bases the tables' struct literals
//! fill the rest of an entry from ([`rule`], [`scenario`]), plus [`declared`].

use crate::error::HarnessError;
use crate::finding::{CheckId, Level};
use crate::run::Case;
use crate::spec::{Editions, Requirement, Source};

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
    /// The contract editions the rule holds in ([`Editions::Both`] unless the entry says
    /// otherwise).
    pub editions: Editions,
    /// A knob of the SUT's profile the rule rests on (see [`declared`]).
    pub requires: Option<Requirement>,
    pub scenario: Option<ScenarioFn>,
}

impl std::fmt::Debug for CheckDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckDef").field("id", &self.id).finish()
    }
}

impl CheckDef {
    /// The typed id this entry's findings carry.
    pub const fn check_id(&self) -> CheckId {
        CheckId::new(self.id, self.level, self.spec)
    }
}

/// The fields of an oracle rule's entry that the entry does not name itself: its id, level
/// and section, which are the constant's ([`crate::ids`]) so the oracle's findings carry the
/// same, and what every oracle rule shares. An entry names `quote`, `title` and `tags`, and
/// `editions` or `source` where they are not both editions of the contract:
///
/// `CheckDef { quote: "...", title: "...", tags: &[...], ..rule(ids::ENV_ONE_RESULT) }`
pub(crate) const fn rule(id: CheckId) -> CheckDef {
    CheckDef {
        id: id.name,
        title: "",
        level: id.level,
        tier: Tier::Pure,
        kind: Kind::Oracle,
        tags: &[],
        spec: id.spec,
        source: Source::Contract,
        quote: "",
        editions: Editions::Both,
        requires: None,
        scenario: None,
    }
}

/// The fields of a scenario check's entry that the entry does not name itself: its body,
/// its kind, and the defaults (quoting the contract, holding in both editions, resting on
/// no declared requirement). An entry names `id`, `level`, `tier`, `spec`, `quote`, `title`
/// and `tags`, and `editions` (`Editions::V3 { change }`, `Editions::V2`) or `source`
/// (`Source::Design`, `Source::ContractV2`) where they differ; the catalog lint test rejects
/// an entry whose id, spec, quote, title or tags are left empty.
pub(crate) const fn scenario(body: ScenarioFn) -> CheckDef {
    CheckDef {
        id: "",
        title: "",
        level: Level::Must,
        tier: Tier::Pure,
        kind: Kind::Scenario,
        tags: &[],
        spec: "",
        source: Source::Contract,
        quote: "",
        editions: Editions::Both,
        requires: None,
        scenario: Some(body),
    }
}

/// The same entry (one of our decisions), resting on a knob the SUT declares in its profile:
/// a SHOULD in the catalog, a MUST in a run whose profile declares `requirement`.
pub(crate) const fn declared(mut def: CheckDef, requirement: Requirement) -> CheckDef {
    def.level = Level::Should;
    def.requires = Some(requirement);
    def
}

impl CheckDef {
    /// The level this check has in a run with `profile`: a check resting on a declared
    /// requirement is a MUST only when the profile declares it.
    pub fn level_in(&self, profile: &crate::run::profile::Profile) -> Level {
        match self.requires {
            Some(requirement) if profile.declares(requirement) => Level::Must,
            _ => self.level,
        }
    }

    /// Whether the check rests on the contract alone (`--strict-contract` runs only these).
    pub fn contract_only(&self) -> bool {
        self.source != Source::Design && self.requires.is_none()
    }
}
