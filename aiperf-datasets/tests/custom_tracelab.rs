//! `tracelab`: TraceLab rows written by the test (plain and gzipped) become sessions of
//! rounds in submission order, with think times from the recorded events, output
//! lengths that include reasoning, and prompts whose blocks follow the recorded prefix
//! reuse; malformed rows name the line and field; both forms are detected.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;

use aiperf_core::config::{CustomDatasetType, PromptCorpus, RandomCorpusStyle, TracelabJoin};
use aiperf_core::{ContextMode, Conversation};
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
    load_with_corpus(path, Some(PromptCorpus::Sonnet))
}

/// Sonnet blocks unless another corpus is named: its 4-token blocks re-encode to the same
/// tokens, which the checks below compare.
fn load_with_corpus(
    path: &Path,
    corpus: Option<PromptCorpus>,
) -> Result<LoadedDataset, aiperf_datasets::DatasetFileError> {
    let options = CustomDatasetOptions {
        block_size: Some(4),
        seed: 3,
        corpus,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin())
}

fn load_joined(path: &Path, tracelab_join: TracelabJoin) -> LoadedDataset {
    let options = CustomDatasetOptions {
        block_size: Some(4),
        seed: 3,
        tracelab_join,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin()).unwrap()
}

/// The root sessions' ids, each with its children's ids.
fn sessions(loaded: &LoadedDataset) -> Vec<(&str, Vec<&str>)> {
    loaded
        .conversations
        .iter()
        .map(|c| {
            let children = c
                .turns
                .iter()
                .flat_map(|t| &t.branches)
                .flat_map(|b| &b.children)
                .map(|child| child.session_id.as_str())
                .collect();
            (c.session_id.as_str(), children)
        })
        .collect()
}

#[test]
fn prompts_come_from_the_coding_corpus_unless_another_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounds.jsonl");
    std::fs::write(&path, rows().join("\n")).unwrap();
    let texts = |corpus| {
        let loaded = load_with_corpus(&path, corpus).unwrap();
        loaded.conversations[0].turns[0].texts.clone()
    };
    assert_eq!(texts(None), texts(Some(PromptCorpus::Coding)));
    assert_ne!(texts(None), texts(Some(PromptCorpus::Sonnet)));
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

/// A row of `session` at minute 12:00, seconds `input`..`output`, with `tools`.
fn timed_row(
    session: &str,
    user: &str,
    input: u32,
    output: u32,
    tools: serde_json::Value,
) -> String {
    json!({
        "session_id": session, "user": user, "project": "x", "provider": "claude",
        "input_tokens_total": 8, "prefix_tokens": 0, "newly_append_tokens": 8,
        "output_tokens": 2,
        "timing_events": [
            event("user_message", &format!("2025-01-31T12:00:{input:02}Z")),
            event("text", &format!("2025-01-31T12:00:{output:02}Z"))
        ],
        "tools": tools
    })
    .to_string()
}

/// A spawning tool call from second `from` to `to` with its wall latency.
fn tool(name: &str, from: u32, to: u32, latency_ms: u32) -> serde_json::Value {
    json!([{
        "tool_name": name,
        "emitted_at": format!("2025-01-31T12:00:{from:02}Z"),
        "result_at": format!("2025-01-31T12:00:{to:02}Z"),
        "tool_wall_latency_ms": latency_ms
    }])
}

