//! Reading JSONL records: each non-blank line a JSON object, its fields taken one by one
//! with typed errors, and whatever is left over rejected as unknown keys.

use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use super::error::{DatasetFileError, DatasetFileErrorKind};

/// The largest timestamp or delay a dataset may give, in ms: 2^53, beyond which a
/// double no longer holds whole milliseconds (and a replay would wait for ever).
/// Absolute Unix timestamps in milliseconds or even microseconds stay well below it.
pub(crate) const MAX_MS: f64 = 9_007_199_254_740_992.0;

/// Streams the non-blank lines of a JSONL file, parsed as objects, into `visit` (so a
/// large trace is never held twice). An empty file is an error.
pub(crate) fn for_each_record<'p>(
    path: &'p Path,
    visit: impl FnMut(Record<'p>) -> Result<(), DatasetFileError>,
) -> Result<(), DatasetFileError> {
    let file = crate::text_file::open(path, 1 << 16).map_err(|e| DatasetFileError::io(path, e))?;
    for_each_record_of(path, file.lines(), visit)
}

/// [`for_each_record`] over `lines` already opened from `path` (a decompressed stream,
/// say); `path` names the file in errors. A leading byte order mark is dropped.
pub(crate) fn for_each_record_of<'p>(
    path: &'p Path,
    lines: impl Iterator<Item = std::io::Result<String>>,
    mut visit: impl FnMut(Record<'p>) -> Result<(), DatasetFileError>,
) -> Result<(), DatasetFileError> {
    let mut any = false;
    for (index, line) in lines.enumerate() {
        let line_no = index + 1;
        let text = line.map_err(|e| DatasetFileError::io(path, e).at_line(line_no))?;
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() {
            continue;
        }
        any = true;
        visit(Record::parse(path, line_no, text)?)?;
    }
    if !any {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the file holds no records (it is empty or has only blank lines)",
        ));
    }
    Ok(())
}

/// One JSON object being taken apart: every `take_*` removes its key, so what
/// [`Record::finish`] finds left are the keys the format does not know.
#[derive(Debug)]
pub(crate) struct Record<'p> {
    path: &'p Path,
    /// 1-based line number.
    pub(crate) line: usize,
    /// Prefix of field names in errors (`turns[2].` inside a multi-turn line).
    prefix: String,
    fields: Map<String, Value>,
}

