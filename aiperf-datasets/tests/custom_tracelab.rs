//! `tracelab`: TraceLab rows written by the test (plain and gzipped) become sessions of
//! rounds in submission order, with think times from the recorded events, output
//! lengths that include reasoning, and prompts whose blocks follow the recorded prefix
//! reuse; malformed rows name the line and field; both forms are detected.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;

use aiperf_core::config::{CustomDatasetType, PromptCorpus, RandomCorpusStyle};
use aiperf_core::ContextMode;
use aiperf_datasets::custom::HashIdPrompts;
use aiperf_datasets::{
    detect_dataset_type, load_custom_dataset, CustomDatasetOptions, DatasetFileErrorKind,
    LoadedDataset, Tokenizer,
};
use serde_json::json;

fn event(kind: &str, time: &str) -> serde_json::Value {
    json!({"event_type": kind, "timestamp": time})
}

/// Session a: two rounds, listed out of order; session b: one round dated only by its
/// output; session c: no dated round at all.
fn rows() -> Vec<String> {
    [
        json!({
            "session_id": "a", "round_index": 1, "input_tokens_total": 13, "prefix_tokens": 10,
            "newly_append_tokens": 3, "output_tokens": 3, "model": "claude",
            "timing_events": [
                event("tool_result", "2025-01-31T12:00:05Z"),
                event("tool_result", "2025-01-31T12:00:04Z"),
                event("tool_call", "2025-01-31T12:00:06Z")
            ]
        }),
        json!({
            "session_id": "a", "round_index": 0, "input_tokens_total": 10, "prefix_tokens": 0,
            "newly_append_tokens": 10, "output_tokens": 5, "reasoning_output_tokens": 2,
            "timing_events": [
                event("user_message", "2025-01-31T12:00:00Z"),
                event("text", "2025-01-31T12:00:02Z")
            ]
        }),
        json!({
            "session_id": "b", "round_index": 0, "input_tokens_total": 3, "prefix_tokens": 0,
            "newly_append_tokens": 3, "output_tokens": 0,
            "timing_events": [event("text", "2025-01-31T12:00:01Z")]
        }),
        json!({
            "session_id": "c", "round_index": 0, "input_tokens_total": 3, "prefix_tokens": 0,
            "newly_append_tokens": 3, "timing_events": []
        }),
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

fn load(path: &Path) -> Result<LoadedDataset, aiperf_datasets::DatasetFileError> {
    let options = CustomDatasetOptions {
        block_size: Some(4),
        seed: 3,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin())
}

fn check(loaded: &LoadedDataset) {
    assert_eq!(loaded.dataset_type, CustomDatasetType::Tracelab);
    assert!(!loaded.timestamped);
    let sessions: Vec<(&str, usize)> = loaded
        .conversations
        .iter()
        .map(|c| (c.session_id.as_str(), c.turns.len()))
        .collect();
    assert_eq!(sessions, [("a", 2), ("b", 1)]);
    let turns: Vec<_> = loaded.conversations.iter().flat_map(|c| &c.turns).collect();
    let timing: Vec<(Option<u32>, Option<f64>)> =
        turns.iter().map(|t| (t.max_tokens, t.delay_ms)).collect();
    // Round 1 of a was submitted at 5 s, 3 s after round 0's reply ended (0 s + 2 s).
    assert_eq!(
        timing,
        [(Some(7), None), (Some(3), Some(3000.0)), (Some(1), None)]
    );
    assert!(loaded
        .conversations
        .iter()
        .all(|c| c.context_mode == ContextMode::MessageArrayWithResponses));

    // Blocks of 4: round 0 is [0, 1] + tail 2; round 1 reuses 10 / 4 = 2 blocks, adds 3
    // and tail 4; b starts fresh at 5.
    let tokenizer = Tokenizer::builtin();
    let mut expected = HashIdPrompts::new(
        tokenizer.clone(),
        3,
        4,
        PromptCorpus::Sonnet,
        RandomCorpusStyle::Vllm,
    )
    .unwrap();
    let tokens: Vec<Vec<u32>> = turns
        .iter()
        .map(|t| tokenizer.encode(&t.texts[0]))
        .collect();
    assert_eq!(tokens[0], expected.tokens(10, &[0, 1, 2]).unwrap());
    assert_eq!(tokens[1], expected.tokens(13, &[0, 1, 3, 4]).unwrap());
    assert_eq!(tokens[2], expected.tokens(3, &[5]).unwrap());
    assert_eq!(tokens[0][..8], tokens[1][..8]);
    assert_ne!(tokens[0][8..10], tokens[1][8..10]);
}

#[test]
fn rounds_replay_in_submission_order_with_their_think_times_and_prefix_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, rows().join("\n")).unwrap();
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::Tracelab
    );
    check(&load(&path).unwrap());
}

#[test]
fn a_gzipped_trace_loads_like_the_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(rows().join("\n").as_bytes()).unwrap();
    std::fs::write(&path, encoder.finish().unwrap()).unwrap();
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::Tracelab
    );
    check(&load(&path).unwrap());
}

fn error_of(line: &str) -> (String, DatasetFileErrorKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, format!("{}\n{line}\n", rows()[0])).unwrap();
    let error = load(&path).unwrap_err();
    (
        error
            .to_string()
            .replace(&path.display().to_string(), "FILE"),
        error.kind,
    )
}

#[test]
fn malformed_rows_name_the_line_and_field() {
    assert_eq!(
        error_of(r#"{"round_index": 0, "timing_events": []}"#),
        (
            "FILE:2: session_id: missing required field".into(),
            DatasetFileErrorKind::MissingField
        )
    );
    assert_eq!(
        error_of(r#"{"session_id": "a", "input_tokens_total": "many"}"#),
        (
            "FILE:2: input_tokens_total: expected a non-negative integer, got a string".into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(
            r#"{"session_id": "a", "timing_events": [{"event_type": "text", "timestamp": "2025-01-31T12:00:00Z"}, {"event_type": "text", "timestamp": "soon"}]}"#
        ),
        (
            "FILE:2: timing_events[1].timestamp: expected an ISO 8601 time such as \
             2025-01-31T12:00:00.123Z, got \"soon\""
                .into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(r#"{"session_id": "a", "timing_events": {}}"#),
        (
            "FILE:2: timing_events: expected a list, got an object".into(),
            DatasetFileErrorKind::WrongType
        )
    );
}
