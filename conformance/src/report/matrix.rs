//! Owns the view of several implementations side by side (`report --matrix a.json b.json`):
//! the grid of checks × implementations, its markdown table, and one SVG badge per
//! implementation (`passed/total`). The HTML page is [`super::html::matrix_page`].

use std::fmt::Write as _;

use super::markdown::cell;
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

/// Unique column names from the report paths' file names.
pub fn names(paths: &[std::path::PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for path in paths {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".to_string());
        let mut name = stem.clone();
        let mut n = 2;
        while names.contains(&name) {
            name = format!("{stem}-{n}");
            n += 1;
        }
        names.push(name);
    }
    names
}

/// The markdown table: a header row per implementation, then checks × implementations.
pub fn markdown(reports: &[(String, Report)]) -> String {
    let grid = Grid::new(reports);
    let mut out = String::from("## stoat-conformance: implementations side by side\n\n");
    out.push_str("| implementation | SUT | version | contract | passed |\n|---|---|---|---|---|\n");
    for column in &grid.columns {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {}/{} |",
            cell(&column.name),
            cell(&column.sut).replace('`', "'"),
            cell(&column.version),
            cell(&column.edition),
            column.passed,
            column.total
        );
    }
    out.push_str("\n| check |");
    for column in &grid.columns {
        let _ = write!(out, " {} |", cell(&column.name));
    }
    out.push_str("\n|---|");
    for _ in &grid.columns {
        out.push_str("---|");
    }
    out.push('\n');
    for (id, cells) in &grid.rows {
        let _ = write!(out, "| `{id}` |");
        for c in cells {
            let _ = write!(
                out,
                " {} |",
                c.as_ref().map(|(s, _)| s.label()).unwrap_or("-")
            );
        }
        out.push('\n');
    }
    out
}

/// A flat two-part badge: `stoat contract N | passed/total`, green when everything judged
/// passed, red otherwise.
pub fn badge(column: &Column) -> String {
    let label = format!("stoat contract {}", column.edition);
    let value = format!("{}/{}", column.passed, column.total);
    let colour = if column.total > 0 && column.passed == column.total {
        "#2e7d32"
    } else {
        "#c62828"
    };
    // About 7 px per character of 11 px Verdana, plus padding.
    let left = label.chars().count() * 7 + 10;
    let right = value.chars().count() * 7 + 10;
    let width = left + right;
    let label_x = left / 2;
    let value_x = left + right / 2;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"20\" role=\"img\" aria-label=\"{label}: {value}\">\
<title>{label}: {value}</title>\
<rect width=\"{left}\" height=\"20\" fill=\"#555\"/><rect x=\"{left}\" width=\"{right}\" height=\"20\" fill=\"{colour}\"/>\
<g fill=\"#fff\" text-anchor=\"middle\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\">\
<text x=\"{label_x}\" y=\"14\">{label}</text><text x=\"{value_x}\" y=\"14\">{value}</text></g></svg>\n",
        label = super::html::escape(&label),
        value = super::html::escape(&value),
    )
}

/// Writes `matrix.html`, `matrix.md` and one `<name>.svg` badge per implementation into `dir`.
pub fn write(dir: &std::path::Path, reports: &[(String, Report)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("matrix.html"), super::html::matrix_page(reports))?;
    std::fs::write(dir.join("matrix.md"), markdown(reports))?;
    for column in Grid::new(reports).columns {
        std::fs::write(dir.join(format!("{}.svg", column.name)), badge(&column))?;
    }
    Ok(())
}
