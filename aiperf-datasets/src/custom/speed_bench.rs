//! `speed_bench_*`: NVIDIA's SPEED-Bench rows, `{"question_id", "category",
//! "messages": [{"role", "content"}…]}`, each row one conversation.
//!
//! A leading `system` message becomes the conversation's system message; every other
//! message is a turn (a `user` message a plain user turn), sent in order with the
//! server's replies as history. A variant that names a category keeps only that
//! category's rows. The rows come from `--input-file` (a JSONL file, or a folder holding
//! `<config>.jsonl`) or from the Hugging Face hub ([`load_from_hub`]).
//!
//! The hub copy of SPEED-Bench ships some rows with a placeholder instead of the prompt
//! (NVIDIA's `specdec_bench` fills them in); such a row is an error that says so rather
//! than a request that benchmarks the placeholder.

use std::path::{Path, PathBuf};

use aiperf_core::config::SpeedBenchVariant;
use aiperf_core::{Conversation, Turn};
use serde_json::{Map, Value};

use super::error::{DatasetFileError, DatasetFileErrorKind};

/// The text the hub copy holds where a prompt must be fetched from its source.
const PLACEHOLDER: &str =
    "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH";

/// The conversations of `variant` in the local copy at `path`: a JSONL file, or a
/// folder holding `<config>.jsonl` (`qualitative.jsonl`, `throughput_1k.jsonl`, …).
pub(crate) fn load(
    path: &Path,
    variant: SpeedBenchVariant,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let file = if path.is_dir() {
        local_file(path, variant)?
    } else {
        path.to_path_buf()
    };
    let reader =
        crate::text_file::open(&file, 1 << 16).map_err(|e| DatasetFileError::io(&file, e))?;
    let mut rows = Vec::new();
    for (index, line) in std::io::BufRead::lines(reader).enumerate() {
        let line_no = index + 1;
        let text = line.map_err(|e| DatasetFileError::io(&file, e).at_line(line_no))?;
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() {
            continue;
        }
        let row = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(row)) => row,
            Ok(_) => {
                return Err(row_error(
                    &file,
                    line_no,
                    None,
                    "a row must be a JSON object",
                ))
            }
            Err(e) => {
                return Err(row_error(
                    &file,
                    line_no,
                    None,
                    format!("not valid JSON: {e}"),
                ))
            }
        };
        rows.push((line_no, row));
    }
    conversations(&file, rows, variant)
}

/// `<config>.jsonl` in `folder`.
fn local_file(folder: &Path, variant: SpeedBenchVariant) -> Result<PathBuf, DatasetFileError> {
    let file = folder.join(format!("{}.jsonl", variant.config));
    if file.is_file() {
        Ok(file)
    } else {
        Err(DatasetFileError::file(
            folder,
            DatasetFileErrorKind::Io,
            format!(
                "{} reads {}.jsonl, which this folder does not hold",
                variant.name, variant.config
            ),
        ))
    }
}

/// The conversations of `variant` among `rows` (each with its line, or Parquet row,
/// number in `file`), in row order.
pub(crate) fn conversations(
    file: &Path,
    rows: impl IntoIterator<Item = (usize, Map<String, Value>)>,
    variant: SpeedBenchVariant,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut conversations = Vec::new();
    let mut any_row = false;
    for (line, row) in rows {
        any_row = true;
        if let Some(conversation) = conversation(file, line, &row, variant)? {
            conversations.push(conversation);
        }
    }
    if !any_row {
        return Err(DatasetFileError::file(
            file,
            DatasetFileErrorKind::Empty,
            "the file holds no rows",
        ));
    }
    if conversations.is_empty() {
        let category = variant.category.unwrap_or_default();
        return Err(DatasetFileError::file(
            file,
            DatasetFileErrorKind::Empty,
            format!(
                "no row has category {category:?} ({} keeps only those); is this the {} split?",
                variant.name, variant.config
            ),
        ));
    }
    Ok(conversations)
}

