//! Reading a mapping of the file key by key: each key is looked up under its snake_case
//! or camelCase spelling, values convert with an error naming the file, the line and the
//! key, and a key nobody asked for is refused (with a suggestion when it is close to
//! one that exists).

use super::yaml::{Entry, Node, Value};
use super::ConfigFileError;

/// A mapping being read. Every key must be taken, or [`finish`](Self::finish) refuses it.
pub(super) struct MapReader<'a> {
    file: &'a str,
    path: String,
    entries: &'a [Entry],
    taken: Vec<bool>,
    asked: Vec<&'static str>,
}

/// A value of the file, with where it is.
#[derive(Clone)]
pub(super) struct Field<'a> {
    pub(super) file: &'a str,
    pub(super) line: usize,
    /// The key path as written, e.g. `benchmark.endpoint.url`.
    pub(super) path: String,
    pub(super) node: &'a Node,
}

/// `rateRamp` → `rate_ramp`; snake_case stays as it is.
pub(super) fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl<'a> MapReader<'a> {
    /// Reads `node` (at `path`) as a mapping.
    pub(super) fn new(file: &'a str, path: &str, node: &'a Node) -> Result<Self, ConfigFileError> {
        let Value::Map(entries) = &node.value else {
            return Err(ConfigFileError::at(
                file,
                node.line,
                path,
                "expected a mapping of keys",
            ));
        };
        Ok(Self {
            file,
            path: path.to_owned(),
            entries,
            taken: vec![false; entries.len()],
            asked: Vec::new(),
        })
    }

    /// The value of `name` (snake_case; the camelCase spelling is accepted too), `None`
    /// when absent or null.
    pub(super) fn take(&mut self, name: &'static str) -> Option<Field<'a>> {
        self.asked.push(name);
        let index = self
            .entries
            .iter()
            .position(|entry| snake_case(&entry.key) == name)?;
        self.taken[index] = true;
        let entry = &self.entries[index];
        if entry.value.value == Value::Null {
            return None;
        }
        Some(Field {
            file: self.file,
            line: entry.line,
            path: format!("{}.{}", self.path, entry.key),
            node: &entry.value,
        })
    }

    /// Every key not yet taken, in file order (for maps of free keys such as headers).
    pub(super) fn rest(&mut self) -> Vec<&'a Entry> {
        let mut rest = Vec::new();
        for (entry, taken) in self.entries.iter().zip(&mut self.taken) {
            if !*taken {
                *taken = true;
                rest.push(entry);
            }
        }
        rest
    }

    /// Refuses the first key left: one of `refused` (a 0.13 key aiperf-rs does not
    /// implement) by name, any other as unknown, with the closest known key.
    pub(super) fn finish(self, refused: &[&str]) -> Result<(), ConfigFileError> {
        let Some((entry, _)) = self
            .entries
            .iter()
            .zip(&self.taken)
            .find(|(_, taken)| !**taken)
        else {
            return Ok(());
        };
        let path = format!("{}.{}", self.path, entry.key);
        let name = snake_case(&entry.key);
        if refused.contains(&name.as_str()) {
            return Err(ConfigFileError::at(
                self.file,
                entry.line,
                &path,
                "not available in aiperf-rs (a key of the Python AIPerf 0.13 this \
                 implementation does not support; remove it)",
            ));
        }
        let candidates = self.asked.iter().copied().chain(refused.iter().copied());
        let problem = match closest(&name, candidates) {
            Some(suggestion) => format!("unknown key; did you mean `{suggestion}`?"),
            None => "unknown key".to_owned(),
        };
        Err(ConfigFileError::at(self.file, entry.line, &path, &problem))
    }
}