#[test]
fn a_subagent_session_inside_a_spawning_call_runs_as_a_child_joined_after_the_call() {
    let rows = [
        // p spawns an agent for 30 s from 1 s; its 5 s Task at 41 s is too short.
        timed_row("p", "u", 0, 1, tool("Agent", 1, 31, 30_000)),
        timed_row("p", "u", 31, 32, json!([])),
        timed_row("p", "u", 40, 41, tool("Task", 41, 46, 5_000)),
        // c runs inside p's call (3 s to 20 s) and spawns g for 10 s itself.
        timed_row("c", "u", 3, 5, tool("Agent", 5, 15, 10_000)),
        timed_row("c", "u", 10, 20, json!([])),
        // Another user's session inside p's window, one inside the short Task, and c's
        // own subagent (0.13 nests one level): each replayed on its own.
        timed_row("other", "v", 4, 6, json!([])),
        timed_row("s2", "u", 42, 44, json!([])),
        timed_row("g", "u", 6, 8, json!([])),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, rows.join("\n")).unwrap();
    let loaded = load(&path).unwrap();
    let roots: Vec<&str> = loaded
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(roots, ["p", "other", "s2", "g"]);
    let parent = &loaded.conversations[0];
    let delays: Vec<Option<f64>> = parent.turns.iter().map(|t| t.delay_ms).collect();
    assert_eq!(delays, [None, Some(30_000.0), Some(8_000.0)]);
    let spawns: Vec<(usize, usize, Option<usize>)> = parent
        .turns
        .iter()
        .enumerate()
        .flat_map(|(k, t)| {
            t.branches
                .iter()
                .map(move |b| (k, b.children.len(), b.join_at))
        })
        .collect();
    // Spawned once round 0 has its reply; round 1 (at 31 s, the call's end) joins it.
    assert_eq!(spawns, [(0, 1, Some(1))]);
    let branch = &parent.turns[0].branches[0];
    assert_eq!(branch.mode, aiperf_core::BranchMode::Spawn);
    let child = &branch.children[0];
    assert_eq!(child.session_id, "p::sa:c");
    assert_eq!(child.context_mode, ContextMode::MessageArrayWithResponses);
    // First round 2 s after the spawn at 1 s; the next 5 s after its reply ended.
    let child_delays: Vec<Option<f64>> = child.turns.iter().map(|t| t.delay_ms).collect();
    assert_eq!(child_delays, [Some(2_000.0), Some(5_000.0)]);
    assert!(child.turns.iter().all(|t| t.branches.is_empty()));
}

/// A timed user row of a Codex session.
fn codex(session: &str, input: u32, output: u32, tools: serde_json::Value) -> String {
    let mut row: serde_json::Value =
        serde_json::from_str(&timed_row(session, "u", input, output, tools)).unwrap();
    row["provider"] = json!("codex");
    row.to_string()
}

#[test]
fn a_codex_session_spawns_within_its_first_spawn_to_its_last_wait() {
    let rows = [
        // spawn_agent returns at once; the window runs to the last wait_agent result.
        codex("p", 0, 1, tool("spawn_agent", 1, 1, 5)),
        codex("p", 2, 3, tool("wait_agent", 3, 20, 17_000)),
        codex("p", 25, 26, json!([])),
        codex("c", 4, 9, json!([])),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, rows.join("\n")).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.conversations.len(), 1);
    let spawns: Vec<(usize, Vec<&str>, Option<usize>)> = loaded.conversations[0]
        .turns
        .iter()
        .enumerate()
        .flat_map(|(k, t)| {
            t.branches.iter().map(move |b| {
                (
                    k,
                    b.children.iter().map(|c| c.session_id.as_str()).collect(),
                    b.join_at,
                )
            })
        })
        .collect();
    // Window [1 s, 20 s]: spawned after round 0, joined by round 2 (25 s), not 1 (2 s).
    assert_eq!(spawns, [(0, vec!["p::sa:c"], Some(2))]);
}

