//! Owns the JSON report: the whole [`super::Report`] (schema `stoat-conformance-report/1`,
//! published as conformance/report.schema.json and described in docs/conformance.md).

use super::Report;

pub fn render(report: &Report) -> String {
    // Serializing plain data cannot fail; an empty object would still be valid JSON.
    serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".to_string()) + "\n"
}
