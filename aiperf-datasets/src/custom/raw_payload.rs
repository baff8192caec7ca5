//! `raw_payload`: complete request bodies sent verbatim. A file holds one body per line,
//! each its own single-turn conversation; a folder holds one multi-turn conversation per
//! `.jsonl` file (in file-name order), its lines the turns.

use std::path::{Path, PathBuf};

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::record::{for_each_record, Record};
use super::verbatim::{conversation, payload_turn};
use aiperf_core::{Conversation, Turn};

/// The conversations of a `raw_payload` file or folder.
pub(crate) fn load(path: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    if path.is_dir() {
        return load_folder(path);
    }
    let mut conversations = Vec::new();
    for_each_record(path, |record| {
        let id = crate::synthetic::session_id(conversations.len());
        conversations.push(conversation(id, vec![parse_line(record)?]));
        Ok(())
    })?;
    Ok(conversations)
}

/// The `.jsonl` files of a raw payload folder, in name order.
pub(crate) fn folder_files(folder: &Path) -> Result<Vec<PathBuf>, DatasetFileError> {
    let entries = std::fs::read_dir(folder).map_err(|e| DatasetFileError::io(folder, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| DatasetFileError::io(folder, e))?.path();
        if path.is_file() && path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn load_folder(folder: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    let files = folder_files(folder)?;
    if files.is_empty() {
        return Err(DatasetFileError::file(
            folder,
            DatasetFileErrorKind::Empty,
            "the folder holds no .jsonl files",
        ));
    }
    let mut conversations = Vec::with_capacity(files.len());
    for file in &files {
        let mut turns: Vec<Turn> = Vec::new();
        for_each_record(file, |record| {
            turns.push(parse_line(record)?);
            Ok(())
        })?;
        let id = crate::synthetic::session_id(conversations.len());
        conversations.push(conversation(id, turns));
    }
    Ok(conversations)
}

/// One body: a non-empty object whose `messages`, when given, is a list.
fn parse_line(record: Record<'_>) -> Result<Turn, DatasetFileError> {
    if record.is_empty() {
        return Err(record.record_error(
            DatasetFileErrorKind::Invalid,
            "an empty object is not a request body",
        ));
    }
    if let Some(messages) = record.field("messages").filter(|m| !m.is_array()) {
        return Err(record.wrong_type("messages", "a list of messages", messages));
    }
    Ok(payload_turn(record.into_fields()))
}
