//! stoat-schemas: the machine-readable half of stoat machine contract v3.
//!
//! This crate owns the JSON Schema 2020-12 files beside it (`envelope.json`, `error.json`,
//! `codes.json`, `events/`, `dto/`, `data/`) and embeds every one of them at compile time: a
//! build script walks the folder and generates the table, so a new schema file needs no code
//! change. Every file's `$id` is [`BASE_URI`] followed by its path, and files refer to each other
//! with relative `$ref`s (`../dto/vm.json`), so nothing is ever fetched.
//!
//! Both the reference `stoat` and `stoat-conformance` read the contract through this crate, and
//! `stoat schema [NAME]` prints these texts. With the `validate` feature, [`validate::Validator`]
//! checks values and whole `--json` lines against them. [`bundle`] makes one schema
//! self-contained, for a consumer that cannot follow references between files.
//!
//! `docs/schemas.md` describes the layout and the decisions taken where the contract is silent.

#![forbid(unsafe_code)]

pub mod bundle;
#[cfg(feature = "validate")]
pub mod validate;

/// The `$id` prefix of every schema. `.invalid` never resolves: it names, it is never fetched.
pub const BASE_URI: &str = "https://schemas.stoat.invalid/v3/";

/// One embedded schema file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaFile {
    /// Path relative to the schemas folder, `/`-separated, e.g. `"dto/vm.json"`. Its `$id` is
    /// [`BASE_URI`] followed by this path.
    pub path: &'static str,
    /// The file's JSON text, exactly as written.
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/schema_files.rs"));

/// Every embedded schema file, sorted by path.
pub fn files() -> &'static [SchemaFile] {
    FILES
}

/// The text of the schema file at `path` (e.g. `"data/ls.json"`), if there is one.
pub fn get(path: &str) -> Option<&'static str> {
    FILES
        .binary_search_by(|file| file.path.cmp(path))
        .ok()
        .map(|index| FILES[index].text)
}

/// The schema of a result's `data` for `cmd` (the envelope's `cmd` field): `"ls"` gives
/// `Some("data/ls.json")`. `None` for a cmd with no data schema, such as `ssh` (always refused
/// under `--json`) or a cmd this contract does not know.
///
/// Commands with several shapes (`forward`, `snapshot`, `logs`, `apply`, `recipe`, `guest`,
/// `mcp`, and the project-scope `ProjectRun` of up/down/apply/wait/rm) get the union; the single
/// shapes live in `data/<cmd>/<variant>.json` for a caller that knows the subcommand.
pub fn data_schema_path(cmd: &str) -> Option<&'static str> {
    if cmd.is_empty() || cmd.contains(['/', '\\', '.']) {
        return None;
    }
    find_path(&format!("data/{cmd}.json"))
}

/// The schema of a non-terminal event's `data` for the envelope's `type`: `"progress"` gives
/// `Some("events/progress.json")`. `None` for `result` and for event types this contract does not
/// know (a consumer must skip those).
pub fn event_schema_path(event_type: &str) -> Option<&'static str> {
    if event_type.is_empty() || event_type.contains(['/', '\\', '.']) {
        return None;
    }
    find_path(&format!("events/{event_type}.json"))
}

/// Every error code of the v3 table, read from `codes.json` at build time: sorted and unique.
/// Consumers must still treat a code not in this list as a generic failure.
pub fn codes() -> Vec<&'static str> {
    CODES.to_vec()
}

fn find_path(wanted: &str) -> Option<&'static str> {
    FILES
        .binary_search_by(|file| file.path.cmp(wanted))
        .ok()
        .map(|index| FILES[index].path)
}
