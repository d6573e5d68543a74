//! MCP clients' configuration files: `mcp doctor` reads them, `mcp install <client>` adds
//! stoat's entry (json-v3#per-command-data, MCPClient). Every path is under
//! HOME from the captured environment. An install keeps every other entry and key order,
//! writes atomically (through a symlinked config to its target, keeping its mode), and leaves
//! a file that is not valid JSON untouched (`invalid_spec`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use stoat_core::{Env, Error, Result};
use stoat_wire::dto::{McpClient, McpDoctorData, McpInstallData};

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

/// The entry stoat writes for `binary`.
pub fn entry_for(spec: &ClientSpec, binary: &Path) -> Value {
    let command = binary.to_string_lossy();
    if spec.typed {
        json!({"type": "stdio", "command": command, "args": ["mcp"]})
    } else {
        json!({"command": command, "args": ["mcp"]})
    }
}

/// `mcp doctor` data.
pub fn doctor(env: &Env, binary: &Path) -> Result<McpDoctorData> {
    let home = home(env)?;
    let clients = CLIENTS
        .iter()
        .map(|spec| inspect(spec, &home.join(spec.path), binary))
        .collect();
    Ok(McpDoctorData {
        contract: stoat_wire::CONTRACT_VERSION,
        version: crate::VERSION.to_owned(),
        transport: "stdio".into(),
        binary: binary.to_string_lossy().into_owned(),
        clients,
    })
}

fn inspect(spec: &ClientSpec, path: &Path, binary: &Path) -> McpClient {
    let command = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|config| {
            config
                .get(spec.servers_key)?
                .get(ENTRY)?
                .get("command")?
                .as_str()
                .map(str::to_owned)
        });
    let installed = command.is_some();
    let command = command.unwrap_or_default();
    McpClient {
        client: spec.name.into(),
        path: path.to_string_lossy().into_owned(),
        installed,
        current: installed && same_file(Path::new(&command), binary),
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
    let existing = match std::fs::read_to_string(&target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    let entry = entry_for(spec, binary);
    let text = with_entry(existing.as_deref(), spec.servers_key, entry.clone()).map_err(|why| {
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
    stoat_core::vm::write_atomically(&target, text.as_bytes())?;
    if let Some(mode) = mode {
        let _ = std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode));
    }
    Ok(McpInstallData {
        client: spec.name.into(),
        path: path.to_string_lossy().into_owned(),
        json: entry.to_string(),
    })
}

/// Returns the config text with `servers_key.stoat = entry`, or why the config cannot take it.
pub fn with_entry(
    existing: Option<&str>,
    servers_key: &str,
    entry: Value,
) -> std::result::Result<String, String> {
    let mut config = match existing.map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => {
            serde_json::from_str::<Value>(text).map_err(|e| format!("not valid JSON ({e})"))?
        }
    };
    let Value::Object(top) = &mut config else {
        return Err("the top level is not a JSON object".into());
    };
    let servers = top
        .entry(servers_key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(format!("{servers_key} is not a JSON object"));
    };
    servers.insert(ENTRY.into(), entry);
    let mut text =
        serde_json::to_string_pretty(&config).map_err(|e| format!("cannot serialise: {e}"))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_entry_and_keeps_the_rest_in_order() {
        let before = r#"{"zeta":1,"mcpServers":{"other":{"command":"x"}},"alpha":[1,2]}"#;
        let after = with_entry(Some(before), "mcpServers", json!({"command":"/s"})).unwrap();
        let value: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(value["mcpServers"]["other"]["command"], "x");
        assert_eq!(value["mcpServers"]["stoat"]["command"], "/s");
        assert_eq!(value["alpha"], json!([1, 2]));
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["zeta", "mcpServers", "alpha"]);
        assert!(with_entry(None, "servers", json!({}))
            .unwrap()
            .contains("\"stoat\""));
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        assert!(with_entry(Some("{oops"), "mcpServers", json!({})).is_err());
        assert!(with_entry(Some("[1]"), "mcpServers", json!({})).is_err());
        assert!(with_entry(Some(r#"{"mcpServers":3}"#), "mcpServers", json!({})).is_err());
        assert!(find("emacs").is_err());
    }
}
