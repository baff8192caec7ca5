//! `baseten_trace`: Baseten completion traces exported as Parquet (or Arrow IPC, `.arrow`
//! and `.ipc`). Each row is one recorded request whose literal `prompt` is sent verbatim
//! at its recorded start time, relative to the earliest row of the file; rows sharing a
//! session id form one session whose turns each carry their whole history.
//!
//! As in the Python AIPerf 0.13 (open-loop replay, its default), every turn asks for
//! `max(1, output_tokens)` tokens and its body also carries, unless [`BodyFields`] turns
//! them off, `min_tokens` (the same number) and the recorded KV-cache hints `hash_ids`
//! (from `total_hashes`) and `block_size`, for routers that place requests by prefix.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use aiperf_core::{ContextMode, Conversation, Turn};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, RecordBatch};
use arrow_schema::{ArrowError, DataType};
use serde_json::{Map, Value};

use super::error::{DatasetFileError, DatasetFileErrorKind};

/// The recorded request start, in Unix milliseconds.
const TIMESTAMP: &str = "timestamp_start_unix_ms";
/// The session column exported from the source; preferred over [`DERIVED_SESSION`].
const PROVIDED_SESSION: &str = "provided_session_id";
/// A session id derived by Baseten when the source had none.
const DERIVED_SESSION: &str = "poor_man_session_id";
/// Columns every trace must have.
const REQUIRED: [&str; 4] = [TIMESTAMP, "prompt", "input_tokens", "output_tokens"];

/// Which recorded fields a turn's body carries besides the prompt and `max_tokens`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyFields {
    /// `min_tokens`: the recorded output length (`--no-force-min-tokens` turns it off).
    pub(crate) min_tokens: bool,
    /// `hash_ids` and `block_size` (`--omit-kv-hints` turns them off).
    pub(crate) kv_hints: bool,
}

/// One row, validated.
#[derive(Debug)]
struct Row {
    timestamp: u64,
    prompt: String,
    output_tokens: u64,
    hashes: Vec<u64>,
    block_size: Option<u64>,
    session: Option<String>,
}

/// The sessions of a Baseten trace, ordered by their first request (ties by session
/// id), each session's turns by start time.
pub(crate) fn load(path: &Path, body: BodyFields) -> Result<Vec<Conversation>, DatasetFileError> {
    let rows = read_rows(path)?;
    let Some(start) = rows.iter().map(|r| r.timestamp).min() else {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the trace holds no rows",
        ));
    };
    let mut sessions: Vec<(String, Vec<Row>)> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut ids_made = 0;
    for row in rows {
        let id = row.session.clone().unwrap_or_else(|| {
            ids_made += 1;
            crate::synthetic::session_id(ids_made - 1)
        });
        let index = *by_id.entry(id.clone()).or_insert_with(|| {
            sessions.push((id, Vec::new()));
            sessions.len() - 1
        });
        sessions[index].1.push(row);
    }
    for (_, rows) in &mut sessions {
        rows.sort_by_key(|r| r.timestamp);
    }
    sessions.sort_by(|(a_id, a), (b_id, b)| {
        let first = |rows: &[Row]| rows.first().map_or(0, |r| r.timestamp);
        first(a).cmp(&first(b)).then_with(|| a_id.cmp(b_id))
    });
    Ok(sessions
        .into_iter()
        .map(|(session_id, rows)| Conversation {
            session_id,
            // A recorded prompt already holds the session's history.
            context_mode: if rows.len() > 1 {
                ContextMode::MessageArrayWithResponses
            } else {
                ContextMode::default()
            },
            turns: rows.into_iter().map(|row| turn(row, start, body)).collect(),
            ..Conversation::default()
        })
        .collect())
}

/// The request a row replays, `start` being the earliest recorded start of the file, with
/// the `body` fields asked for.
fn turn(row: Row, start: u64, body: BodyFields) -> Turn {
    // Canceled requests are recorded with 0 output tokens; a request asks for at least 1.
    let output = row.output_tokens.max(1);
    let mut extra = Map::new();
    if body.min_tokens {
        extra.insert("min_tokens".into(), Value::from(output));
    }
    if body.kv_hints && !row.hashes.is_empty() {
        extra.insert("hash_ids".into(), Value::from(row.hashes));
    }
    if let (true, Some(block_size)) = (body.kv_hints, row.block_size) {
        extra.insert("block_size".into(), Value::from(block_size));
    }
    Turn {
        texts: vec![row.prompt],
        max_tokens: Some(u32::try_from(output).unwrap_or(u32::MAX)),
        timestamp_ms: Some((row.timestamp - start) as f64),
        extra: (!extra.is_empty()).then_some(extra),
        ..Turn::default()
    }
}

