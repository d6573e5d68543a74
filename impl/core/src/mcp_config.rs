//! MCP clients' configuration files (the data behind `stoat_core::app::mcp`): `mcp doctor` reads them, `mcp install <client>` adds
//! stoat's entry (json-v3#per-command-data, MCPClient). Every path is under HOME from the
//! captured environment. The entry names this binary and records the stoat settings of the
//! installing environment ([`SETTINGS`]), so the client starts the server as the person runs
//! stoat; `current` means both still match. Configs are JSONC (comments and trailing commas
//! allowed): an install edits only stoat's entry in the text, keeping every comment and other
//! entry, writes atomically (through a symlinked config to its target, keeping its mode), and
//! leaves a file it cannot read untouched (`invalid_spec`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Env, Error, Result};
use serde_json::{json, Map, Value};
use stoat_wire::dto::{McpClient, McpDoctorData, McpInstallData};

use crate::jsonc;

/// The entry name stoat uses in every client's server table.
pub const ENTRY: &str = "stoat";

/// One client: where its user-level config lives and the key holding its servers.
#[derive(Debug, Clone, Copy)]
pub struct ClientSpec {
    pub name: &'static str,
    /// Relative to HOME.
    pub path: &'static str,
    pub servers_key: &'static str,
    /// VS Code wants `"type": "stdio"` in each entry.
    pub typed: bool,
}

const fn client(name: &'static str, path: &'static str, servers_key: &'static str) -> ClientSpec {
    ClientSpec {
        name,
        path,
        servers_key,
        typed: false,
    }
}

/// The clients stoat knows, in the order `mcp doctor` lists them.
pub const CLIENTS: &[ClientSpec] = &[
    client(
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        "mcpServers",
    ),
    client("claude-code", ".claude.json", "mcpServers"),
    client("cursor", ".cursor/mcp.json", "mcpServers"),
    ClientSpec {
        name: "vscode",
        path: ".config/Code/User/mcp.json",
        servers_key: "servers",
        typed: true,
    },
    client(
        "windsurf",
        ".codeium/windsurf/mcp_config.json",
        "mcpServers",
    ),
    client("gemini-cli", ".gemini/settings.json", "mcpServers"),
];

fn home(env: &Env) -> Result<PathBuf> {
    env.home()
        .filter(|home| home.is_absolute())
        .ok_or_else(|| Error::InvalidSpec("HOME is not set to an absolute path".into()))
}

/// Finds a client by name; an unknown one is `usage`, listing the known ones.
pub fn find(name: &str) -> Result<&'static ClientSpec> {
    CLIENTS.iter().find(|c| c.name == name).ok_or_else(|| {
        let known: Vec<&str> = CLIENTS.iter().map(|c| c.name).collect();
        Error::Usage(format!(
            "unknown MCP client {name:?}; known: {}",
            known.join(", ")
        ))
    })
}

/// The variables that change what the server does, recorded in the entry when set: a client
/// starts servers with an environment of its own, without them.
pub const SETTINGS: &[&str] = &[
    "STOAT_HOME",
    "STOAT_ACCEL",
    "STOAT_KVM_DEVICE",
    "STOAT_GRAPHICAL",
    "STOAT_CATALOG",
    "STOAT_RECIPE_INDEX",
    "STOAT_MCP_RATE",
    "STOAT_MCP_RATE_SHARED",
    "STOAT_DOWN_TIMEOUT_SECS",
    "STOAT_PULL_STALL_SECS",
];

/// The settings of `env` an entry records, in [`SETTINGS`] order.
pub fn settings(env: &Env) -> Map<String, Value> {
    SETTINGS
        .iter()
        .filter_map(|name| Some((name.to_string(), Value::from(env.get(name)?))))
        .collect()
}

