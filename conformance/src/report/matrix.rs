//! Owns the view of several implementations side by side (`report --matrix a.json b.json`):
//! the column names (`--name`, else the file names), the markdown table of the grid
//! ([`super::grid`]), one SVG badge per implementation (`passed/total`), and the directory
//! they are written to, with each implementation's own report page. The HTML page is
//! [`super::html::matrix_page`].

use std::fmt::Write as _;

use super::grid::{Column, Grid};
use super::markdown::cell;
use super::Report;

/// Unique column names: the `--name`s given, in order, then the report paths' file names.
pub fn names(paths: &[std::path::PathBuf], given: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let stem = given
            .get(index)
            .map(|name| safe_name(name))
            .filter(|name| !name.is_empty())
            .or_else(|| path.file_stem().map(|s| safe_name(&s.to_string_lossy())))
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

/// A name that is also a file name (`<name>.svg`, `<name>.html`): no path separators, no
/// leading dot, no control characters.
fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '-'
            } else {
                c
            }
        })
        .collect();
    cleaned.trim_start_matches('.').trim().to_string()
}

/// The markdown table: a header row per implementation, then checks × implementations.
pub fn markdown(reports: &[(String, Report)]) -> String {
    let grid = Grid::new(reports);
    let mut out = String::from("## stoat-conformance: implementations side by side\n\n");
    out.push_str("| implementation | SUT | version | contract | passed |\n|---|---|---|---|---|\n");
    for column in &grid.columns {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {}/{} |",
            cell(&column.name),
            cell(&column.sut),
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

/// Writes `matrix.html`, `matrix.md`, and per implementation its `<name>.svg` badge and its
/// own `<name>.html` report (the page the matrix's cells link into) into `dir`.
pub fn write(dir: &std::path::Path, reports: &[(String, Report)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("matrix.html"), super::html::matrix_page(reports))?;
    std::fs::write(dir.join("matrix.md"), markdown(reports))?;
    for column in Grid::new(reports).columns {
        std::fs::write(dir.join(format!("{}.svg", column.name)), badge(&column))?;
    }
    for (name, report) in reports {
        std::fs::write(
            dir.join(format!("{name}.html")),
            super::html::render(report),
        )?;
    }
    Ok(())
}
