//! `sagemaker_data_capture`: capture records written by the test (JSON and base64
//! payloads, one file or a folder of them) become one verbatim chat request each, at its
//! inference time relative to the earliest; malformed records name the file, line and
//! field; a file or folder of captures is detected.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use aiperf_core::config::CustomDatasetType;
use aiperf_core::ContextMode;
use aiperf_datasets::{
    detect_dataset_type, load_custom_dataset, CustomDatasetOptions, DatasetFileErrorKind,
    LoadedDataset, Tokenizer,
};
use base64::Engine;
use serde_json::{json, Value};

/// A capture record of `request` at `time`, its payload in `encoding`.
fn record(time: &str, request: &Value, encoding: &str) -> String {
    let text = request.to_string();
    let data = match encoding {
        "JSON" => text,
        _ => base64::engine::general_purpose::STANDARD.encode(text),
    };
    json!({
        "captureData": {
            "endpointInput": {"observedContentType": "application/json", "mode": "INPUT", "data": data, "encoding": encoding},
            "endpointOutput": {"observedContentType": "application/json", "mode": "OUTPUT", "data": "e30=", "encoding": "BASE64"}
        },
        "eventMetadata": {"eventId": "e", "inferenceTime": time},
        "eventVersion": "0"
    })
    .to_string()
}

fn chat(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

fn load(path: &Path) -> Result<LoadedDataset, aiperf_datasets::DatasetFileError> {
    let options = CustomDatasetOptions {
        seed: 1,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin())
}

/// (offset ms, first message text, max tokens, tool count) per request.
fn summary(loaded: &LoadedDataset) -> Vec<(f64, String, Option<u32>, usize)> {
    loaded
        .conversations
        .iter()
        .map(|c| {
            assert_eq!(c.turns.len(), 1);
            assert_eq!(c.context_mode, ContextMode::MessageArrayWithResponses);
            let turn = &c.turns[0];
            let messages = turn.raw_messages.as_ref().unwrap();
            (
                turn.timestamp_ms.unwrap(),
                messages[0]["content"].as_str().unwrap().to_owned(),
                turn.max_tokens,
                turn.raw_tools.as_ref().map_or(0, Vec::len),
            )
        })
        .collect()
}

#[test]
fn captured_chat_requests_replay_at_their_inference_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    let mut with_tools = chat("second");
    with_tools["tools"] = json!([{"type": "function", "function": {"name": "f"}}]);
    with_tools["max_completion_tokens"] = json!(9);
    let mut limited = chat("first");
    limited["max_tokens"] = json!(4);
    let lines = [
        record("2025-01-31T12:00:01.250Z", &with_tools, "BASE64"),
        record("2025-01-31T13:00:00+01:00", &limited, "JSON"),
        record("2025-01-31T12:00:03Z", &chat("third"), "BASE64"),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::SagemakerDataCapture
    );
    let loaded = load(&path).unwrap();
    assert!(loaded.timestamped);
    assert_eq!(
        summary(&loaded),
        [
            (0.0, "first".into(), Some(4), 0),
            (1250.0, "second".into(), Some(9), 1),
            (3000.0, "third".into(), None, 0),
        ]
    );
    let ids: Vec<&str> = loaded
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(ids, ["session_000000", "session_000001", "session_000002"]);
}

#[test]
fn a_folder_of_capture_files_is_read_recursively() {
    let dir = tempfile::tempdir().unwrap();
    let hour = dir.path().join("endpoint/AllTraffic/2025/01/31/12");
    std::fs::create_dir_all(&hour).unwrap();
    std::fs::write(
        hour.join("b.jsonl"),
        record("2025-01-31T12:00:00Z", &chat("b"), "JSON"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.jsonl"),
        record("2025-01-31T12:00:02Z", &chat("a"), "JSON"),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a capture").unwrap();
    assert_eq!(
        detect_dataset_type(dir.path()).unwrap(),
        CustomDatasetType::SagemakerDataCapture
    );
    let loaded = load(dir.path()).unwrap();
    assert_eq!(
        summary(&loaded),
        [(0.0, "b".into(), None, 0), (2000.0, "a".into(), None, 0)]
    );
}

#[test]
fn a_folder_of_other_jsonl_files_stays_a_random_pool() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pool.jsonl"), "{\"text\": \"hi\"}\n").unwrap();
    assert_eq!(
        detect_dataset_type(dir.path()).unwrap(),
        CustomDatasetType::RandomPool
    );
}

/// The error of loading the single `line`, with the path replaced by `FILE`.
fn error_of(line: &str) -> (String, DatasetFileErrorKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    let good = record("2025-01-31T12:00:00Z", &chat("ok"), "JSON");
    std::fs::write(&path, format!("{good}\n{line}\n")).unwrap();
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::SagemakerDataCapture),
        ..CustomDatasetOptions::default()
    };
    let error = load_custom_dataset(&path, &options, &Tokenizer::builtin()).unwrap_err();
    (
        error
            .to_string()
            .replace(&path.display().to_string(), "FILE"),
        error.kind,
    )
}

#[test]
fn malformed_capture_records_name_the_line_and_field() {
    let cases: [(String, &str, DatasetFileErrorKind); 7] = [
        (
            record("31/01/2025 12:00", &chat("x"), "JSON"),
            "FILE:2: eventMetadata.inferenceTime: expected an ISO 8601 time such as \
             2025-01-31T12:00:00.123Z, got \"31/01/2025 12:00\"",
            DatasetFileErrorKind::WrongType,
        ),
        (
            record("2025-01-31T12:00:00Z", &json!({"prompt": "x"}), "JSON"),
            "FILE:2: captureData.endpointInput.data: the captured request has no messages: \
             only OpenAI-compatible chat requests can be replayed",
            DatasetFileErrorKind::Invalid,
        ),
        (
            record("2025-01-31T12:00:00Z", &json!({"messages": []}), "JSON"),
            "FILE:2: captureData.endpointInput.data.messages: expected a non-empty list of \
             messages",
            DatasetFileErrorKind::WrongType,
        ),
        (
            record(
                "2025-01-31T12:00:00Z",
                &json!({"messages": [{"role": "user"}], "max_tokens": 0}),
                "JSON",
            ),
            "FILE:2: captureData.endpointInput.data.max_tokens: expected a positive integer",
            DatasetFileErrorKind::WrongType,
        ),
        (
            record("2025-01-31T12:00:00Z", &chat("x"), "BASE64").replace("eyJ", "!!!"),
            "FILE:2: captureData.endpointInput.data: invalid base64: Invalid symbol 33, offset 0.",
            DatasetFileErrorKind::Syntax,
        ),
        (
            json!({"captureData": {}, "eventMetadata": {"inferenceTime": "2025-01-31T12:00:00Z"}})
                .to_string(),
            "FILE:2: captureData.endpointInput: missing required field",
            DatasetFileErrorKind::MissingField,
        ),
        (
            json!({"captureData": {"endpointInput": {"data": "{}"}}}).to_string(),
            "FILE:2: eventMetadata: missing required field",
            DatasetFileErrorKind::MissingField,
        ),
    ];
    for (line, message, kind) in cases {
        assert_eq!(error_of(&line), (message.to_owned(), kind), "{line}");
    }
}
