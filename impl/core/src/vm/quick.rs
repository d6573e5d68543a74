//! A quick reader for vm.toml as stoat writes it: `key = value` lines, `[[forwards]]`, and the
//! `[applied.<recipe>]` (with `.params` / `.outputs`) and `[recipe_params.<recipe>]` tables.
//!
//! It answers only where it is sure the full TOML parser would read the text the same way;
//! anything else (a comment, a quoted or dotted key, an escape it does not decode, a
//! multi-line value, a duplicate, a key vm.toml does not have, a number out of range, a CR)
//! makes it give up, and the full parser reads the file and gives the error, if any.
//! `ls` reads every VM's file, and the full parser was most of its time.

use std::collections::BTreeMap;
use std::str::FromStr;

use stoat_wire::dto::AgentAccess;

use super::config::{ForwardConfig, VmConfig};

/// Reads `text` as the full parser would, or None when it cannot be sure.
pub fn read(text: &str) -> Option<VmConfig> {
    if text.contains('\r') {
        return None;
    }
    let mut reader = Reader::default();
    for line in text.split('\n') {
        let line = line.trim_matches([' ', '\t']);
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            reader.header(line)?;
        } else {
            let (key, value) = key_value(line)?;
            reader.assign(key, value)?;
        }
    }
    reader.end_forward()?;
    Some(reader.config)
}

/// The table the following keys belong to.
#[derive(Clone, PartialEq)]
enum Table {
    Root,
    Forward,
    Applied(String),
    AppliedParams(String),
    AppliedOutputs(String),
    RecipeParams(String),
}

#[derive(Default)]
struct Reader {
    config: VmConfig,
    table: Option<Table>,
    /// Tables defined by a `[...]` header so far: TOML forbids defining one twice.
    defined: Vec<Table>,
    /// Keys set in the current table (the root's stay here until the first header).
    keys: Vec<String>,
    forward: (Option<u16>, Option<u16>),
    /// `forwards = [...]` was written as a key: a later `[[forwards]]` would be an error.
    forwards_key: bool,
}

impl Reader {
    fn header(&mut self, line: &str) -> Option<()> {
        self.end_forward()?;
        self.keys.clear();
        if line == "[[forwards]]" {
            if self.forwards_key {
                return None;
            }
            self.table = Some(Table::Forward);
            self.forward = (None, None);
            return Some(());
        }
        let inner = line.strip_prefix('[')?.strip_suffix(']')?;
        let parts: Vec<&str> = inner.split('.').collect();
        if !parts.iter().all(|part| is_bare_key(part)) {
            return None;
        }
        let table = match parts.as_slice() {
            ["applied", name] => Table::Applied((*name).to_owned()),
            ["applied", name, "params"] => Table::AppliedParams((*name).to_owned()),
            ["applied", name, "outputs"] => Table::AppliedOutputs((*name).to_owned()),
            ["recipe_params", name] => Table::RecipeParams((*name).to_owned()),
            _ => return None,
        };
        if self.defined.contains(&table) {
            return None;
        }
        match &table {
            Table::Applied(name) | Table::AppliedParams(name) | Table::AppliedOutputs(name) => {
                self.config.applied.entry(name.clone()).or_default();
            }
            Table::RecipeParams(name) => {
                self.config.recipe_params.entry(name.clone()).or_default();
            }
            Table::Root | Table::Forward => {}
        }
        self.defined.push(table.clone());
        self.table = Some(table);
        Some(())
    }

    /// Ends a `[[forwards]]` table: both ports are required.
    fn end_forward(&mut self) -> Option<()> {
        if self.table == Some(Table::Forward) {
            let (Some(hostport), Some(guestport)) = self.forward else {
                return None;
            };
            self.config.forwards.push(ForwardConfig {
                hostport,
                guestport,
            });
            self.forward = (None, None);
        }
        Some(())
    }

