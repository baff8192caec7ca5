//! `--extra-inputs` and `--header` values: `key:value` pairs or JSON objects.

use serde_json::{Map, Value};

/// A malformed item: what is accepted, what was given, and what is wrong with it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{flag} takes a JSON object ({{\"key\": value, …}}) or comma-separated key:value \
     pairs{given}: {problem}"
)]
pub(crate) struct KvError {
    flag: &'static str,
    /// `, got "…"`, or nothing when the items may hold secrets.
    given: String,
    problem: String,
}

/// Parses the items of `flag`: each is a JSON object (starts with `{`) or comma-separated
/// `key:value` pairs split on the first `:`. Values are coerced: `true`/`false`, `null`/
/// `none`, integers without a leading zero, decimals with one dot; anything else stays a
/// string. Later items override earlier ones.
pub(crate) fn parse_key_values(
    flag: &'static str,
    items: &[String],
) -> Result<Map<String, Value>, KvError> {
    parse(flag, items, true)
}

/// [`parse_key_values`]; errors quote the item only when `quote` (never for secrets).
fn parse(flag: &'static str, items: &[String], quote: bool) -> Result<Map<String, Value>, KvError> {
    let mut map = Map::new();
    for item in items {
        let trimmed = item.trim();
        let error = |problem: String| KvError {
            flag,
            given: if quote {
                format!(", got {item:?}")
            } else {
                String::new()
            },
            problem,
        };
        let pair_text = |pair: &str| {
            if quote {
                format!("{:?}", pair.trim())
            } else {
                "an item".to_owned()
            }
        };
        if trimmed.starts_with('{') {
            let object: Map<String, Value> = serde_json::from_str(trimmed)
                .map_err(|e| error(format!("it is not a valid JSON object ({e})")))?;
            map.extend(object);
            continue;
        }
        if trimmed.starts_with('[') && serde_json::from_str::<Value>(trimmed).is_ok() {
            return Err(error("a JSON array is not an object".into()));
        }
        for pair in trimmed.split(',').filter(|p| !p.trim().is_empty()) {
            let Some((key, value)) = pair.split_once(':') else {
                return Err(error(format!("{} has no ':'", pair_text(pair))));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(error(format!("{} has an empty key", pair_text(pair))));
            }
            map.insert(key.to_owned(), coerce(value.trim()));
        }
    }
    Ok(map)
}

/// Header pairs from `--header` items; JSON values that are not strings are rendered as JSON.
pub(crate) fn parse_headers(items: &[String]) -> Result<Vec<(String, String)>, KvError> {
    Ok(parse("--header", items, false)?
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (name, value)
        })
        .collect())
}

fn coerce(value: &str) -> Value {
    match value.to_ascii_lowercase().as_str() {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "none" | "null" => return Value::Null,
        _ => {}
    }
    if is_integer(value) {
        if let Ok(n) = value.parse::<i64>() {
            return Value::from(n);
        }
    }
    if let Some((whole, fraction)) = value.split_once('.') {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let whole_ok = digits(whole.strip_prefix('-').unwrap_or(whole));
        if whole_ok && digits(fraction) {
            if let Ok(f) = value.parse::<f64>() {
                return Value::from(f);
            }
        }
    }
    Value::String(value.to_owned())
}

fn is_integer(value: &str) -> bool {
    let digits = value.strip_prefix('-').unwrap_or(value);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(items: &[&str]) -> Value {
        let items: Vec<String> = items.iter().map(std::string::ToString::to_string).collect();
        Value::Object(parse_key_values("--extra-inputs", &items).unwrap())
    }

    #[test]
    fn values_are_coerced_like_the_python_aiperf() {
        assert_eq!(
            parse(&[
                "ignore_eos:true,max_tokens:150",
                "t:0.7",
                "n:-3",
                "z:007",
                "x:none",
                "s:hi"
            ]),
            json!({"ignore_eos": true, "max_tokens": 150, "t": 0.7, "n": -3, "z": "007",
                   "x": null, "s": "hi"})
        );
    }

    #[test]
    fn json_objects_merge_and_later_items_override() {
        assert_eq!(
            parse(&["a:1", r#"{"nvext":{"x":1},"a":2}"#]),
            json!({"a": 2, "nvext": {"x": 1}})
        );
    }

    #[test]
    fn values_split_on_the_first_colon_only() {
        assert_eq!(parse(&["url:http://x:1"]), json!({"url": "http://x:1"}));
    }

    fn error(flag: &'static str, item: &str) -> String {
        parse_key_values(flag, &[item.to_owned()])
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_bad_header_item_is_not_quoted_as_it_may_hold_a_secret() {
        let err = parse_headers(&["Authorization Bearer sk-1".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--header takes a JSON object ({\"key\": value, …}) or comma-separated key:value \
             pairs: an item has no ':'"
        );
    }

    #[test]
    fn a_pair_without_colon_is_an_error_naming_the_flag() {
        assert_eq!(
            error("--extra-inputs", "oops"),
            "--extra-inputs takes a JSON object ({\"key\": value, …}) or comma-separated \
             key:value pairs, got \"oops\": \"oops\" has no ':'"
        );
        assert_eq!(
            error("--extra-inputs", "a:1, b"),
            "--extra-inputs takes a JSON object ({\"key\": value, …}) or comma-separated \
             key:value pairs, got \"a:1, b\": \"b\" has no ':'"
        );
        assert_eq!(
            error("--extra-inputs", ":1"),
            "--extra-inputs takes a JSON object ({\"key\": value, …}) or comma-separated \
             key:value pairs, got \":1\": \":1\" has an empty key"
        );
    }

    #[test]
    fn a_json_array_says_an_object_was_expected() {
        assert_eq!(
            error("--extra-inputs", "[1,2]"),
            "--extra-inputs takes a JSON object ({\"key\": value, …}) or comma-separated \
             key:value pairs, got \"[1,2]\": a JSON array is not an object"
        );
        let bad_json = error("--extra-inputs", "{\"a\":}");
        assert!(
            bad_json.ends_with(
                "got \"{\\\"a\\\":}\": it is not a valid JSON object (expected value at line 1 \
                 column 6)"
            ),
            "{bad_json}"
        );
    }

    #[test]
    fn headers_keep_string_values() {
        let headers = parse_headers(&["X-A:1,X-B:b".into()]).unwrap();
        assert_eq!(
            headers,
            [
                ("X-A".to_string(), "1".to_string()),
                ("X-B".to_string(), "b".to_string())
            ]
        );
    }
}
