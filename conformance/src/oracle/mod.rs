//! Owns the oracle: the one judge applied to EVERY invocation the suite makes.
//!
//! Given a [`Capture`] and a [`Context`] (is it `--json` mode, which `cmd` is expected,
//! which canaries must never appear) it returns a [`Judgement`]: the parsed lines, the
//! outcome (ok / failed / crashed) and every [`Finding`]. It never runs anything.
//! Implements json-v3#consumer-contract, json-v3#envelope, json-v3#exit-codes, json-v3#absent, json-v3#types (lists) and "exec and non-UTF-8 output".

mod codes;
mod context;
mod envelope;
mod exec;
mod exit;
mod leaks;
mod lists;
mod schema;
mod sink;

pub use codes::{known_codes, KNOWN_CODES, KNOWN_CODES_V2};
pub use context::Context;
pub use envelope::excerpt;
pub use exec::decode_stream;
pub use leaks::allowed_path_pointers;
pub use leaks::secret_form;
pub use leaks::{Canaries, Canary};
pub use schema::{BuiltinShapes, PublishedSchemas, SchemaCheck};

use std::collections::BTreeSet;

use serde_json::Value;

use crate::capture::Capture;
use crate::finding::Finding;
pub(crate) use sink::escape_segment;
use sink::Sink;

/// How an invocation ended, as the contract's consumer would classify it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// A result line with `ok:true`.
    Ok,
    /// A result line with `ok:false` (or an `ok` that is not a bool); `code` when readable.
    Failed { code: Option<String> },
    /// No result line at all: the consumer's `StoatCrashed`.
    Crashed,
    /// Not judged: the invocation was in human mode.
    Human,
}

/// Everything the oracle concluded about one invocation.
#[derive(Clone, Debug)]
pub struct Judgement {
    /// Each stdout line parsed, `None` where a line is not a JSON object.
    pub lines: Vec<Option<Value>>,
    /// The last `type:"result"` line, if any.
    pub result: Option<Value>,
    pub outcome: Outcome,
    pub findings: Vec<Finding>,
    /// Oracle check ids that had something to judge here (so a pass is not vacuous).
    pub exercised: BTreeSet<&'static str>,
}

impl Judgement {
    /// Returns `data` of an `ok:true` result.
    pub fn data(&self) -> Option<&Value> {
        match self.outcome {
            Outcome::Ok => self.result.as_ref().and_then(|r| r.get("data")),
            _ => None,
        }
    }

    /// Returns `error.code` of a failed result.
    pub fn code(&self) -> Option<&str> {
        self.result
            .as_ref()
            .and_then(|r| r.pointer("/error/code"))
            .and_then(Value::as_str)
    }

    /// Returns the result's `cmd`.
    pub fn cmd(&self) -> Option<&str> {
        self.result
            .as_ref()
            .and_then(|r| r.get("cmd"))
            .and_then(Value::as_str)
    }

    /// Returns the non-result lines that parsed.
    pub fn events(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .flatten()
            .filter(|line| line.get("type").and_then(Value::as_str) != Some("result"))
            .collect()
    }
}

/// The oracle: stateless rules plus a schema checker.
pub struct Oracle {
    schema: Vec<Box<dyn SchemaCheck + Send + Sync>>,
}

impl Default for Oracle {
    fn default() -> Self {
        Oracle::new()
    }
}

impl Oracle {
    /// Builds the oracle with every schema checker this build has.
    pub fn new() -> Self {
        Oracle {
            schema: schema::available(),
        }
    }

    /// Builds an oracle with the given schema checkers only (tests).
    pub fn with_schema(schema: Vec<Box<dyn SchemaCheck + Send + Sync>>) -> Self {
        Oracle { schema }
    }

    /// Judges one invocation. Human-mode invocations are not judged by contract rules.
    pub fn judge(&self, capture: &Capture, context: &Context) -> Judgement {
        let mut sink = Sink {
            findings: Vec::new(),
            exercised: BTreeSet::new(),
        };
        if !capture.json {
            return Judgement {
                lines: Vec::new(),
                result: None,
                outcome: Outcome::Human,
                findings: Vec::new(),
                exercised: BTreeSet::new(),
            };
        }
        let stream = envelope::check(&capture.stdout.0, context, &mut sink);
        exit::check(&stream, capture.ending, &mut sink);
        codes::check(&stream, context.edition, &mut sink);
        lists::check(&stream, &mut sink);
        leaks::check(
            &stream,
            &capture.stdout.0,
            &context.canaries,
            context.edition,
            &mut sink,
        );
        exec::check(&stream, &mut sink);
        // The published schemas and the builtin shapes are contract 3's (SCHEMA.data).
        if context.edition == crate::spec::Edition::V3 {
            for checker in &self.schema {
                schema::check(checker.as_ref(), &stream, &mut sink);
            }
        }
        let outcome = match &stream.result {
            None => Outcome::Crashed,
            Some((_, result)) => match result.get("ok").and_then(Value::as_bool) {
                Some(true) => Outcome::Ok,
                _ => Outcome::Failed {
                    code: result
                        .pointer("/error/code")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                },
            },
        };
        Judgement {
            lines: stream.lines,
            result: stream.result.map(|(_, r)| r),
            outcome,
            findings: sink.findings,
            exercised: sink.exercised,
        }
    }
}

#[cfg(test)]
mod tests;
