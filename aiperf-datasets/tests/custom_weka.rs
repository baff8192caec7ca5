//! `weka_trace`: a trace file (or a folder of them) becomes one session of
//! self-contained turns per trace plus one per subagent, timed by the recorded idle gaps
//! (or think times), with prompts of the recorded blocks; schema errors name the line.
#![allow(clippy::unwrap_used)]

use aiperf_core::config::CustomDatasetType;
use aiperf_core::ContextMode;
use aiperf_datasets::{
    detect_dataset_type, load_custom_dataset, CustomDatasetOptions, LoadedDataset, Tokenizer,
};

const TRACE: &str = r#"{
  "id": "trace-a",
  "models": ["m"],
  "block_size": 16,
  "hash_id_scope": "local",
  "requests": [
    {"t": 0.0, "type": "n", "model": "m", "in": 40, "out": 7, "hash_ids": [1, 2, 3],
     "api_time": 1.5, "think_time": 0.25},
    {"type": "subagent", "t": 2.0, "agent_id": "agent_001", "subagent_type": "Explore",
     "status": "completed", "models": ["m"], "duration_ms": 900, "total_tokens": 30,
     "tool_use_count": 1,
     "requests": [{"t": 2.0, "type": "s", "model": "m", "in": 20, "out": 3,
                   "hash_ids": [9, 10], "ttft": 0.1}]},
    {"t": 4.0, "type": "s", "model": "m", "in": 56, "out": 0, "hash_ids": [1, 2, 3, 4],
     "api_time": 0.5, "think_time": 0.75}
  ]
}
"#;

fn load(dir: &std::path::Path, think_time_only: bool) -> LoadedDataset {
    let options = CustomDatasetOptions {
        seed: 4,
        use_think_time_only: think_time_only,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(dir, &options, &Tokenizer::builtin()).unwrap()
}

#[test]
fn a_trace_folder_replays_its_requests_and_subagents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), TRACE).unwrap();
    assert_eq!(
        detect_dataset_type(dir.path()).unwrap(),
        CustomDatasetType::WekaTrace
    );
    let loaded = load(dir.path(), false);
    let ids: Vec<&str> = loaded
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(ids, ["trace-a", "trace-a::sa:agent_001"]);
    let parent = &loaded.conversations[0];
    assert_eq!(parent.context_mode, ContextMode::MessageArrayWithResponses);
    let tokenizer = Tokenizer::builtin();
    let tokens: Vec<Vec<u32>> = parent
        .turns
        .iter()
        .map(|t| tokenizer.encode(&t.texts[0]))
        .collect();
    assert_eq!((tokens[0].len(), tokens[1].len()), (40, 56));
    // Blocks 1-3 are shared: the first 32 tokens (two whole blocks) are equal.
    assert_eq!(tokens[0][..32], tokens[1][..32]);
    // Idle gap: 4.0 − (0.0 + 1.5) s; output 0 asks for 1 token.
    assert_eq!(parent.turns[0].delay_ms, None);
    assert_eq!(parent.turns[1].delay_ms, Some(2500.0));
    assert_eq!(
        parent
            .turns
            .iter()
            .map(|t| t.max_tokens)
            .collect::<Vec<_>>(),
        [Some(7), Some(1)]
    );
    assert_eq!(loaded.conversations[1].turns[0].max_tokens, Some(3));
    assert!(!loaded.timestamped);

    let think = load(dir.path(), true);
    assert_eq!(think.conversations[0].turns[1].delay_ms, Some(750.0));
}

#[test]
fn max_context_length_leaves_out_traces_over_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), TRACE).unwrap();
    std::fs::write(
        dir.path().join("b.json"),
        TRACE
            .replace("trace-a", "trace-b")
            .replace("\"in\": 56", "\"in\": 30"),
    )
    .unwrap();
    let options = CustomDatasetOptions {
        max_context_length: Some(50),
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(dir.path(), &options, &Tokenizer::builtin()).unwrap();
    // trace-a peaks at 56 + 1; trace-b at 40 + 7.
    let ids: Vec<&str> = loaded
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(ids, ["trace-b", "trace-b::sa:agent_001"]);
}

#[test]
fn a_schema_error_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.json");
    std::fs::write(
        &file,
        TRACE.replace("\"api_time\": 0.5", "\"api_tim\": 0.5"),
    )
    .unwrap();
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::WekaTrace),
        ..CustomDatasetOptions::default()
    };
    let error = load_custom_dataset(&file, &options, &Tokenizer::builtin()).unwrap_err();
    let text = error.to_string();
    assert_eq!(
        text,
        format!(
            "{}:16: not a weka trace: unknown field `api_tim`, expected one of `t`, `model`, \
             `in`, `out`, `hash_ids`, `input_types`, `output_types`, `stop`, `api_time`, \
             `think_time`, `ttft`",
            file.display()
        )
    );
}