    fn assign(&mut self, key: &str, value: Value) -> Option<()> {
        if self.keys.iter().any(|seen| seen == key) {
            return None;
        }
        self.keys.push(key.to_owned());
        let config = &mut self.config;
        match self.table.clone().unwrap_or(Table::Root) {
            Table::Root => match key {
                "name" => config.name = value.string()?,
                "mode" => config.mode = super::Mode::parse(&value.string()?),
                "os" => config.os = value.string()?,
                "iso" => config.iso = value.string()?,
                "ram" => config.ram = value.int()?,
                "cpus" => config.cpus = value.int()?,
                "disk" => config.disk = value.string()?,
                "installed" => config.installed = value.bool()?,
                "share" => config.share = value.string()?,
                "sshport" => config.sshport = value.int()?,
                "sshport_pinned" => config.sshport_pinned = value.bool()?,
                "recipes" => config.recipes = value.strings()?,
                "display" => config.display = value.string()?,
                "forwards" => {
                    // Only the empty array: a non-empty one is written as inline tables.
                    if !value.strings()?.is_empty() {
                        return None;
                    }
                    self.forwards_key = true;
                }
                "host_loopback" => config.host_loopback = value.bool()?,
                "backend" => config.backend = super::Backend::parse(&value.string()?),
                "base" => config.base = value.string()?,
                "sshuser" => config.sshuser = value.string()?,
                "console_password" => config.console_password = value.string()?,
                "allow_exec" => config.allow_exec = Some(value.bool()?),
                "agent_access" => {
                    // An unknown level is the full parser's to refuse.
                    let level = AgentAccess::parse(&value.string()?)?;
                    config.agent_access = Some(level);
                }
                "project" => config.project = value.string()?,
                "key" => config.key = value.string()?,
                _ => return None,
            },
            Table::Forward => match key {
                "hostport" => self.forward.0 = Some(value.int()?),
                "guestport" => self.forward.1 = Some(value.int()?),
                _ => return None,
            },
            Table::Applied(name) => {
                let applied = config.applied.get_mut(&name)?;
                match key {
                    "version" => applied.version = value.string()?,
                    "hash" => applied.hash = value.string()?,
                    "health" => applied.health = value.string()?,
                    "at" => applied.at = Some(value.at()?),
                    _ => return None,
                }
            }
            Table::AppliedParams(name) => {
                insert(&mut config.applied.get_mut(&name)?.params, key, value)?;
            }
            Table::AppliedOutputs(name) => {
                insert(&mut config.applied.get_mut(&name)?.outputs, key, value)?;
            }
            Table::RecipeParams(name) => {
                insert(config.recipe_params.get_mut(&name)?, key, value)?;
            }
        }
        Some(())
    }
}

fn insert(map: &mut BTreeMap<String, String>, key: &str, value: Value) -> Option<()> {
    map.insert(key.to_owned(), value.string()?);
    Some(())
}

/// A value as written on one line.
enum Value<'a> {
    String(String),
    Int(u64),
    Bool(bool),
    Strings(Vec<String>),
    /// Text that looks like an offset date-time, left for `toml_datetime` to read.
    Datetime(&'a str),
}

impl Value<'_> {
    fn string(self) -> Option<String> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn int<T: TryFrom<u64>>(self) -> Option<T> {
        match self {
            Value::Int(n) => T::try_from(n).ok(),
            _ => None,
        }
    }

    fn bool(self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn strings(self) -> Option<Vec<String>> {
        match self {
            Value::Strings(list) => Some(list),
            _ => None,
        }
    }

    /// `applied.<recipe>.at`: a string (stoat's) or a TOML date-time (upstream's).
    fn at(self) -> Option<toml::Value> {
        match self {
            Value::String(s) => Some(toml::Value::String(s)),
            Value::Datetime(text) => toml::value::Datetime::from_str(text)
                .ok()
                .map(toml::Value::Datetime),
            _ => None,
        }
    }
}

fn is_bare_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Splits `key = value` (the line already trimmed); the whole rest of the line is the value.
fn key_value(line: &str) -> Option<(&str, Value<'_>)> {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    if key.is_empty() {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix('=')?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let (value, after) = value(rest)?;
    after.is_empty().then_some((key, value))
}

/// Reads one value at the start of `text`; returns it and what follows.
fn value(text: &str) -> Option<(Value<'_>, &str)> {
    match text.as_bytes().first()? {
        b'"' | b'\'' => string(text).map(|(s, rest)| (Value::String(s), rest)),
        b'[' => strings(text).map(|(list, rest)| (Value::Strings(list), rest)),
        b't' if text == "true" => Some((Value::Bool(true), "")),
        b'f' if text == "false" => Some((Value::Bool(false), "")),
        b'0'..=b'9' => Some((number_or_datetime(text)?, "")),
        _ => None,
    }
}

