//! `sagemaker_data_capture`: the JSONL files Amazon SageMaker real-time endpoints write
//! when data capture is on (one file, or a folder searched recursively for `*.jsonl`).
//! Each record is one captured OpenAI chat request: its `messages` (and `tools`) are
//! sent verbatim as a session of its own, at its `inferenceTime` relative to the
//! earliest record, asking for the captured `max_tokens` (or `max_completion_tokens`).
//!
//! Capture records carry more fields than these (`eventVersion`, `inferenceId`,
//! `customAttributes`, the captured response): SageMaker writes them, so unknown keys are
//! ignored rather than rejected.

use std::path::{Path, PathBuf};

use aiperf_core::{ContextMode, Conversation, Turn};
use base64::Engine;
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::iso_time::unix_ms;
use super::record::{for_each_record, Record};

/// The capture files at `path`: the file itself, or every `*.jsonl` below the folder in
/// path order.
pub(crate) fn capture_files(path: &Path) -> Result<Vec<PathBuf>, DatasetFileError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| DatasetFileError::io(&folder, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| DatasetFileError::io(&folder, e))?;
            let child = entry.path();
            if child.is_dir() {
                folders.push(child);
            } else if child.extension().is_some_and(|e| e == "jsonl") {
                files.push(child);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// One request per record, sorted by inference time (file order among equals).
pub(crate) fn load(path: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    let files = capture_files(path)?;
    if files.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the folder holds no .jsonl capture files",
        ));
    }
    let mut turns: Vec<(f64, Turn)> = Vec::new();
    for file in &files {
        for_each_record(file, |record| {
            turns.push(parse_record(record)?);
            Ok(())
        })?;
    }
    let start = turns.iter().map(|(t, _)| *t).fold(f64::INFINITY, f64::min);
    turns.sort_by(|(a, _), (b, _)| a.total_cmp(b));
    Ok(turns
        .into_iter()
        .enumerate()
        .map(|(index, (timestamp, turn))| Conversation {
            session_id: crate::synthetic::session_id(index),
            turns: vec![Turn {
                timestamp_ms: Some(timestamp - start),
                ..turn
            }],
            context_mode: ContextMode::MessageArrayWithResponses,
            ..Conversation::default()
        })
        .collect())
}

/// A record's inference time (Unix ms) and the request it replays.
fn parse_record(mut record: Record<'_>) -> Result<(f64, Turn), DatasetFileError> {
    let metadata = record.require("eventMetadata")?;
    let mut metadata = record.nested("eventMetadata", metadata)?;
    let time = metadata
        .take_str("inferenceTime")?
        .ok_or_else(|| metadata.missing("inferenceTime"))?;
    let timestamp_ms = unix_ms(&time).ok_or_else(|| {
        metadata.error(
            "inferenceTime",
            DatasetFileErrorKind::WrongType,
            format!("expected an ISO 8601 time such as 2025-01-31T12:00:00.123Z, got {time:?}"),
        )
    })?;
    let capture = record.require("captureData")?;
    let mut capture = record.nested("captureData", capture)?;
    let input = capture.require("endpointInput")?;
    let mut input = capture.nested("endpointInput", input)?;
    let mut request = match decode(&mut input)? {
        Some(Value::Object(request)) if request.contains_key("messages") => request,
        _ => {
            return Err(input.error(
                "data",
                DatasetFileErrorKind::Invalid,
                "the captured request has no messages: only OpenAI-compatible chat \
                 requests can be replayed",
            ))
        }
    };
    let messages = match request.remove("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        _ => {
            return Err(input.error(
                "data.messages",
                DatasetFileErrorKind::WrongType,
                "expected a non-empty list of messages",
            ))
        }
    };
    let tools = match request.remove("tools") {
        None | Some(Value::Null) => None,
        Some(Value::Array(tools)) => Some(tools),
        Some(_) => {
            return Err(input.error(
                "data.tools",
                DatasetFileErrorKind::WrongType,
                "expected a list of tools",
            ))
        }
    };
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .into_iter()
        .find_map(|key| request.get(key).filter(|v| !v.is_null()).map(|v| (key, v)))
        .map(|(key, value)| {
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    input.error(
                        &format!("data.{key}"),
                        DatasetFileErrorKind::WrongType,
                        "expected a positive integer",
                    )
                })
        })
        .transpose()?;
    let turn = Turn {
        raw_messages: Some(messages),
        raw_tools: tools,
        max_tokens,
        ..Turn::default()
    };
    Ok((timestamp_ms, turn))
}

/// The captured payload of an `endpointInput`: `data` as JSON text (`encoding: JSON`) or
/// base64 of it (`BASE64`, SageMaker's default). `None` for other encodings (CSV).
fn decode(capture: &mut Record<'_>) -> Result<Option<Value>, DatasetFileError> {
    let data = capture
        .take_str("data")?
        .ok_or_else(|| capture.missing("data"))?;
    let encoding = capture
        .take_str("encoding")?
        .unwrap_or_else(|| "BASE64".into());
    let text = match encoding.as_str() {
        "JSON" => data.into_bytes(),
        "BASE64" => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| {
                capture.error(
                    "data",
                    DatasetFileErrorKind::Syntax,
                    format!("invalid base64: {e}"),
                )
            })?,
        _ => return Ok(None),
    };
    serde_json::from_slice(&text).map(Some).map_err(|e| {
        capture.error(
            "data",
            DatasetFileErrorKind::Syntax,
            format!("the captured payload is not JSON: {e}"),
        )
    })
}
