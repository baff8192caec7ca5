//! `baseten_trace`: Parquet and Arrow IPC traces written by the test load into sessions
//! with known start times, output lengths and KV-cache hints; malformed files fail with
//! errors naming the file, row and column; the extension is enough to detect them.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use aiperf_core::config::CustomDatasetType;
use aiperf_core::{ContextMode, Conversation};
use aiperf_datasets::{
    detect_dataset_type, load_custom_dataset, CustomDatasetOptions, DatasetFileErrorKind,
    LoadedDataset, Tokenizer,
};
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, ListArray, RecordBatch, StringArray};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::json;

type Columns = Vec<(&'static str, ArrayRef)>;
/// (offset ms, prompt, max tokens, extra body) of a turn.
type TurnSummary = (f64, String, u32, serde_json::Value);
/// A session's id and turns.
type SessionSummary = (String, Vec<TurnSummary>);

fn ints(values: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

fn texts(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// Four recorded requests: session s1 twice (out of order in the file), s2 once, and one
/// request without a session.
fn trace() -> Columns {
    vec![
        (
            "timestamp_start_unix_ms",
            ints(&[
                Some(1_700_000_001_200),
                Some(1_700_000_001_100),
                Some(1_700_000_001_000),
                Some(1_700_000_001_500),
            ]),
        ),
        (
            "prompt",
            texts(&[
                Some("hello there, again"),
                Some("other"),
                Some("hello there"),
                Some("lone"),
            ]),
        ),
        ("input_tokens", ints(&[Some(4), Some(1), Some(2), Some(1)])),
        ("output_tokens", ints(&[Some(7), Some(3), Some(5), Some(0)])),
        (
            "total_hashes",
            Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
                Some(vec![Some(1), Some(2), Some(3)]),
                Some(vec![]),
                Some(vec![Some(1), Some(2)]),
                None,
            ])),
        ),
        ("block_size", ints(&[Some(16), None, Some(16), None])),
        (
            "provided_session_id",
            texts(&[Some("s1"), Some("s2"), Some("s1"), None]),
        ),
    ]
}

fn write_parquet(path: &Path, columns: Columns) {
    write_compressed_parquet(path, columns, Compression::SNAPPY);
}

fn write_compressed_parquet(path: &Path, columns: Columns, compression: Compression) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let props = WriterProperties::builder()
        .set_compression(compression)
        .build();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn write_ipc(path: &Path, columns: Columns) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
}

fn load(path: &Path) -> Result<LoadedDataset, aiperf_datasets::DatasetFileError> {
    let options = CustomDatasetOptions {
        seed: 1,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin())
}

fn summary(conversations: &[Conversation]) -> Vec<SessionSummary> {
    conversations
        .iter()
        .map(|c| {
            let turns = c
                .turns
                .iter()
                .map(|t| {
                    (
                        t.timestamp_ms.unwrap(),
                        t.texts.concat(),
                        t.max_tokens.unwrap(),
                        serde_json::Value::Object(t.extra.clone().unwrap()),
                    )
                })
                .collect();
            (c.session_id.clone(), turns)
        })
        .collect()
}

fn expected() -> Vec<SessionSummary> {
    let turn = |at: f64, prompt: &str, tokens: u32, extra: serde_json::Value| {
        (at, prompt.to_owned(), tokens, extra)
    };
    vec![
        (
            "s1".into(),
            vec![
                turn(
                    0.0,
                    "hello there",
                    5,
                    json!({"min_tokens": 5, "hash_ids": [1, 2], "block_size": 16}),
                ),
                turn(
                    200.0,
                    "hello there, again",
                    7,
                    json!({"min_tokens": 7, "hash_ids": [1, 2, 3], "block_size": 16}),
                ),
            ],
        ),
        (
            "s2".into(),
            vec![turn(100.0, "other", 3, json!({"min_tokens": 3}))],
        ),
        // A canceled request (0 output tokens) still asks for one.
        (
            "session_000000".into(),
            vec![turn(500.0, "lone", 1, json!({"min_tokens": 1}))],
        ),
    ]
}

#[test]
fn a_parquet_trace_replays_each_session_from_its_recorded_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    write_parquet(&path, trace());
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::BasetenTrace);
    assert!(loaded.timestamped);
    assert_eq!(summary(&loaded.conversations), expected());
    let modes: Vec<ContextMode> = loaded
        .conversations
        .iter()
        .map(|c| c.context_mode)
        .collect();
    assert_eq!(
        modes,
        [
            ContextMode::MessageArrayWithResponses,
            ContextMode::DeltasWithoutResponses,
            ContextMode::DeltasWithoutResponses
        ]
    );
}