/// A decimal integer as TOML writes it without sign or `_`, or an offset date-time
/// (`1979-05-27T07:32:00Z`, `...00.5+01:00`); the value must end the line.
fn number_or_datetime(text: &str) -> Option<Value<'_>> {
    let bytes = text.as_bytes();
    if bytes.iter().all(u8::is_ascii_digit) {
        // No leading zero (TOML forbids it) and at most 19 digits (fits u64).
        if (bytes.len() > 1 && bytes[0] == b'0') || bytes.len() > 19 {
            return None;
        }
        return text.parse().ok().map(Value::Int);
    }
    let datetime_shape = bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes
            .iter()
            .all(|b| b.is_ascii_digit() || b"-T:.Z+".contains(b));
    datetime_shape.then_some(Value::Datetime(text))
}

/// A string on one line: a literal `'...'` (no escapes; what stoat's writer uses for text
/// holding `"` or `\`), or a basic `"..."` with the escapes `\"`, `\\`, `\n`, `\t`, `\r`,
/// `\b`, `\f`. Control characters other than tab are invalid in TOML strings: give up.
fn string(text: &str) -> Option<(String, &str)> {
    if let Some(body) = text.strip_prefix('\'') {
        if body.starts_with("''") {
            return None; // a multi-line string
        }
        let end = body.find('\'')?;
        let literal = &body[..end];
        if literal.chars().any(|c| c != '\t' && c.is_ascii_control()) {
            return None;
        }
        return Some((literal.to_owned(), &body[end + 1..]));
    }
    let body = text.strip_prefix('"')?;
    if body.starts_with("\"\"") {
        return None; // a multi-line string
    }
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => out.push(match chars.next()?.1 {
                '"' => '"',
                '\\' => '\\',
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                _ => return None,
            }),
            c if c != '\t' && (c.is_ascii_control()) => return None,
            c => out.push(c),
        }
    }
    None
}

