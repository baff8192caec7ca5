//! `profile_export.parquet`: the per-record export of `profile_export.jsonl` as typed
//! columns, so a run can be queried in DuckDB, polars or pandas.
//!
//! One row per profiling record. Rows collect in Arrow builders and go to disk as a row
//! group every [`ROW_GROUP_ROWS`] records (sooner when their inter-chunk latencies reach
//! [`ROW_GROUP_LIST_VALUES`]), so memory stays bounded however long the run.
//!
//! Rows come either from each record as it is processed ([`RecordWriter`]) or, after the
//! run, from the `profile_export.jsonl` the same sink wrote
//! ([`ParquetWriter::write_from_jsonl`]): the same values, without the export's cost
//! while requests are being sent (see [`MetricsSink::export_parquet_to`](crate::MetricsSink::export_parquet_to)).
//!
//! Columns, in order:
//! - metadata: `session_num` u64, `x_request_id`, `x_correlation_id`, `conversation_id`
//!   strings, `turn_index` u32, `credit_issued_ns`, `request_start_ns`, `request_ack_ns`
//!   (nullable), `request_end_ns` u64 wall-clock ns, `benchmark_phase` string;
//! - one nullable column per record metric of the catalogue that JSONL exports, named by
//!   tag and in catalogue order: Int64 for integer metrics, List<Float64> for list metrics
//!   (`inter_chunk_latency`), Float64 otherwise; each field's metadata holds its `unit`;
//! - `error_code` u16, `error_type`, `error_message` strings, null on success.
//!
//! Every run has the same schema (metrics that do not apply are null), so files of many
//! runs can be read as one table. Values match the JSONL: display units, and a
//! non-finite number is null.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    Float64Builder, Int64Builder, ListBuilder, StringBuilder, UInt16Builder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use aiperf_core::RequestRecord;

use super::RecordWriter;
use crate::catalogue::{MetricDef, MetricFlags, MetricKind, CATALOGUE};
use crate::record_metrics::{JsonMetricValue, MetricValue, RecordMetrics};
use crate::MetricsError;

/// Records per row group: each group is written as soon as it is full. Every group
/// repeats the dictionaries, page headers and statistics of some 60 columns: groups of
/// 1,024 made the file 7 % larger in a run (4 times for identical rows) for the same
/// CPU (bench/README.md, 2026-11-27).
pub const ROW_GROUP_ROWS: usize = 8192;

/// Values of list columns (`inter_chunk_latency`) per row group at most: a group closes
/// early when its rows' lists reach this many values, so long streams do not hold
/// [`ROW_GROUP_ROWS`] times their token count in memory (8 MiB of values).
pub const ROW_GROUP_LIST_VALUES: usize = 1 << 20;

/// The record metrics that get a column: those JSONL writes per record.
fn metric_defs() -> impl Iterator<Item = &'static MetricDef> {
    CATALOGUE.iter().filter(|d| {
        d.kind == MetricKind::Record && !d.flags.contains(MetricFlags::NO_INDIVIDUAL_RECORDS)
    })
}

/// The item field of list columns; builder and schema must agree on it.
fn list_item() -> FieldRef {
    Arc::new(Field::new("item", DataType::Float64, true))
}

/// The Arrow type of a metric's column.
fn metric_type(def: &MetricDef) -> DataType {
    if def.flags.contains(MetricFlags::LIST) {
        DataType::List(list_item())
    } else if def.flags.contains(MetricFlags::INTEGER) {
        DataType::Int64
    } else {
        DataType::Float64
    }
}

/// The schema of `profile_export.parquet` (see the module documentation).
pub fn records_schema() -> SchemaRef {
    let u64_field = |name: &str, nullable| Field::new(name, DataType::UInt64, nullable);
    let string = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    let mut fields = vec![
        u64_field("session_num", false),
        string("x_request_id", false),
        string("x_correlation_id", false),
        string("conversation_id", false),
        Field::new("turn_index", DataType::UInt32, false),
        u64_field("credit_issued_ns", false),
        u64_field("request_start_ns", false),
        u64_field("request_ack_ns", true),
        u64_field("request_end_ns", false),
        string("benchmark_phase", false),
    ];
    fields.extend(metric_defs().map(|def| {
        Field::new(def.tag, metric_type(def), true)
            .with_metadata(HashMap::from([("unit".to_string(), def.unit.to_string())]))
    }));
    fields.push(Field::new("error_code", DataType::UInt16, true));
    fields.push(string("error_type", true));
    fields.push(string("error_message", true));
    Arc::new(Schema::new(fields))
}

