//! Owns reproducing one failure: the [`Repro`] record every failing row carries (the failing
//! invocation's argv, its ending, the first lines of its output, and one command that runs
//! exactly that check again with its seed), and `stoat-conformance repro`, which runs the
//! check's scenario again up to that invocation and keeps its sandbox for the implementer.

use serde::{Deserialize, Serialize};

use crate::capture::{shell_quote, Capture};

use super::case::InvocationRecord;

/// How many lines of stdout and stderr a reproduction shows.
pub const HEAD_LINES: usize = 5;

/// What reproduces one failing check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repro {
    /// The scenario whose invocation failed: the check itself, or for an oracle rule the
    /// scenario whose invocation broke it first.
    pub scenario: String,
    /// That invocation's position among the scenario's invocations (0-based), when the
    /// failure came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<usize>,
    /// Its argv after the SUT's program and leading arguments, quoted for a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<String>,
    /// How it ended (`exit 1`, `killed by signal 9`, `timed out ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<String>,
    /// Its first lines of stdout and of stderr, control bytes escaped.
    #[serde(default)]
    pub stdout: Vec<String>,
    #[serde(default)]
    pub stderr: Vec<String>,
    /// One command that runs exactly this check again, with this run's seed and edition.
    pub command: String,
}

/// What a run knows that a reproduction command needs.
pub struct RunFacts<'a> {
    pub sut_argv: &'a [String],
    pub seed: u64,
    pub edition: u64,
    pub profile: Option<&'a str>,
}

impl Repro {
    /// The reproduction of check `id` (tier `tier`) whose failing invocation is `record`,
    /// the `index`-th of scenario `scenario`.
    pub fn new(
        id: &str,
        tier: &str,
        scenario: &str,
        failing: Option<(usize, &InvocationRecord)>,
        facts: &RunFacts<'_>,
    ) -> Self {
        let mut command = vec![
            "stoat-conformance".to_string(),
            "run".to_string(),
            "--id".to_string(),
            id.to_string(),
        ];
        if scenario != id {
            // An oracle rule judged over the one scenario that broke it.
            command.extend(["--id".to_string(), scenario.to_string()]);
        }
        command.extend([
            "--tier".to_string(),
            tier.to_string(),
            "--seed".to_string(),
            facts.seed.to_string(),
            "--contract".to_string(),
            facts.edition.to_string(),
        ]);
        if let Some(profile) = facts.profile {
            command.extend(["--profile".to_string(), profile.to_string()]);
        }
        command.push("--".to_string());
        command.extend(facts.sut_argv.iter().cloned());
        let command = command
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let capture = failing.map(|(_, r)| &r.capture);
        Repro {
            scenario: scenario.to_string(),
            invocation: failing.map(|(i, _)| i),
            argv: capture.map(Capture::argv_display),
            ending: capture.map(|c| c.ending.describe()),
            stdout: capture.map(|c| head(&c.stdout.0)).unwrap_or_default(),
            stderr: capture.map(|c| head(&c.stderr.0)).unwrap_or_default(),
            command,
        }
    }

    /// The lines every text format prints, in order: the failing invocation, its output's
    /// first lines, and the command that runs the check again.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let (Some(argv), Some(ending)) = (&self.argv, &self.ending) {
            lines.push(format!("failing invocation: stoat {argv} -> {ending}"));
        }
        for (name, stream) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            for line in stream {
                lines.push(format!("{name}| {line}"));
            }
        }
        lines.push(format!("reproduce: {}", self.command));
        lines
    }
}

/// The first [`HEAD_LINES`] lines, each one line of visible text.
fn head(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .take(HEAD_LINES)
        .map(|l| crate::report::text::truncate(&crate::report::text::one_line(l), 300))
        .collect()
}

pub use super::stop::{Reached, Stop, StopAt};

/// A shell script that runs the invocation again exactly: an empty environment plus the
/// sandbox's, in its working directory.
pub fn script(reached: &Reached) -> String {
    let mut out = String::from(
        "#!/bin/sh\n# Written by stoat-conformance repro: runs the failing invocation again.\n",
    );
    out.push_str(&format!(
        "cd {} || exit 3\n",
        shell_quote(&reached.cwd.display().to_string())
    ));
    out.push_str("exec env -i \\\n");
    for (key, value) in &reached.env {
        out.push_str(&format!("  {}={} \\\n", key, shell_quote(value)));
    }
    out.push_str(&format!(
        "  {}",
        shell_quote(&reached.program.display().to_string())
    ));
    for arg in &reached.args {
        out.push(' ');
        out.push_str(&shell_quote(arg));
    }
    out.push_str(" \"$@\"\n");
    out
}
