//! Owns the fakes' script format (read from `STOAT_FAKE_SCRIPT`) and [`FakeCall`], one line
//! of the call log. The format is stable; docs/conformance-fakes.md is its reference.
//!
//! ```json
//! {"tools": {"ssh": [{"when": {"arg_contains": "uname"}, "stdout": {"hex": "ff00"}, "exit": 3}]},
//!  "qemu": {"refuse": {"stderr": {"text": "kvm: no"}, "exit": 1}, "powerdown_exit_ms": 50}}
//! ```

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Bytes in a script: exactly one of `text`, `hex`, `base64`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptBytes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

impl ScriptBytes {
    pub fn text(text: &str) -> Self {
        ScriptBytes {
            text: Some(text.to_string()),
            ..Default::default()
        }
    }

    /// Encodes raw bytes (as hex, so a script stays readable).
    pub fn bytes(bytes: &[u8]) -> Self {
        ScriptBytes {
            hex: Some(bytes.iter().map(|b| format!("{b:02x}")).collect()),
            ..Default::default()
        }
    }

    /// Decodes to raw bytes; a malformed value decodes to nothing and is reported on stderr.
    pub fn decode(&self) -> Vec<u8> {
        if let Some(text) = &self.text {
            return text.clone().into_bytes();
        }
        if let Some(hex) = &self.hex {
            let clean: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
            let decoded: Option<Vec<u8>> = (0..clean.len())
                .step_by(2)
                .map(|i| {
                    clean
                        .get(i..i + 2)
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                })
                .collect();
            return decoded.unwrap_or_else(|| {
                eprintln!("stoat-fake: bad hex in script");
                Vec::new()
            });
        }
        if let Some(b64) = &self.base64 {
            return base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_else(|_| {
                    eprintln!("stoat-fake: bad base64 in script");
                    Vec::new()
                });
        }
        Vec::new()
    }
}

/// When a rule applies. All given conditions must hold; an empty `when` always matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Some argument contains this substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg_contains: Option<String>,
    /// Every one of these is an argument, exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_include: Vec<String>,
}

impl Match {
    pub fn matches(&self, args: &[String]) -> bool {
        let contains = self
            .arg_contains
            .as_ref()
            .is_none_or(|needle| args.iter().any(|a| a.contains(needle.as_str())));
        let includes = self
            .args_include
            .iter()
            .all(|want| args.iter().any(|a| a == want));
        contains && includes
    }
}

/// What a tool does for one call. The first rule whose `when` matches wins.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default)]
    pub when: Match,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<ScriptBytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<ScriptBytes>,
    /// Exit status (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// ssh only: run the remote command with the local `/bin/sh -c`, like sshd would.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_locally: bool,
    /// ssh with `run_locally` only: guest path → local path, each guest path replaced by its
    /// local one in the remote command and in stdin before the command runs (a guest
    /// directory that lives in a test's tmp).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub path_map: std::collections::BTreeMap<String, String>,
    /// Read stdin to EOF and record it in the log (default: stdin is not touched).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_stdin: bool,
    /// Sleep this long before answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// How the fake qemu-system-x86_64 behaves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QemuScript {
    /// Refuse to start: print `stderr`, exit `exit` (default 1). No daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refuse: Option<Rule>,
    /// After `system_powerdown`, exit this many ms later (default 50). `null`-like
    /// negative values are not allowed; use `ignore_powerdown` for a hung guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub powerdown_exit_ms: Option<u64>,
    /// Acknowledge `system_powerdown` but keep running (a guest that ignores ACPI).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_powerdown: bool,
    /// Make `screendump` fail with this QMP error description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screendump_error: Option<String>,
    /// Make the monitor's `savevm` answer this error text instead of saving (a disk whose
    /// format cannot hold a snapshot, as qemu words it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savevm_error: Option<String>,
    /// Do not answer an SSH banner on the forwarded ssh port (a guest that never boots).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_ssh: bool,
    /// A QEMU slow to start: the `-daemonize` parent, once its daemon is ready, creates
    /// `<gate>.held` and returns only when the file `gate` exists (or its daemon ended, or
    /// 30 s passed). Its caller is then visibly at work until the suite opens the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_gate: Option<std::path::PathBuf>,
}

/// The whole script file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FakeScript {
    /// Rules per tool name (`ssh`, `scp`, `qemu-img`, `ssh-keygen`, `xorriso`).
    #[serde(default)]
    pub tools: std::collections::BTreeMap<String, Vec<Rule>>,
    #[serde(default)]
    pub qemu: QemuScript,
}

impl FakeScript {
    /// Adds a rule for `tool` (later rules have lower priority).
    pub fn rule(mut self, tool: &str, rule: Rule) -> Self {
        self.tools.entry(tool.to_string()).or_default().push(rule);
        self
    }

    /// Loads the script named by `STOAT_FAKE_SCRIPT`; a missing variable or file is an empty script.
    pub fn load() -> Self {
        let Some(path) = std::env::var_os(super::SCRIPT_ENV) else {
            return FakeScript::default();
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|error| {
                eprintln!(
                    "stoat-fake: bad script {}: {error}",
                    std::path::Path::new(&path).display()
                );
                FakeScript::default()
            }),
            Err(_) => FakeScript::default(),
        }
    }

    /// The first rule of `tool` matching `args`.
    pub fn find(&self, tool: &str, args: &[String]) -> Option<&Rule> {
        self.tools
            .get(tool)?
            .iter()
            .find(|rule| rule.when.matches(args))
    }
}

/// One logged call of a fake tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FakeCall {
    pub tool: String,
    pub argv: Vec<String>,
    /// Stdin as read (only when a rule asked to read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<crate::bytes::Bytes>,
    /// For qemu: the daemon's pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_pid: Option<u32>,
    /// For ssh: the remote command as one string (what sshd hands the login shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_command: Option<String>,
    /// For qemu's QMP/monitor: a command received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor_command: Option<String>,
}
