//! The `data` of each command whose shape is not a single DTO from another module.
//!
//! Implements json-v3#per-command-data.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::{Forward, Vm, VmStatus};
use crate::StreamBytes;

/// `ls` data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LsData {
    pub vms: Vec<Vm>,
}

/// `get` data: only the outer object has the `vm` member.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GetData {
    pub vm: VmStatus,
}

/// `create`, `up` and `down` data (one VM, re-read so `state` is authoritative).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VmData {
    pub vm: Vm,
}

/// When a configuration change takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AppliesAt {
    Now,
    NextStart,
}

/// `update` data: `changed` names, in wire naming, the fields that actually changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UpdateData {
    pub vm: Vm,
    pub changed: Vec<String>,
    pub applies_at: AppliesAt,
}

/// `wait` data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WaitData {
    pub vm: String,
    pub until: String,
    pub reached: bool,
    pub waited_ms: u64,
}

/// `rm` data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RmData {
    pub name: String,
    pub deleted: bool,
}

/// `clone` data: forwards are never copied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CloneData {
    pub vm: Vm,
    pub source: String,
    pub forwards_copied: bool,
}

/// `ssh-command` data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SshCommandData {
    pub argv: Vec<String>,
}

/// `cp` direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyDirection {
    ToGuest,
    FromGuest,
}

/// `cp` data: `local` is always absolute.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CpData {
    pub vm: String,
    pub direction: CopyDirection,
    pub local: String,
    pub remote: String,
}

/// `forward` data: `applies_at` only when the configuration changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ForwardData {
    pub vm: String,
    pub forwards: Vec<Forward>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applies_at: Option<AppliesAt>,
}

/// `version` data: the build version and the contract version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VersionData {
    pub version: String,
    pub contract: u32,
}

/// `schema` data without a name: the base URI and every schema file's path under it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SchemaListData {
    pub base: String,
    pub schemas: Vec<String>,
}

/// `schema NAME` data: the file's path and the schema itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SchemaData {
    pub path: String,
    pub schema: serde_json::Value,
}

/// `help` data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HelpData {
    pub usage: String,
}

/// `exec` data. Each stream is text when UTF-8, else base64 with `*_encoding`, never both.
/// A stream cut at the capture limit says so with `*_truncated: true` (an additive field,
/// absent when nothing was cut; docs/decisions/runtime.md "Guest-fed buffers").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecData {
    pub vm: String,
    pub exit_code: i32,
    pub stdout: StreamBytes,
    pub stderr: StreamBytes,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

impl Serialize for ExecData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("vm", &self.vm)?;
        map.serialize_entry("exit_code", &self.exit_code)?;
        self.stdout.serialize_fields("stdout", &mut map)?;
        self.stderr.serialize_fields("stderr", &mut map)?;
        if self.stdout_truncated {
            map.serialize_entry("stdout_truncated", &true)?;
        }
        if self.stderr_truncated {
            map.serialize_entry("stderr_truncated", &true)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exec_streams_encode_independently() {
        let data = ExecData {
            vm: "w".into(),
            exit_code: 0,
            stdout: StreamBytes::from_bytes(vec![0xff, 0xfe, 0x00, 0x01]),
            stderr: StreamBytes::from_bytes(Vec::new()),
            stdout_truncated: false,
            stderr_truncated: false,
        };
        assert_eq!(
            serde_json::to_value(&data).unwrap(),
            json!({"vm":"w","exit_code":0,"stdout_base64":"//4AAQ==","stdout_encoding":"base64","stderr":""})
        );
        let cut = ExecData {
            stderr_truncated: true,
            ..data
        };
        assert_eq!(
            serde_json::to_value(&cut).unwrap()["stderr_truncated"],
            true
        );
        assert!(serde_json::to_value(&cut)
            .unwrap()
            .get("stdout_truncated")
            .is_none());
    }

    #[test]
    fn applies_at_is_snake_case() {
        assert_eq!(
            serde_json::to_value(AppliesAt::NextStart).unwrap(),
            json!("next_start")
        );
    }
}
