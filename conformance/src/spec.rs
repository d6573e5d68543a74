//! Owns the names of the documents and sections a check cites, and the contract editions a
//! check belongs to.
//!
//! `json-v3#...` anchors name sections of contract 3 (the authority), `json-v2#...` sections
//! of the published contract-2 edition (for rules that read differently there), and
//! `design#decisions` the decisions where the contract is silent; docs/contract.md restates
//! each under the same id.

/// The newest contract edition this suite judges (the default of `--contract`).
pub const CONTRACT_VERSION: u64 = 3;

/// A published edition of the machine contract.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Edition {
    V2,
    #[default]
    V3,
}

impl Edition {
    /// Every edition this suite knows, oldest first.
    pub const ALL: [Edition; 2] = [Edition::V2, Edition::V3];

    /// The integer the edition is named by (`v` and `version.contract`).
    pub const fn number(self) -> u64 {
        match self {
            Edition::V2 => 2,
            Edition::V3 => 3,
        }
    }

    /// The edition named by this integer, if the suite knows it.
    pub fn from_number(number: u64) -> Option<Self> {
        Edition::ALL.into_iter().find(|e| e.number() == number)
    }
}

impl serde::Serialize for Edition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.number())
    }
}

impl std::fmt::Display for Edition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// The editions a check's rule holds in. Most rules read the same in both (`Both`); a rule
/// that only one edition states says so, and a contract-3-only rule names the documented
/// difference from contract 2 that it follows from (the migration view groups by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Editions {
    /// The rule reads the same in contract 2 and contract 3.
    Both,
    /// Contract 3 only; `change` says, in a few words, what differs in contract 2.
    V3 { change: &'static str },
    /// Contract 2 only (its contract-3 counterpart is a separate check).
    V2,
}

impl Editions {
    pub const fn contains(self, edition: Edition) -> bool {
        matches!(
            (self, edition),
            (Editions::Both, _) | (Editions::V3 { .. }, Edition::V3) | (Editions::V2, Edition::V2)
        )
    }

    /// The editions as a list, oldest first.
    pub fn list(self) -> Vec<Edition> {
        Edition::ALL
            .into_iter()
            .filter(|e| self.contains(*e))
            .collect()
    }

    /// The documented v2-to-v3 difference a contract-3-only rule follows from.
    pub const fn change(self) -> Option<&'static str> {
        match self {
            Editions::V3 { change } => Some(change),
            _ => None,
        }
    }
}

impl serde::Serialize for Editions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.list())
    }
}

/// The document a check's quote comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Contract 3 (docs/contract.md, `json-v3#...`).
    Contract,
    /// Contract 2, the previous edition, for a contract-2-only rule (docs/contract.md, `json-v2#...`).
    ContractV2,
    /// Our decisions where the contract is silent (docs/contract.md, `design#decisions`).
    Design,
    /// The protocol `stoat mcp` speaks, which the contract defers to ("See the MCP reference
    /// for the tool behavior and schemas"): the MCP specification revisions and the JSON-RPC
    /// 2.0 messages they carry (docs/contract.md, `mcp#...`; the sentences are [`MCP_QUOTES`]).
    Mcp,
}

/// A knob the contract does not name, which the SUT declares in its `--profile` file. A
/// check resting on one is not a rule of the contract: it is a SHOULD, and a MUST only in a
/// run whose profile declares the knob (the implementer's own promise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// `data_root_var`: the variable that moves the data root (nothing is written outside it).
    DataRootVar,
    /// `[catalog]`: how the SUT is pointed at a mirror (the suite's loopback one).
    Catalog,
}