#[test]
fn malformed_tool_calls_name_the_line_and_field() {
    assert_eq!(
        error_of(r#"{"session_id": "a", "tools": {}}"#),
        (
            "FILE:2: tools: expected a list, got an object".into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(r#"{"session_id": "a", "tools": [{"tool_name": "Agent", "emitted_at": "now"}]}"#),
        (
            "FILE:2: tools[0].emitted_at: expected an ISO 8601 time such as \
             2025-01-31T12:00:00.123Z, got \"now\""
                .into(),
            DatasetFileErrorKind::WrongType
        )
    );
    assert_eq!(
        error_of(r#"{"session_id": "a", "tools": [{"tool_name": "Agent", "tool_wall_latency_ms": "long"}]}"#),
        (
            "FILE:2: tools[0].tool_wall_latency_ms: expected a number of milliseconds, got a string"
                .into(),
            DatasetFileErrorKind::WrongType
        )
    );
}

#[test]
fn the_tracelab_switches_turn_the_join_off_widen_it_or_leave_codex_out() {
    let rows = [
        timed_row("p", "u", 0, 1, tool("Agent", 1, 31, 30_000)),
        timed_row("p", "u", 40, 41, tool("Task", 41, 46, 5_000)),
        timed_row("c", "u", 3, 5, json!([])),
        timed_row("s2", "u", 42, 44, json!([])),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, rows.join("\n")).unwrap();
    let default = TracelabJoin::default();
    // 0.13's defaults: the 5 s Task is too short to be a spawn.
    assert_eq!(
        sessions(&load_joined(&path, default)),
        [("p", vec!["p::sa:c"]), ("s2", vec![])]
    );
    // A 5 s minimum takes it: s2 runs inside it.
    let wide = TracelabJoin {
        min_spawn_ms: 5_000,
        ..default
    };
    assert_eq!(
        sessions(&load_joined(&path, wide)),
        [("p", vec!["p::sa:c", "p::sa:s2"])]
    );
    // No join: every session as the corpus records it.
    let flat = TracelabJoin {
        subagents: false,
        ..default
    };
    assert_eq!(
        sessions(&load_joined(&path, flat)),
        [("p", vec![]), ("c", vec![]), ("s2", vec![])]
    );

    let rows = [
        codex("p", 0, 1, tool("spawn_agent", 1, 1, 5)),
        codex("p", 2, 3, tool("wait_agent", 3, 20, 17_000)),
        codex("c", 4, 9, json!([])),
    ];
    std::fs::write(&path, rows.join("\n")).unwrap();
    assert_eq!(
        sessions(&load_joined(&path, default)),
        [("p", vec!["p::sa:c"])]
    );
    let no_codex = TracelabJoin {
        codex: false,
        ..default
    };
    assert_eq!(
        sessions(&load_joined(&path, no_codex)),
        [("p", vec![]), ("c", vec![])]
    );
}

#[test]
fn deferred_prompts_are_made_as_the_same_text_as_at_load() {
    // Session a reuses a prefix of its first round; p spawns k as a subagent.
    let mut all = rows();
    all.extend([
        timed_row("p", "u", 0, 1, tool("Agent", 1, 31, 30_000)),
        timed_row("p", "u", 31, 32, json!([])),
        timed_row("k", "u", 3, 5, json!([])),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    std::fs::write(&path, all.join("\n")).unwrap();
    let load = |defer_prompts| {
        let options = CustomDatasetOptions {
            block_size: Some(4),
            seed: 3,
            corpus: Some(PromptCorpus::Sonnet),
            defer_prompts,
            ..CustomDatasetOptions::default()
        };
        load_custom_dataset(&path, &options, &Tokenizer::builtin()).unwrap()
    };
    let eager = load(false);
    let deferred = load(true);
    // (texts, has a recipe) of every turn, subagents' included.
    let turns = |loaded: &LoadedDataset| -> Vec<(usize, bool)> {
        loaded
            .conversations
            .iter()
            .flat_map(Conversation::with_descendants)
            .flat_map(|session| &session.turns)
            .map(|turn| (turn.texts.len(), turn.deferred_text.is_some()))
            .collect()
    };
    // a: 2 rounds, b: 1, p: 2 and its subagent k: 1.
    assert_eq!(turns(&eager), [(1, false); 6]);
    assert_eq!(turns(&deferred), [(0, true); 6]);
    assert_eq!(
        sessions(&deferred),
        [("a", vec![]), ("b", vec![]), ("p", vec!["p::sa:k"])]
    );
    // Made in any order (the last session first), the same conversations: texts,
    // timing, output lengths and nesting.
    let made: Vec<Conversation> = deferred
        .conversations
        .iter()
        .rev()
        .map(Conversation::materialized)
        .collect();
    let eager_reversed: Vec<Conversation> = eager.conversations.iter().rev().cloned().collect();
    assert_eq!(made, eager_reversed);
    // Session a's rounds, made from recipes: 10 and 13 tokens sharing two 4-token blocks.
    let tokenizer = Tokenizer::builtin();
    let a: Vec<Vec<u32>> = made[2]
        .turns
        .iter()
        .map(|turn| tokenizer.encode(&turn.texts[0]))
        .collect();
    assert_eq!((a[0].len(), a[1].len()), (10, 13));
    assert_eq!(a[0][..8], a[1][..8]);
}
