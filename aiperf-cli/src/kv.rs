//! `--extra-inputs` and `--header` values: `key:value` pairs or JSON objects.

use serde_json::{Map, Value};

/// A malformed `key:value` item.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{flag} item {item:?} is not `key:value` or a JSON object{detail}")]
pub(crate) struct KvError {
    flag: &'static str,
    item: String,
    detail: String,
}

/// Parses the items of `flag`: each is a JSON object (starts with `{`) or comma-separated
/// `key:value` pairs split on the first `:`. Values are coerced: `true`/`false`, `null`/
/// `none`, integers without a leading zero, decimals with one dot; anything else stays a
/// string. Later items override earlier ones.
pub(crate) fn parse_key_values(
    flag: &'static str,
    items: &[String],
) -> Result<Map<String, Value>, KvError> {
    let mut map = Map::new();
    for item in items {
        let trimmed = item.trim();
        if trimmed.starts_with('{') {
            let object: Map<String, Value> =
                serde_json::from_str(trimmed).map_err(|e| KvError {
                    flag,
                    item: item.clone(),
                    detail: format!(": {e}"),
                })?;
            map.extend(object);
            continue;
        }
        for pair in trimmed.split(',').filter(|p| !p.trim().is_empty()) {
            let Some((key, value)) = pair.split_once(':') else {
                return Err(KvError {
                    flag,
                    item: item.clone(),
                    detail: format!(" (no `:` in {pair:?})"),
                });
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(KvError {
                    flag,
                    item: item.clone(),
                    detail: " (empty key)".into(),
                });
            }
            map.insert(key.to_owned(), coerce(value.trim()));
        }
    }
    Ok(map)
}

/// Header pairs from `--header` items; JSON values that are not strings are rendered as JSON.
pub(crate) fn parse_headers(items: &[String]) -> Result<Vec<(String, String)>, KvError> {
    Ok(parse_key_values("--header", items)?
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

    #[test]
    fn a_pair_without_colon_is_an_error_naming_the_flag() {
        let err = parse_key_values("--header", &["oops".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--header item \"oops\" is not `key:value` or a JSON object (no `:` in \"oops\")"
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
