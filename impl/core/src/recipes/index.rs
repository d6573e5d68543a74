//! The recipe index `recipe search` reads: `STOAT_RECIPE_INDEX`, a local path, a `file://`
//! URL or an `http(s)://` URL of a TOML file (json-v3#per-command-data: `recipe search`, IndexEntry;
//! design#recipe-index; docs/recipes.md "Finding recipes").
//!
//! ```toml
//! [[recipe]]
//! name = "tailscale"
//! source = "https://github.com/x/stoat-tailscale"   # what `stoat recipe add` takes
//! description = "join a tailnet on boot"
//! os = ["alpine", "debian"]
//! ```
//!
//! TOML like the image catalog (`STOAT_CATALOG`): one format for stoat's own files, with
//! comments. A malformed index is `invalid_spec` naming it and the line.

use std::time::Duration;

use serde::Deserialize;
use stoat_wire::dto::IndexEntry;

use crate::proxy::{ProxyEnv, Route};
use crate::vm::describe_toml_error;
use crate::{Env, Error, Result};

/// The variable naming the index.
pub const INDEX_VAR: &str = "STOAT_RECIPE_INDEX";
/// A metadata fetch's total budget (as the image index and checksum files).
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIndex {
    #[serde(default)]
    recipe: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    source: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    os: Vec<String>,
}

/// The index entries whose name or description contains `query` (case-insensitive; no
/// query: all), sorted by name.
pub fn search(env: &Env, query: Option<&str>) -> Result<Vec<IndexEntry>> {
    let location = env
        .get(INDEX_VAR)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "no recipe index configured: set {INDEX_VAR} to the path, file:// or http(s):// URL of an index file (see docs/recipes.md)"
            ))
        })?;
    let text = read_index(env, location)?;
    let entries = parse(&text)
        .map_err(|why| Error::InvalidSpec(format!("recipe index {location}: {why}")))?;
    Ok(filter(entries, query.unwrap_or("")))
}

/// The index text from a path, `file://` or `http(s)://` location.
fn read_index(env: &Env, location: &str) -> Result<String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return fetch(env, location);
    }
    let path = env.expand_tilde(location.strip_prefix("file://").unwrap_or(location))?;
    crate::bounded::read_to_string(&path).map_err(|e| {
        Error::InvalidSpec(format!(
            "recipe index {}: cannot read: {e} (check {INDEX_VAR})",
            path.display()
        ))
    })
}

/// GETs an index over HTTP with the same client and proxy rules as image downloads.
fn fetch(env: &Env, url: &str) -> Result<String> {
    let (agent, route) = ProxyEnv::from_env(env).agent_for(url)?;
    let agent = agent.timeout(FETCH_TIMEOUT).build();
    let via = route.as_ref().map(Route::describe).unwrap_or_default();
    let failed = |why: String| Error::DownloadFailed(format!("recipe index {url}{via}: {why}"));
    let mut call = agent.get(url);
    if let Some(route) = &route {
        call = route.prepare(call, url);
    }
    match call.call() {
        Ok(response) => response
            .into_string()
            .map_err(|e| failed(format!("reading the body: {e}"))),
        Err(ureq::Error::Status(code, response)) => {
            Err(failed(format!("HTTP {code} {}", response.status_text())))
        }
        Err(ureq::Error::Transport(transport)) => Err(failed(transport.to_string())),
    }
}

/// Parses index text; the error says at which line and why.
pub fn parse(text: &str) -> std::result::Result<Vec<IndexEntry>, String> {
    let raw: RawIndex = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
    raw.recipe
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            if entry.name.trim().is_empty() || entry.source.trim().is_empty() {
                return Err(format!(
                    "recipe #{}: name and source must not be empty",
                    i + 1
                ));
            }
            Ok(IndexEntry {
                name: entry.name,
                source: entry.source,
                description: entry.description,
                os: entry.os,
            })
        })
        .collect()
}

fn filter(mut entries: Vec<IndexEntry>, query: &str) -> Vec<IndexEntry> {
    let query = query.trim().to_lowercase();
    entries.retain(|e| {
        e.name.to_lowercase().contains(&query) || e.description.to_lowercase().contains(&query)
    });
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "[[recipe]]\nname = \"tailscale\"\nsource = \"https://x/ts\"\ndescription = \"Join a Tailnet\"\nos = [\"alpine\"]\n\n[[recipe]]\nname = \"caddy\"\nsource = \"https://x/caddy\"\n";

    #[test]
    fn filters_by_name_or_description_ignoring_case() {
        let entries = parse(INDEX).unwrap();
        assert_eq!(filter(entries.clone(), "").len(), 2);
        assert_eq!(filter(entries.clone(), "")[0].name, "caddy", "sorted");
        assert_eq!(filter(entries.clone(), "TAILNET")[0].name, "tailscale");
        assert_eq!(filter(entries.clone(), "cad")[0].name, "caddy");
        assert!(filter(entries, "nothing").is_empty());
    }

    #[test]
    fn bad_indexes_name_the_line() {
        let err = parse("[[recipe]]\nname = \"x\"\n").unwrap_err();
        assert!(err.contains("source"), "{err}");
        let err = parse("[[recipe]]\nname = \"x\"\nsource = \"s\"\nsauce = 1\n").unwrap_err();
        assert!(err.contains("line 4"), "{err}");
        let err = parse("[[recipe]]\nname = \"\"\nsource = \"s\"\n").unwrap_err();
        assert!(err.contains("#1"), "{err}");
    }

    #[test]
    fn no_index_says_how_to_set_one() {
        let env = Env::from_pairs([("PATH", "/bin")]);
        let err = search(&env, None).unwrap_err();
        assert_eq!(err.code(), stoat_wire::ErrorCode::InvalidSpec);
        assert!(err.to_string().contains(INDEX_VAR), "{err}");
    }
}