#[test]
fn traces_compressed_with_each_common_codec_load_alike() {
    let dir = tempfile::tempdir().unwrap();
    for (name, compression) in [
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("lz4", Compression::LZ4_RAW),
        ("none", Compression::UNCOMPRESSED),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        write_compressed_parquet(&path, trace(), compression);
        let loaded = load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(summary(&loaded.conversations), expected(), "{name}");
    }
}

#[test]
fn an_arrow_ipc_trace_loads_like_its_parquet_twin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.arrow");
    write_ipc(&path, trace());
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::BasetenTrace
    );
    assert_eq!(summary(&load(&path).unwrap().conversations), expected());
}

#[test]
fn the_derived_session_column_groups_when_the_provided_one_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    let mut columns = trace();
    columns.retain(|(name, _)| *name != "provided_session_id");
    columns.push((
        "poor_man_session_id",
        ints(&[Some(9), Some(4), Some(9), Some(4)]),
    ));
    write_parquet(&path, columns);
    let conversations = load(&path).unwrap().conversations;
    let sessions: Vec<(&str, usize)> = conversations
        .iter()
        .map(|c| (c.session_id.as_str(), c.turns.len()))
        .collect();
    assert_eq!(sessions, [("9", 2), ("4", 2)]);
}

#[test]
fn the_body_options_leave_out_min_tokens_and_the_kv_hints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    write_parquet(&path, trace());
    let extras = |omit_kv_hints: bool, omit_min_tokens: bool| {
        let options = CustomDatasetOptions {
            omit_kv_hints,
            omit_min_tokens,
            ..CustomDatasetOptions::default()
        };
        let loaded = load_custom_dataset(&path, &options, &Tokenizer::builtin()).unwrap();
        let first = &loaded.conversations[0].turns[0];
        assert_eq!(first.max_tokens, Some(5));
        first.extra.clone().map(serde_json::Value::Object)
    };
    assert_eq!(extras(true, false), Some(json!({"min_tokens": 5})));
    assert_eq!(
        extras(false, true),
        Some(json!({"hash_ids": [1, 2], "block_size": 16}))
    );
    assert_eq!(extras(true, true), None);
}

/// The error of loading `columns` as Parquet, with the path replaced by `FILE`.
fn error_of(columns: Columns) -> (String, DatasetFileErrorKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    write_parquet(&path, columns);
    let error = load(&path).unwrap_err();
    (
        error
            .to_string()
            .replace(&path.display().to_string(), "FILE"),
        error.kind,
    )
}

fn replaced(name: &'static str, column: ArrayRef) -> Columns {
    let mut columns = trace();
    for entry in &mut columns {
        if entry.0 == name {
            entry.1 = column.clone();
        }
    }
    columns
}

#[test]
fn malformed_traces_name_the_row_and_column() {
    let mut columns = trace();
    columns.retain(|(name, _)| *name != "prompt");
    assert_eq!(
        error_of(columns),
        (
            "FILE: prompt: missing required column (a Baseten trace has \
             timestamp_start_unix_ms, prompt, input_tokens, output_tokens)"
                .into(),
            DatasetFileErrorKind::MissingField
        )
    );
    assert_eq!(
        error_of(replaced(
            "output_tokens",
            ints(&[Some(1), Some(2), Some(-3), Some(4)])
        )),
        (
            "FILE:3: output_tokens: expected a non-negative integer, got -3".into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(replaced(
            "prompt",
            texts(&[Some("a"), None, Some("c"), Some("d")])
        )),
        (
            "FILE:2: prompt: missing required value (null)".into(),
            DatasetFileErrorKind::MissingField
        )
    );
    assert_eq!(
        error_of(replaced(
            "timestamp_start_unix_ms",
            texts(&[Some("1"), Some("2"), Some("3"), Some("4")])
        )),
        (
            "FILE: timestamp_start_unix_ms: expected a column of integers, got Utf8".into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(replaced("block_size", ints(&[None, None, None, Some(0)]))),
        (
            "FILE:4: block_size: expected a positive integer, got 0".into(),
            DatasetFileErrorKind::WrongType
        )
    );
}

#[test]
fn a_file_that_is_not_parquet_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    std::fs::write(&path, "{\"prompt\": \"not parquet\"}\n").unwrap();
    let error = load(&path).unwrap_err();
    assert_eq!(error.kind, DatasetFileErrorKind::Syntax);
    assert!(
        error.to_string().starts_with(&format!(
            "{}: not a readable Parquet file: ",
            path.display()
        )),
        "{error}"
    );
}
