//! Owns leak detection by canaries: the sandbox's data-root, HOME and TMPDIR paths may
//! appear only at the JSON pointers the contract allows (cp local, recipe new path, prune
//! items...), and a planted console password (or the `console_password` key) nowhere.
//! Every decoded string is searched, `*_base64` payloads included, and raw stdout too.
//! Implements json-v3#absent.

use crate::spec::Edition;
use base64::Engine as _;

use super::{at, walk, Sink, Stream};

/// One marker string and what it stands for (`STOAT_HOME`, `HOME`, `console password`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Canary {
    pub label: String,
    pub value: String,
}

/// The markers of one sandbox.
#[derive(Clone, Debug, Default)]
pub struct Canaries {
    /// Host paths: allowed only at the pointers of [`allowed_path_pointers`].
    pub paths: Vec<Canary>,
    /// Secrets: allowed nowhere.
    pub secrets: Vec<Canary>,
}

/// Pointers (under `/data`, `*` = any array index) where a command may carry a host path.
pub fn allowed_path_pointers(cmd: &str) -> &'static [&'static str] {
    match cmd {
        "cp" => &["/data/local"],
        "recipe" => &["/data/path", "/data/roots/*/path"],
        "prune" => &["/data/items/*/path"],
        "screenshot" => &["/data/path"],
        "ssh-command" => &["/data/argv/*"],
        "mcp" => &[
            "/data/binary",
            "/data/path",
            "/data/json",
            "/data/clients/*/path",
            "/data/clients/*/command",
        ],
        "init" => &["/data/path"],
        "status" => &["/data/dir"],
        "exec" => &[
            "/data/stdout",
            "/data/stderr",
            "/data/stdout_base64",
            "/data/stderr_base64",
        ],
        "logs" => &["/data/lines/*"],
        // Human text about the host (upstream names the directory a tool was found in).
        "doctor" => &["/data/checks/*/detail", "/data/checks/*/fix/*"],
        _ => &[],
    }
}

/// Pointers where any command's VM objects carry a user-chosen host path (share, project).
const VM_PATH_FIELDS: &[&str] = &[
    "/data/vm/share",
    "/data/vm/project",
    "/data/vms/*/share",
    "/data/vms/*/project",
];

fn matches_pattern(pattern: &str, pointer: &str) -> bool {
    let mut pattern_parts = pattern.split('/');
    let mut pointer_parts = pointer.split('/');
    loop {
        match (pattern_parts.next(), pointer_parts.next()) {
            (None, None) => return true,
            (Some("*"), Some(part)) if part.chars().all(|c| c.is_ascii_digit()) => {}
            (Some(expected), Some(part)) if expected == part => {}
            _ => return false,
        }
    }
}

fn path_allowed(cmd: &str, pointer: &str) -> bool {
    allowed_path_pointers(cmd)
        .iter()
        .chain(VM_PATH_FIELDS)
        .any(|pattern| matches_pattern(pattern, pointer))
}

/// Contract 2's `recipe list` names the recipes directory (`{"dir": ...}`).
fn path_allowed_in(edition: Edition, cmd: &str, pointer: &str) -> bool {
    path_allowed(cmd, pointer)
        || (edition == Edition::V2 && cmd == "recipe" && pointer == "/data/dir")
}

pub(crate) fn check(
    stream: &Stream,
    stdout: &[u8],
    canaries: &Canaries,
    edition: Edition,
    sink: &mut Sink,
) {
    let cmd = stream.cmd().unwrap_or("").to_string();
    if !canaries.secrets.is_empty() {
        sink.touch("LEAK.console-password");
        let raw = String::from_utf8_lossy(stdout);
        for secret in &canaries.secrets {
            if !secret.value.is_empty() && raw.contains(&secret.value) {
                sink.find(
                    "LEAK.console-password",
                    "stdout",
                    format!("stdout contains the {} verbatim", secret.label),
                );
            }
        }
    }
    if !canaries.paths.is_empty() {
        sink.touch("LEAK.host-path");
        sink.touch("LEAK.host-path-in-message");
    }
    for (index, line) in stream.lines.iter().enumerate() {
        let Some(line) = line else {
            continue;
        };
        let mut pointer = String::new();
        let mut hits: Vec<(&'static str, String, String)> = Vec::new();
        walk(line, &mut pointer, &mut |path, key, value| {
            if key == Some("console_password") {
                hits.push((
                    "LEAK.console-password",
                    path.to_string(),
                    "the key console_password appears".to_string(),
                ));
            }
            let Some(text) = value.as_str() else { return };
            let decoded = decode_if_base64(key, text);
            let candidates: Vec<&str> = std::iter::once(text).chain(decoded.as_deref()).collect();
            for candidate in candidates {
                for secret in &canaries.secrets {
                    if !secret.value.is_empty()
                        && candidate.contains(&secret.value)
                        && candidate != text
                    {
                        hits.push((
                            "LEAK.console-password",
                            path.to_string(),
                            format!("the {} appears (base64-decoded)", secret.label),
                        ));
                    }
                }
                for canary in &canaries.paths {
                    if canary.value.is_empty() || !candidate.contains(&canary.value) {
                        continue;
                    }
                    if path == "/error/message" {
                        hits.push((
                            "LEAK.host-path-in-message",
                            path.to_string(),
                            format!("error.message names the {} path", canary.label),
                        ));
                    } else if !path_allowed_in(edition, &cmd, path) {
                        hits.push((
                            "LEAK.host-path",
                            path.to_string(),
                            format!(
                                "the {} path appears where the contract allows no host path",
                                canary.label
                            ),
                        ));
                    }
                }
            }
        });
        for (id, path, message) in hits {
            sink.find(id, at(index, &path), message);
        }
    }
    // A line that is not JSON cannot be walked: any host path in it is a leak.
    let text_lines: Vec<&[u8]> = stdout.split(|b| *b == b'\n').collect();
    for (index, line) in stream.lines.iter().enumerate() {
        if line.is_some() {
            continue;
        }
        let raw = String::from_utf8_lossy(text_lines.get(index).copied().unwrap_or(&[]));
        for canary in &canaries.paths {
            if !canary.value.is_empty() && raw.contains(&canary.value) {
                sink.find(
                    "LEAK.host-path",
                    at(index, ""),
                    format!("a non-JSON line names the {} path", canary.label),
                );
            }
        }
    }
}

fn decode_if_base64(key: Option<&str>, text: &str) -> Option<String> {
    if !key.is_some_and(|k| k.ends_with("_base64")) {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_matching() {
        assert!(matches_pattern("/data/items/*/path", "/data/items/3/path"));
        assert!(!matches_pattern("/data/items/*/path", "/data/items/x/path"));
        assert!(!matches_pattern("/data/local", "/data/local/extra"));
        assert!(path_allowed("cp", "/data/local"));
        assert!(!path_allowed("ls", "/data/local"));
        assert!(path_allowed("ls", "/data/vms/0/share"));
    }
}
