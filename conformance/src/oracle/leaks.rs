//! Owns leak detection by canaries: the sandbox's data-root, HOME and TMPDIR paths may
//! appear only at the JSON pointers the contract allows (cp local, recipe new path, prune
//! items...), and a planted console password (or the `console_password` key) nowhere.
//! Every decoded string is searched, `*_base64` payloads included, and raw stdout too.
//! Implements json-v3#absent.

use crate::spec::Edition;
use base64::Engine as _;

use super::sink::{at, walk, Sink, Stream};
use crate::finding::CheckId;
use crate::ids;

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
    /// The directories of the sandbox's VMs: the contract lets none of a VM's host paths
    /// reach the wire, so not even an error message may name one.
    pub vm_dirs: Vec<Canary>,
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
        sink.touch(ids::LEAK_CONSOLE_PASSWORD);
        let raw = String::from_utf8_lossy(stdout);
        for secret in &canaries.secrets {
            if secret.value.is_empty() {
                continue;
            }
            for (form, text) in decoded_forms(&raw) {
                if text.contains(&secret.value) {
                    sink.find(
                        ids::LEAK_CONSOLE_PASSWORD,
                        "stdout",
                        format!("stdout contains the {} ({form})", secret.label),
                    );
                }
            }
        }
    }
    if !canaries.secrets.is_empty() {
        joined_log_events(stream, canaries, sink);
    }
    if !canaries.paths.is_empty() {
        sink.touch(ids::LEAK_HOST_PATH);
        sink.touch(ids::LEAK_HOST_PATH_IN_MESSAGE);
    }
    if !canaries.vm_dirs.is_empty() {
        vm_path_in_message(stream, canaries, sink);
    }
    for (index, line) in stream.lines.iter().enumerate() {
        let Some(line) = line else {
            continue;
        };
        let mut pointer = String::new();
        let mut hits: Vec<(CheckId, String, String)> = Vec::new();
        walk(line, &mut pointer, &mut |path, key, value| {
            if key == Some("console_password") {
                hits.push((
                    ids::LEAK_CONSOLE_PASSWORD,
                    path.to_string(),
                    "the key console_password appears".to_string(),
                ));
            }
            // A key is text a consumer sees too.
            let texts: Vec<(&str, &str)> = key
                .map(|k| ("key", k))
                .into_iter()
                .chain(value.as_str().map(|v| ("value", v)))
                .collect();
            for (what, text) in texts {
                for (form, candidate) in decoded_forms(text) {
                    for secret in &canaries.secrets {
                        if !secret.value.is_empty() && candidate.contains(&secret.value) {
                            hits.push((
                                ids::LEAK_CONSOLE_PASSWORD,
                                path.to_string(),
                                format!(
                                    "the {} appears in a JSON string {what} ({form})",
                                    secret.label
                                ),
                            ));
                        }
                    }
                    if what == "key" {
                        continue;
                    }
                    for canary in &canaries.paths {
                        if canary.value.is_empty() || !candidate.contains(&canary.value) {
                            continue;
                        }
                        if path == "/error/message" {
                            hits.push((
                                ids::LEAK_HOST_PATH_IN_MESSAGE,
                                path.to_string(),
                                format!("error.message names the {} path ({form})", canary.label),
                            ));
                        } else if !path_allowed_in(edition, &cmd, path) {
                            hits.push((
                                ids::LEAK_HOST_PATH,
                                path.to_string(),
                                format!(
                                    "the {} path appears where the contract allows no host path ({form})",
                                    canary.label
                                ),
                            ));
                        }
                    }
                }
            }
        });
        hits.dedup();
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
                    ids::LEAK_HOST_PATH,
                    at(index, ""),
                    format!("a non-JSON line names the {} path", canary.label),
                );
            }
        }
    }
}

