//! Owns the choice of a report format: [`Format`], [`render`] (one report in one format)
//! and [`FileReporter`] (a run's report written to a file in one format when it finishes).

use std::path::PathBuf;

use super::{html, json, junit, markdown, tap, Report, Reporter};
use crate::run::events::Event;

/// A file format a run can write and `report` can print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Junit,
    Tap(tap::Version),
    Html,
    Markdown,
}

/// Renders a whole report in one format.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Json => json::render(report),
        Format::Junit => junit::render(report),
        Format::Tap(version) => tap::render(report, version),
        Format::Html => html::render(report),
        Format::Markdown => markdown::render(report),
    }
}

/// Writes one format to a file when the run finishes.
pub struct FileReporter {
    path: PathBuf,
    format: Format,
    report: Report,
}

impl FileReporter {
    pub fn new(path: PathBuf, format: Format) -> Self {
        FileReporter {
            path,
            format,
            report: Report::default(),
        }
    }
}

impl Reporter for FileReporter {
    fn event(&mut self, event: &Event) {
        self.report.absorb(event);
    }

    fn finish(&mut self) -> std::io::Result<()> {
        std::fs::write(&self.path, render(&self.report, self.format))
    }
}
