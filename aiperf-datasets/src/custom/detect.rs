//! Guessing the format of `--input-file` when `--custom-dataset-type` is not given: a
//! folder holding SageMaker capture records (in its first `.jsonl` file) is a capture, one
//! whose first `.jsonl` file starts with a chat body a raw payload folder, any other folder
//! a random pool; a `.parquet`, `.arrow` or `.ipc` file is a Baseten trace, a (possibly
//! gzipped) file whose first row has TraceLab's keys a TraceLab trace, a CSV with the
//! BurstGPT columns a BurstGPT trace, a `.json` file holding
//! `{"data": [{"payloads": [...]}]}` an `inputs.json`; otherwise the keys of the first
//! non-blank line decide: `turns` whose entries have `messages`, `forks` or `spawns` make
//! a `dag_jsonl` file, other `turns` a `multi_turn` one. A chat body (`messages` with keys no mooncake line has, and no
//! `conversation_id`) is a raw payload; `messages` with only mooncake keys stays a
//! mooncake trace.

use std::io::BufRead;
use std::path::Path;

use aiperf_core::config::CustomDatasetType;
use serde_json::Value;

use super::burst_gpt::is_burst_header;
use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::inputs_json::is_session_list;
use super::mooncake;
use super::raw_payload::folder_files;
use super::sagemaker::capture_files;
use super::tracelab::is_tracelab;
use super::weka::is_weka;

/// Keys that only mooncake lines have.
const MOONCAKE_KEYS: [&str; 5] = [
    "input_length",
    "text_input",
    "hash_ids",
    "messages",
    "payload",
];
/// Keys of single-turn lines.
const SINGLE_TURN_KEYS: [&str; 8] = [
    "text", "texts", "image", "images", "audio", "audios", "video", "videos",
];

/// The format of the file or folder at `path`.
pub fn detect_dataset_type(path: &Path) -> Result<CustomDatasetType, DatasetFileError> {
    if is_weka(path) {
        return Ok(CustomDatasetType::WekaTrace);
    }
    if path.is_dir() {
        let first_capture = capture_files(path)?.into_iter().next();
        if let Some(file) = first_capture {
            if is_capture(&first_line(&file)?) {
                return Ok(CustomDatasetType::SagemakerDataCapture);
            }
        }
        return Ok(if is_raw_payload_folder(path)? {
            CustomDatasetType::RawPayload
        } else {
            CustomDatasetType::RandomPool
        });
    }
    if has_trace_extension(path) {
        return Ok(CustomDatasetType::BasetenTrace);
    }
    if is_tracelab(path) {
        return Ok(CustomDatasetType::Tracelab);
    }
    let first = first_line(path)?;
    let unknown = |why: &str| {
        let types: Vec<&str> = CustomDatasetType::ALL
            .iter()
            .map(aiperf_core::config::CustomDatasetType::as_str)
            .collect();
        DatasetFileError::file(
            path,
            DatasetFileErrorKind::UnknownFormat,
            format!(
                "cannot tell the dataset type ({why}); pass --custom-dataset-type with one \
                 of: {}",
                types.join(", ")
            ),
        )
    };
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&first) else {
        if path.extension().is_some_and(|ext| ext == "json") && is_inputs_json_file(path) {
            return Ok(CustomDatasetType::InputsJson);
        }
        if is_burst_header(&first) {
            return Ok(CustomDatasetType::BurstGptTrace);
        }
        return Err(unknown(
            "the first line is neither a JSON object nor a BurstGPT CSV header",
        ));
    };
    let has = |key: &str| fields.contains_key(key);
    let is_chat_body = fields.get("messages").is_some_and(Value::is_array)
        && !has("conversation_id")
        && fields
            .keys()
            .any(|key| !mooncake::KEYS.contains(&key.as_str()));
    if is_session_list(fields.get("data")) {
        Ok(CustomDatasetType::InputsJson)
    } else if has(CAPTURE_KEYS[0]) && has(CAPTURE_KEYS[1]) {
        Ok(CustomDatasetType::SagemakerDataCapture)
    } else if has("chat_id") && has("parent_chat_id") {
        Ok(CustomDatasetType::BailianTrace)
    } else if has("turns") && is_dag_line(&fields) {
        Ok(CustomDatasetType::DagJsonl)
    } else if has("turns") {
        Ok(CustomDatasetType::MultiTurn)
    } else if is_chat_body {
        Ok(CustomDatasetType::RawPayload)
    } else if MOONCAKE_KEYS.iter().any(|key| has(key)) {
        Ok(CustomDatasetType::MooncakeTrace)
    } else if SINGLE_TURN_KEYS.iter().any(|key| has(key)) {
        Ok(CustomDatasetType::SingleTurn)
    } else {
        Err(unknown(
            "the first line has none of the keys of a known format",
        ))
    }
}

/// Whether a line with `turns` is a `dag_jsonl` session rather than a `multi_turn` one:
/// it starts sessions before its first turn, or a turn has `messages`, `forks` or
/// `spawns`, which `multi_turn` turns never have.
fn is_dag_line(fields: &serde_json::Map<String, Value>) -> bool {
    fields.contains_key("pre_session_spawns")
        || fields
            .get("turns")
            .and_then(Value::as_array)
            .is_some_and(|turns| {
                turns.iter().any(|turn| {
                    turn.get("messages").is_some_and(Value::is_array)
                        || turn.get("forks").is_some()
                        || turn.get("spawns").is_some()
                })
            })
}

/// Whether the whole file is JSON of the `inputs.json` shape.
fn is_inputs_json_file(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| {
            let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
            serde_json::from_slice::<Value>(bytes).ok()
        })
        .is_some_and(|file| is_session_list(file.get("data")))
}

/// Whether the first `.jsonl` file of `folder` (by name) whose first line is JSON starts
/// with a chat body (an object with a `messages` list), as the Python AIPerf decides.
fn is_raw_payload_folder(folder: &Path) -> Result<bool, DatasetFileError> {
    for file in folder_files(folder)? {
        let Ok(line) = first_line(&file) else {
            continue;
        };
        if let Ok(value) = serde_json::from_str::<Value>(&line) {
            return Ok(value.get("messages").is_some_and(Value::is_array));
        }
    }
    Ok(false)
}

/// Keys every SageMaker data capture record has.
const CAPTURE_KEYS: [&str; 2] = ["captureData", "eventMetadata"];

/// Whether `line` is a SageMaker data capture record.
fn is_capture(line: &str) -> bool {
    matches!(
        serde_json::from_str::<Value>(line),
        Ok(Value::Object(fields)) if CAPTURE_KEYS.iter().all(|key| fields.contains_key(*key))
    )
}

/// Whether `path` names a Baseten trace by its extension (`.parquet`, `.arrow`, `.ipc`).
fn has_trace_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["parquet", "arrow", "ipc"].contains(&e.to_ascii_lowercase().as_str()))
}

/// The first non-blank line of the file.
fn first_line(path: &Path) -> Result<String, DatasetFileError> {
    let file = crate::text_file::open(path, 8192).map_err(|e| DatasetFileError::io(path, e))?;
    for line in file.lines() {
        let line = line.map_err(|e| DatasetFileError::io(path, e))?;
        if !line.trim().is_empty() {
            return Ok(line.trim().to_string());
        }
    }
    Err(DatasetFileError::file(
        path,
        DatasetFileErrorKind::Empty,
        "the file holds no records (it is empty or has only blank lines)",
    ))
}
