//! vm.toml: the on-disk record of one VM, in upstream's key names so old data roots load.
//!
//! Unknown keys are ignored; a syntax error or a type mismatch makes the VM broken. An absent
//! `allow_exec` reads as true, and `agent_access` follows the contract's compatibility rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use stoat_wire::dto::{AgentAccess, Forward};

/// How a VM boots: `live` (from its ISO, nothing installed), `disk` (installed onto its own
/// disk) or `cloud` (a cloud image's overlay). vm.toml keeps these words; `""` is a record that
/// never said, and any other word is kept as written (the VM still loads and shows it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    #[serde(rename = "")]
    Unset,
    Live,
    Disk,
    Cloud,
    #[serde(untagged)]
    Other(String),
}

impl Mode {
    /// The word vm.toml and the wire use.
    pub fn as_str(&self) -> &str {
        match self {
            Mode::Unset => "",
            Mode::Live => "live",
            Mode::Disk => "disk",
            Mode::Cloud => "cloud",
            Mode::Other(text) => text,
        }
    }

    /// The mode a request asks for: `None` when the text is blank, else [`Mode::parse`] of it
    /// trimmed.
    pub fn given(text: &str) -> Option<Mode> {
        Some(text.trim()).filter(|t| !t.is_empty()).map(Mode::parse)
    }

    /// The mode a word names; an unknown word is kept as [`Mode::Other`].
    pub fn parse(text: &str) -> Mode {
        match text {
            "" => Mode::Unset,
            "live" => Mode::Live,
            "disk" => Mode::Disk,
            "cloud" => Mode::Cloud,
            other => Mode::Other(other.to_owned()),
        }
    }
}

impl From<&str> for Mode {
    fn from(text: &str) -> Mode {
        Mode::parse(text)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How stoat provisions and reaches a guest: `apkovl` (an Alpine overlay), `cloudinit` (a
/// NoCloud seed) or `ssh` (an image that already takes stoat's key). vm.toml keeps these words;
/// `""` is a record that never said (its OS's default applies), any other word is kept as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    #[serde(rename = "")]
    Unset,
    Apkovl,
    Cloudinit,
    Ssh,
    #[serde(untagged)]
    Other(String),
}

impl Backend {
    /// The backends stoat knows how to boot.
    pub const KNOWN: [Backend; 3] = [Backend::Apkovl, Backend::Cloudinit, Backend::Ssh];

    /// The word vm.toml and the wire use.
    pub fn as_str(&self) -> &str {
        match self {
            Backend::Unset => "",
            Backend::Apkovl => "apkovl",
            Backend::Cloudinit => "cloudinit",
            Backend::Ssh => "ssh",
            Backend::Other(text) => text,
        }
    }

    /// The backend a request asks for: `None` when the text is blank, else [`Backend::parse`]
    /// of it trimmed.
    pub fn given(text: &str) -> Option<Backend> {
        Some(text.trim())
            .filter(|t| !t.is_empty())
            .map(Backend::parse)
    }

    /// The backend a word names; an unknown word is kept as [`Backend::Other`].
    pub fn parse(text: &str) -> Backend {
        match text {
            "" => Backend::Unset,
            "apkovl" => Backend::Apkovl,
            "cloudinit" => Backend::Cloudinit,
            "ssh" => Backend::Ssh,
            other => Backend::Other(other.to_owned()),
        }
    }
}

impl From<&str> for Backend {
    fn from(text: &str) -> Backend {
        Backend::parse(text)
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One port forward as vm.toml stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardConfig {
    pub hostport: u16,
    pub guestport: u16,
}

/// What stoat recorded after a recipe ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppliedRecipe {
    #[serde(default)]
    pub version: String,
    /// sha256 hex of the script body that ran.
    #[serde(default)]
    pub hash: String,
    /// When it ran: a TOML datetime (upstream) or an RFC 3339 string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<toml::Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// `ok`, `failed` or `unknown` (the last health check's verdict).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub health: String,
}

/// The whole vm.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VmConfig {
    /// Informational: a VM's identity is its directory name.
    pub name: String,
    pub mode: Mode,
    pub os: String,
    /// `isos/<file>` for a file in isos/, otherwise the absolute BYO path.
    pub iso: String,
    pub ram: u32,
    pub cpus: u32,
    pub disk: String,
    pub installed: bool,
    pub share: String,
    pub sshport: u16,
    /// Set when the user chose the ssh port (`update --ssh-port`): `up` never moves it. A port
    /// stoat picked moves at `up` when something else took it meanwhile.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sshport_pinned: bool,
    pub recipes: Vec<String>,
    pub display: String,
    pub forwards: Vec<ForwardConfig>,
    /// The opt-in to let the guest reach services on the host's loopback through its gateway
    /// (10.0.2.2). Absent or false: it cannot (docs/decisions/runtime.md "Guest network").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub host_loopback: bool,
    pub backend: Backend,
    /// Absolute path of the cloud base image.
    pub base: String,
    pub sshuser: String,
    /// Plaintext, cloudinit only. Never reaches a wire format or a log.
    pub console_password: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_exec: Option<bool>,
    /// The level a person set; absent, it follows `allow_exec` ([`VmConfig::agent_access`]).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_agent_access"
    )]
    pub agent_access: Option<AgentAccess>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub recipe_params: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub applied: BTreeMap<String, AppliedRecipe>,
}