/// The builder of one metric column.
enum MetricColumn {
    Float(Float64Builder),
    Int(Int64Builder),
    List(ListBuilder<Float64Builder>),
}

impl MetricColumn {
    fn for_def(def: &MetricDef) -> Self {
        if def.flags.contains(MetricFlags::LIST) {
            Self::List(ListBuilder::new(Float64Builder::new()).with_field(list_item()))
        } else if def.flags.contains(MetricFlags::INTEGER) {
            Self::Int(Int64Builder::new())
        } else {
            Self::Float(Float64Builder::new())
        }
    }

    /// Appends `value`, or null, and says how many list values that added. An integer
    /// column takes only whole finite values (token counts always are); anything else
    /// would have to be rounded, so it is null.
    fn append(&mut self, value: Option<&MetricValue>) -> usize {
        let finite = |v: f64| v.is_finite().then_some(v);
        match (self, value) {
            (Self::Float(b), Some(MetricValue::Scalar(v))) => b.append_option(finite(*v)),
            (Self::Int(b), Some(MetricValue::Scalar(v))) => {
                let whole = v.is_finite() && v.fract() == 0.0 && v.abs() < 9e15;
                b.append_option(whole.then_some(*v as i64));
            }
            (Self::List(b), Some(MetricValue::List(vs))) => {
                for v in vs {
                    b.values().append_option(finite(*v));
                }
                b.append(true);
                return vs.len();
            }
            (Self::Float(b), _) => b.append_null(),
            (Self::Int(b), _) => b.append_null(),
            (Self::List(b), _) => b.append_null(),
        }
        0
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Float(b) => Arc::new(b.finish()),
            Self::Int(b) => Arc::new(b.finish()),
            Self::List(b) => Arc::new(b.finish()),
        }
    }
}

/// What one row holds, borrowed from a record and its metrics or from a JSONL line.
struct Row<'a> {
    session_num: u64,
    x_request_id: Cow<'a, str>,
    x_correlation_id: Cow<'a, str>,
    conversation_id: Cow<'a, str>,
    turn_index: u32,
    credit_issued_ns: u64,
    request_start_ns: u64,
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    benchmark_phase: Cow<'a, str>,
    values: Cow<'a, [(&'static MetricDef, MetricValue)]>,
    /// Only for a failed record.
    error: Option<RowError<'a>>,
}

/// The error columns of a failed record's row.
#[derive(Deserialize)]
struct RowError<'a> {
    code: Option<u16>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Cow<'a, str>,
}

impl<'a> Row<'a> {
    fn of(record: &'a RequestRecord, metrics: &'a RecordMetrics) -> Self {
        let wall = |ns: u64| record.clock.wall_of_perf(ns);
        let credit = &record.credit;
        let error = metrics.shown_error(record).map(|error| RowError {
            code: error.code,
            kind: error.kind.as_deref().map(Cow::Borrowed),
            message: Cow::Borrowed(&error.message),
        });
        Self {
            session_num: credit.id,
            x_request_id: Cow::Borrowed(&credit.request_id),
            x_correlation_id: Cow::Borrowed(&credit.correlation_id),
            conversation_id: Cow::Borrowed(&credit.conversation.session_id),
            turn_index: u32::try_from(credit.turn_index).unwrap_or(u32::MAX),
            credit_issued_ns: wall(record.credit_issued_ns),
            request_start_ns: wall(record.start_ns),
            request_ack_ns: record.head_ns.map(wall),
            request_end_ns: wall(record.end_ns),
            benchmark_phase: Cow::Borrowed(credit.phase.as_str()),
            values: Cow::Borrowed(&metrics.values),
            error,
        }
    }
}

