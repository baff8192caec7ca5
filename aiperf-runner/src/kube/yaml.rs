//! A small block-style YAML writer for JSON values, enough for Kubernetes manifests.
//!
//! Strings are written plain only when no YAML reader could take them for anything
//! else (a number, a boolean, null, an indicator); every other string is written as a
//! JSON string, which is a valid YAML double-quoted scalar. A multi-line string (the
//! ConfigMap's run_config.json) becomes a literal block so that it stays readable.

use serde_json::{Map, Value};

/// `value` as one YAML document, starting with `---`.
pub(super) fn document(value: &Value) -> String {
    let mut out = String::from("---\n");
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    out
}

fn write_map(out: &mut String, map: &Map<String, Value>, indent: usize) {
    let pad = " ".repeat(indent);
    for (key, value) in map {
        out.push_str(&pad);
        out.push_str(&string(key));
        out.push(':');
        write_value_after_key(out, value, indent);
    }
}

/// Kubernetes style: a list under a key is written at the key's indentation.
fn write_value_after_key(out: &mut String, value: &Value, indent: usize) {
    if let Some((chomping, lines)) = value.as_str().and_then(literal_block) {
        out.push_str(" |");
        out.push_str(chomping);
        out.push('\n');
        for line in lines {
            out.push_str(&" ".repeat(indent + 2));
            out.push_str(line);
            out.push('\n');
        }
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map(out, map, indent + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    let pad = " ".repeat(indent);
    for item in items {
        match item {
            Value::Object(map) if !map.is_empty() => {
                // The map is written two columns in; its first line takes the dash.
                let mut nested = String::new();
                write_map(&mut nested, map, indent + 2);
                out.push_str(&pad);
                out.push_str("- ");
                out.push_str(&nested[indent + 2..]);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push_str(&pad);
                out.push_str("-\n");
                write_seq(out, inner, indent + 2);
            }
            scalar => {
                out.push_str(&pad);
                out.push_str("- ");
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => string(text),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string plain when that is unambiguous, else JSON-quoted.
fn string(text: &str) -> String {
    if is_plain_safe(text) {
        text.to_owned()
    } else {
        serde_json::Value::String(text.to_owned()).to_string()
    }
}

/// A letter or `/` first (so never a number), then only letters, digits and `._/-`,
/// and not a word YAML 1.1 or 1.2 reads as a boolean or null.
fn is_plain_safe(text: &str) -> bool {
    const WORDS: [&str; 11] = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf",
    ];
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '/')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !WORDS.iter().any(|word| text.eq_ignore_ascii_case(word))
}

/// The chomping indicator and lines of `text` as a literal block, when it has several
/// lines and a literal block keeps it exactly: printable characters only, a first line
/// not starting with a space (which would need an indentation indicator), and at most
/// one final line break.
fn literal_block(text: &str) -> Option<(&'static str, Vec<&str>)> {
    let body = text.strip_suffix('\n');
    let chomping = if body.is_some() { "" } else { "-" };
    let body = body.unwrap_or(text);
    let exact = body.contains('\n')
        && !body.ends_with('\n')
        && !body.starts_with([' ', '\t'])
        && !body
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        && body.lines().all(|line| !line.trim().is_empty());
    exact.then(|| (chomping, body.split('\n').collect()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ambiguous_strings_are_quoted_and_safe_ones_plain() {
        let doc = document(&json!({
            "name": "aiperf-shards",
            "cpu": "500m",
            "count": "4",
            "flag": "on",
            "Null": "NULL",
            "empty": "",
            "arg": "--shard-count",
            "index": "/results/run/shard-$(JOB_COMPLETION_INDEX)",
            "app.kubernetes.io/name": "aiperf",
            "n": 4,
            "b": true,
        }));
        assert_eq!(
            doc,
            "---\nname: aiperf-shards\ncpu: \"500m\"\ncount: \"4\"\nflag: \"on\"\n\
             \"Null\": \"NULL\"\nempty: \"\"\narg: \"--shard-count\"\n\
             index: \"/results/run/shard-$(JOB_COMPLETION_INDEX)\"\n\
             app.kubernetes.io/name: aiperf\n\"n\": 4\nb: true\n"
        );
    }

    #[test]
    fn nested_maps_and_lists_are_block_style() {
        let doc = document(&json!({
            "spec": {
                "containers": [
                    {"name": "a", "args": ["x", "1"], "env": []},
                    "plain",
                ],
                "empty": {},
            }
        }));
        assert_eq!(
            doc,
            "---\nspec:\n  containers:\n  - name: a\n    args:\n    - x\n    - \"1\"\n    \
             env: []\n  - plain\n  empty: {}\n"
        );
    }

    #[test]
    fn multi_line_text_is_a_literal_block_only_when_exact() {
        let doc = document(&json!({"data": {"f.json": "{\n  \"a\": 1\n}", "g": "x\n y\n"}}));
        assert_eq!(
            doc,
            "---\ndata:\n  f.json: |-\n    {\n      \"a\": 1\n    }\n  g: |\n    x\n     y\n"
        );
        // Leading space, blank lines, several final breaks, control characters: quoted.
        for text in [" a\nb", "a\n\nb", "a\nb\n\n", "a\r\nb"] {
            let doc = document(&json!({ "k": text }));
            assert_eq!(doc, format!("---\nk: {}\n", json!(text)));
        }
    }
}