/// A secret a consumer reassembles: `log` events are one line of output each, so a reader
/// that joins consecutive ones (with or without the newline they stood for) reads whatever
/// was split across them. Each run of consecutive log events is searched joined.
fn joined_log_events(stream: &Stream, canaries: &Canaries, sink: &mut Sink) {
    let mut runs: Vec<(usize, Vec<String>)> = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for (index, line) in stream.lines.iter().enumerate() {
        let text = line
            .as_ref()
            .filter(|v| v.get("type").and_then(serde_json::Value::as_str) == Some("log"))
            .and_then(|v| v.pointer("/data/line"))
            .and_then(serde_json::Value::as_str);
        match (text, current.as_mut()) {
            (Some(text), Some((_, texts))) => texts.push(text.to_string()),
            (Some(text), None) => current = Some((index, vec![text.to_string()])),
            (None, _) => runs.extend(current.take()),
        }
    }
    runs.extend(current);
    for (first, texts) in runs.into_iter().filter(|(_, t)| t.len() > 1) {
        for secret in canaries.secrets.iter().filter(|s| !s.value.is_empty()) {
            // Found in one event alone, it is that event's finding already.
            if texts
                .iter()
                .any(|t| secret_form(t, &secret.value).is_some())
            {
                continue;
            }
            for separator in ["", "\n"] {
                let joined = texts.join(separator);
                if let Some(form) = secret_form(&joined, &secret.value) {
                    sink.find(
                        ids::LEAK_CONSOLE_PASSWORD,
                        at(first, "/data/line"),
                        format!(
                            "the {} appears when the {} consecutive log events from here are joined ({form})",
                            secret.label,
                            texts.len()
                        ),
                    );
                    break;
                }
            }
        }
    }
}

/// LEAK.vm-path-in-message: error.message names a VM's directory or a file in it.
fn vm_path_in_message(stream: &Stream, canaries: &Canaries, sink: &mut Sink) {
    let Some((index, result)) = &stream.result else {
        return;
    };
    let Some(message) = result
        .pointer("/error/message")
        .and_then(serde_json::Value::as_str)
    else {
        return;
    };
    sink.touch(ids::LEAK_VM_PATH_IN_MESSAGE);
    for canary in canaries.vm_dirs.iter().filter(|c| !c.value.is_empty()) {
        for (form, text) in decoded_forms(message) {
            if names_path(&text, &canary.value) {
                sink.find(
                    ids::LEAK_VM_PATH_IN_MESSAGE,
                    at(*index, "/error/message"),
                    format!(
                        "error.message names a host path of {} ({form})",
                        canary.label
                    ),
                );
                break;
            }
        }
    }
}

/// Whether `text` holds `dir` as a path: the directory itself or something under it (not a
/// longer name that merely starts with it, `work` in `workshop`).
fn names_path(text: &str, dir: &str) -> bool {
    text.match_indices(dir).any(|(at, _)| {
        let mut rest = text[at + dir.len()..].chars();
        match rest.next() {
            None | Some('/') => true,
            // A full stop ending a sentence, not a longer name (`work.bak`).
            Some('.') => rest.next().is_none_or(char::is_whitespace),
            Some(c) => !(c.is_alphanumeric() || matches!(c, '-' | '_')),
        }
    })
}

/// The decoded form of `text` (see [`decoded_forms`]) in which `secret` appears, if any: for
/// judges of other wire formats (MCP results) that must never carry it either.
pub fn secret_form(text: &str, secret: &str) -> Option<&'static str> {
    if secret.is_empty() {
        return None;
    }
    decoded_forms(text)
        .into_iter()
        .find(|(_, decoded)| decoded.contains(secret))
        .map(|(form, _)| form)
}

/// Every form of `text` a consumer could decode and read: the text itself (a JSON string
/// after unescaping), its URL-decoding, and the base64 decoding of every base64-looking run
/// in it (standard or URL-safe alphabet, any alignment), so an encoded secret is found too.
pub(crate) fn decoded_forms(text: &str) -> Vec<(&'static str, String)> {
    let mut forms = vec![("as decoded JSON", text.to_string())];
    if text.contains('%') {
        let decoded = percent_decode(text);
        if decoded != text {
            forms.push(("URL-decoded", decoded));
        }
    }
    for run in base64_runs(text) {
        for decoded in base64_decodings(run) {
            forms.push(("base64-decoded", decoded));
        }
    }
    for decoded in hex_decodings(text) {
        forms.push(("hex-decoded", decoded));
    }
    forms
}

/// Each maximal run of hex digits long enough to hold a short secret, decoded at both
/// alignments (a run may start with a digit that belongs to the text before it).
fn hex_decodings(text: &str) -> Vec<String> {
    const MIN: usize = 16;
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        if !bytes[start].is_ascii_hexdigit() {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < bytes.len() && bytes[end].is_ascii_hexdigit() {
            end += 1;
        }
        if end - start >= MIN {
            for skip in 0..2 {
                let run = &text[start + skip..end];
                let decoded: Vec<u8> = run
                    .as_bytes()
                    .chunks_exact(2)
                    .filter_map(|pair| {
                        std::str::from_utf8(pair)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    })
                    .collect();
                out.push(String::from_utf8_lossy(&decoded).into_owned());
            }
        }
        start = end;
    }
    out
}