/// The rows of the row group being filled.
struct Rows {
    session_num: UInt64Builder,
    x_request_id: StringBuilder,
    x_correlation_id: StringBuilder,
    conversation_id: StringBuilder,
    turn_index: UInt32Builder,
    credit_issued_ns: UInt64Builder,
    request_start_ns: UInt64Builder,
    request_ack_ns: UInt64Builder,
    request_end_ns: UInt64Builder,
    benchmark_phase: StringBuilder,
    metrics: Vec<(&'static MetricDef, MetricColumn)>,
    /// Where each metric's value is in the record being pushed, by catalogue index:
    /// filled once per record instead of a search of its values per column.
    value_at: Vec<Option<usize>>,
    error_code: UInt16Builder,
    error_type: StringBuilder,
    error_message: StringBuilder,
    len: usize,
    /// Values in the list columns of these rows.
    list_values: usize,
}

impl Rows {
    fn new() -> Self {
        Self {
            session_num: UInt64Builder::new(),
            x_request_id: StringBuilder::new(),
            x_correlation_id: StringBuilder::new(),
            conversation_id: StringBuilder::new(),
            turn_index: UInt32Builder::new(),
            credit_issued_ns: UInt64Builder::new(),
            request_start_ns: UInt64Builder::new(),
            request_ack_ns: UInt64Builder::new(),
            request_end_ns: UInt64Builder::new(),
            benchmark_phase: StringBuilder::new(),
            metrics: metric_defs()
                .map(|d| (d, MetricColumn::for_def(d)))
                .collect(),
            value_at: vec![None; CATALOGUE.len()],
            error_code: UInt16Builder::new(),
            error_type: StringBuilder::new(),
            error_message: StringBuilder::new(),
            len: 0,
            list_values: 0,
        }
    }

    fn push(&mut self, row: &Row<'_>) {
        self.session_num.append_value(row.session_num);
        self.x_request_id.append_value(&row.x_request_id);
        self.x_correlation_id.append_value(&row.x_correlation_id);
        self.conversation_id.append_value(&row.conversation_id);
        self.turn_index.append_value(row.turn_index);
        self.credit_issued_ns.append_value(row.credit_issued_ns);
        self.request_start_ns.append_value(row.request_start_ns);
        self.request_ack_ns.append_option(row.request_ack_ns);
        self.request_end_ns.append_value(row.request_end_ns);
        self.benchmark_phase.append_value(&row.benchmark_phase);
        self.value_at.fill(None);
        // In reverse, so that a metric computed twice shows its first value, as
        // `RecordMetrics::get` finds it.
        for (position, (def, _)) in row.values.iter().enumerate().rev() {
            self.value_at[def.id.index()] = Some(position);
        }
        for (def, column) in &mut self.metrics {
            let value = self.value_at[def.id.index()].map(|at| &row.values[at].1);
            self.list_values += column.append(value);
        }
        let error = row.error.as_ref();
        self.error_code.append_option(error.and_then(|e| e.code));
        self.error_type
            .append_option(error.and_then(|e| e.kind.as_deref()));
        self.error_message
            .append_option(error.map(|e| e.message.as_ref()));
        self.len += 1;
    }

    /// The rows so far as one batch; the builders start empty again.
    fn take_batch(&mut self, schema: &SchemaRef) -> Result<RecordBatch, ParquetError> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.session_num.finish()),
            Arc::new(self.x_request_id.finish()),
            Arc::new(self.x_correlation_id.finish()),
            Arc::new(self.conversation_id.finish()),
            Arc::new(self.turn_index.finish()),
            Arc::new(self.credit_issued_ns.finish()),
            Arc::new(self.request_start_ns.finish()),
            Arc::new(self.request_ack_ns.finish()),
            Arc::new(self.request_end_ns.finish()),
            Arc::new(self.benchmark_phase.finish()),
        ];
        columns.extend(self.metrics.iter_mut().map(|(_, c)| c.finish()));
        columns.push(Arc::new(self.error_code.finish()));
        columns.push(Arc::new(self.error_type.finish()));
        columns.push(Arc::new(self.error_message.finish()));
        self.len = 0;
        self.list_values = 0;
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

/// Writes `profile_export.parquet` one row group at a time.
pub struct ParquetWriter {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    rows: Rows,
    path: PathBuf,
}

impl std::fmt::Debug for ParquetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetWriter")
            .field("path", &self.path)
            .field("pending", &self.rows.len)
            .finish_non_exhaustive()
    }
}

/// How `profile_export.parquet` is written: Snappy, row groups of at most [`ROW_GROUP_ROWS`],
/// and no dictionary for the columns whose values seldom repeat ([`unrepeated_columns`]).
pub(crate) fn writer_properties() -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    for column in unrepeated_columns() {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(column), false);
    }
    builder.build()
}