/// The candidate nearest `name` by edit distance, if near enough to be a misspelling.
fn closest<'c>(name: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .map(|candidate| (edit_distance(name, candidate), candidate))
        .filter(|(distance, candidate)| {
            *distance <= (candidate.len() / 3).max(2) && *distance < candidate.len()
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

impl<'a> Field<'a> {
    /// Reads this value as a mapping.
    pub(super) fn map(&self) -> Result<MapReader<'a>, ConfigFileError> {
        MapReader::new(self.file, &self.path, self.node)
    }

    /// An error about this value.
    pub(super) fn error(&self, problem: &str) -> ConfigFileError {
        ConfigFileError::at(self.file, self.line, &self.path, problem)
    }

    fn scalar(&self, expected: &str) -> Result<&'a str, ConfigFileError> {
        match &self.node.value {
            Value::Scalar { text, .. } => Ok(text),
            _ => Err(self.error(&format!("expected {expected}"))),
        }
    }

    /// A string (numbers and booleans are taken as written).
    pub(super) fn string(&self) -> Result<String, ConfigFileError> {
        self.scalar("a string").map(str::to_owned)
    }

    /// A whole number, 0 or more.
    pub(super) fn count<T: TryFrom<u64>>(&self) -> Result<T, ConfigFileError> {
        let text = self.scalar("a whole number")?;
        text.trim()
            .parse::<u64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.error(&format!("expected a whole number, got {text:?}")))
    }

    /// A number.
    pub(super) fn number(&self) -> Result<f64, ConfigFileError> {
        let text = self.scalar("a number")?;
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| !n.is_nan())
            .ok_or_else(|| self.error(&format!("expected a number, got {text:?}")))
    }

    /// `true` or `false` (YAML's other spellings too).
    pub(super) fn boolean(&self) -> Result<bool, ConfigFileError> {
        let text = self.scalar("true or false")?;
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => Ok(true),
            "false" | "no" | "off" => Ok(false),
            _ => Err(self.error(&format!("expected true or false, got {text:?}"))),
        }
    }

    /// Seconds: a number, or a number with a unit (`500ms`, `30s`, `2m`, `1h`).
    pub(super) fn seconds(&self) -> Result<f64, ConfigFileError> {
        let text = self.scalar("a duration")?.trim();
        let (number, factor) = if let Some(n) = text.strip_suffix("ms") {
            (n, 0.001)
        } else if let Some(n) = text.strip_suffix('s') {
            (n, 1.0)
        } else if let Some(n) = text.strip_suffix('m') {
            (n, 60.0)
        } else if let Some(n) = text.strip_suffix('h') {
            (n, 3600.0)
        } else {
            (text, 1.0)
        };
        number
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n * factor)
            .ok_or_else(|| {
                self.error(&format!(
                    "expected a duration (seconds, or e.g. 500ms, 30s, 2m, 1h), got {text:?}"
                ))
            })
    }

    /// A string or a list of strings.
    pub(super) fn strings(&self) -> Result<Vec<String>, ConfigFileError> {
        match &self.node.value {
            Value::Scalar { text, .. } => Ok(vec![text.clone()]),
            Value::Seq(items) => items
                .iter()
                .map(|item| match &item.value {
                    Value::Scalar { text, .. } => Ok(text.clone()),
                    _ => Err(ConfigFileError::at(
                        self.file,
                        item.line,
                        &self.path,
                        "expected a list of strings",
                    )),
                })
                .collect(),
            _ => Err(self.error("expected a string or a list of strings")),
        }
    }

    /// This value as JSON (for request fields such as `extra`).
    pub(super) fn json(&self) -> serde_json::Value {
        to_json(self.node)
    }
}

/// A node as JSON: plain scalars as YAML types them (numbers, booleans), quoted ones as
/// strings.
pub(super) fn to_json(node: &Node) -> serde_json::Value {
    match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Scalar { text, quoted: true } => serde_json::Value::String(text.clone()),
        Value::Scalar {
            text,
            quoted: false,
        } => match text.as_str() {
            "true" | "True" | "TRUE" => serde_json::Value::Bool(true),
            "false" | "False" | "FALSE" => serde_json::Value::Bool(false),
            _ => text
                .parse::<i64>()
                .map(serde_json::Value::from)
                .ok()
                .or_else(|| {
                    text.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(serde_json::Value::Number)
                })
                .unwrap_or_else(|| serde_json::Value::String(text.clone())),
        },
        Value::Seq(items) => items.iter().map(to_json).collect(),
        Value::Map(entries) => entries
            .iter()
            .map(|entry| (entry.key.clone(), to_json(&entry.value)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_reads_as_snake_case() {
        assert_eq!(snake_case("rateRamp"), "rate_ramp");
        assert_eq!(snake_case("excludeFromResults"), "exclude_from_results");
        assert_eq!(snake_case("grace_period"), "grace_period");
    }

    #[test]
    fn misspellings_find_their_key() {
        let keys = ["url", "urls", "type", "path", "streaming", "timeout"];
        assert_eq!(closest("ulr", keys.into_iter()), Some("url"));
        assert_eq!(closest("streming", keys.into_iter()), Some("streaming"));
        assert_eq!(closest("banana", keys.into_iter()), None);
    }
}
