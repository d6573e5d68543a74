//! Commands that need no data root: version and schema (core's), help (the grammar's).

use clap::CommandFactory;
use stoat_core::{app, Result};
use stoat_wire::dto::HelpData;

use crate::grammar::Cli;
use crate::output::Reply;

/// `version`.
pub fn version() -> Reply {
    let data = app::info::version();
    let text = format!("stoat {} (contract {})", data.version, data.contract);
    Reply::new(&data, text)
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
            let data = app::info::schema_list();
            let text = data.schemas.join("\n");
            Ok(Reply::new(&data, text))
        }
        Some(name) => {
            let file = app::info::schema(name)?;
            Ok(Reply::new(&file.data, file.text))
        }
    }
}
