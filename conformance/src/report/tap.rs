//! Owns the TAP 14 reporter: a plan, one test point per check, YAML diagnostics with the
//! findings; XFAIL is `# TODO`, SKIP is `# SKIP`.

use std::path::PathBuf;

use super::Reporter;
use crate::run::events::{Event, Status};

pub struct Tap {
    path: PathBuf,
    lines: Vec<String>,
    count: usize,
}

impl Tap {
    pub fn new(path: PathBuf) -> Self {
        Tap {
            path,
            lines: Vec::new(),
            count: 0,
        }
    }

    pub fn render(&self) -> String {
        let mut out = format!("TAP version 14\n1..{}\n", self.count);
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('#', "\\#")
}

fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

impl Reporter for Tap {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Smoke {
                passed: false,
                findings,
                ..
            } => {
                let reason = findings
                    .first()
                    .map(|f| f.message.clone())
                    .unwrap_or_default();
                self.lines
                    .push(format!("Bail out! smoke stage failed: {}", escape(&reason)));
            }
            Event::Check(result) => {
                self.count += 1;
                let ok = !result.status.fails_run() && result.status != Status::Errored;
                let directive = match result.status {
                    Status::Skipped => {
                        format!(" # SKIP {}", escape(result.reason.as_deref().unwrap_or("")))
                    }
                    Status::ExpectedFailure => {
                        format!(" # TODO {}", escape(result.reason.as_deref().unwrap_or("")))
                    }
                    _ => String::new(),
                };
                let word = if ok && result.status != Status::ExpectedFailure {
                    "ok"
                } else {
                    "not ok"
                };
                self.lines.push(format!(
                    "{word} {} - {}{directive}",
                    self.count,
                    escape(&result.id)
                ));
                if !result.findings.is_empty() || result.status == Status::Errored {
                    self.lines.push("  ---".to_string());
                    self.lines
                        .push(format!("  status: {}", result.status.label()));
                    self.lines
                        .push(format!("  level: {}", result.level.as_str()));
                    self.lines.push(format!("  spec: {}", result.spec_ref));
                    if let Some(reason) = &result.reason {
                        self.lines
                            .push(format!("  reason: {}", yaml_string(reason)));
                    }
                    if !result.findings.is_empty() {
                        self.lines.push("  findings:".to_string());
                        for finding in &result.findings {
                            self.lines.push(format!(
                                "    - {}",
                                yaml_string(&format!("{}: {}", finding.pointer, finding.message))
                            ));
                        }
                    }
                    self.lines.push("  ...".to_string());
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        std::fs::write(&self.path, self.render())
    }
}