impl VmConfig {
    /// Parses vm.toml text; the error text says where and why.
    pub fn parse(text: &str) -> Result<VmConfig, String> {
        match super::quick::read(text) {
            Some(config) => Ok(config),
            None => toml::from_str(text).map_err(|e| {
                // An unknown level is told as it always was, without a position.
                if e.message().starts_with(UNKNOWN_LEVEL) {
                    e.message().to_owned()
                } else {
                    describe_toml_error(text, &e)
                }
            }),
        }
    }

    /// Renders vm.toml text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| panic!("vm.toml always serialises: {e}"))
    }

    /// The account ssh connects as.
    pub fn ssh_user(&self) -> &str {
        if self.sshuser.is_empty() {
            "root"
        } else {
            &self.sshuser
        }
    }

    /// `allow_exec` as the wire shows it: an absent key reads as true.
    pub fn allow_exec(&self) -> bool {
        self.allow_exec.unwrap_or(true)
    }

    /// The effective MCP access level.
    pub fn agent_access(&self) -> AgentAccess {
        if let Some(level) = self.agent_access {
            return level;
        }
        match self.allow_exec {
            Some(true) => AgentAccess::Exec,
            Some(false) | None => AgentAccess::Manage,
        }
    }

    /// The forwards as wire DTOs.
    pub fn wire_forwards(&self) -> Vec<Forward> {
        self.forwards
            .iter()
            .map(|f| Forward {
                host_port: f.hostport,
                guest_port: f.guestport,
            })
            .collect()
    }
}

/// How the message of an unknown `agent_access` level starts.
const UNKNOWN_LEVEL: &str = "agent_access ";

/// vm.toml's `agent_access`: a string naming a level; any other word makes the VM broken.
fn read_agent_access<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<AgentAccess>, D::Error> {
    let Some(word) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    AgentAccess::parse(&word).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{UNKNOWN_LEVEL}{word:?} is not one of none, observe, manage, exec"
        ))
    })
}

/// Returns a one-line description of a TOML error: `line L, column C: message`.
pub fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = redact_values(err.message());
    let message = message.as_str();
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message.to_owned(),
    }
}

/// A parser message on one line, with the quoted value (`` `...` ``) of an "invalid type" or
/// "invalid value" message taken out: the value may be a console password written with the
/// wrong type. Field names in other messages stay (they say what to fix).
fn redact_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let has_value = message.trim_start().starts_with("invalid");
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '`' if has_value => {
                quoted = !quoted;
                if !quoted {
                    out.push_str("(value not shown)");
                }
            }
            _ if quoted => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_secret_is_not_echoed() {
        let err = VmConfig::parse("console_password = 8675309\n").unwrap_err();
        assert!(!err.contains("8675309"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn absent_allow_exec_reads_true_and_maps_to_manage() {
        let config = VmConfig::parse("name = \"w\"\nmode = \"live\"\n").unwrap();
        assert!(config.allow_exec());
        assert_eq!(config.agent_access(), AgentAccess::Manage);
        let explicit = VmConfig::parse("allow_exec = true\n").unwrap();
        assert_eq!(explicit.agent_access(), AgentAccess::Exec);
        let denied = VmConfig::parse("allow_exec = false\n").unwrap();
        assert!(!denied.allow_exec());
        assert_eq!(denied.agent_access(), AgentAccess::Manage);
        let pinned = VmConfig::parse("allow_exec = true\nagent_access = \"observe\"\n").unwrap();
        assert_eq!(pinned.agent_access(), AgentAccess::Observe);
    }

    #[test]
    fn syntax_and_type_errors_and_bad_levels_fail() {
        assert!(VmConfig::parse("name = \"x\"\nmode = \"disk\n").is_err());
        assert!(VmConfig::parse("ram = \"lots\"\n").is_err());
        assert_eq!(
            VmConfig::parse("name = \"w\"\nagent_access = \"root\"\n").unwrap_err(),
            "agent_access \"root\" is not one of none, observe, manage, exec"
        );
        // The full parser's path (a comment makes the quick reader give up) says the same.
        assert_eq!(
            VmConfig::parse("# c\nagent_access = \"Exec\"\nram = 1\n").unwrap_err(),
            "agent_access \"Exec\" is not one of none, observe, manage, exec"
        );
        assert!(VmConfig::parse("agent_access = 5\n")
            .unwrap_err()
            .starts_with("line 1, column 16: invalid type"));
    }

    #[test]
    fn round_trips_with_forwards_and_applied() {
        let mut config = VmConfig {
            name: "w".into(),
            sshport: 2200,
            ..VmConfig::default()
        };
        config.forwards.push(ForwardConfig {
            hostport: 8080,
            guestport: 80,
        });
        config.allow_exec = Some(false);
        config.agent_access = Some(AgentAccess::Observe);
        config.applied.insert(
            "xfce".into(),
            AppliedRecipe {
                version: "1".into(),
                hash: "ab".into(),
                ..AppliedRecipe::default()
            },
        );
        let text = config.to_toml();
        assert_eq!(VmConfig::parse(&text).unwrap(), config);
    }

    #[test]
    fn upstream_datetime_in_applied_loads() {
        let text = "name = \"w\"\n[applied.xfce]\nversion = \"1\"\nhash = \"ab\"\nat = 2026-08-04T12:00:00Z\n";
        let config = VmConfig::parse(text).unwrap();
        assert!(config.applied["xfce"].at.is_some());
    }
}
