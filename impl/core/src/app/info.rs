//! The operations that need no data root: `version` and `schema` (json-v3#per-command-data).
//! `help`'s text is the command line's own grammar, so help stays with the CLI.

use stoat_wire::dto::{SchemaData, SchemaListData, VersionData};
use stoat_wire::CONTRACT_VERSION;

use crate::{Error, Result};

/// The environment variables stoat reads, each with what it means (for the manual page).
pub use crate::env::VARS as ENV_VARS;

/// `version`: this build's version and the contract edition it speaks.
pub fn version() -> VersionData {
    VersionData {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        contract: CONTRACT_VERSION,
    }
}

/// `schema` without a name: every JSON Schema file this binary carries.
pub fn schema_list() -> SchemaListData {
    SchemaListData {
        base: stoat_schemas::BASE_URI.to_owned(),
        schemas: stoat_schemas::files()
            .iter()
            .map(|f| f.path.to_owned())
            .collect(),
    }
}

/// One schema file as carried, and its text (what the human output prints as it is).
pub struct SchemaFile {
    pub data: SchemaData,
    pub text: &'static str,
}

/// `schema NAME`: a schema file by path, or the data schema of the command called NAME.
pub fn schema(name: &str) -> Result<SchemaFile> {
    let path = stoat_schemas::get(name)
        .map(|_| name)
        .or_else(|| stoat_schemas::data_schema_path(name))
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "no schema called {name:?}; run `stoat schema` for the list"
            ))
        })?;
    let text = stoat_schemas::get(path).unwrap_or_default();
    let schema = serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("embedded schema {path} does not parse: {e}")))?;
    Ok(SchemaFile {
        data: SchemaData {
            path: path.to_owned(),
            schema,
        },
        text,
    })
}