/// One row as a conversation; `None` when the variant's category filter drops it.
fn conversation(
    file: &Path,
    line: usize,
    row: &Map<String, Value>,
    variant: SpeedBenchVariant,
) -> Result<Option<Conversation>, DatasetFileError> {
    let text_field = |field: &str| -> Result<String, DatasetFileError> {
        match row.get(field) {
            Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
            Some(Value::String(_)) => Err(row_error(file, line, Some(field), "must not be empty")),
            Some(_) => Err(row_error(file, line, Some(field), "must be a string")),
            None => Err(row_error(file, line, Some(field), "is required")),
        }
    };
    let category = text_field("category")?;
    if variant.category.is_some_and(|wanted| wanted != category) {
        return Ok(None);
    }
    let session_id = text_field("question_id")?;
    let messages = match row.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => {
            return Err(row_error(
                file,
                line,
                Some("messages"),
                "must hold at least one message",
            ))
        }
        Some(_) => return Err(row_error(file, line, Some("messages"), "must be an array")),
        None => return Err(row_error(file, line, Some("messages"), "is required")),
    };
    let mut conversation = Conversation {
        session_id,
        ..Conversation::default()
    };
    for (index, message) in messages.iter().enumerate() {
        let field = format!("messages[{index}]");
        let (role, content) = message_parts(message).ok_or_else(|| {
            row_error(
                file,
                line,
                Some(&field),
                "must be an object with a non-empty string `role` and `content`",
            )
        })?;
        if content == PLACEHOLDER {
            return Err(row_error(
                file,
                line,
                Some(&format!("{field}.content")),
                "is the placeholder of the Hugging Face copy, not a prompt: build the full \
                 rows with NVIDIA's specdec_bench and pass them with --input-file",
            ));
        }
        if index == 0 && role == "system" {
            conversation.system_message = Some(content.to_owned());
            continue;
        }
        conversation.turns.push(Turn {
            role: (role != "user").then(|| role.to_owned()),
            ..Turn::text(content)
        });
    }
    if conversation.turns.is_empty() {
        return Err(row_error(
            file,
            line,
            Some("messages"),
            "holds only a system message; a row needs a message to send",
        ));
    }
    Ok(Some(conversation))
}

/// A message's role and content, when both are non-empty strings.
fn message_parts(message: &Value) -> Option<(&str, &str)> {
    let role = message.get("role")?.as_str()?;
    let content = message.get("content")?.as_str()?;
    (!role.trim().is_empty() && !content.trim().is_empty()).then_some((role, content))
}

fn row_error(
    file: &Path,
    line: usize,
    field: Option<&str>,
    message: impl Into<String>,
) -> DatasetFileError {
    let error = DatasetFileError::file(file, DatasetFileErrorKind::Invalid, message).at_line(line);
    match field {
        Some(field) => error.in_field(field),
        None => error,
    }
}

/// The conversations of `variant` from the Hugging Face hub (`nvidia/SPEED-Bench`, the
/// variant's config, split `test`): the local hub cache, else a download into it
/// (`HF_HUB_OFFLINE` never downloads). Errors in a row name its file and row.
#[cfg(feature = "hub")]
pub async fn load_from_hub(
    variant: SpeedBenchVariant,
    options: &crate::hub::HubOptions,
    transport: &dyn aiperf_core::Transport,
) -> Result<Vec<Conversation>, SpeedBenchHubError> {
    use aiperf_core::config::{SPEED_BENCH_HUB_ID, SPEED_BENCH_HUB_SPLIT};

    let dataset = crate::hub::HubDataset {
        id: SPEED_BENCH_HUB_ID.to_owned(),
        config: Some(variant.config.to_owned()),
        split: SPEED_BENCH_HUB_SPLIT.to_owned(),
        revision: None,
    };
    let files = crate::hub::resolve(&dataset, options, transport).await?;
    let mut conversations = Vec::new();
    let mut errors = Vec::new();
    for file in &files {
        let mut rows = Vec::new();
        for (index, row) in crate::hub::read_rows(std::slice::from_ref(file), None).enumerate() {
            rows.push((index + 1, row?));
        }
        match self::conversations(file, rows, variant) {
            Ok(found) => conversations.extend(found),
            // A category can live in some of the split's files only.
            Err(error) if error.kind == DatasetFileErrorKind::Empty => errors.push(error),
            Err(error) => return Err(error.into()),
        }
    }
    match errors.into_iter().next() {
        Some(error) if conversations.is_empty() => Err(error.into()),
        _ => Ok(conversations),
    }
}

/// Why the SPEED-Bench rows could not be read from the hub.
#[cfg(feature = "hub")]
#[derive(Debug, thiserror::Error)]
pub enum SpeedBenchHubError {
    /// The split's files could not be found, downloaded or read.
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    /// A row is not a SPEED-Bench row.
    #[error(transparent)]
    Row(#[from] DatasetFileError),
}
