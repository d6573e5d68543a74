//! Owns the typed matchers of golden transcripts (docs/golden.md "Matchers"): judging an
//! actual JSON value against an expected one (objects may gain keys: the contract's additive
//! rule), and turning two recordings into an expectation (values that differ between runs
//! become `{"$any": type}`).

use serde_json::{Map, Value};

use base64::Engine as _;

/// The kinds `{"$any": KIND}` accepts.
pub const ANY_KINDS: &[&str] = &[
    "any",
    "int",
    "number",
    "string",
    "bool",
    "null",
    "array",
    "object",
    "timestamp",
    "base64",
    "port",
    "pid",
];

/// The matcher keyword of `value` when it is a matcher object (`{"$any": ...}` etc.).
pub fn matcher_kind(value: &Value) -> Option<&str> {
    let map = value.as_object()?;
    if map.len() != 1 {
        return None;
    }
    let key = map.keys().next()?;
    key.starts_with('$').then_some(key.as_str())
}

/// Checks `actual` against `expected`; pushes one message per mismatch (pointer first).
pub fn check(
    expected: &Value,
    actual: &Value,
    extra_keys_allowed: bool,
    pointer: &str,
    out: &mut Vec<String>,
) {
    if let Some(kind) = matcher_kind(expected) {
        check_matcher(
            kind,
            &expected[kind],
            actual,
            extra_keys_allowed,
            pointer,
            out,
        );
        return;
    }
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, want_value) in want {
                let child = format!("{pointer}/{}", crate::oracle::escape_segment(key));
                match got.get(key) {
                    Some(got_value) => {
                        check(want_value, got_value, extra_keys_allowed, &child, out)
                    }
                    None => out.push(format!("{child}: missing (expected {})", short(want_value))),
                }
            }
            if !extra_keys_allowed {
                for key in got.keys().filter(|k| !want.contains_key(*k)) {
                    out.push(format!("{pointer}/{key}: unexpected key"));
                }
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                out.push(format!(
                    "{pointer}: expected {} items, got {}",
                    want.len(),
                    got.len()
                ));
            }
            for (index, (w, g)) in want.iter().zip(got).enumerate() {
                check(w, g, extra_keys_allowed, &format!("{pointer}/{index}"), out);
            }
        }
        _ if numbers_equal(expected, actual) => {}
        _ => out.push(format!(
            "{pointer}: expected {}, got {}",
            short(expected),
            short(actual)
        )),
    }
}

/// Whether `actual` matches `expected` (no messages).
pub fn matches(expected: &Value, actual: &Value, extra_keys_allowed: bool) -> bool {
    let mut out = Vec::new();
    check(expected, actual, extra_keys_allowed, "", &mut out);
    out.is_empty()
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn check_matcher(
    kind: &str,
    argument: &Value,
    actual: &Value,
    extra_keys_allowed: bool,
    pointer: &str,
    out: &mut Vec<String>,
) {
    match kind {
        "$any" => {
            let wanted = argument.as_str().unwrap_or("?");
            if !any_holds(wanted, actual) {
                out.push(format!(
                    "{pointer}: expected any {wanted}, got {}",
                    short(actual)
                ));
            }
        }
        "$redacted" => {
            let name = argument.as_str().unwrap_or("?");
            let want = Value::String(format!("[{name}]"));
            if actual != &want {
                out.push(format!("{pointer}: expected {want}, got {}", short(actual)));
            }
        }
        "$includes" => match (argument.as_array(), actual.as_array()) {
            (Some(want), Some(got)) => {
                for (index, item) in want.iter().enumerate() {
                    if !got.iter().any(|g| matches(item, g, extra_keys_allowed)) {
                        out.push(format!(
                            "{pointer}: no item matches expected item {index} {}",
                            short(item)
                        ));
                    }
                }
            }
            _ => out.push(format!(
                "{pointer}: expected an array, got {}",
                short(actual)
            )),
        },
        "$literal" => check_literal(argument, actual, pointer, out),
        other => out.push(format!(
            "{pointer}: unknown matcher {other:?} in the transcript"
        )),
    }
}

fn check_literal(argument: &Value, actual: &Value, pointer: &str, out: &mut Vec<String>) {
    if !numbers_equal(argument, actual) {
        out.push(format!(
            "{pointer}: expected {}, got {}",
            short(argument),
            short(actual)
        ));
    }
}

/// Whether `actual` is of the `$any` kind `kind`.
pub fn any_holds(kind: &str, actual: &Value) -> bool {
    match kind {
        "any" => true,
        "int" => actual.is_i64() || actual.is_u64(),
        "number" => actual.is_number(),
        "string" => actual.is_string(),
        "bool" => actual.is_boolean(),
        "null" => actual.is_null(),
        "array" => actual.is_array(),
        "object" => actual.is_object(),
        "timestamp" => actual.as_str().is_some_and(looks_like_timestamp),
        "base64" => actual
            .as_str()
            .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok()),
        "port" => actual.as_u64().is_some_and(|p| (1..=65535).contains(&p)),
        "pid" => actual.as_u64().is_some_and(|p| p > 0),
        _ => false,
    }
}

/// An RFC 3339 timestamp (or the `[TIMESTAMP]` placeholder redaction leaves).
pub fn looks_like_timestamp(text: &str) -> bool {
    text == "[TIMESTAMP]" || crate::golden::redact::timestamp_regex().is_match(text)
}

/// The `$any` kind that describes `value`.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `{"$any": kind}`.
pub fn any(kind: &str) -> Value {
    let mut map = Map::new();
    map.insert("$any".into(), Value::String(kind.into()));
    Value::Object(map)
}

