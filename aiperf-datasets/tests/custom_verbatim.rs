//! Request bodies replayed verbatim: `raw_payload` files and folders and `inputs.json`
//! files (ours and the Python AIPerf 0.13's), their detection, and their errors word for
//! word.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use aiperf_core::config::CustomDatasetType;
use aiperf_core::{ContextMode, SamplingStrategy};
use aiperf_datasets::{
    detect_dataset_type, load_custom_dataset, CustomDatasetOptions, DatasetFileErrorKind,
    LoadedDataset, Tokenizer,
};
use serde_json::{json, Value};

fn load(path: &Path, dataset_type: Option<CustomDatasetType>) -> LoadedDataset {
    let options = CustomDatasetOptions {
        dataset_type,
        seed: 1,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin()).unwrap()
}

/// `content` written to `dir/name`.
fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// Every turn's body, per conversation.
fn bodies(loaded: &LoadedDataset) -> Vec<(String, Vec<Value>)> {
    loaded
        .conversations
        .iter()
        .map(|c| {
            let payloads = c.turns.iter().map(|t| t.raw_payload.clone().unwrap());
            (c.session_id.clone(), payloads.collect())
        })
        .collect()
}

#[test]
fn a_raw_payload_file_is_one_single_turn_conversation_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "bodies.jsonl",
        "{\"model\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"hello world\"}], \"max_tokens\": 12}\n\
         \n\
         {\"prompt\": \"complete me\", \"stream\": true}\n",
    );
    let loaded = load(&path, Some(CustomDatasetType::RawPayload));
    assert_eq!(loaded.dataset_type, CustomDatasetType::RawPayload);
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Sequential);
    assert!(!loaded.timestamped);
    assert_eq!(
        bodies(&loaded),
        [
            (
                "session_000000".to_string(),
                vec![
                    json!({"model": "a", "messages": [{"role": "user", "content": "hello world"}], "max_tokens": 12})
                ]
            ),
            (
                "session_000001".to_string(),
                vec![json!({"prompt": "complete me", "stream": true})]
            ),
        ]
    );
    let first = &loaded.conversations[0];
    assert_eq!(first.context_mode, ContextMode::MessageArrayWithResponses);
    assert_eq!(first.turns[0].texts, ["hello world"]);
    assert_eq!(first.turns[0].max_tokens, Some(12));
    assert_eq!(loaded.conversations[1].turns[0].texts, ["complete me"]);
    assert_eq!(loaded.conversations[1].turns[0].max_tokens, None);
    // The file's key order is kept, so the body goes out as the line was written.
    assert_eq!(
        serde_json::to_string(first.turns[0].raw_payload.as_ref().unwrap()).unwrap(),
        r#"{"model":"a","messages":[{"role":"user","content":"hello world"}],"max_tokens":12}"#
    );
}