/// Maximal runs of base64 alphabet characters long enough to hold a short secret.
fn base64_runs(text: &str) -> Vec<&str> {
    const MIN: usize = 8;
    let is_b64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_' | '=');
    let mut runs = Vec::new();
    let mut start = None;
    for (offset, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (is_b64(c) && offset < text.len(), start) {
            (true, None) => start = Some(offset),
            (false, Some(begin)) => {
                if offset - begin >= MIN {
                    runs.push(&text[begin..offset]);
                }
                start = None;
            }
            _ => {}
        }
    }
    runs
}

/// The run decoded at each of the four alignments, in both alphabets.
fn base64_decodings(run: &str) -> Vec<String> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let engines = [
        GeneralPurpose::new(&base64::alphabet::STANDARD, config),
        GeneralPurpose::new(&base64::alphabet::URL_SAFE, config),
    ];
    let body = run.trim_end_matches('=');
    let mut out = Vec::new();
    for skip in 0..4.min(body.len()) {
        let part = &body[skip..];
        let usable = part.len() - part.len() % 4;
        let part = if part.len() % 4 == 1 {
            &part[..usable]
        } else {
            part
        };
        for engine in &engines {
            if let Ok(bytes) = engine.decode(part) {
                out.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    out
}

/// `%XX` escapes (and `+` for a space, as in a form) decoded; bad escapes kept as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let hex = bytes
                    .get(index + 1..index + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        index += 3;
                    }
                    None => {
                        out.push(b'%');
                        index += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                index += 1;
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
        assert!(names_path("cannot open /r/work/qmp.sock", "/r/work"));
        assert!(names_path("under /r/work.", "/r/work"));
        assert!(!names_path("under /r/workshop", "/r/work"));
        assert!(!names_path("under /r/work.bak", "/r/work"));
        assert!(path_allowed("ls", "/data/vms/0/share"));
    }

    fn found(text: &str, secret: &str) -> bool {
        decoded_forms(text).iter().any(|(_, t)| t.contains(secret))
    }

    #[test]
    fn secrets_are_found_in_every_encoding() {
        let secret = "cpw-0123456789abcdef";
        let std = base64::engine::general_purpose::STANDARD;
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        assert!(found(&format!("x {secret} y"), secret));
        assert!(found(&std.encode(secret), secret));
        assert!(found(
            &format!("blob:{}", std.encode(format!("pw={secret};"))),
            secret
        ));
        assert!(found(
            &format!("a{}", std.encode(format!("..{secret}"))),
            secret
        ));
        assert!(found(&url.encode(format!("\u{ff}\u{fe}{secret}")), secret));
        assert!(found("u=cpw%2D0123456789%61bcdef", secret));
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        assert!(found(&format!("pw={hex}"), secret));
        assert!(found(&format!("pw=a{}", hex.to_uppercase()), secret));
        assert!(!found(
            "nothing here at all, base64 or otherwise: aGVsbG8gd29ybGQ=",
            secret
        ));
    }

    #[test]
    fn json_escaped_secret_is_found_after_unescaping() {
        let secret = "cpw-0123456789abcdef";
        let escaped: String = secret
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let line = format!("{{\"v\":3,\"type\":\"result\",\"cmd\":\"get\",\"ok\":true,\"data\":{{\"vm\":{{\"note\":\"{escaped}\"}}}}}}");
        assert!(!line.contains(secret));
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let stream = Stream {
            lines: vec![Some(value.clone())],
            result: Some((0, value)),
        };
        let canaries = Canaries {
            secrets: vec![Canary {
                label: "console password".into(),
                value: secret.into(),
            }],
            ..Default::default()
        };
        let mut sink = Sink {
            findings: Vec::new(),
            exercised: Default::default(),
        };
        check(&stream, line.as_bytes(), &canaries, Edition::V3, &mut sink);
        assert!(
            sink.findings
                .iter()
                .any(|f| f.check_id == ids::LEAK_CONSOLE_PASSWORD.name),
            "{:?}",
            sink.findings
        );
    }
}
