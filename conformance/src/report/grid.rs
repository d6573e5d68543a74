//! Owns the grid of checks × implementations that every side-by-side view renders: one
//! column per report, one row per check id any of them ran, in catalog order.

use super::{first_finding, Report};
use crate::run::events::Status;

/// One implementation's column.
pub struct Column {
    /// The report file's name without `.json` (made unique).
    pub name: String,
    pub sut: String,
    pub version: String,
    /// The contract edition the implementation speaks (else the one it was judged by).
    pub edition: String,
    pub passed: usize,
    pub total: usize,
}

/// A row's cell: the status and first finding, or nothing when that run had no such check.
pub type Cell = Option<(Status, Option<String>)>;

pub struct Grid {
    pub columns: Vec<Column>,
    /// Check ids in catalog order (the smoke row first), each with one cell per column.
    pub rows: Vec<(String, Vec<Cell>)>,
}

impl Grid {
    pub fn new(reports: &[(String, Report)]) -> Self {
        let mut columns = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        for (name, report) in reports {
            let (passed, total) = report.passed_of_total();
            let info = report.info.as_ref();
            columns.push(Column {
                name: name.clone(),
                sut: info.map(|i| i.sut.clone()).unwrap_or_default(),
                version: info
                    .and_then(|i| i.sut_version.clone())
                    .unwrap_or_else(|| "unknown".to_string()),
                edition: info
                    .map(|i| i.sut_contract.unwrap_or(i.contract).to_string())
                    .unwrap_or_else(|| "unknown".to_string()),
                passed,
                total,
            });
            for row in report.rows() {
                if !ids.contains(&row.id) {
                    ids.push(row.id.clone());
                }
            }
        }
        let all = crate::catalog::all();
        ids.sort_by_cached_key(|id| {
            (
                id != super::SMOKE_ID,
                all.iter().position(|d| d.id == id).unwrap_or(usize::MAX),
                id.clone(),
            )
        });
        let rows = ids
            .into_iter()
            .map(|id| {
                let cells = reports
                    .iter()
                    .map(|(_, report)| {
                        report
                            .rows()
                            .iter()
                            .find(|r| r.id == id)
                            .map(|r| (r.status, first_finding(r)))
                    })
                    .collect();
                (id, cells)
            })
            .collect();
        Grid { columns, rows }
    }
}
