//! Owns the names of the documents and sections a check cites.
//!
//! `json-v3#...` anchors name sections of contract v3 and `design#decisions` the decisions
//! where v3 is silent; docs/contract.md restates both under the same ids.

/// The contract version this suite judges.
pub const CONTRACT_VERSION: u64 = 3;

/// The document a check's quote comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Contract v3 (docs/contract.md, `json-v3#...`).
    Contract,
    /// The decisions where v3 is silent (docs/contract.md, `design#decisions`).
    Design,
}

/// Every section anchor a check may cite; the lint test rejects others.
pub const SECTIONS: &[(&str, &str)] = &[
    (
        "json-v3#consumer-contract",
        "The consumer contract for a named VM command",
    ),
    ("json-v3#envelope", "The envelope"),
    ("json-v3#event-types", "Event types"),
    ("json-v3#error-object", "The error object"),
    ("json-v3#error-codes", "Error codes"),
    ("json-v3#exit-codes", "Exit codes"),
    ("json-v3#json-implies", "What --json implies"),
    ("json-v3#flag-position", "Where the flag may appear"),
    ("json-v3#types", "Types"),
    ("json-v3#absent", "What is deliberately absent"),
    ("json-v3#per-command-data", "Per-command data"),
    ("json-v3#exec-bytes", "exec and non-UTF-8 output"),
    ("json-v3#ssh-refused", "ssh is refused"),
    ("json-v3#streaming", "Streaming"),
    ("json-v3#versioning", "Versioning"),
    ("json-v3#capabilities", "Capability discovery"),
    ("design#decisions", "Decisions where v3 is silent"),
];

/// Returns the human title of a section anchor.
pub fn section_title(anchor: &str) -> Option<&'static str> {
    SECTIONS.iter().find(|(a, _)| *a == anchor).map(|(_, t)| *t)
}