/// Every row of the file, numbered from 1 in errors.
fn read_rows(path: &Path) -> Result<Vec<Row>, DatasetFileError> {
    let batches = open_batches(path)?;
    let mut rows = Vec::new();
    for batch in batches {
        let batch = batch.map_err(|e| arrow_error(path, &e))?;
        let columns = Columns::of(path, &batch)?;
        for index in 0..batch.num_rows() {
            let row_no = rows.len() + 1;
            rows.push(columns.row(index).map_err(|e| e.at_line(row_no))?);
        }
    }
    Ok(rows)
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>>>;

/// The record batches of a Parquet or (by extension) Arrow IPC file.
fn open_batches(path: &Path) -> Result<Batches, DatasetFileError> {
    let file = File::open(path).map_err(|e| DatasetFileError::io(path, e))?;
    let is_ipc = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "arrow" | "ipc"));
    if is_ipc {
        let reader = arrow_ipc::reader::FileReader::try_new(file, None)
            .map_err(|e| arrow_error(path, &e))?;
        return Ok(Box::new(reader));
    }
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::build)
        .map_err(|e| {
            DatasetFileError::file(
                path,
                DatasetFileErrorKind::Syntax,
                format!("not a readable Parquet file: {e}"),
            )
        })?;
    Ok(Box::new(reader))
}

fn arrow_error(path: &Path, error: &ArrowError) -> DatasetFileError {
    DatasetFileError::file(
        path,
        DatasetFileErrorKind::Syntax,
        format!("not a readable Arrow file: {error}"),
    )
}

/// The columns of one batch, as plain values.
struct Columns {
    path: std::path::PathBuf,
    timestamps: Vec<Option<i128>>,
    prompts: Vec<Option<String>>,
    input_tokens: Vec<Option<i128>>,
    output_tokens: Vec<Option<i128>>,
    hashes: Option<Vec<Option<Vec<Option<i128>>>>>,
    block_sizes: Option<Vec<Option<i128>>>,
    sessions: Option<Vec<Option<String>>>,
}

impl Columns {
    fn of(path: &Path, batch: &RecordBatch) -> Result<Self, DatasetFileError> {
        let column = |name: &str| batch.column_by_name(name);
        let required = |name: &str| {
            column(name).ok_or_else(|| {
                DatasetFileError::file(
                    path,
                    DatasetFileErrorKind::MissingField,
                    format!(
                        "missing required column (a Baseten trace has {})",
                        REQUIRED.join(", ")
                    ),
                )
                .in_field(name)
            })
        };
        let wrong = |name: &str, expected: &str, got: &DataType| {
            DatasetFileError::file(
                path,
                DatasetFileErrorKind::WrongType,
                format!("expected a column of {expected}, got {got}"),
            )
            .in_field(name)
        };
        let ints = |name: &str, array: &dyn Array| {
            integers(array).ok_or_else(|| wrong(name, "integers", array.data_type()))
        };
        let optional_ints = |name: &str| column(name).map(|a| ints(name, a)).transpose();

        let prompt = required("prompt")?;
        let session_column = [PROVIDED_SESSION, DERIVED_SESSION]
            .into_iter()
            .find_map(|name| column(name).map(|a| (name, a)));
        Ok(Self {
            path: path.to_path_buf(),
            timestamps: ints(TIMESTAMP, required(TIMESTAMP)?)?,
            prompts: strings(prompt)
                .ok_or_else(|| wrong("prompt", "strings", prompt.data_type()))?,
            input_tokens: ints("input_tokens", required("input_tokens")?)?,
            output_tokens: ints("output_tokens", required("output_tokens")?)?,
            hashes: column("total_hashes")
                .map(|a| {
                    lists(a).ok_or_else(|| wrong("total_hashes", "integer lists", a.data_type()))
                })
                .transpose()?,
            block_sizes: optional_ints("block_size")?,
            sessions: session_column
                .map(|(name, a)| {
                    strings(a)
                        .or_else(|| {
                            integers(a)
                                .map(|v| v.into_iter().map(|n| n.map(|n| n.to_string())).collect())
                        })
                        .ok_or_else(|| wrong(name, "strings or integers", a.data_type()))
                })
                .transpose()?,
        })
    }

