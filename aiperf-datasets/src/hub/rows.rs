//! [`read_rows`]: the rows of a split's files, one JSON object each.
//!
//! Parquet is read one batch of rows at a time (the reader decodes row group by row
//! group, and only the projected columns); JSON Lines line by line; a `.json` file is
//! one array of objects, parsed whole. Parquet values become JSON as their types say:
//! strings, numbers, booleans and nulls as such, lists as arrays, structs as objects and
//! binary values (image and audio bytes) as base64 text.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use base64::Engine as _;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use serde_json::{Map, Value};

use super::HubError;

/// One row.
pub type Row = Map<String, Value>;

/// Rows per Parquet batch: image and audio rows are large, so few at a time.
const BATCH_ROWS: usize = 256;

/// The rows of `files`, in order, each a JSON object. With `columns`, only those keys
/// are read (from Parquet, only those columns are decoded; a missing column is just
/// absent from the rows).
pub fn read_rows(files: &[PathBuf], columns: Option<&[&str]>) -> Rows {
    Rows {
        files: files.iter().cloned().collect(),
        columns: columns.map(|c| c.iter().map(|s| (*s).to_string()).collect()),
        current: None,
    }
}

/// The iterator [`read_rows`] returns. After an error it ends.
pub struct Rows {
    files: VecDeque<PathBuf>,
    columns: Option<Vec<String>>,
    current: Option<Source>,
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("files_left", &self.files)
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

enum Source {
    Parquet {
        path: PathBuf,
        reader: ParquetRecordBatchReader,
        pending: VecDeque<Row>,
        rows_read: usize,
    },
    Lines {
        path: PathBuf,
        lines: std::io::Lines<BufReader<File>>,
        line: usize,
    },
    Array {
        path: PathBuf,
        values: std::vec::IntoIter<Value>,
        index: usize,
    },
}

impl Iterator for Rows {
    type Item = Result<Row, HubError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let path = self.files.pop_front()?;
                match open(&path, self.columns.as_deref()) {
                    Ok(source) => self.current = Some(source),
                    Err(error) => return Some(self.fail(error)),
                }
            }
            let source = self.current.as_mut()?;
            match next_row(source) {
                Some(Ok(row)) => return Some(Ok(self.project(row))),
                Some(Err(error)) => return Some(self.fail(error)),
                None => self.current = None,
            }
        }
    }
}

impl Rows {
    /// The file and line (JSON Lines), row (Parquet, counted from 1) or element (JSON
    /// array, from 1) of the row last returned, so that what is wrong with a row's
    /// contents can be placed; `None` before the first row.
    pub fn position(&self) -> Option<(&Path, usize)> {
        match self.current.as_ref()? {
            Source::Parquet {
                path, rows_read, ..
            } => Some((path, *rows_read)),
            Source::Lines { path, line, .. } => Some((path, *line)),
            Source::Array { path, index, .. } => Some((path, *index)),
        }
    }

    /// Ends the iteration after `error`.
    fn fail(&mut self, error: HubError) -> Result<Row, HubError> {
        self.files.clear();
        self.current = None;
        Err(error)
    }

    fn project(&self, mut row: Row) -> Row {
        if let Some(columns) = &self.columns {
            row.retain(|key, _| columns.iter().any(|c| c == key));
        }
        row
    }
}

fn file_error(path: &Path, message: impl Into<String>) -> HubError {
    HubError::File {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn open(path: &Path, columns: Option<&[String]>) -> Result<Source, HubError> {
    let file = File::open(path).map_err(|source| HubError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if extension.as_deref() == Some("parquet") {
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| file_error(path, format!("not a readable Parquet file: {e}")))?;
        let builder = match columns {
            Some(columns) => {
                let roots: Vec<usize> = builder
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(_, field)| columns.iter().any(|c| c == field.name()))
                    .map(|(index, _)| index)
                    .collect();
                let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
                builder.with_projection(mask)
            }
            None => builder,
        };
        let reader = builder
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| file_error(path, format!("not a readable Parquet file: {e}")))?;
        Ok(Source::Parquet {
            path: path.to_path_buf(),
            reader,
            pending: VecDeque::new(),
            rows_read: 0,
        })
    } else if extension.as_deref() == Some("json") {
        let values: Vec<Value> = serde_json::from_reader(BufReader::new(file))
            .map_err(|e| file_error(path, format!("not a JSON array of objects: {e}")))?;
        Ok(Source::Array {
            path: path.to_path_buf(),
            values: values.into_iter(),
            index: 0,
        })
    } else {
        Ok(Source::Lines {
            path: path.to_path_buf(),
            lines: BufReader::new(file).lines(),
            line: 0,
        })
    }
}