/// The columns a value seldom repeats in: ids, stamps and measured times. A dictionary
/// of them hashes every value and is then abandoned as too large; the writer's hashing
/// (its interner) was a quarter of the Parquet export's CPU in a non-streaming run.
/// Token counts, phases and errors repeat and keep theirs.
fn unrepeated_columns() -> impl Iterator<Item = &'static str> {
    [
        "session_num",
        "x_request_id",
        "x_correlation_id",
        "credit_issued_ns",
        "request_start_ns",
        "request_ack_ns",
        "request_end_ns",
    ]
    .into_iter()
    .chain(
        metric_defs()
            .filter(|def| metric_type(def) == DataType::Float64)
            .map(|def| def.tag),
    )
}

impl ParquetWriter {
    /// Creates (or truncates) `path`, creating its directory if needed.
    pub fn create(path: &Path) -> Result<Self, MetricsError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| MetricsError::io(parent, e))?;
        }
        let file = File::create(path).map_err(|e| MetricsError::io(path, e))?;
        let schema = records_schema();
        let writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(writer_properties()))
            .map_err(|e| MetricsError::parquet(path, e))?;
        Ok(Self {
            writer,
            schema,
            rows: Rows::new(),
            path: path.to_path_buf(),
        })
    }

    /// Writes the pending rows out as one row group.
    fn flush_rows(&mut self) -> Result<(), MetricsError> {
        let batch = self
            .rows
            .take_batch(&self.schema)
            .map_err(|e| MetricsError::parquet(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| MetricsError::parquet(&self.path, e))?;
        self.writer
            .flush()
            .map_err(|e| MetricsError::parquet(&self.path, e))
    }

    /// Adds one row; a full row group goes to disk.
    fn push_row(&mut self, row: &Row<'_>) -> Result<(), MetricsError> {
        self.rows.push(row);
        if self.rows.len >= ROW_GROUP_ROWS || self.rows.list_values >= ROW_GROUP_LIST_VALUES {
            self.flush_rows()?;
        }
        Ok(())
    }

    /// Writes the last rows and the file footer.
    fn close(mut self) -> Result<(), MetricsError> {
        if self.rows.len > 0 {
            self.flush_rows()?;
        }
        self.writer
            .close()
            .map(drop)
            .map_err(|e| MetricsError::parquet(&self.path, e))
    }

    /// Writes one row per line of `jsonl`, a `profile_export.jsonl` as
    /// [`JsonlWriter`](crate::export::jsonl::JsonlWriter) writes it, then closes the file;
    /// returns the rows written. The rows are those the records would have given (values
    /// read back exactly: JSON numbers round-trip). A line that is not such a record is
    /// an error naming the file and line.
    pub fn write_from_jsonl(mut self, jsonl: &Path) -> Result<u64, MetricsError> {
        let file = File::open(jsonl).map_err(|e| MetricsError::read(jsonl, e))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let (mut number, mut rows) = (0, 0);
        loop {
            line.clear();
            if reader
                .read_until(b'\n', &mut line)
                .map_err(|e| MetricsError::read(jsonl, e))?
                == 0
            {
                break;
            }
            number += 1;
            if line.trim_ascii().is_empty() {
                continue;
            }
            let parsed: Line<'_> =
                serde_json::from_slice(&line).map_err(|e| MetricsError::BadLine {
                    path: jsonl.to_path_buf(),
                    line: number,
                    message: e.to_string(),
                })?;
            let metadata = parsed.metadata;
            self.push_row(&Row {
                session_num: metadata.session_num,
                x_request_id: metadata.x_request_id,
                x_correlation_id: metadata.x_correlation_id,
                conversation_id: metadata.conversation_id,
                turn_index: metadata.turn_index,
                credit_issued_ns: metadata.credit_issued_ns,
                request_start_ns: metadata.request_start_ns,
                request_ack_ns: metadata.request_ack_ns,
                request_end_ns: metadata.request_end_ns,
                benchmark_phase: metadata.benchmark_phase,
                values: Cow::Owned(parsed.metrics.0),
                error: parsed.error,
            })?;
            rows += 1;
        }
        self.close()?;
        Ok(rows)
    }
}

impl RecordWriter for ParquetWriter {
    /// Appends one record's row; records with neither metrics nor error are skipped, as
    /// in JSONL. A full row group goes to disk.
    fn write_record(
        &mut self,
        record: &RequestRecord,
        metrics: &RecordMetrics,
        _phase_index: u32,
    ) -> Result<(), MetricsError> {
        if metrics.valid && metrics.values.is_empty() {
            return Ok(());
        }
        self.push_row(&Row::of(record, metrics))
    }