    /// Row `index` of the batch; errors name the column but not yet the row.
    fn row(&self, index: usize) -> Result<Row, DatasetFileError> {
        let error = |name: &str, message: String| {
            DatasetFileError::file(&self.path, DatasetFileErrorKind::WrongType, message)
                .in_field(name)
        };
        let count = |name: &str, value: Option<i128>| match value {
            None => Err(DatasetFileError::file(
                &self.path,
                DatasetFileErrorKind::MissingField,
                "missing required value (null)",
            )
            .in_field(name)),
            Some(n) => u64::try_from(n)
                .map_err(|_| error(name, format!("expected a non-negative integer, got {n}"))),
        };
        let timestamp = count(TIMESTAMP, self.timestamps[index])?;
        let prompt = self.prompts[index].clone().ok_or_else(|| {
            DatasetFileError::file(
                &self.path,
                DatasetFileErrorKind::MissingField,
                "missing required value (null)",
            )
            .in_field("prompt")
        })?;
        count("input_tokens", self.input_tokens[index])?;
        let output_tokens = count("output_tokens", self.output_tokens[index])?;
        let hashes = match self.hashes.as_ref().and_then(|h| h[index].as_ref()) {
            None => Vec::new(),
            Some(items) => items
                .iter()
                .map(|item| count("total_hashes", *item))
                .collect::<Result<_, _>>()?,
        };
        let block_size = match self.block_sizes.as_ref().and_then(|b| b[index]) {
            None => None,
            Some(n) if n > 0 => Some(count("block_size", Some(n))?),
            Some(n) => {
                return Err(error(
                    "block_size",
                    format!("expected a positive integer, got {n}"),
                ))
            }
        };
        Ok(Row {
            timestamp,
            prompt,
            output_tokens,
            hashes,
            block_size,
            session: self.sessions.as_ref().and_then(|s| s[index].clone()),
        })
    }
}

/// The values of an integer column of any width; `None` for a column of another type.
fn integers(array: &dyn Array) -> Option<Vec<Option<i128>>> {
    fn widen<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>) -> Vec<Option<i128>>
    where
        T::Native: Into<i128>,
    {
        array.iter().map(|v| v.map(Into::into)).collect()
    }
    Some(match array.data_type() {
        DataType::Int8 => widen(array.as_primitive::<Int8Type>()),
        DataType::Int16 => widen(array.as_primitive::<Int16Type>()),
        DataType::Int32 => widen(array.as_primitive::<Int32Type>()),
        DataType::Int64 => widen(array.as_primitive::<Int64Type>()),
        DataType::UInt8 => widen(array.as_primitive::<UInt8Type>()),
        DataType::UInt16 => widen(array.as_primitive::<UInt16Type>()),
        DataType::UInt32 => widen(array.as_primitive::<UInt32Type>()),
        DataType::UInt64 => widen(array.as_primitive::<UInt64Type>()),
        _ => return None,
    })
}

/// The values of a string column; `None` for a column of another type.
fn strings(array: &dyn Array) -> Option<Vec<Option<String>>> {
    let owned = |v: Option<&str>| v.map(str::to_owned);
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().iter().map(owned).collect()),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().iter().map(owned).collect()),
        DataType::Utf8View => Some(array.as_string_view().iter().map(owned).collect()),
        _ => None,
    }
}

/// The values of a column of integer lists; `None` for a column of another type.
fn lists(array: &dyn Array) -> Option<Vec<Option<Vec<Option<i128>>>>> {
    let items = |list: Option<std::sync::Arc<dyn Array>>| match list {
        None => Some(None),
        Some(values) => integers(values.as_ref()).map(Some),
    };
    match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().iter().map(items).collect(),
        DataType::LargeList(_) => array.as_list::<i64>().iter().map(items).collect(),
        _ => None,
    }
}
