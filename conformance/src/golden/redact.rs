//! Owns redaction at capture and expansion at replay (docs/golden.md "Placeholders"): the
//! sandbox's paths and planted password become `[STOAT_HOME]`, `[HOME]`, `[TMPDIR]`,
//! `[WORK]`, `[SANDBOX]`, `[CONSOLE_PASSWORD]`; RFC 3339 timestamps become `[TIMESTAMP]`.

use std::sync::OnceLock;

use regex::Regex;

use crate::sandbox::Sandbox;

/// RFC 3339 date-times (what stoat's logs and records carry).
pub fn timestamp_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
            .expect("valid regex")
    })
}

/// The placeholder ↔ sandbox-value pairs of one sandbox, most specific first.
pub struct Redactor {
    pairs: Vec<(&'static str, String)>,
}

impl Redactor {
    pub fn for_sandbox(sandbox: &Sandbox) -> Self {
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        Redactor {
            pairs: vec![
                ("[STOAT_HOME]", path(&sandbox.data)),
                ("[HOME]", path(&sandbox.home)),
                ("[TMPDIR]", path(&sandbox.tmp)),
                ("[WORK]", path(&sandbox.work)),
                ("[SANDBOX]", path(&sandbox.root)),
                ("[CONSOLE_PASSWORD]", sandbox.console_password.clone()),
            ],
        }
    }

    /// Sandbox values → placeholders, timestamps → `[TIMESTAMP]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (placeholder, value) in &self.pairs {
            if !value.is_empty() {
                out = out.replace(value.as_str(), placeholder);
            }
        }
        timestamp_regex()
            .replace_all(&out, "[TIMESTAMP]")
            .into_owned()
    }

    /// Placeholders → this sandbox's values.
    pub fn expand(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (placeholder, value) in &self.pairs {
            out = out.replace(placeholder, value);
        }
        out
    }

    /// Expands bytes that are UTF-8; other bytes are returned as they are.
    pub fn expand_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.expand(text).into_bytes(),
            Err(_) => bytes.to_vec(),
        }
    }

    /// Redacts bytes that are UTF-8; other bytes are returned as they are.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.redact(text).into_bytes(),
            Err(_) => bytes.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxOptions;

    #[test]
    fn redact_then_expand_round_trips() {
        let sandbox = Sandbox::new(SandboxOptions::default()).expect("sandbox");
        let redactor = Redactor::for_sandbox(&sandbox);
        let raw = format!(
            "{}/work/vm.toml at 2026-01-02T03:04:05Z pw={}",
            sandbox.data.display(),
            sandbox.console_password
        );
        let redacted = redactor.redact(&raw);
        assert_eq!(
            redacted,
            "[STOAT_HOME]/work/vm.toml at [TIMESTAMP] pw=[CONSOLE_PASSWORD]"
        );
        assert!(redactor
            .expand(&redacted)
            .starts_with(&*sandbox.data.to_string_lossy()));
    }
}