#[test]
fn a_raw_payload_folder_is_one_multi_turn_conversation_per_jsonl_file() {
    let dir = tempfile::tempdir().unwrap();
    let chat = |text: &str| {
        format!(r#"{{"messages": [{{"role": "user", "content": "{text}"}}], "model": "m"}}"#)
    };
    write(
        dir.path(),
        "b.jsonl",
        &format!("{}\n{}\n", chat("b1"), chat("b2")),
    );
    write(dir.path(), "a.jsonl", &format!("{}\n", chat("a1")));
    write(dir.path(), "notes.txt", "not a dataset\n");
    assert_eq!(
        detect_dataset_type(dir.path()).unwrap(),
        CustomDatasetType::RawPayload
    );
    let loaded = load(dir.path(), None);
    assert_eq!(loaded.dataset_type, CustomDatasetType::RawPayload);
    let texts: Vec<(String, Vec<String>)> = loaded
        .conversations
        .iter()
        .map(|c| {
            let texts = c.turns.iter().map(|t| t.texts.concat());
            (c.session_id.clone(), texts.collect())
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("session_000000".to_string(), vec!["a1".to_string()]),
            (
                "session_000001".to_string(),
                vec!["b1".to_string(), "b2".to_string()]
            ),
        ]
    );
    assert!(loaded
        .conversations
        .iter()
        .all(|c| c.context_mode == ContextMode::MessageArrayWithResponses));
}

#[test]
fn our_inputs_json_is_replayed_session_by_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = json!({"data": [
        {"session_id": "s-1", "payloads": [
            {"messages": [{"role": "user", "content": "one"}], "model": "m", "max_completion_tokens": 4},
            {"messages": [{"role": "user", "content": "two"}], "model": "m"},
        ]},
        {"session_id": "s-2", "payloads": [{"prompt": "three", "max_tokens": 2}]},
    ]});
    let path = write(
        dir.path(),
        "inputs.json",
        &serde_json::to_string_pretty(&file).unwrap(),
    );
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::InputsJson
    );
    let loaded = load(&path, None);
    assert_eq!(loaded.dataset_type, CustomDatasetType::InputsJson);
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Sequential);
    let sessions = file["data"].as_array().unwrap();
    let expected: Vec<(String, Vec<Value>)> = sessions
        .iter()
        .map(|s| {
            let id = s["session_id"].as_str().unwrap().to_string();
            (id, s["payloads"].as_array().unwrap().clone())
        })
        .collect();
    assert_eq!(bodies(&loaded), expected);
    let lengths: Vec<Option<u32>> = loaded
        .conversations
        .iter()
        .flat_map(|c| c.turns.iter().map(|t| t.max_tokens))
        .collect();
    assert_eq!(lengths, [Some(4), None, Some(2)]);
}

#[test]
fn the_python_inputs_json_is_replayed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/python_aiperf_0.13_inputs.json");
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::InputsJson
    );
    let loaded = load(&path, None);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ids: Vec<&str> = loaded
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(ids, ["session_000000", "session_000001", "session_000002"]);
    for (conversation, session) in loaded
        .conversations
        .iter()
        .zip(file["data"].as_array().unwrap())
    {
        assert_eq!(conversation.turns.len(), 1);
        let turn = &conversation.turns[0];
        assert_eq!(turn.raw_payload.as_ref(), Some(&session["payloads"][0]));
        assert_eq!(turn.max_tokens, Some(128));
        assert_eq!(
            turn.texts,
            [session["payloads"][0]["messages"][0]["content"]
                .as_str()
                .unwrap()]
        );
    }
}

#[test]
fn detection_follows_the_python_rules_where_they_are_unambiguous() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content, expected) in [
        (
            "chat.jsonl",
            r#"{"messages": [{"role": "user", "content": "x"}], "model": "m", "stream": true}"#,
            CustomDatasetType::RawPayload,
        ),
        (
            "compact.jsonl",
            r#"{"data": [{"session_id": "s", "payloads": [{"prompt": "p"}]}]}"#,
            CustomDatasetType::InputsJson,
        ),
        // Only mooncake keys: a mooncake trace in messages mode, as before.
        (
            "trace.jsonl",
            r#"{"messages": [{"role": "user", "content": "x"}], "timestamp": 5}"#,
            CustomDatasetType::MooncakeTrace,
        ),
        // A conversation id marks an agentic trajectory, not a body (and mooncake then
        // rejects the line's unknown keys, with their line and name).
        (
            "agentic.jsonl",
            r#"{"messages": [], "conversation_id": "c", "model": "m"}"#,
            CustomDatasetType::MooncakeTrace,
        ),
    ] {
        let path = write(dir.path(), name, &format!("\n{content}\n"));
        assert_eq!(detect_dataset_type(&path).unwrap(), expected, "{name}");
    }
    let pool = dir.path().join("pool");
    std::fs::create_dir(&pool).unwrap();
    write(&pool, "a.jsonl", "{\"text\": \"t\"}\n");
    assert_eq!(
        detect_dataset_type(&pool).unwrap(),
        CustomDatasetType::RandomPool
    );
}

