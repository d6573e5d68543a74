//! Owns the terminal reporter: one line per failing/warning check with its findings, a
//! status tally, and a last line `N passed, N failed, N skipped`. Colour only on a tty
//! without NO_COLOR. Text from the SUT is shown with its control bytes escaped, so a SUT's
//! own escape sequences never reach the terminal.

use std::io::Write;

use super::{closing_details, closing_line, text, Reporter};
use crate::run::events::{Event, Migration, Status};

pub struct Human<W: Write> {
    out: W,
    colour: bool,
    verbose: bool,
    /// Migration view: (id, group) of every check that did not pass.
    migration: Vec<(String, Migration)>,
}

impl<W: Write> Human<W> {
    pub fn new(out: W, colour: bool, verbose: bool) -> Self {
        Human {
            out,
            colour,
            verbose,
            migration: Vec::new(),
        }
    }

    /// The migration view's two groups.
    fn migration_text(&self) -> String {
        if self.migration.is_empty() {
            return String::new();
        }
        let mut explained = String::new();
        let mut both = String::new();
        for (id, group) in &self.migration {
            match group {
                Migration::Explained { change } => {
                    explained.push_str(&format!("  {id}: {change}\n"))
                }
                Migration::BothEditions => both.push_str(&format!("  {id}\n")),
            }
        }
        let count = |text: &str| text.lines().count();
        format!(
            "\nMigration view: {} explained by the documented differences between the editions:\n{explained}\
             {} violations of both editions:\n{}",
            count(&explained),
            count(&both),
            if both.is_empty() { "  (none)\n".to_string() } else { both }
        )
    }

    fn paint(&self, status: Status, text: &str) -> String {
        if !self.colour {
            return text.to_string();
        }
        let code = match status {
            Status::Passed | Status::ExpectedFailure => "32",
            Status::Warned | Status::Skipped => "33",
            _ => "31",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// Whether stdout is a terminal and NO_COLOR is unset.
pub fn wants_colour() -> bool {
    use std::io::IsTerminal as _;
    let tty = std::io::stdout().is_terminal();
    tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

impl<W: Write> Reporter for Human<W> {
    fn event(&mut self, event: &Event) {
        let _ = match event {
            Event::Started(info) => writeln!(
                self.out,
                "stoat-conformance {} (contract {}{}) against {}{}\n{} checks selected{}, tiers {}, {} jobs, seed {} ({})",
                info.suite_version,
                info.contract,
                match (info.migration, info.sut_contract) {
                    (true, Some(sut)) => format!(", migration view: the SUT speaks contract {sut}"),
                    _ => String::new(),
                },
                text::one_line(&info.sut),
                info.sut_version.as_ref().map(|v| format!(" (version {})", text::one_line(v))).unwrap_or_default(),
                info.selected,
                info.shard.as_ref().map(|s| format!(" (this run is shard {s} of them)")).unwrap_or_default(),
                info.tiers.join(","),
                info.jobs,
                info.seed,
                info.seed_source.as_str()
            ),
            Event::Smoke { passed: true, .. } => Ok(()),
            Event::Smoke { passed: false, findings, .. } => {
                let mut text = format!("SMOKE FAILED: {}\n", super::smoke_reason());
                for finding in findings {
                    text.push_str(&format!("  [{}] {}: {}\n", finding.check_id, text::one_line(&finding.pointer), text::one_line(&finding.message)));
                }
                write!(self.out, "{}", self.paint(Status::Failed, &text))
            }
            Event::Check(result) => {
                if let Some(group) = &result.migration {
                    self.migration.push((result.id.clone(), group.clone()));
                }
                if result.status == Status::Passed && !self.verbose {
                    return;
                }
                let mut text = format!("{:<5} {} ({}, {}) {}", result.status.label(), result.id, super::level_label(result), result.tier, result.title);
                if let Some(reason) = &result.reason {
                    text.push_str(&format!("\n      reason: {}", text::one_line(reason)));
                }
                match &result.migration {
                    Some(Migration::Explained { change }) => text.push_str(&format!("\n      migration: explained ({change})")),
                    Some(Migration::BothEditions) => text.push_str("\n      migration: a violation of both editions"),
                    None => {}
                }
                for finding in result.findings.iter().take(8) {
                    text.push_str(&format!("\n      {}: {} [{}]", text::one_line(&finding.pointer), text::one_line(&finding.message), finding.spec_ref));
                }
                if result.findings.len() > 8 {
                    text.push_str(&format!("\n      ... and {} more", result.findings.len() - 8));
                }
                if let Some(repro) = &result.repro {
                    for line in repro.lines() {
                        text.push_str(&format!("\n      {}", text::one_line(&line)));
                    }
                }
                let painted = self.paint(result.status, &text);
                writeln!(self.out, "{painted}")
            }
            Event::Finished { summary, .. } => {
                let overhead = if summary.duration_ms > 0 {
                    format!(", {}, {} ms in the SUT of {} ms", text::count(summary.invocations, "invocation"), summary.sut_ms, summary.duration_ms)
                } else {
                    String::new()
                };
                let migration = self.migration_text();
                let mut details = String::new();
                for line in closing_details(summary) {
                    details.push_str(&text::one_line(&line));
                    details.push('\n');
                }
                writeln!(
                    self.out,
                    "{migration}\n{details}{} crashed, {} warned, {} expected failures, {} stale baseline entries, {} harness errors{}\n{}",
                    summary.crashed,
                    summary.warned,
                    summary.expected_failures,
                    summary.stale_baseline,
                    summary.errored,
                    overhead,
                    closing_line(summary)
                )
            }
        };
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