impl Requirement {
    /// The profile key that declares it.
    pub const fn key(self) -> &'static str {
        match self {
            Requirement::DataRootVar => "data_root_var",
            Requirement::Catalog => "[catalog]",
        }
    }
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
    (
        "json-v2#consumer-contract",
        "Contract 2: The consumer contract, in one page",
    ),
    ("json-v2#envelope", "Contract 2: The envelope"),
    ("json-v2#event-types", "Contract 2: Event types"),
    ("json-v2#error-object", "Contract 2: The error object"),
    ("json-v2#error-codes", "Contract 2: Error codes"),
    ("json-v2#exit-codes", "Contract 2: Exit codes"),
    ("json-v2#json-implies", "Contract 2: What --json implies"),
    (
        "json-v2#flag-position",
        "Contract 2: Where the flag may appear",
    ),
    ("json-v2#types", "Contract 2: Types"),
    ("json-v2#absent", "Contract 2: What is deliberately absent"),
    ("json-v2#per-command-data", "Contract 2: Per-command data"),
    (
        "json-v2#exec-bytes",
        "Contract 2: exec and non-UTF-8 output",
    ),
    ("json-v2#ssh-refused", "Contract 2: ssh is refused"),
    ("json-v2#streaming", "Contract 2: Streaming"),
    ("json-v2#versioning", "Contract 2: Versioning"),
    ("design#decisions", "Decisions where v3 is silent"),
    (
        "mcp#jsonrpc-notification",
        "JSON-RPC 2.0 (carried by MCP): Notification",
    ),
    ("mcp#stdio", "MCP: the stdio transport"),
    (
        "mcp#version-negotiation",
        "MCP: lifecycle, version negotiation",
    ),
    (
        "mcp#structured-content",
        "MCP 2025-06-18 and later: tools, structured content",
    ),
];

/// The sentences an `mcp#...` check may quote, each with the document it is verbatim from
/// (the MCP specification is not kept in this repository, so the catalog lint holds an MCP
/// check's quote to this table instead of to a copy of the text).
pub const MCP_QUOTES: &[(&str, &str, &str)] = &[
    (
        "mcp#jsonrpc-notification",
        "JSON-RPC 2.0 specification, 4.1 Notification (every MCP revision carries JSON-RPC 2.0)",
        "The Server MUST NOT reply to a Notification, including those that are within a batch request.",
    ),
    (
        "mcp#stdio",
        "MCP specification, basic/transports, stdio (2024-11-05 to 2025-11-25)",
        "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
    ),
    (
        "mcp#version-negotiation",
        "MCP specification, basic/lifecycle, version negotiation (2024-11-05 to 2025-11-25)",
        "If the server supports the requested protocol version, it MUST respond with the same version.",
    ),
    (
        "mcp#structured-content",
        "MCP specification 2025-06-18 and 2025-11-25, server/tools, structured content",
        "For backwards compatibility, a tool that returns structured content SHOULD also return the serialized JSON in a TextContent block.",
    ),
];

/// Returns the human title of a section anchor.
pub fn section_title(anchor: &str) -> Option<&'static str> {
    SECTIONS.iter().find(|(a, _)| *a == anchor).map(|(_, t)| *t)
}

/// Where a report links a spec id: docs/contract.md, relative to the report's own file. The
/// release tarball (ci-kit/dist.sh) ships that file at this path, so a report written at the
/// top of the unpacked tarball (`./stoat-conformance run --html report.html`) resolves every
/// link it holds; docs/decisions/reports.md says why it is relative.
pub const CONTRACT_DOC: &str = "docs/contract.md";

/// The HTML anchor docs/contract.md defines for a spec id (`<a id="json-v3-error-codes">`
/// for `json-v3#error-codes`): the id with its `#` written as `-`, since a `#` cannot stand
/// in a URL's fragment.
pub fn doc_anchor(spec_id: &str) -> String {
    spec_id.replace('#', "-")
}

/// The link from a report to the section a spec id names (`docs/contract.md#json-v3-types`).
pub fn doc_link(spec_id: &str) -> String {
    format!("{CONTRACT_DOC}#{}", doc_anchor(spec_id))
}