/// Loads `content` from `dir/name` as `dataset_type`; the error with the path as `FILE`.
fn error_of(
    name: &str,
    content: &str,
    dataset_type: CustomDatasetType,
) -> (String, DatasetFileErrorKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, content);
    let options = CustomDatasetOptions {
        dataset_type: Some(dataset_type),
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
fn each_malformed_raw_payload_line_is_named() {
    let raw = |content: &str| error_of("bodies.jsonl", content, CustomDatasetType::RawPayload);
    let good = "{\"prompt\": \"p\"}\n";
    for (content, message, kind) in [
        (
            format!("{good}{{\"prompt\": }}\n"),
            "FILE:2: invalid JSON at column 12: expected value at line 1 column 12",
            DatasetFileErrorKind::Syntax,
        ),
        (
            format!("{good}\n[1, 2]\n"),
            "FILE:3: expected a JSON object",
            DatasetFileErrorKind::Syntax,
        ),
        (
            format!("{good}{{}}\n"),
            "FILE:2: an empty object is not a request body",
            DatasetFileErrorKind::Invalid,
        ),
        (
            format!("{good}{{\"messages\": \"hi\"}}\n"),
            "FILE:2: messages: expected a list of messages, got a string",
            DatasetFileErrorKind::WrongType,
        ),
    ] {
        assert_eq!(raw(&content), (message.to_string(), kind), "{content}");
    }
}

#[test]
fn each_malformed_inputs_json_part_is_named() {
    let inputs = |content: &str| error_of("inputs.json", content, CustomDatasetType::InputsJson);
    for (content, message, kind) in [
        (
            "{\n  \"data\": [\n    {\"session_id\": \"s\",}\n  ]\n}",
            "FILE:3: invalid JSON at column 24: trailing comma at line 3 column 24",
            DatasetFileErrorKind::Syntax,
        ),
        (
            "[]",
            "FILE: expected a JSON object, got a list",
            DatasetFileErrorKind::Syntax,
        ),
        (
            "{}",
            "FILE: data: missing required field",
            DatasetFileErrorKind::MissingField,
        ),
        (
            r#"{"data": {}}"#,
            "FILE: data: expected a list of sessions, got an object",
            DatasetFileErrorKind::WrongType,
        ),
        (
            r#"{"data": []}"#,
            "FILE: the file holds no sessions (data is empty)",
            DatasetFileErrorKind::Empty,
        ),
        (
            r#"{"data": [{"session_id": "a", "payloads": [{"p": 1}]}, 3]}"#,
            "FILE: data[1]: expected a session object, got a number",
            DatasetFileErrorKind::WrongType,
        ),
        (
            r#"{"data": [{"payloads": [{"p": 1}]}]}"#,
            "FILE: data[0].session_id: missing required field",
            DatasetFileErrorKind::MissingField,
        ),
        (
            r#"{"data": [{"session_id": 7, "payloads": [{"p": 1}]}]}"#,
            "FILE: data[0].session_id: expected a string, got a number",
            DatasetFileErrorKind::WrongType,
        ),
        (
            r#"{"data": [{"session_id": "a"}]}"#,
            "FILE: data[0].payloads: missing required field",
            DatasetFileErrorKind::MissingField,
        ),
        (
            r#"{"data": [{"session_id": "a", "payloads": []}]}"#,
            "FILE: data[0].payloads: must be a non-empty list of request bodies",
            DatasetFileErrorKind::Invalid,
        ),
        (
            r#"{"data": [{"session_id": "a", "payloads": [{"p": 1}, "text"]}]}"#,
            "FILE: data[0].payloads[1]: expected a request body object, got a string",
            DatasetFileErrorKind::WrongType,
        ),
        (
            r#"{"data": [{"session_id": "a", "payloads": [{}]}]}"#,
            "FILE: data[0].payloads[0]: an empty object is not a request body",
            DatasetFileErrorKind::Invalid,
        ),
        (
            r#"{"data": [{"session_id": "a", "payloads": [{"p": 1}]}, {"session_id": "a", "payloads": [{"p": 2}]}]}"#,
            "FILE: data[1].session_id: duplicate session id \"a\" (first in data[0])",
            DatasetFileErrorKind::Invalid,
        ),
    ] {
        assert_eq!(inputs(content), (message.to_string(), kind), "{content}");
    }
}