/// The entry stoat writes for `binary`; `env` only when a setting is set.
pub fn entry_for(spec: &ClientSpec, binary: &Path, env: &Env) -> Value {
    let command = binary.to_string_lossy();
    let mut entry = if spec.typed {
        json!({"type": "stdio", "command": command, "args": ["mcp"]})
    } else {
        json!({"command": command, "args": ["mcp"]})
    };
    let settings = settings(env);
    if !settings.is_empty() {
        entry["env"] = Value::Object(settings);
    }
    entry
}

/// `mcp doctor` data.
pub fn doctor(env: &Env, binary: &Path) -> Result<McpDoctorData> {
    let home = home(env)?;
    let clients = CLIENTS
        .iter()
        .map(|spec| inspect(spec, &home.join(spec.path), binary, &settings(env)))
        .collect();
    Ok(McpDoctorData {
        contract: stoat_wire::CONTRACT_VERSION,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        transport: "stdio".into(),
        binary: binary.to_string_lossy().into_owned(),
        clients,
    })
}

/// One client's entry: installed when it has a string `command`; current when that command is
/// this binary and its `env` holds exactly the settings `mcp install` would record now.
fn inspect(
    spec: &ClientSpec,
    path: &Path,
    binary: &Path,
    wanted: &Map<String, Value>,
) -> McpClient {
    let entry = crate::bounded::read_to_string(path)
        .ok()
        .and_then(|text| jsonc::parse(&text).ok())
        .and_then(|config| config.get(spec.servers_key)?.get(ENTRY).cloned());
    let command = entry
        .as_ref()
        .and_then(|e| e.get("command")?.as_str().map(str::to_owned));
    let installed = command.is_some();
    let command = command.unwrap_or_default();
    let recorded: Map<String, Value> = entry
        .as_ref()
        .and_then(|e| e.get("env")?.as_object().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| SETTINGS.contains(&name.as_str()))
        .collect();
    McpClient {
        client: spec.name.into(),
        path: path.to_string_lossy().into_owned(),
        installed,
        current: installed && same_file(Path::new(&command), binary) && &recorded == wanted,
        command,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `mcp install <client>`: adds or replaces stoat's entry, keeping everything else.
pub fn install(env: &Env, binary: &Path, name: &str) -> Result<McpInstallData> {
    let spec = find(name)?;
    let path = home(env)?.join(spec.path);
    // A symlinked config (dotfiles) is edited at its target, so the link survives.
    let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let existing = match crate::bounded::read_to_string(&target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    let entry = entry_for(spec, binary, env);
    let text = jsonc::set(
        existing.as_deref().unwrap_or(""),
        spec.servers_key,
        ENTRY,
        &entry,
    )
    .map_err(|why| {
        Error::InvalidSpec(format!(
            "{}: {why}; fix or move it aside, nothing was changed",
            path.display()
        ))
    })?;
    let mode = std::fs::metadata(&target)
        .ok()
        .map(|m| m.permissions().mode());
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    }
    crate::vm::write_atomically(&target, text.as_bytes())?;
    if let Some(mode) = mode {
        let _ = std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode));
    }
    Ok(McpInstallData {
        client: spec.name.into(),
        path: path.to_string_lossy().into_owned(),
        json: entry.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_records_the_settings_that_are_set() {
        let spec = find("cursor").unwrap();
        let env = Env::from_pairs([
            ("STOAT_HOME", "/data"),
            ("STOAT_FAULT", "x"),
            ("HOME", "/h"),
        ]);
        let entry = entry_for(spec, Path::new("/s"), &env);
        assert_eq!(
            entry,
            json!({"command": "/s", "args": ["mcp"], "env": {"STOAT_HOME": "/data"}})
        );
        let bare = entry_for(
            find("vscode").unwrap(),
            Path::new("/s"),
            &Env::from_pairs([]),
        );
        assert_eq!(
            bare,
            json!({"type": "stdio", "command": "/s", "args": ["mcp"]})
        );
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        assert!(find("emacs").is_err());
    }
}
