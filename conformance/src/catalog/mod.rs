//! Owns the check catalog: every check's stable id, title, level, tier, tags, the contract
//! section and sentence it enforces, and (for scenario checks) the function that runs it.
//! THE table is [`all`]; `docs/checks.md` is generated from it (`stoat-conformance list
//! --format md`) and a lint test keeps ids unique, cited and documented.

mod apply;
mod basics;
mod def;
mod errors;
mod exec;
mod explore;
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
mod signals;
pub use real::GUEST_IMAGE;
mod state;
mod streaming;
mod v2_citations;
mod vms;

use std::sync::OnceLock;

pub use def::{CheckDef, Kind, ScenarioFn, Tier};

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
            signals::CHECKS,
            explore::CHECKS,
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
