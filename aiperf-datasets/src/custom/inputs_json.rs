//! `inputs_json`: the `inputs.json` an earlier run wrote (`{"data": [{"session_id",
//! "payloads": [body, …]}, …]}`, ours or the Python AIPerf's), each session a conversation
//! whose turns send its bodies again, verbatim.

use std::collections::HashMap;
use std::path::Path;

use aiperf_core::Conversation;
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::record::describe;
use super::verbatim::{conversation, payload_turn};

/// The conversations of an `inputs.json` file, in file order.
pub(crate) fn load(path: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    let text = std::fs::read(path).map_err(|e| DatasetFileError::io(path, e))?;
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
    if text.trim_ascii().is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the file holds no records (it is empty or has only blank lines)",
        ));
    }
    let file: Value = serde_json::from_slice(text).map_err(|e| {
        DatasetFileError::file(
            path,
            DatasetFileErrorKind::Syntax,
            format!("invalid JSON at column {}: {e}", e.column()),
        )
        .at_line(e.line())
    })?;
    let error = |field: &str, kind, message: String| {
        DatasetFileError::file(path, kind, message).in_field(field)
    };
    let wrong_type = |field: &str, expected: &str, got: &Value| {
        error(
            field,
            DatasetFileErrorKind::WrongType,
            format!("expected {expected}, got {}", describe(got)),
        )
    };
    let sessions = match file.get("data") {
        Some(Value::Array(sessions)) => sessions,
        Some(other) => return Err(wrong_type("data", "a list of sessions", other)),
        None if file.is_object() => {
            return Err(error(
                "data",
                DatasetFileErrorKind::MissingField,
                "missing required field".into(),
            ))
        }
        None => {
            return Err(DatasetFileError::file(
                path,
                DatasetFileErrorKind::Syntax,
                format!("expected a JSON object, got {}", describe(&file)),
            ))
        }
    };
    if sessions.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the file holds no sessions (data is empty)",
        ));
    }
    let mut first_index: HashMap<&str, usize> = HashMap::new();
    let mut conversations = Vec::with_capacity(sessions.len());
    for (index, session) in sessions.iter().enumerate() {
        let at = format!("data[{index}]");
        let Value::Object(session) = session else {
            return Err(wrong_type(&at, "a session object", session));
        };
        let field = |key: &str| {
            session.get(key).filter(|v| !v.is_null()).ok_or_else(|| {
                error(
                    &format!("{at}.{key}"),
                    DatasetFileErrorKind::MissingField,
                    "missing required field".into(),
                )
            })
        };
        let session_id = match field("session_id")? {
            Value::String(id) => id.as_str(),
            other => return Err(wrong_type(&format!("{at}.session_id"), "a string", other)),
        };
        if let Some(first) = first_index.insert(session_id, index) {
            return Err(error(
                &format!("{at}.session_id"),
                DatasetFileErrorKind::Invalid,
                format!("duplicate session id {session_id:?} (first in data[{first}])"),
            ));
        }
        let payloads = match field("payloads")? {
            Value::Array(payloads) if !payloads.is_empty() => payloads,
            Value::Array(_) => {
                return Err(error(
                    &format!("{at}.payloads"),
                    DatasetFileErrorKind::Invalid,
                    "must be a non-empty list of request bodies".into(),
                ))
            }
            other => {
                return Err(wrong_type(
                    &format!("{at}.payloads"),
                    "a list of request bodies",
                    other,
                ))
            }
        };
        let mut turns = Vec::with_capacity(payloads.len());
        for (turn, payload) in payloads.iter().enumerate() {
            let field = format!("{at}.payloads[{turn}]");
            match payload {
                Value::Object(body) if body.is_empty() => {
                    return Err(error(
                        &field,
                        DatasetFileErrorKind::Invalid,
                        "an empty object is not a request body".into(),
                    ))
                }
                Value::Object(body) => turns.push(payload_turn(body.clone())),
                other => return Err(wrong_type(&field, "a request body object", other)),
            }
        }
        conversations.push(conversation(session_id.to_owned(), turns));
    }
    Ok(conversations)
}

/// Whether `data`, the `data` field of a JSON document, has the `inputs.json` shape: a
/// list whose first session has a `payloads` list.
pub(crate) fn is_session_list(data: Option<&Value>) -> bool {
    data.and_then(Value::as_array)
        .and_then(|sessions| sessions.first())
        .and_then(|session| session.get("payloads"))
        .is_some_and(Value::is_array)
}
