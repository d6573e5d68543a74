//! JSON with comments (the JSONC of VS Code and Gemini CLI config files): reading it as JSON,
//! and setting one member two levels down (`servers.stoat`) by splicing text, so every comment,
//! trailing comma, blank line and the rest of the formatting stay as the person wrote them.
//!
//! The trick: [`blank`] turns comments and trailing commas into spaces, byte for byte, so the
//! blanked text is plain JSON with the same offsets as the original; spans found in it are
//! spans of the original.

use serde_json::Value;

/// Why a config cannot be read or edited.
pub type Why = String;

/// The text with every comment and trailing comma replaced by spaces (newlines kept), so it
/// parses as JSON and has the original's byte offsets.
pub fn blank(text: &str) -> Result<String, Why> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => in_string = true,
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let start = i;
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                if i + 1 >= bytes.len() {
                    return Err("a /* comment is never closed".into());
                }
                i += 2;
                for byte in &mut out[start..i] {
                    if *byte != b'\n' {
                        *byte = b' ';
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Trailing commas: a comma whose next non-space byte closes the object or array.
    let mut in_string = false;
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b',' if !in_string => {
                let next = out[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
                if matches!(next, Some(b'}') | Some(b']')) {
                    out[i] = b' ';
                }
            }
            _ => {}
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "the file is not UTF-8".into())
}

/// Parses JSONC into a value.
pub fn parse(text: &str) -> Result<Value, Why> {
    serde_json::from_str(&blank(text)?).map_err(|e| format!("not valid JSON ({e})"))
}

/// One member of an object, as byte spans of the text.
struct Member {
    key: String,
    key_start: usize,
    value: std::ops::Range<usize>,
}

/// Scans valid (blanked) JSON.
struct Scan<'a> {
    b: &'a [u8],
}

impl Scan<'_> {
    fn ws(&self, mut i: usize) -> usize {
        while i < self.b.len() && self.b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }

    /// The end of the value starting at `i`.
    fn value_end(&self, i: usize) -> usize {
        match self.b[i] {
            b'{' => self.members(i).1 + 1,
            b'[' => {
                let mut j = self.ws(i + 1);
                if self.b[j] == b']' {
                    return j + 1;
                }
                loop {
                    j = self.ws(self.value_end(j));
                    if self.b[j] == b']' {
                        return j + 1;
                    }
                    j = self.ws(j + 1);
                }
            }
            b'"' => self.string_end(i),
            _ => {
                let mut j = i;
                while j < self.b.len() && !b",}] \t\r\n".contains(&self.b[j]) {
                    j += 1;
                }
                j
            }
        }
    }

    fn string_end(&self, i: usize) -> usize {
        let mut j = i + 1;
        while self.b[j] != b'"' {
            if self.b[j] == b'\\' {
                j += 1;
            }
            j += 1;
        }
        j + 1
    }

    /// The members of the object opening at `open`, and the offset of its `}`.
    fn members(&self, open: usize) -> (Vec<Member>, usize) {
        let mut found = Vec::new();
        let mut i = self.ws(open + 1);
        if self.b[i] == b'}' {
            return (found, i);
        }
        loop {
            let key_end = self.string_end(i);
            let key = std::str::from_utf8(&self.b[i..key_end])
                .ok()
                .and_then(|k| serde_json::from_str::<String>(k).ok())
                .unwrap_or_default();
            let colon = self.ws(key_end);
            let start = self.ws(colon + 1);
            let end = self.value_end(start);
            found.push(Member {
                key,
                key_start: i,
                value: start..end,
            });
            let next = self.ws(end);
            if self.b[next] == b'}' {
                return (found, next);
            }
            i = self.ws(next + 1);
        }
    }
}

/// The leading whitespace of the line holding offset `at`.
fn indent_at(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

/// `value` pretty-printed, its later lines indented by `indent`.
fn render(value: &Value, indent: &str) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.replace('\n', &format!("\n{indent}"))
}