/// An array of basic strings on one line: `[]`, `["a"]`, `["a", "b",]`.
fn strings(text: &str) -> Option<(Vec<String>, &str)> {
    let mut rest = text.strip_prefix('[')?.trim_start_matches([' ', '\t']);
    let mut list = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix(']') {
            return Some((list, after.trim_start_matches([' ', '\t'])));
        }
        let (item, after) = string(rest)?;
        list.push(item);
        rest = after.trim_start_matches([' ', '\t']);
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start_matches([' ', '\t']);
        } else if !rest.starts_with(']') {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::AppliedRecipe;
    use super::*;

    fn full(text: &str) -> Result<VmConfig, toml::de::Error> {
        toml::from_str(text)
    }

    /// Files like stoat writes them, and like upstream wrote them.
    fn corpus() -> Vec<String> {
        let mut rich = VmConfig {
            name: "web".into(),
            mode: "cloud".into(),
            os: "debian".into(),
            ram: 2048,
            cpus: 2,
            disk: "20G".into(),
            sshport: 2222,
            recipes: vec!["xfce".into(), "dev tools".into()],
            backend: "cloudinit".into(),
            base: "/data/images/debian-12.qcow2".into(),
            sshuser: "stoat".into(),
            console_password: "p\"a\\ss\tw#rd".into(),
            allow_exec: Some(false),
            agent_access: Some(AgentAccess::Observe),
            project: "/home/me/proj".into(),
            key: "/home/me/.ssh/id_ed25519".into(),
            ..VmConfig::default()
        };
        rich.forwards.push(ForwardConfig {
            hostport: 8080,
            guestport: 80,
        });
        rich.forwards.push(ForwardConfig {
            hostport: 65535,
            guestport: 1,
        });
        rich.recipe_params.insert(
            "xfce".into(),
            BTreeMap::from([("theme".into(), "dark 'mode'".into())]),
        );
        rich.applied.insert(
            "xfce".into(),
            AppliedRecipe {
                version: "1".into(),
                hash: "ab12".into(),
                at: Some(toml::Value::String("2026-08-04T12:00:00Z".into())),
                params: BTreeMap::from([("theme".into(), "dark".into())]),
                outputs: BTreeMap::from([("url".into(), "http://x".into())]),
                health: "ok".into(),
            },
        );
        vec![
            rich.to_toml(),
            VmConfig::default().to_toml(),
            "name = \"vm0001\"\nmode = \"cloud\"\nos = \"debian\"\nram = 1024\ncpus = 1\ndisk = \"8G\"\nsshport = 2201\nsshuser = \"stoat\"\nbackend = \"cloudinit\"\nrecipes = [\"devtools\"]\n[[forwards]]\nhostport = 10001\nguestport = 80\n".into(),
            "name = \"w\"\nmode = \"live\"\ninstalled = true\n\n[applied.xfce]\nversion = \"1\"\nhash = \"ab\"\nat = 2026-08-04T12:00:00Z\n[applied.xfce.params]\nk = \"v\"\n".into(),
        ]
    }

    #[test]
    fn reads_what_stoat_and_upstream_write_as_the_full_parser_does() {
        for text in corpus() {
            let quick = read(&text).unwrap_or_else(|| panic!("quick reader gave up on:\n{text}"));
            assert_eq!(quick, full(&text).unwrap(), "{text}");
        }
    }

    #[test]
    fn gives_up_on_what_it_does_not_know() {
        for text in [
            "# a comment\nname = \"a\"\n",
            "name = \"a\" # trailing\n",
            "\"name\" = \"a\"\n",
            "name = '''literal'''\n",
            "name = \"\"\"two\nlines\"\"\"\n",
            "name = \"\"\"multi\"\"\"\n",
            "name = \"\\u0041\"\n",
            "name = \"a\"\r\n",
            "recipes = [\n\"a\",\n]\n",
            "ram = 1_024\n",
            "ram = +1\n",
            "unknown = 1\n",
            "[applied]\n",
            "forwards = [{hostport = 1, guestport = 2}]\n",
            "agent_access = \"root\"\n",
        ] {
            assert!(read(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn what_the_full_parser_refuses_it_never_accepts() {
        for text in [
            "name = \"a\"\nname = \"b\"\n",
            "ram = 4294967296\n",
            "sshport = 65536\n",
            "ram = 01\n",
            "ram = \"1\"\n",
            "installed = 1\n",
            "name = \"a\x01\"\n",
            "name = \"open\n",
            "[[forwards]]\nhostport = 1\n",
            "[applied.x]\n[applied.x]\n",
            "forwards = []\n[[forwards]]\nhostport = 1\nguestport = 2\n",
            "[applied.x]\nat = 2026-13-45T99:00:00Z\n",
        ] {
            assert!(full(text).is_err(), "the full parser accepts {text:?}");
            assert!(read(text).is_none(), "{text:?}");
        }
    }

    /// Every one-byte deletion and change of the corpus, and an insertion of each quote,
    /// backslash and newline: whenever the quick reader answers, the full parser gives the
    /// same config.
    #[test]
    fn agrees_with_the_full_parser_on_every_one_byte_change() {
        let replacements = b"\"'\\#[]=,\n 1";
        let insertions = b"\"'\\\n";
        let mut answered = 0;
        for text in corpus() {
            let bytes = text.as_bytes();
            for i in 0..bytes.len() {
                let mut variants: Vec<Vec<u8>> = Vec::new();
                let mut deleted = bytes.to_vec();
                deleted.remove(i);
                variants.push(deleted);
                for &b in replacements {
                    let mut changed = bytes.to_vec();
                    changed[i] = b;
                    variants.push(changed);
                }
                for &b in insertions {
                    let mut changed = bytes.to_vec();
                    changed.insert(i, b);
                    variants.push(changed);
                }
                for variant in variants {
                    let Ok(variant) = std::str::from_utf8(&variant) else {
                        continue;
                    };
                    if let Some(quick) = read(variant) {
                        answered += 1;
                        match full(variant) {
                            Ok(config) => assert_eq!(quick, config, "{variant:?}"),
                            Err(e) => panic!("quick read {variant:?}, full parser: {e}"),
                        }
                    }
                }
            }
        }
        assert!(
            answered > 1000,
            "the quick reader answered only {answered} times"
        );
    }
}