fn next_row(source: &mut Source) -> Option<Result<Row, HubError>> {
    match source {
        Source::Parquet {
            path,
            reader,
            pending,
            rows_read,
        } => loop {
            if let Some(row) = pending.pop_front() {
                *rows_read += 1;
                return Some(Ok(row));
            }
            let batch = match reader.next()? {
                Ok(batch) => batch,
                Err(e) => {
                    return Some(Err(HubError::Row {
                        path: path.clone(),
                        line: *rows_read + 1,
                        message: format!("cannot decode the Parquet data: {e}"),
                    }))
                }
            };
            match batch_rows(&batch) {
                Ok(rows) => pending.extend(rows),
                Err(message) => {
                    return Some(Err(HubError::Row {
                        path: path.clone(),
                        line: *rows_read + 1,
                        message,
                    }))
                }
            }
        },
        Source::Lines { path, lines, line } => loop {
            *line += 1;
            let text = match lines.next()? {
                Ok(text) => text,
                Err(source) => {
                    return Some(Err(HubError::Io {
                        path: path.clone(),
                        source,
                    }))
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(row)) => Ok(row),
                Ok(_) => Err(HubError::Row {
                    path: path.clone(),
                    line: *line,
                    message: "not a JSON object".to_string(),
                }),
                Err(e) => Err(HubError::Row {
                    path: path.clone(),
                    line: *line,
                    message: format!("invalid JSON: {e}"),
                }),
            });
        },
        Source::Array {
            path,
            values,
            index,
        } => {
            let value = values.next()?;
            *index += 1;
            Some(match value {
                Value::Object(row) => Ok(row),
                _ => Err(HubError::Row {
                    path: path.clone(),
                    line: *index,
                    message: format!("element {index} of the array is not a JSON object"),
                }),
            })
        }
    }
}

/// The rows of a batch as JSON objects.
fn batch_rows(batch: &RecordBatch) -> Result<Vec<Row>, String> {
    let schema = batch.schema();
    let mut rows = vec![Map::new(); batch.num_rows()];
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        for (index, row) in rows.iter_mut().enumerate() {
            let value = json_value(column, index)
                .map_err(|message| format!("{}: {message}", field.name()))?;
            row.insert(field.name().clone(), value);
        }
    }
    Ok(rows)
}

/// The value at `index` of `array` as JSON.
fn json_value(array: &ArrayRef, index: usize) -> Result<Value, String> {
    if array.is_null(index) {
        return Ok(Value::Null);
    }
    let base64 =
        |bytes: &[u8]| Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    Ok(match array.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(array.as_boolean().value(index)),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(index).into(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(index).into(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(index).into(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(index).into(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(index).into(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(index).into(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(index).into(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(index).into(),
        DataType::Float32 => f64::from(array.as_primitive::<Float32Type>().value(index)).into(),
        DataType::Float64 => array.as_primitive::<Float64Type>().value(index).into(),
        DataType::Utf8 => array.as_string::<i32>().value(index).into(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(index).into(),
        DataType::Utf8View => array.as_string_view().value(index).into(),
        DataType::Binary => base64(array.as_binary::<i32>().value(index)),
        DataType::LargeBinary => base64(array.as_binary::<i64>().value(index)),
        DataType::BinaryView => base64(array.as_binary_view().value(index)),
        DataType::List(_) => list_value(&array.as_list::<i32>().value(index))?,
        DataType::LargeList(_) => list_value(&array.as_list::<i64>().value(index))?,
        DataType::FixedSizeList(..) => list_value(&array.as_fixed_size_list().value(index))?,
        DataType::Struct(fields) => {
            let parts = array.as_struct();
            let mut object = Map::new();
            for (field, column) in fields.iter().zip(parts.columns()) {
                object.insert(field.name().clone(), json_value(column, index)?);
            }
            Value::Object(object)
        }
        other => return Err(format!("values of type {other} cannot be read as JSON")),
    })
}

fn list_value(items: &ArrayRef) -> Result<Value, String> {
    (0..items.len())
        .map(|i| json_value(items, i))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}