    /// Writes the last rows and the file footer.
    fn finish(self: Box<Self>) -> Result<(), MetricsError> {
        self.close()
    }
}

/// The parts of a `profile_export.jsonl` line that make its row.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    metadata: LineMetadata<'a>,
    metrics: LineMetrics,
    #[serde(borrow, default)]
    error: Option<RowError<'a>>,
}

#[derive(Deserialize)]
struct LineMetadata<'a> {
    session_num: u64,
    #[serde(borrow)]
    x_request_id: Cow<'a, str>,
    #[serde(borrow)]
    x_correlation_id: Cow<'a, str>,
    #[serde(borrow)]
    conversation_id: Cow<'a, str>,
    turn_index: u32,
    credit_issued_ns: u64,
    request_start_ns: u64,
    #[serde(default)]
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    #[serde(borrow)]
    benchmark_phase: Cow<'a, str>,
}

/// The `metrics` object of a line: each column's metric with its value, in line order;
/// keys that are no column are skipped.
struct LineMetrics(Vec<(&'static MetricDef, MetricValue)>);

/// The metrics that have a column, by tag (hashed with foldhash: a binary search's
/// string comparisons were a sixth of reading a line).
static COLUMNS_BY_TAG: LazyLock<
    HashMap<&'static str, &'static MetricDef, foldhash::fast::RandomState>,
> = LazyLock::new(|| metric_defs().map(|def| (def.tag, def)).collect());

impl<'de> Deserialize<'de> for LineMetrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetricsVisitor;

        impl<'de> Visitor<'de> for MetricsVisitor {
            type Value = LineMetrics;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of metrics")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineMetrics, A::Error> {
                let mut values = Vec::with_capacity(map.size_hint().unwrap_or(32));
                while let Some(Tag(tag)) = map.next_key()? {
                    match COLUMNS_BY_TAG.get(tag.as_ref()) {
                        Some(def) => values.push((*def, map.next_value::<LineMetric>()?.value.0)),
                        None => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(LineMetrics(values))
            }
        }

        deserializer.deserialize_map(MetricsVisitor)
    }
}

/// A metric's tag, borrowed from the line unless JSON escaped it (`Cow<str>` itself
/// always copies).
struct Tag<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Tag<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TagVisitor;

        impl<'de> Visitor<'de> for TagVisitor {
            type Value = Tag<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a metric tag")
            }

            fn visit_borrowed_str<E>(self, tag: &'de str) -> Result<Tag<'de>, E> {
                Ok(Tag(Cow::Borrowed(tag)))
            }

            fn visit_str<E>(self, tag: &str) -> Result<Tag<'de>, E> {
                Ok(Tag(Cow::Owned(tag.to_owned())))
            }
        }

        deserializer.deserialize_str(TagVisitor)
    }
}

