//! Owns the JSON report writer: the whole [`super::Report`] (schema
//! `stoat-conformance-report/1`, documented in docs/conformance.md) written at the end.

use std::path::PathBuf;

use super::{Report, Reporter};
use crate::run::events::Event;

pub struct JsonReport {
    path: PathBuf,
    report: Report,
}

impl JsonReport {
    pub fn new(path: PathBuf) -> Self {
        JsonReport {
            path,
            report: Report::default(),
        }
    }
}

impl Reporter for JsonReport {
    fn event(&mut self, event: &Event) {
        self.report.absorb(event);
    }

    fn finish(&mut self) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&self.report).map_err(std::io::Error::other)?;
        std::fs::write(&self.path, text + "\n")
    }
}
