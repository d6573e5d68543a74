//! Owns [`Finding`], [`Level`] and [`CheckId`]: a contract violation as data, never a Rust
//! error, and the typed id of the check it breaks.
//!
//! A SUT breaking the contract is reported, not raised; harness failures are
//! [`crate::error::HarnessError`] instead.

use serde::{Deserialize, Serialize};

/// How much a broken rule weighs: a MUST fails the run, a SHOULD only warns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Must,
    Should,
}

impl Level {
    /// Returns the RFC 2119 word for this level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// A check's stable id with the level and contract section that go with it, so a finding
/// made from it needs nothing else: a constant ([`crate::ids`]) where code other than the
/// check's own catalog entry names it, else the entry's own (`CheckDef::check_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CheckId {
    /// The stable id, e.g. `ENV.one-result`.
    pub name: &'static str,
    pub level: Level,
    /// Section anchor, one of [`crate::spec::SECTIONS`].
    pub spec: &'static str,
}

impl CheckId {
    pub const fn new(name: &'static str, level: Level, spec: &'static str) -> Self {
        CheckId { name, level, spec }
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// One observed violation of one check, located by a JSON pointer into the line it concerns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub check_id: String,
    pub level: Level,
    /// Contract section the check enforces, e.g. `json-v3#exit-codes`.
    pub spec_ref: String,
    /// Where: `line 3/data/vms/0/share`, `exit`, `stdin`, `fake-log`...
    pub pointer: String,
    pub message: String,
}

impl Finding {
    /// Builds a finding of check `id`, at its level and citing its section.
    pub fn new(id: CheckId, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            check_id: id.name.to_string(),
            level: id.level,
            spec_ref: id.spec.to_string(),
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// The findings with each repeated one kept once, in first-seen order: the same rule broken
/// the same way at the same place by several invocations is one finding that says how many
/// times (`... (3 times)`), so no report lists a line twice.
pub fn dedupe(findings: Vec<Finding>) -> Vec<Finding> {
    let mut kept: Vec<(Finding, usize)> = Vec::new();
    for finding in findings {
        match kept.iter_mut().find(|(f, _)| *f == finding) {
            Some((_, count)) => *count += 1,
            None => kept.push((finding, 1)),
        }
    }
    kept.into_iter()
        .map(|(mut finding, count)| {
            if count > 1 {
                finding.message = format!("{} ({count} times)", finding.message);
            }
            finding
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V_IS_3: CheckId = CheckId::new("ENV.v-is-3", Level::Must, "json-v3#versioning");

    #[test]
    fn repeated_findings_are_kept_once_with_their_count() {
        let a = Finding::new(V_IS_3, "line 1/v", "v is 2");
        let b = Finding::new(V_IS_3, "line 2/v", "v is 2");
        let out = dedupe(vec![a.clone(), b.clone(), a.clone(), a]);
        let messages: Vec<(&str, &str)> = out
            .iter()
            .map(|f| (f.pointer.as_str(), f.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            [("line 1/v", "v is 2 (3 times)"), ("line 2/v", "v is 2")]
        );
    }
}
