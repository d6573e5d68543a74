//! `mcp`: with no subcommand, serve MCP over stdio (refused under --json by
//! `commands::refused_under_json`: MCP owns stdout);
//! `mcp doctor` and `mcp install <client>` (json-v3#per-command-data), adapters of
//! `stoat_core::app::mcp`.

use stoat_core::{app, Error, Result};
use stoat_wire::dto::{McpDoctorData, McpInstallData};

use crate::ctx::Ctx;
use crate::grammar::{McpArgs, McpCommand};
use crate::human;
use crate::mcp::server;
use crate::output::Reply;

/// `mcp [doctor | install <client>]`.
pub fn mcp(ctx: &Ctx, args: &McpArgs) -> Result<Reply> {
    match &args.action {
        None => {
            server::serve(ctx.env.clone(), ctx.cancel.clone())?;
            Ok(Reply::new(&serde_json::json!({}), ""))
        }
        Some(McpCommand::Doctor) => {
            let data = app::mcp::doctor(ctx, &this_binary()?)?;
            let human = doctor_human(&data);
            Ok(Reply::new(&data, human))
        }
        Some(McpCommand::Install(install)) => {
            let data = app::mcp::install(ctx, &this_binary()?, &install.client)?;
            let human = install_human(&data);
            Ok(Reply::new(&data, human))
        }
    }
}

fn this_binary() -> Result<std::path::PathBuf> {
    std::env::current_exe().map_err(|e| Error::io("find this executable", e))
}

fn doctor_human(data: &McpDoctorData) -> String {
    let rows: Vec<Vec<String>> = data
        .clients
        .iter()
        .map(|c| {
            let state = match (c.installed, c.current) {
                (false, _) => "not installed".to_owned(),
                (true, true) => "current".to_owned(),
                (true, false) if same_file(&c.command, &data.binary) => {
                    "stale: other stoat settings (STOAT_*)".to_owned()
                }
                (true, false) => format!("stale: {}", c.command),
            };
            vec![c.client.clone(), state, c.path.clone()]
        })
        .collect();
    let mut out = format!(
        "stoat {} serves MCP over {} (contract {}): {} mcp\n",
        data.version, data.transport, data.contract, data.binary
    );
    out.push_str(&human::table(&["CLIENT", "STOAT ENTRY", "CONFIG"], &rows));
    if data.clients.iter().any(|c| !c.current) {
        out.push_str("add or refresh an entry with: stoat mcp install <client>\n");
    }
    out
}

fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn install_human(data: &McpInstallData) -> String {
    format!(
        "added stoat to {} ({}); restart the client to pick it up\n",
        data.client, data.path
    )
}
