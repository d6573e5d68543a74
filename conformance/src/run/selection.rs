//! Owns [`Selection`]: which checks a run includes (id globs, tags, tiers, explicit ids from
//! `--rerun-failed`), and the glob matcher (`*` matches any run of characters).

use crate::catalog::{CheckDef, Kind, Tier};

#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Id globs to include (empty: all).
    pub include: Vec<String>,
    /// Id globs to exclude.
    pub exclude: Vec<String>,
    /// Tags: a check needs at least one (empty: any).
    pub tags: Vec<String>,
    /// Tiers (empty: pure and fake).
    pub tiers: Vec<Tier>,
    /// Exact ids (from `--rerun-failed`); when set, only these.
    pub only_ids: Option<Vec<String>>,
    /// `--rerun-failed`: each oracle rule that failed, with the scenarios whose invocations
    /// failed it. Those scenarios run again (unreported) to feed the rule, and the rule is
    /// SKIP unless every one of them judged it again.
    pub rejudge: Vec<(String, Vec<String>)>,
    /// `--strict-contract`: only checks that rest on the contract alone (no decision of
    /// ours, no profile requirement).
    pub strict_contract: bool,
    /// `--shard K/N`: only the K-th of N contiguous blocks of the scenarios the selection
    /// runs (oracle rules judge every shard's invocations; `report --merge` joins them).
    pub shard: Option<Shard>,
}

/// One of N parts of a run (`--shard K/N`, K from 1 to N).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Reads `K/N` (1 <= K <= N).
    pub fn parse(text: &str) -> Option<Self> {
        let (index, count) = text.split_once('/')?;
        let shard = Shard {
            index: index.trim().parse().ok()?,
            count: count.trim().parse().ok()?,
        };
        (shard.index >= 1 && shard.index <= shard.count).then_some(shard)
    }

    /// The scenarios of this shard: the K-th of N contiguous blocks of `all` (catalog order),
    /// as even in size as the division allows. Contiguous, so the shards' evidence laid end
    /// to end is in catalog order again.
    pub fn part<T: Copy>(self, all: &[T]) -> Vec<T> {
        let start = (self.index - 1) * all.len() / self.count;
        let end = self.index * all.len() / self.count;
        all[start..end].to_vec()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Selection {
    pub fn tiers(&self) -> Vec<Tier> {
        if self.tiers.is_empty() {
            vec![Tier::Pure, Tier::Fake]
        } else {
            self.tiers.clone()
        }
    }

    /// Whether `id` is a scenario that runs only to feed a rule judged again.
    pub fn feeds(&self, id: &str) -> bool {
        self.rejudge
            .iter()
            .any(|(_, scenarios)| scenarios.iter().any(|s| s == id))
    }

    pub fn selects(&self, def: &CheckDef) -> bool {
        if self.strict_contract && !def.contract_only() {
            return false;
        }
        if let Some(ids) = &self.only_ids {
            return ids.iter().any(|id| id == def.id);
        }
        let included =
            self.include.is_empty() || self.include.iter().any(|g| glob_match(g, def.id));
        let excluded = self.exclude.iter().any(|g| glob_match(g, def.id));
        let tagged =
            self.tags.is_empty() || self.tags.iter().any(|t| def.tags.contains(&t.as_str()));
        // Oracle rules judge every invocation, whatever tier made it.
        let tiered = def.kind == Kind::Oracle || self.tiers().contains(&def.tier);
        included && !excluded && tagged && tiered
    }
}

/// Matches `text` against `pattern` where `*` is any run of characters (case-sensitive).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else if let Some(position) = rest.find(part) {
            rest = &rest[position + part.len()..];
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("ENV.*", "ENV.result-last"));
        assert!(glob_match("*.result-*", "ENV.result-last"));
        assert!(!glob_match("EXIT.*", "ENV.result-last"));
        assert!(glob_match("ENV.result-last", "ENV.result-last"));
        assert!(glob_match("*", "anything"));
        assert!(!glob_match("ENV.*x", "ENV.result-last"));
    }
}
