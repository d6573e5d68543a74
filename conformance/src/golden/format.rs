//! Owns the golden transcript file format (`stoat-golden/1`, docs/golden.md): one plain-JSON
//! file per case holding the inputs (argv, env delta, stdin, the data-root fixture tree, work
//! files, running VMs) and the expected outcome (exit status, JSON lines with matchers).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capture::Bytes;
use crate::error::HarnessError;

/// The value of [`GoldenCase::format`].
pub const FORMAT: &str = "stoat-golden/1";

/// One golden case: everything needed to replay it and judge the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoldenCase {
    /// Always [`FORMAT`].
    pub format: String,
    /// The contract major version the transcript was recorded under.
    pub contract: u32,
    /// The `cmd` every line must carry (also the directory name).
    pub cmd: String,
    /// What the case shows, for humans.
    #[serde(default)]
    pub about: String,
    /// Arguments after the SUT's program (placeholders like `[WORK]` are expanded).
    pub argv: Vec<String>,
    /// Variables added to (or replacing) the sandbox's pinned environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Invocations run first in the same sandbox, in order (a history the case's own
    /// invocation ends), each judged by the oracle and, when it names them, by its exit
    /// status and lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<GoldenStep>,
    /// Bytes on stdin (`None`: /dev/null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<Bytes>,
    /// The data root (`STOAT_HOME`) before the run: relative path → content; a key ending in
    /// `/` is an empty directory.
    #[serde(default)]
    pub fixture: BTreeMap<String, Bytes>,
    /// Files in the SUT's working directory before the run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub work: BTreeMap<String, Bytes>,
    /// VMs of the fixture that are "running" (a fake qemu holding their directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<String>,
    /// Only these fake tools on PATH (`None`: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The expected exit status.
    pub exit: i32,
    /// The expected JSON lines, result last; values may be matchers (`{"$any": "int"}`...).
    pub lines: Vec<Value>,
    /// `"allowed"`: objects may carry keys the transcript does not name (the additive rule).
    #[serde(default = "extra_keys_allowed")]
    pub extra_keys: String,
}

/// One invocation of a case's `before` history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoldenStep {
    /// Arguments after the SUT's program (placeholders expanded).
    pub argv: Vec<String>,
    /// The expected exit status (`None`: any the oracle accepts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// The expected lines, result last (empty: not compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Value>,
}

impl GoldenStep {
    /// The step as a case of its own to compare against, when it names an answer.
    pub fn expected(&self, case: &GoldenCase) -> Option<GoldenCase> {
        let exit = self.exit?;
        if self.lines.is_empty() {
            return None;
        }
        Some(GoldenCase {
            argv: self.argv.clone(),
            before: Vec::new(),
            exit,
            lines: self.lines.clone(),
            ..case.clone()
        })
    }
}

fn extra_keys_allowed() -> String {
    "allowed".to_string()
}

impl GoldenCase {
    /// Reads one case file.
    pub fn load(path: &Path) -> Result<Self, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::io(path, e))?;
        Self::parse(&text).map_err(|message| HarnessError::BadInput {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parses a case from its JSON text; never panics on any input.
    pub fn parse(text: &str) -> Result<Self, String> {
        let case: GoldenCase = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if case.format != FORMAT {
            return Err(format!("format is {:?}, expected {FORMAT:?}", case.format));
        }
        if case.extra_keys != "allowed" && case.extra_keys != "forbidden" {
            return Err(format!(
                "extra_keys is {:?}, expected \"allowed\" or \"forbidden\"",
                case.extra_keys
            ));
        }
        if case.lines.is_empty() {
            return Err("lines is empty: a case expects at least its result line".into());
        }
        Ok(case)
    }

    /// Renders the case as the pretty JSON written to disk (with a final newline).
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Whether objects may carry keys the transcript does not name.
    pub fn extra_keys_allowed(&self) -> bool {
        self.extra_keys != "forbidden"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_wrong_format() {
        let case = GoldenCase {
            format: FORMAT.into(),
            contract: 3,
            cmd: "version".into(),
            about: String::new(),
            argv: vec!["--json".into(), "version".into()],
            env: BTreeMap::new(),
            before: Vec::new(),
            stdin: None,
            fixture: BTreeMap::from([("isos/".to_string(), Bytes::default())]),
            work: BTreeMap::new(),
            running: Vec::new(),
            tools: None,
            exit: 0,
            lines: vec![serde_json::json!({"v": 3})],
            extra_keys: "allowed".into(),
        };
        let back = GoldenCase::parse(&case.render()).expect("parses");
        assert_eq!(back, case);
        assert!(GoldenCase::parse(&case.render().replace(FORMAT, "x")).is_err());
        assert!(GoldenCase::parse("[]").is_err());
    }
}