#[derive(Deserialize)]
struct LineMetric {
    value: JsonMetricValue,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aiperf_core::{BenchmarkConfig, Phase, PhaseStats, RunInfo};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type, UInt16Type, UInt32Type, UInt64Type};
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::catalogue::MetricsContext;
    use crate::record_metrics::testkit::{clock, failed, record, resp, Words};
    use crate::sink::MetricsSink;

    const MS: u64 = 1_000_000;

    /// A streaming sink that exports Parquet to `parquet`, and JSONL first when given.
    fn sink(parquet: &Path, jsonl: Option<&Path>) -> MetricsSink {
        let mut config = BenchmarkConfig::default();
        config.endpoint.streaming = true;
        let mut sink =
            MetricsSink::with_context(&config, MetricsContext::streaming_chat(), Arc::new(Words))
                .unwrap();
        if let Some(jsonl) = jsonl {
            sink = sink.export_records_to(jsonl).unwrap();
        }
        sink.export_parquet_to(parquet).unwrap()
    }

    /// Feeds `sink` `n` records with TTFT 10 + i ms, then chunks 5 ms apart, plus one
    /// failure.
    fn feed(sink: &mut MetricsSink, n: u64) {
        for i in 0..n {
            let start = i * 100 * MS;
            let first = start + (10 + i) * MS;
            let responses = (0..3)
                .map(|k| resp(first + k * 5 * MS, "w ", "", None))
                .collect();
            let mut r = record(start, "a b c d", responses);
            r.credit.id = i;
            sink.process(&r).unwrap();
        }
        sink.process(&failed(0, "x y", 500, "boom")).unwrap();
    }

    fn summarize(sink: MetricsSink, n: u64) {
        let run = RunInfo {
            clock: None,
            phases: vec![PhaseStats::window(Phase::Profiling, 0, n * 100 * MS)],
            was_cancelled: false,
        };
        sink.summarize(&run).unwrap();
    }

    /// Streams `n` records and a failure (see [`feed`]) through a sink into `path`.
    fn write_run(path: &Path, n: u64) {
        let mut sink = sink(path, None);
        feed(&mut sink, n);
        summarize(sink, n);
    }

    /// Every row of the file at `path`, as one batch.
    fn read_all(path: &Path) -> RecordBatch {
        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let schema = builder.schema().clone();
        let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
        arrow_select::concat::concat_batches(&schema, &batches).unwrap()
    }

    #[test]
    fn rows_written_from_the_jsonl_after_the_run_are_those_of_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let direct = dir.path().join("direct.parquet");
        let (after, jsonl) = (dir.path().join("after.parquet"), dir.path().join("r.jsonl"));
        let n = ROW_GROUP_ROWS as u64 + 2;
        let mut sinks = [sink(&direct, None), sink(&after, Some(&jsonl))];
        for sink in &mut sinks {
            feed(sink, n);
            // an id that JSON escapes, and a record without content (an invalid result)
            let mut escaped = record(0, "a", vec![resp(MS, "w ", "", None)]);
            escaped.credit.request_id = "req \"7\" \u{e9}\n".into();
            sink.process(&escaped).unwrap();
            sink.process(&record(0, "a", Vec::new())).unwrap();
        }
        // A full group went to disk as it filled; the rows after the run, nothing yet.
        assert!(std::fs::metadata(&direct).unwrap().len() > 1000);
        assert_eq!(std::fs::metadata(&after).unwrap().len(), 0);
        for sink in sinks {
            summarize(sink, n);
        }

        let (expected, got) = (read_all(&direct), read_all(&after));
        assert_eq!(got.num_rows() as u64, n + 3);
        assert_eq!(got, expected);
        let ids = got.column_by_name("x_request_id").unwrap().clone();
        assert_eq!(
            ids.as_string::<i32>().value(n as usize + 1),
            "req \"7\" \u{e9}\n"
        );
        let error_type = got.column_by_name("error_type").unwrap().clone();
        assert_eq!(
            error_type.as_string::<i32>().value(n as usize + 2),
            "InvalidInferenceResultError"
        );
    }

    #[test]
    fn a_jsonl_line_that_is_not_a_record_names_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("profile_export.jsonl");
        std::fs::write(&jsonl, "\n{\"metadata\":{}}\n").unwrap();
        let writer = ParquetWriter::create(&dir.path().join("p.parquet")).unwrap();
        let error = writer.write_from_jsonl(&jsonl).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{}:2: missing field `session_num` at line 1 column 14",
                jsonl.display()
            )
        );
    }

    #[test]
    fn only_columns_whose_values_repeat_get_a_dictionary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile_export.parquet");
        write_run(&path, 20);
        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let group = &builder.metadata().row_groups()[0];
        let dictionary = |name: &str| {
            let column = group
                .columns()
                .iter()
                .find(|c| c.column_path().string() == name)
                .unwrap_or_else(|| panic!("no column {name}"));
            column.dictionary_page_offset().is_some()
        };
        for name in [
            "session_num",
            "x_request_id",
            "request_start_ns",
            "time_to_first_token",
            "request_latency",
        ] {
            assert!(!dictionary(name), "{name} has a dictionary");
        }
        for name in [
            "benchmark_phase",
            "conversation_id",
            "input_sequence_length",
            "error_type",
        ] {
            assert!(dictionary(name), "{name} has no dictionary");
        }
    }

    /// The rows of each row group of the file `builder` reads.
    fn group_rows(builder: &ParquetRecordBatchReaderBuilder<File>) -> Vec<i64> {
        builder
            .metadata()
            .row_groups()
            .iter()
            .map(parquet::file::metadata::RowGroupMetaData::num_rows)
            .collect()
    }

    /// Long streams close a group before it has [`ROW_GROUP_ROWS`] rows: 300 records of
    /// 4,000 inter-chunk latencies reach [`ROW_GROUP_LIST_VALUES`] at the 263rd.
    #[test]
    fn a_group_closes_when_its_lists_reach_the_value_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile_export.parquet");
        let mut writer = Box::new(ParquetWriter::create(&path).unwrap());
        let metrics = RecordMetrics {
            values: vec![(
                crate::catalogue::MetricId::InterChunkLatency.def(),
                MetricValue::List(vec![5.0; 4_000]),
            )],
            valid: true,
            ..RecordMetrics::default()
        };
        let r = record(0, "a", vec![resp(MS, "w", "", None)]);
        for _ in 0..300 {
            writer.write_record(&r, &metrics, 0).unwrap();
        }
        writer.finish().unwrap();

        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        assert_eq!(group_rows(&builder), vec![263, 37]);
    }

    #[test]
    fn records_read_back_with_their_types_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile_export.parquet");
        let n = ROW_GROUP_ROWS as u64 + 6;
        write_run(&path, n);

        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        // a full row group, then the rest
        assert_eq!(group_rows(&builder), vec![ROW_GROUP_ROWS as i64, 7]);
        let schema = builder.schema().clone();
        let expected = records_schema();
        assert_eq!(schema.fields(), expected.fields());
        let ttft = schema.field_with_name("time_to_first_token").unwrap();
        assert_eq!(ttft.data_type(), &DataType::Float64);
        assert_eq!(ttft.metadata()["unit"], "ms");
        assert_eq!(
            schema
                .field_with_name("input_sequence_length")
                .unwrap()
                .data_type(),
            &DataType::Int64
        );
        assert!(matches!(
            schema
                .field_with_name("inter_chunk_latency")
                .unwrap()
                .data_type(),
            DataType::List(_)
        ));
        assert!(schema.field_with_name("credit_to_start_latency").is_err());

        // one batch across both row groups
        let mut batches: Vec<RecordBatch> = builder
            .with_batch_size(4 * ROW_GROUP_ROWS)
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        assert_eq!(batches.len(), 1);
        let batch = batches.remove(0);
        assert_eq!(batch.num_rows() as u64, n + 1);

        let col = |name: &str| batch.column_by_name(name).unwrap().clone();
        let session = col("session_num");
        let session = session.as_primitive::<UInt64Type>();
        let ttft = col("time_to_first_token");
        let ttft = ttft.as_primitive::<Float64Type>();
        let isl = col("input_sequence_length");
        let isl = isl.as_primitive::<Int64Type>();
        let start = col("request_start_ns");
        let start = start.as_primitive::<UInt64Type>();
        let ack = col("request_ack_ns");
        let ack = ack.as_primitive::<UInt64Type>();
        for i in 0..n as usize {
            assert_eq!(session.value(i), i as u64);
            assert_eq!(ttft.value(i), 10.0 + i as f64);
            assert_eq!(isl.value(i), 4);
            let start_ns = clock().wall_of_perf(i as u64 * 100 * MS);
            assert_eq!(start.value(i), start_ns);
            assert_eq!(ack.value(i), clock().wall_of_perf(i as u64 * 100 * MS + 1));
        }
        assert_eq!(col("turn_index").as_primitive::<UInt32Type>().value(0), 0);
        assert_eq!(col("x_request_id").as_string::<i32>().value(0), "req");
        assert_eq!(
            col("conversation_id").as_string::<i32>().value(0),
            "session_000000"
        );
        assert_eq!(
            col("benchmark_phase").as_string::<i32>().value(0),
            "profiling"
        );
        let icl = col("inter_chunk_latency");
        let icl = icl.as_list::<i32>().value(0);
        assert_eq!(icl.as_primitive::<Float64Type>().values(), &[5.0, 5.0]);
        assert!(col("error_code").is_null(0));
        assert!(col("error_message").is_null(0));

        // the failed record: only error_isl and the error
        let bad = n as usize;
        assert!(ttft.is_null(bad));
        assert!(isl.is_null(bad));
        assert_eq!(col("error_isl").as_primitive::<Int64Type>().value(bad), 2);
        assert_eq!(
            col("error_code").as_primitive::<UInt16Type>().value(bad),
            500
        );
        assert_eq!(
            col("error_type").as_string::<i32>().value(bad),
            "Internal Server Error"
        );
        assert_eq!(col("error_message").as_string::<i32>().value(bad), "boom");
    }
}
