//! Commands that need no data root: version, help, schema.

use clap::CommandFactory;
use stoat_core::{Error, Result};
use stoat_wire::dto::{HelpData, VersionData};
use stoat_wire::CONTRACT_VERSION;

use crate::grammar::Cli;
use crate::{Reply, VERSION};

/// `version`.
pub fn version() -> Reply {
    let data = VersionData {
        version: VERSION.to_owned(),
        contract: CONTRACT_VERSION,
    };
    Reply::new(
        &data,
        format!("stoat {VERSION} (contract {CONTRACT_VERSION})"),
    )
}

/// Returns the root usage text.
pub fn usage_text() -> String {
    Cli::command().render_help().to_string()
}

/// `help`, or `-h`/`--help` anywhere.
pub fn help(usage: String) -> Reply {
    let data = HelpData {
        usage: usage.clone(),
    };
    Reply::new(&data, usage)
}

/// `schema [NAME]`: the JSON Schemas this binary speaks.
pub fn schema(args: &crate::grammar::SchemaArgs) -> Result<Reply> {
    match &args.name {
        None => {
            let paths: Vec<&str> = stoat_schemas::files().iter().map(|f| f.path).collect();
            let data = serde_json::json!({ "base": stoat_schemas::BASE_URI, "schemas": paths });
            Ok(Reply::new(&data, paths.join("\n")))
        }
        Some(name) => {
            let path = stoat_schemas::get(name)
                .map(|_| name.as_str())
                .or_else(|| stoat_schemas::data_schema_path(name))
                .ok_or_else(|| {
                    Error::InvalidSpec(format!(
                        "no schema called {name:?}; run `stoat schema` for the list"
                    ))
                })?;
            let text = stoat_schemas::get(path).unwrap_or_default();
            let schema: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                Error::Internal(format!("embedded schema {path} does not parse: {e}"))
            })?;
            let data = serde_json::json!({ "path": path, "schema": schema });
            Ok(Reply::new(&data, text))
        }
    }
}
