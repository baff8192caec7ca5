//! Merging the per-record files of several processes that ran one benchmark together
//! (the shards of `aiperf merge`) into the files one process would have written.
//!
//! Records are interleaved in the order of their end time, the order one process writes
//! them in, each file's own order kept; ties go to the earlier input. `session_num`, a
//! per-process credit counter, is renumbered across all inputs in the order credits were
//! issued ([`SessionNumbers`]), so that it is unique again and counts as one process would.
//!
//! ```
//! use aiperf_metrics::merge::SessionNumbers;
//!
//! // Input 0 issued its credits 0 and 1 at 10 and 30 ns; input 1 its credit 0 at 20 ns.
//! let numbers = SessionNumbers::by_issue_time(vec![(10, 0, 0), (30, 0, 1), (20, 1, 0)]);
//! assert_eq!(numbers.get(0, 1), Some(2));
//! assert_eq!(numbers.get(1, 0), Some(1));
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::digest::RecordDigest;
use crate::{MetricsError, MetricsSink};

/// New `session_num`s for the records of several inputs.
#[derive(Debug, Clone, Default)]
pub struct SessionNumbers {
    by_input: Vec<HashMap<u64, u64>>,
}

impl SessionNumbers {
    /// Numbers `(credit_issued_ns, input, session_num)` triples 0, 1, 2, … in the order
    /// of their issue time (then input, then old number).
    pub fn by_issue_time(mut credits: Vec<(u64, usize, u64)>) -> Self {
        credits.sort_unstable();
        let inputs = credits.iter().map(|c| c.1 + 1).max().unwrap_or(0);
        let mut by_input = vec![HashMap::new(); inputs];
        for (new, (_, input, old)) in credits.into_iter().enumerate() {
            by_input[input].insert(old, new as u64);
        }
        Self { by_input }
    }

    /// The new number of `input`'s record numbered `old`.
    pub fn get(&self, input: usize, old: u64) -> Option<u64> {
        self.by_input.get(input)?.get(&old).copied()
    }

    fn renumber(
        &self,
        input: usize,
        old: u64,
        path: &Path,
        line: usize,
    ) -> Result<u64, MetricsError> {
        self.get(input, old).ok_or_else(|| MetricsError::BadLine {
            path: path.to_path_buf(),
            line,
            message: format!("session_num {old} is not among the record digests of its run"),
        })
    }
}

/// The picking order of a k-way merge: the input whose next record ends first.
struct Heads(BinaryHeap<Reverse<(u64, usize)>>);

impl Heads {
    fn new() -> Self {
        Self(BinaryHeap::new())
    }

    fn push(&mut self, end_ns: u64, input: usize) {
        self.0.push(Reverse((end_ns, input)));
    }

    fn pop(&mut self) -> Option<usize> {
        self.0.pop().map(|Reverse((_, input))| input)
    }
}

/// One input JSON Lines file being read: its next line and what that line says.
struct LineInput<T> {
    path: PathBuf,
    lines: std::io::Lines<BufReader<File>>,
    line_no: usize,
    next: Option<(String, T)>,
}

impl<T: serde::de::DeserializeOwned> LineInput<T> {
    fn open(path: &Path) -> Result<Self, MetricsError> {
        let file = File::open(path).map_err(|e| MetricsError::read(path, e))?;
        let mut input = Self {
            path: path.to_path_buf(),
            lines: BufReader::new(file).lines(),
            line_no: 0,
            next: None,
        };
        input.advance()?;
        Ok(input)
    }

