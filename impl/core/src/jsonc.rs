//! JSON with comments (the JSONC of VS Code and Gemini CLI config files), on the
//! `jsonc-parser` crate: reading it as JSON, and setting one member two levels down
//! (`servers.stoat`) in its concrete syntax tree, so every comment, trailing comma, blank line
//! and the rest of the formatting stay as the person wrote them.

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// Why a config cannot be read or edited.
pub type Why = String;

/// JSON plus comments and trailing commas, as these clients read their files; the rest of
/// what the crate can accept (JSON5's bare keys, single quotes, hex numbers, ...) is refused.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parses JSONC into a value.
pub fn parse(text: &str) -> Result<Value, Why> {
    if text.trim().is_empty() {
        return Err("the file is empty".into());
    }
    jsonc_parser::parse_to_serde_value(text, &options())
        .map_err(|e| format!("not valid JSON ({e})"))
}

/// `value` in the tree's input form.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(members) => {
            CstInputValue::Object(members.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// Returns `text` with `outer.inner = value`, editing only that member (or adding it, or
/// adding `outer` holding it). Refuses text that is not JSONC, a top level that is not an
/// object, an `outer` that is not one, and an `outer` or `inner` named twice: a reader takes
/// the last of two, so an edit of either could be one the client never sees.
pub fn set(text: &str, outer: &str, inner: &str, value: &Value) -> Result<String, Why> {
    if text.trim().is_empty() {
        let fresh = serde_json::json!({ outer: { inner: value } });
        let pretty = serde_json::to_string_pretty(&fresh).unwrap_or_else(|_| fresh.to_string());
        return Ok(format!("{pretty}\n"));
    }
    let root = CstRootNode::parse(text, &options()).map_err(|e| format!("not valid JSON ({e})"))?;
    let top = root
        .object_value()
        .ok_or("the top level is not a JSON object")?;
    named_once(&top, outer, "the top level")?;
    let servers = top
        .object_value_or_create(outer)
        .ok_or_else(|| format!("{outer} is not a JSON object"))?;
    named_once(&servers, inner, outer)?;
    match servers.get(inner) {
        Some(found) => found.set_value(input(value)),
        None => {
            servers.append(inner, input(value));
        }
    }
    Ok(root.to_string())
}

/// Refuses an object that names `name` more than once.
fn named_once(object: &CstObject, name: &str, what: &str) -> Result<(), Why> {
    let count = object
        .properties()
        .iter()
        .filter_map(|prop| prop.name()?.decoded_value().ok())
        .filter(|found| found == name)
        .count();
    if count > 1 {
        return Err(format!(
            "{what} names \"{name}\" {count} times; keep one and run again"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({"command": "/bin/stoat", "args": ["mcp"]})
    }

    /// Sets the entry and checks that the result reads back with it.
    fn set_ok(text: &str) -> String {
        let out = set(text, "servers", "stoat", &entry()).unwrap();
        let value = parse(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
        assert_eq!(value["servers"]["stoat"], entry(), "{out}");
        out
    }

    #[test]
    fn comments_and_trailing_commas_are_read_and_json5_is_not() {
        let text = "{ // a\n \"a\": \"//not a comment\", /* b\n c */ \"b\": [1,],\n}";
        assert_eq!(
            parse(text).unwrap(),
            json!({"a": "//not a comment", "b": [1]})
        );
        for bad in [
            "{ /* never closed }",
            "{a: 1}",
            "{\"a\": 'x'}",
            "{\"a\": 0x1}",
            "",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_existing_entry_is_replaced_and_every_comment_kept() {
        let text = "// user settings\n{\n  // my servers\n  \"servers\": {\n    \"other\": {\"command\": \"x\"}, // keep me\n    \"stoat\": {\"command\": \"/old\"} /* old */\n  },\n  \"z\": 1,\n}\n";
        let out = set_ok(text);
        for kept in [
            "// user settings",
            "// my servers",
            "// keep me",
            "/* old */",
            "\"z\": 1,",
        ] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
        assert!(!out.contains("/old"), "{out}");
        assert_eq!(parse(&out).unwrap()["servers"]["other"]["command"], "x");
    }

    #[test]
    fn a_new_entry_goes_last_with_the_commas_right() {
        let with_trailing = "{\n  \"servers\": {\n    \"other\": {}, // c\n  }\n}";
        let out = set_ok(with_trailing);
        assert!(
            out.contains("\"other\": {}, // c\n    \"stoat\": {"),
            "{out}"
        );
        let without = "{\n  \"servers\": {\n    \"other\": {} // c\n  }\n}";
        let out = set_ok(without);
        assert!(
            out.contains("\"other\": {}, // c\n    \"stoat\": {"),
            "{out}"
        );
        set_ok("{\"servers\":{\"other\":{}}}");
        set_ok("{\"servers\":{}}");
        set_ok("{\n  \"servers\": {\n  }\n}");
    }

    #[test]
    fn a_missing_table_is_added_and_the_rest_kept() {
        let out = set_ok("{\n  // theme\n  \"theme\": \"dark\"\n}\n");
        assert!(
            out.starts_with("{\n  // theme\n  \"theme\": \"dark\",\n  \"servers\": {"),
            "{out}"
        );
        set_ok("{}");
        set_ok("{ /* nothing */ }");
        set_ok("");
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        for bad in [
            "{oops",
            "[1]",
            "{\"servers\": 3}",
            "{\"a\": 1 /* open",
            "{\"servers\": {\"stoat\": 1, \"stoat\": 2}}",
            "{\"servers\": {}, \"servers\": {}}",
        ] {
            assert!(set(bad, "servers", "stoat", &entry()).is_err(), "{bad}");
        }
        let twice = set(
            "{\"servers\": {\"stoat\": 1, \"stoat\": 2}}",
            "servers",
            "stoat",
            &entry(),
        );
        assert_eq!(
            twice.unwrap_err(),
            "servers names \"stoat\" 2 times; keep one and run again"
        );
    }
}
