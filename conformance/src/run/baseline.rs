//! Owns the baseline of expected failures: a TOML file of `[[expected]] id, reason`. A listed
//! failure does not fail the run; an unlisted one does; a listed check that now passes fails
//! the run as stale.

use std::path::Path;

use serde::Deserialize;

use crate::error::HarnessError;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub expected: Vec<ExpectedFailure>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFailure {
    pub id: String,
    pub reason: String,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Self, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
        let baseline: Baseline = toml::from_str(&text).map_err(|e| HarnessError::BadInput {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if let Some(entry) = baseline
            .expected
            .iter()
            .find(|e| e.reason.trim().is_empty())
        {
            return Err(HarnessError::BadInput {
                path: path.to_path_buf(),
                message: format!("baseline entry {} has no reason", entry.id),
            });
        }
        Ok(baseline)
    }

    pub fn reason(&self, id: &str) -> Option<&str> {
        self.expected
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.reason.as_str())
    }
}