    /// Reads the next non-blank line into `next` (`None` at the end of the file).
    fn advance(&mut self) -> Result<(), MetricsError> {
        self.next = None;
        for line in self.lines.by_ref() {
            self.line_no += 1;
            let line = line.map_err(|e| MetricsError::read(&self.path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str(&line).map_err(|e| MetricsError::BadLine {
                path: self.path.clone(),
                line: self.line_no,
                message: e.to_string(),
            })?;
            self.next = Some((line, parsed));
            break;
        }
        Ok(())
    }
}

/// Feeds the record digests of `inputs` (`profile_export_digest.jsonl` files) into
/// `sink`, made by [`MetricsSink::for_digests`], in end-time order; returns
/// how many it fed and the numbering of their records for the merged record files.
pub fn absorb_digests(
    inputs: &[PathBuf],
    sink: &mut MetricsSink,
) -> Result<(u64, SessionNumbers), MetricsError> {
    let mut readers = inputs
        .iter()
        .map(|p| LineInput::<RecordDigest>::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut heads = Heads::new();
    for (i, reader) in readers.iter().enumerate() {
        if let Some((_, digest)) = &reader.next {
            heads.push(digest.end_ns, i);
        }
    }
    let mut credits = Vec::new();
    while let Some(i) = heads.pop() {
        let reader = &mut readers[i];
        let Some((_, digest)) = reader.next.take() else {
            continue;
        };
        sink.absorb_digest(&digest);
        credits.push((digest.credit_issued_ns, i, digest.session_num));
        reader.advance()?;
        if let Some((_, digest)) = &reader.next {
            heads.push(digest.end_ns, i);
        }
    }
    Ok((credits.len() as u64, SessionNumbers::by_issue_time(credits)))
}

/// What the merge reads of a line: its `session_num` and end time, and how to write the
/// line with another `session_num`.
trait MergedLine: serde::de::DeserializeOwned {
    fn session_num(&self) -> u64;
    fn end_ns(&self) -> u64;
    fn renumbered(line: &str, old: u64, new: u64) -> Result<String, MetricsError>;
}

/// A `profile_export.jsonl` line.
#[derive(Deserialize)]
struct RecordLine {
    metadata: LineMetadata,
}

#[derive(Deserialize)]
struct LineMetadata {
    session_num: u64,
    request_end_ns: u64,
}

impl MergedLine for RecordLine {
    fn session_num(&self) -> u64 {
        self.metadata.session_num
    }

    fn end_ns(&self) -> u64 {
        self.metadata.request_end_ns
    }

    /// Lines this crate writes start with `{"metadata":{"session_num":…`, so the number
    /// is replaced in place; any other line is re-serialised.
    fn renumbered(line: &str, old: u64, new: u64) -> Result<String, MetricsError> {
        let prefix = format!("{{\"metadata\":{{\"session_num\":{old},");
        if let Some(rest) = line.strip_prefix(&prefix) {
            return Ok(format!("{{\"metadata\":{{\"session_num\":{new},{rest}"));
        }
        let mut value: serde_json::Value = serde_json::from_str(line)?;
        value["metadata"]["session_num"] = new.into();
        Ok(serde_json::to_string(&value)?)
    }
}

/// An `accuracy_export.jsonl` line.
#[derive(Deserialize)]
struct GradeLine {
    session_num: u64,
    timestamp_ns: u64,
}

impl MergedLine for GradeLine {
    fn session_num(&self) -> u64 {
        self.session_num
    }

    fn end_ns(&self) -> u64 {
        self.timestamp_ns
    }

    /// Lines this crate writes start with `{"session_num":…`.
    fn renumbered(line: &str, old: u64, new: u64) -> Result<String, MetricsError> {
        let prefix = format!("{{\"session_num\":{old},");
        if let Some(rest) = line.strip_prefix(&prefix) {
            return Ok(format!("{{\"session_num\":{new},{rest}"));
        }
        let mut value: serde_json::Value = serde_json::from_str(line)?;
        value["session_num"] = new.into();
        Ok(serde_json::to_string(&value)?)
    }
}

/// Merges the `profile_export.jsonl` files `inputs` into `output` (see the module
/// documentation) and returns how many lines it wrote.
pub fn merge_jsonl(
    inputs: &[PathBuf],
    numbers: &SessionNumbers,
    output: &Path,
) -> Result<u64, MetricsError> {
    merge_lines::<RecordLine>(inputs, numbers, output)
}

/// Merges the `accuracy_export.jsonl` files `inputs` (a line per graded reply, stamped
/// with the reply's end) into `output` as [`merge_jsonl`] merges records, and returns how
/// many lines it wrote.
pub fn merge_grades_jsonl(
    inputs: &[PathBuf],
    numbers: &SessionNumbers,
    output: &Path,
) -> Result<u64, MetricsError> {
    merge_lines::<GradeLine>(inputs, numbers, output)
}

fn merge_lines<L: MergedLine>(
    inputs: &[PathBuf],
    numbers: &SessionNumbers,
    output: &Path,
) -> Result<u64, MetricsError> {
    let mut readers = inputs
        .iter()
        .map(|p| LineInput::<L>::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let file = File::create(output).map_err(|e| MetricsError::io(output, e))?;
    let mut out = BufWriter::new(file);
    let mut heads = Heads::new();
    for (i, reader) in readers.iter().enumerate() {
        if let Some((_, head)) = &reader.next {
            heads.push(head.end_ns(), i);
        }
    }
    let mut written = 0;
    while let Some(i) = heads.pop() {
        let reader = &mut readers[i];
        let Some((line, head)) = reader.next.take() else {
            continue;
        };
        let old = head.session_num();
        let new = numbers.renumber(i, old, &reader.path, reader.line_no)?;
        let line = L::renumbered(&line, old, new)?;
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| MetricsError::io(output, e))?;
        written += 1;
        reader.advance()?;
        if let Some((_, head)) = &reader.next {
            heads.push(head.end_ns(), i);
        }
    }
    out.flush().map_err(|e| MetricsError::io(output, e))?;
    Ok(written)
}

#[cfg(feature = "parquet")]
pub use parquet_merge::merge_parquet;

#[cfg(feature = "parquet")]
mod parquet_merge {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
    use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ArrowWriter;

    use super::{File, Heads, MetricsError, Path, PathBuf, SessionNumbers};
    use crate::export::parquet::writer_properties;

    /// Rows per batch read and per row group written. The merge holds about this many
    /// rows of every input at once, inter-chunk latency lists included, so its groups are
    /// smaller than a run's ([`ROW_GROUP_ROWS`](crate::export::parquet::ROW_GROUP_ROWS)).
    const MERGE_GROUP_ROWS: usize = 1024;

    /// One input Parquet file being read, batch by batch.
    struct ParquetInput {
        path: PathBuf,
        batches: ParquetRecordBatchReader,
        /// The current batch's place in the merge's arena, and the next row in it.
        slot: usize,
        row: usize,
        rows: usize,
        /// Rows taken so far.
        taken: usize,
    }

    fn column<'a>(
        batch: &'a RecordBatch,
        name: &str,
        path: &Path,
    ) -> Result<&'a UInt64Array, MetricsError> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| {
                MetricsError::io(
                    path,
                    std::io::Error::other(format!("no UInt64 column {name:?}")),
                )
            })
    }

    /// Batches kept while their rows wait to be interleaved into the output.
    struct Arena(Vec<RecordBatch>);

    impl ParquetInput {
        /// Moves to the next row, loading the next batch into `arena` when this one is
        /// used up; `false` at the end of the file.
        fn advance(&mut self, arena: &mut Arena) -> Result<bool, MetricsError> {
            self.row += 1;
            while self.row >= self.rows {
                match self.batches.next() {
                    None => return Ok(false),
                    Some(batch) => {
                        let batch =
                            batch.map_err(|e| MetricsError::parquet(&self.path, e.into()))?;
                        self.rows = batch.num_rows();
                        self.row = 0;
                        self.slot = arena.0.len();
                        arena.0.push(batch);
                    }
                }
            }
            Ok(true)
        }

        fn end_ns(&self, arena: &Arena) -> Result<u64, MetricsError> {
            let batch = &arena.0[self.slot];
            Ok(column(batch, "request_end_ns", &self.path)?.value(self.row))
        }

        fn session_num(&self, arena: &Arena) -> Result<u64, MetricsError> {
            let batch = &arena.0[self.slot];
            Ok(column(batch, "session_num", &self.path)?.value(self.row))
        }
    }

    /// Merges the `profile_export.parquet` files `inputs` into `output` (see the module
    /// documentation) in row groups of 1,024 rows, and returns how many rows it wrote.
    /// Memory stays at a few batches per input.
    pub fn merge_parquet(
        inputs: &[PathBuf],
        numbers: &SessionNumbers,
        output: &Path,
    ) -> Result<u64, MetricsError> {
        let mut arena = Arena(Vec::new());
        let mut readers = Vec::with_capacity(inputs.len());
        let mut schema = None;
        for path in inputs {
            let file = File::open(path).map_err(|e| MetricsError::read(path, e))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| MetricsError::parquet(path, e))?;
            schema.get_or_insert_with(|| Arc::clone(builder.schema()));
            let batches = builder
                .with_batch_size(MERGE_GROUP_ROWS)
                .build()
                .map_err(|e| MetricsError::parquet(path, e))?;
            readers.push(ParquetInput {
                path: path.clone(),
                batches,
                slot: 0,
                // The first advance loads the first batch.
                row: 0,
                rows: 0,
                taken: 0,
            });
        }
        let Some(schema) = schema else {
            return Ok(0);
        };
        let mut heads = Heads::new();
        for (i, reader) in readers.iter_mut().enumerate() {
            if reader.advance(&mut arena)? {
                heads.push(reader.end_ns(&arena)?, i);
            }
        }
        let file = File::create(output).map_err(|e| MetricsError::io(output, e))?;
        let mut writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(writer_properties()))
            .map_err(|e| MetricsError::parquet(output, e))?;
        let mut picked: Vec<(usize, usize)> = Vec::with_capacity(MERGE_GROUP_ROWS);
        let mut numbers_out: Vec<u64> = Vec::with_capacity(MERGE_GROUP_ROWS);
        let mut written = 0u64;
        while let Some(i) = heads.pop() {
            let reader = &mut readers[i];
            picked.push((reader.slot, reader.row));
            reader.taken += 1;
            let old = reader.session_num(&arena)?;
            numbers_out.push(numbers.renumber(i, old, &reader.path, reader.taken)?);
            if reader.advance(&mut arena)? {
                heads.push(reader.end_ns(&arena)?, i);
            }
            if picked.len() == MERGE_GROUP_ROWS {
                written += write_rows(&mut writer, &schema, &arena, &picked, &numbers_out, output)?;
                picked.clear();
                numbers_out.clear();
                // Keep only the batches the inputs still read from.
                let mut kept = Arena(Vec::with_capacity(readers.len()));
                for reader in &mut readers {
                    if let Some(batch) = arena.0.get(reader.slot) {
                        kept.0.push(batch.clone());
                        reader.slot = kept.0.len() - 1;
                    }
                }
                arena = kept;
            }
        }
        if !picked.is_empty() {
            written += write_rows(&mut writer, &schema, &arena, &picked, &numbers_out, output)?;
        }
        writer
            .close()
            .map_err(|e| MetricsError::parquet(output, e))?;
        Ok(written)
    }

    /// Writes the rows `picked` (arena slot, row) as one row group, with `session_num`s.
    fn write_rows(
        writer: &mut ArrowWriter<File>,
        schema: &arrow_schema::SchemaRef,
        arena: &Arena,
        picked: &[(usize, usize)],
        session_nums: &[u64],
        output: &Path,
    ) -> Result<u64, MetricsError> {
        let arrow_error = |e: arrow_schema::ArrowError| MetricsError::parquet(output, e.into());
        let columns = (0..schema.fields().len())
            .map(|c| {
                if schema.field(c).name() == "session_num" {
                    return Ok(Arc::new(UInt64Array::from(session_nums.to_vec())) as ArrayRef);
                }
                let sources: Vec<&dyn Array> =
                    arena.0.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::interleave::interleave(&sources, picked).map_err(arrow_error)
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        let batch = RecordBatch::try_new(Arc::clone(schema), columns).map_err(arrow_error)?;
        writer
            .write(&batch)
            .and_then(|()| writer.flush())
            .map_err(|e| MetricsError::parquet(output, e))?;
        Ok(picked.len() as u64)
    }
}