/// Two recordings of the same case → one expectation: what differs becomes `$any`.
pub fn generalize(first: &Value, second: &Value) -> Value {
    match (first, second) {
        (Value::Object(a), Value::Object(b)) => Value::Object(
            a.iter()
                .filter_map(|(key, va)| b.get(key).map(|vb| (key.clone(), generalize(va, vb))))
                .collect(),
        ),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            Value::Array(a.iter().zip(b).map(|(x, y)| generalize(x, y)).collect())
        }
        _ if numbers_equal(first, second) => first.clone(),
        _ if kind_of(first) == kind_of(second) => any(kind_of(first)),
        _ => any("any"),
    }
}

/// Keeps the matchers of an older expectation wherever they still accept the new recording
/// (so re-recording does not lose hand-written matchers).
pub fn keep_matchers(old: &Value, recorded: &Value) -> Value {
    if matcher_kind(old).is_some() {
        return if matches(old, recorded, true) {
            old.clone()
        } else {
            recorded.clone()
        };
    }
    match (old, recorded) {
        (Value::Object(a), Value::Object(b)) => Value::Object(
            b.iter()
                .map(|(key, vb)| {
                    let merged = match a.get(key) {
                        Some(va) => keep_matchers(va, vb),
                        None => vb.clone(),
                    };
                    (key.clone(), merged)
                })
                .collect(),
        ),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            Value::Array(a.iter().zip(b).map(|(x, y)| keep_matchers(x, y)).collect())
        }
        _ => recorded.clone(),
    }
}

/// Replaces the subtree at every pointer matching `pattern` (`*` = any one segment) by `f`.
pub fn rewrite_at(value: &mut Value, pattern: &str, f: &dyn Fn(&Value) -> Value) {
    let segments: Vec<&str> = pattern.split('/').skip(1).collect();
    rewrite_segments(value, &segments, f);
}

fn rewrite_segments(value: &mut Value, segments: &[&str], f: &dyn Fn(&Value) -> Value) {
    let Some((first, rest)) = segments.split_first() else {
        *value = f(value);
        return;
    };
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if *first == "*" || key == first {
                    rewrite_segments(child, rest, f);
                }
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter_mut().enumerate() {
                if *first == "*" || first.parse::<usize>().ok() == Some(index) {
                    rewrite_segments(child, rest, f);
                }
            }
        }
        _ => {}
    }
}

/// Every leaf becomes `$any` of its kind; arrays become `$any array` (host-dependent data).
pub fn shape_only(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shape_only(v)))
                .collect(),
        ),
        other => any(kind_of(other)),
    }
}

/// `{"$includes": [...]}`: the list may grow, every recorded item must stay.
pub fn includes(value: &Value) -> Value {
    match value {
        Value::Array(_) => {
            let mut map = Map::new();
            map.insert("$includes".into(), value.clone());
            Value::Object(map)
        }
        other => other.clone(),
    }
}

/// A short rendering of a value for messages.
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(expected: Value, actual: Value) -> Vec<String> {
        let mut out = Vec::new();
        check(&expected, &actual, true, "", &mut out);
        out
    }

    #[test]
    fn extra_keys_pass_missing_keys_fail() {
        assert!(errors(json!({"a": 1}), json!({"a": 1, "b": 2})).is_empty());
        assert_eq!(errors(json!({"a": 1, "b": 2}), json!({"a": 1})).len(), 1);
        let mut out = Vec::new();
        check(
            &json!({"a": 1}),
            &json!({"a": 1, "b": 2}),
            false,
            "",
            &mut out,
        );
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn any_kinds() {
        assert!(errors(json!({"$any": "int"}), json!(42)).is_empty());
        assert!(!errors(json!({"$any": "int"}), json!("42")).is_empty());
        assert!(errors(json!({"$any": "timestamp"}), json!("2026-01-02T03:04:05Z")).is_empty());
        assert!(errors(json!({"$any": "base64"}), json!("aGk=")).is_empty());
        assert!(!errors(json!({"$any": "port"}), json!(0)).is_empty());
        assert!(errors(json!({"$redacted": "STOAT_HOME"}), json!("[STOAT_HOME]")).is_empty());
        assert!(!errors(json!({"$nope": 1}), json!(1)).is_empty());
    }

    #[test]
    fn arrays_are_exact_unless_includes() {
        assert!(!errors(json!([1, 2]), json!([1, 2, 3])).is_empty());
        assert!(errors(json!({"$includes": [2]}), json!([1, 2, 3])).is_empty());
        assert!(!errors(json!({"$includes": [4]}), json!([1, 2, 3])).is_empty());
    }

    #[test]
    fn generalize_turns_differences_into_any() {
        let out = generalize(
            &json!({"a": 1, "b": "x", "c": [1]}),
            &json!({"a": 2, "b": "x", "c": [1]}),
        );
        assert_eq!(out, json!({"a": {"$any": "int"}, "b": "x", "c": [1]}));
    }

    #[test]
    fn keep_matchers_keeps_what_still_holds() {
        let old = json!({"a": {"$any": "int"}, "b": {"$any": "int"}});
        let new = json!({"a": 5, "b": "now a string", "c": 1});
        assert_eq!(
            keep_matchers(&old, &new),
            json!({"a": {"$any": "int"}, "b": "now a string", "c": 1})
        );
    }

    #[test]
    fn rewrite_with_wildcards() {
        let mut value = json!({"data": {"checks": [{"detail": "x"}, {"detail": "y"}]}});
        rewrite_at(&mut value, "/data/checks/*/detail", &|v| any(kind_of(v)));
        assert_eq!(
            value["data"]["checks"][1]["detail"],
            json!({"$any": "string"})
        );
    }
}