/// Returns `text` with `outer.inner = value`, editing only the text of that member (or adding
/// it, or adding `outer` holding it). Refuses text that is not JSONC, a top level that is not
/// an object and an `outer` that is not one.
pub fn set(text: &str, outer: &str, inner: &str, value: &Value) -> Result<String, Why> {
    if text.trim().is_empty() {
        let mut fresh = serde_json::Map::new();
        fresh.insert(outer.into(), serde_json::json!({ inner: value }));
        return Ok(format!("{}\n", render(&Value::Object(fresh), "")));
    }
    let plain = blank(text)?;
    let top: Value = serde_json::from_str(&plain).map_err(|e| format!("not valid JSON ({e})"))?;
    let Value::Object(top) = top else {
        return Err("the top level is not a JSON object".into());
    };
    if top.get(outer).is_some_and(|v| !v.is_object()) {
        return Err(format!("{outer} is not a JSON object"));
    }
    let scan = Scan {
        b: plain.as_bytes(),
    };
    let open = scan.ws(0);
    let (members, close) = scan.members(open);
    match members.iter().rev().find(|m| m.key == outer) {
        Some(servers) => {
            let (inner_members, inner_close) = scan.members(servers.value.start);
            match inner_members.iter().rev().find(|m| m.key == inner) {
                Some(found) => {
                    let indent = indent_at(text, found.key_start);
                    Ok(splice(text, found.value.clone(), &render(value, indent)))
                }
                None => Ok(insert(
                    text,
                    &plain,
                    servers.value.start,
                    &inner_members,
                    inner_close,
                    inner,
                    value,
                )),
            }
        }
        None => {
            let wrapped = serde_json::json!({ inner: value });
            Ok(insert(text, &plain, open, &members, close, outer, &wrapped))
        }
    }
}

fn splice(text: &str, range: std::ops::Range<usize>, with: &str) -> String {
    format!("{}{with}{}", &text[..range.start], &text[range.end..])
}

/// Adds `"key": value` as the last member of the object opening at `open` and closing at
/// `close`: on its own line before the `}` when the `}` has its own line, else inline.
fn insert(
    text: &str,
    plain: &str,
    open: usize,
    members: &[Member],
    close: usize,
    key: &str,
    value: &Value,
) -> String {
    let close_line_start = text[..close].rfind('\n').map_or(0, |n| n + 1);
    let close_on_own_line =
        close_line_start > open && text[close_line_start..close].trim().is_empty();
    let indent = match members.last() {
        Some(last) => indent_at(text, last.key_start).to_owned(),
        None => format!("{}  ", indent_at(text, open)),
    };
    let key_text = serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""));
    let member = format!("{key_text}: {}", render(value, &indent));
    // A comma after the last member, unless it already has a trailing one.
    let comma_at = members.last().and_then(|last| {
        let between = last.value.end..close;
        let has_trailing = text[between.clone()]
            .bytes()
            .zip(plain[between].bytes())
            .any(|(original, blanked)| original == b',' && blanked == b' ');
        (!has_trailing).then_some(last.value.end)
    });
    let (at, addition) = if close_on_own_line {
        (close_line_start, format!("{indent}{member}\n"))
    } else if members.is_empty() {
        let close_indent = indent_at(text, close);
        (close, format!("\n{indent}{member}\n{close_indent}"))
    } else {
        (close, format!(" {member} "))
    };
    let mut out = String::with_capacity(text.len() + addition.len() + 1);
    out.push_str(&text[..at]);
    out.push_str(&addition);
    out.push_str(&text[at..]);
    if let Some(comma) = comma_at {
        out.insert(comma, ',');
    }
    out
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
    fn comments_and_trailing_commas_are_blanked_in_place() {
        let text = "{ // a\n \"a\": \"//not a comment\", /* b\n c */ \"b\": [1,],\n}";
        let plain = blank(text).unwrap();
        assert_eq!(plain.len(), text.len());
        assert_eq!(plain.matches('\n').count(), text.matches('\n').count());
        let value: Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(value, json!({"a": "//not a comment", "b": [1]}));
        assert!(blank("{ /* never closed }").is_err());
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
        for bad in ["{oops", "[1]", "{\"servers\": 3}", "{\"a\": 1 /* open"] {
            assert!(set(bad, "servers", "stoat", &entry()).is_err(), "{bad}");
        }
    }
}