impl<'p> Record<'p> {
    /// Parses one line of `path`.
    pub(crate) fn parse(path: &'p Path, line: usize, text: &str) -> Result<Self, DatasetFileError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            DatasetFileError::file(
                path,
                DatasetFileErrorKind::Syntax,
                format!("invalid JSON at column {}: {e}", e.column()),
            )
            .at_line(line)
        })?;
        let Value::Object(fields) = value else {
            return Err(DatasetFileError::file(
                path,
                DatasetFileErrorKind::Syntax,
                "expected a JSON object",
            )
            .at_line(line));
        };
        Ok(Self {
            path,
            line,
            prefix: String::new(),
            fields,
        })
    }

    /// A nested object of this record (a turn of a multi-turn line), named `name` in
    /// errors.
    pub(crate) fn nested(&self, name: &str, value: Value) -> Result<Record<'p>, DatasetFileError> {
        match value {
            Value::Object(fields) => Ok(Record {
                path: self.path,
                line: self.line,
                prefix: format!("{}{name}.", self.prefix),
                fields,
            }),
            other => Err(self.wrong_type(name, "an object", &other)),
        }
    }

    /// An error about `field` of this record.
    pub(crate) fn error(
        &self,
        field: &str,
        kind: DatasetFileErrorKind,
        message: impl Into<String>,
    ) -> DatasetFileError {
        DatasetFileError::file(self.path, kind, message)
            .at_line(self.line)
            .in_field(format!("{}{field}", self.prefix))
    }

    /// An error about the record as a whole.
    pub(crate) fn record_error(
        &self,
        kind: DatasetFileErrorKind,
        message: impl Into<String>,
    ) -> DatasetFileError {
        let error = DatasetFileError::file(self.path, kind, message).at_line(self.line);
        match self.prefix.strip_suffix('.') {
            Some(name) => error.in_field(name),
            None => error,
        }
    }

    /// The error for `field` holding `got` where `expected` belongs.
    pub(crate) fn wrong_type(&self, field: &str, expected: &str, got: &Value) -> DatasetFileError {
        self.error(
            field,
            DatasetFileErrorKind::WrongType,
            format!("expected {expected}, got {}", describe(got)),
        )
    }

    /// Whether the record has no fields at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The value of `key`, left in place.
    pub(crate) fn field(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// Whether the record has `key` with a non-null value (without taking it).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.fields.get(key).is_some_and(|v| !v.is_null())
    }

    /// Removes `key`; JSON `null` counts as absent (as in the Python AIPerf's models).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.fields.remove(key).filter(|v| !v.is_null())
    }

    /// A required value.
    pub(crate) fn require(&mut self, key: &str) -> Result<Value, DatasetFileError> {
        self.take(key).ok_or_else(|| self.missing(key))
    }

    /// The error for a missing required field.
    pub(crate) fn missing(&self, key: &str) -> DatasetFileError {
        self.error(
            key,
            DatasetFileErrorKind::MissingField,
            "missing required field",
        )
    }

    /// An optional string.
    pub(crate) fn take_str(&mut self, key: &str) -> Result<Option<String>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(key, "a string", &other)),
        }
    }

    /// An optional string or integer, as text (ids such as `session_id` are either).
    pub(crate) fn take_id(&mut self, key: &str) -> Result<Option<String>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Some(n.to_string())),
            Some(other) => Err(self.wrong_type(key, "a string", &other)),
        }
    }

    /// An optional finite number of milliseconds, at least 0.
    pub(crate) fn take_ms(&mut self, key: &str) -> Result<Option<f64>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(value) => match value.as_f64() {
                Some(ms) if ms.is_finite() && (0.0..=MAX_MS).contains(&ms) => Ok(Some(ms)),
                Some(ms) if ms > MAX_MS => Err(self.error(
                    key,
                    DatasetFileErrorKind::WrongType,
                    format!(
                        "{ms} milliseconds is out of range: at most 2^53 ({MAX_MS}), about \
                         285,000 years"
                    ),
                )),
                _ => Err(self.wrong_type(key, "a number of milliseconds (>= 0)", &value)),
            },
        }
    }

    /// An optional time in seconds (>= 0, at most [`MAX_MS`] once in milliseconds),
    /// returned in milliseconds.
    pub(crate) fn take_seconds_as_ms(
        &mut self,
        key: &str,
    ) -> Result<Option<f64>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(value) => match value.as_f64() {
                Some(s) if s.is_finite() && (0.0..=MAX_MS / 1000.0).contains(&s) => {
                    Ok(Some(s * 1000.0))
                }
                _ => Err(self.wrong_type(key, "a number of seconds (>= 0, below 2^53 ms)", &value)),
            },
        }
    }

    /// An optional non-negative integer.
    pub(crate) fn take_u64(&mut self, key: &str) -> Result<Option<u64>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(value) => match value.as_u64() {
                Some(n) => Ok(Some(n)),
                None => Err(self.wrong_type(key, "a non-negative integer", &value)),
            },
        }
    }

    /// An optional non-negative integer that fits 32 bits (a token count such as
    /// mooncake's `output_length`).
    pub(crate) fn take_u32(&mut self, key: &str) -> Result<Option<u32>, DatasetFileError> {
        let Some(n) = self.take_u64(key)? else {
            return Ok(None);
        };
        u32::try_from(n).map(Some).map_err(|_| {
            self.error(
                key,
                DatasetFileErrorKind::WrongType,
                "too large (at most 4294967295)",
            )
        })
    }

    /// An optional token count that must be at least 1 (`output_length`).
    pub(crate) fn take_positive_u32(&mut self, key: &str) -> Result<Option<u32>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.wrong_type(key, "a positive integer", &value)),
            },
        }
    }

    /// An optional list of non-negative integers (`hash_ids`).
    pub(crate) fn take_u64_list(
        &mut self,
        key: &str,
    ) -> Result<Option<Vec<u64>>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<u64>>>()
                .map(Some)
                .ok_or_else(|| {
                    self.error(
                        key,
                        DatasetFileErrorKind::WrongType,
                        "expected a list of non-negative integers",
                    )
                }),
            Some(other) => Err(self.wrong_type(key, "a list of non-negative integers", &other)),
        }
    }

    /// An optional JSON object.
    pub(crate) fn take_object(
        &mut self,
        key: &str,
    ) -> Result<Option<Map<String, Value>>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => Err(self.wrong_type(key, "an object", &other)),
        }
    }

    /// An optional JSON array.
    pub(crate) fn take_array(&mut self, key: &str) -> Result<Option<Vec<Value>>, DatasetFileError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.wrong_type(key, "a list", &other)),
        }
    }

    /// Every field of the record, for formats that keep the object whole.
    pub(crate) fn into_fields(self) -> Map<String, Value> {
        self.fields
    }

    /// Rejects the keys nobody took: typos must not pass silently. `known` lists the
    /// format's keys for the message.
    pub(crate) fn finish(self, known: &[&str]) -> Result<(), DatasetFileError> {
        match self.fields.keys().next() {
            None => Ok(()),
            Some(key) => Err(self.error(
                key,
                DatasetFileErrorKind::UnknownKey,
                format!("unknown key (expected one of: {})", known.join(", ")),
            )),
        }
    }
}

/// `a string`, `a number`, … for "expected X, got Y".
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
