//! `weka_trace`: a trace file (or a folder of them) becomes one session of
//! self-contained turns per trace, its subagents child sessions spawned and joined
//! where 0.13 puts them, timed by the recorded idle gaps (or think times), with
//! prompts of the recorded blocks; schema errors name the line.
#![allow(clippy::unwrap_used)]

use aiperf_core::config::{CustomDatasetType, PromptCorpus};
use aiperf_core::{BranchMode, ContextMode, Conversation};
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
     "requests": [{"t": 2.25, "type": "s", "model": "m", "in": 20, "out": 3,
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
    assert_eq!(ids, ["trace-a"]);
    let parent = &loaded.conversations[0];
    // The subagent (2.0 s to 2.9 s) is spawned by the request before it and joined by
    // the one after, its first request 250 ms after the spawn.
    assert_eq!(
        tree(parent),
        [
            vec![(
                Some(1),
                vec![("trace-a::sa:agent_001".to_owned(), Some(250.0))]
            )],
            vec![]
        ]
    );
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
    let child = &parent.turns[0].branches[0].children[0];
    assert_eq!(child.turns[0].max_tokens, Some(3));
    assert_eq!(child.context_mode, ContextMode::MessageArrayWithResponses);
    assert!(!loaded.timestamped);

    let think = load(dir.path(), true);
    assert_eq!(think.conversations[0].turns[1].delay_ms, Some(750.0));
}

/// Per parent turn, each branch as its join turn and its children (session id, delay
/// of the first request); every branch of a weka trace is a spawn.
type Tree = Vec<Vec<(Option<usize>, Vec<(String, Option<f64>)>)>>;

fn tree(conversation: &Conversation) -> Tree {
    conversation
        .turns
        .iter()
        .map(|turn| {
            turn.branches
                .iter()
                .map(|branch| {
                    assert_eq!(branch.mode, BranchMode::Spawn);
                    let children = branch
                        .children
                        .iter()
                        .map(|c| (c.session_id.clone(), c.turns[0].delay_ms))
                        .collect();
                    (branch.join_at, children)
                })
                .collect()
        })
        .collect()
}

fn request(t: f64, api_time: f64) -> serde_json::Value {
    serde_json::json!({"t": t, "type": "n", "model": "m", "in": 20, "out": 2,
                       "hash_ids": [1, 2], "api_time": api_time})
}

fn subagent(
    id: &str,
    t: f64,
    duration_ms: Option<u64>,
    requests: &[serde_json::Value],
) -> serde_json::Value {
    serde_json::json!({"type": "subagent", "t": t, "agent_id": id, "subagent_type": "Explore",
                       "status": "completed", "models": ["m"], "duration_ms": duration_ms,
                       "total_tokens": null, "tool_use_count": null, "requests": requests})
}

#[test]
fn subagents_are_spawned_and_joined_where_0_13_puts_them() {
    // 0.13's own examples: A and A2 end before parent[1] (one group joined there), B
    // runs through parent[1] and is joined by parent[2], C ends after the last parent
    // request (background), Z comes before any parent request (left out). B's inner
    // `t` is relative to its spawn (an older capture); C's end is its last request's.
    let trace = serde_json::json!({
        "id": "tiers", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            subagent("Z", 0.0, Some(100), &[request(0.0, 0.1)]),
            request(0.0, 0.5),
            subagent("A", 1.0, Some(3000), &[request(1.5, 0.5)]),
            subagent("A2", 1.25, Some(1000), &[request(1.25, 0.5)]),
            subagent("B", 2.0, Some(7000), &[request(0.5, 1.0), request(3.5, 1.0)]),
            request(6.0, 0.5),
            request(12.0, 0.5),
            subagent("C", 13.0, None, &[request(13.0, 20.0)]),
        ]
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiers.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let loaded = load(&file, false);
    assert_eq!(loaded.conversations.len(), 1);
    let root = &loaded.conversations[0];
    let child = |id: &str, delay: f64| (format!("tiers::sa:{id}"), Some(delay));
    assert_eq!(
        tree(root),
        [
            vec![
                (Some(1), vec![child("A", 500.0), child("A2", 250.0)]),
                (Some(2), vec![child("B", 500.0)]),
            ],
            vec![],
            vec![(None, vec![child("C", 0.0)])],
        ]
    );
    // Inside B, the second request waits its idle gap: 3.5 − (2.5 + 1.0) s.
    let b = &root.turns[0].branches[1].children[0];
    assert_eq!(b.turns[1].delay_ms, Some(0.0));
    assert_eq!(b.turns.len(), 2);
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
    assert_eq!(ids, ["trace-b"]);
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

fn flat(t: f64, api_time: f64, model: &str, out: u64, hash_ids: &[u64]) -> serde_json::Value {
    serde_json::json!({"t": t, "type": "n", "model": model, "in": 16 * hash_ids.len(),
                       "out": out, "hash_ids": hash_ids, "api_time": api_time})
}

#[test]
fn flat_requests_split_into_agent_chains_spawned_where_0_13_spawns_them() {
    // r1 starts while r0 runs: another agent off r0's context. r2 extends r0 (ended),
    // r3 extends r1. r5 keeps only the base of r4 and nothing returns to r4's context:
    // the same agent after a compaction. r6 extends r4's context on another model: an
    // agent of its own.
    let trace = serde_json::json!({
        "id": "flat", "models": ["m", "haiku"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            flat(0.0, 2.0, "m", 1, &[1, 2]),
            flat(1.0, 3.0, "m", 2, &[1, 2, 30]),
            flat(3.0, 1.0, "m", 3, &[1, 2, 3]),
            flat(4.5, 1.0, "m", 4, &[1, 2, 30, 31]),
            flat(6.0, 1.0, "m", 5, &[1, 2, 3, 4]),
            flat(7.0, 1.0, "m", 6, &[1, 2, 9]),
            flat(7.5, 0.2, "haiku", 7, &[1, 2, 3, 4, 5, 6]),
        ]
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flat.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let loaded = load(&file, false);
    assert_eq!(loaded.conversations.len(), 1);
    let root = &loaded.conversations[0];
    let outputs =
        |c: &Conversation| -> Vec<u32> { c.turns.iter().map(|t| t.max_tokens.unwrap()).collect() };
    assert_eq!(outputs(root), [1, 3, 5, 6]);
    // fa:000 (r1, r3; ends at 5.5 s) starts 1 s after r0 is sent, while r0 is in flight,
    // and r4 (main turn 2, the first at or after 5.5 s) waits for it. The one-shot on
    // another model is a sidecar, aux:001: it starts 0.5 s after r5 is sent, also in
    // flight, and nothing joins it.
    assert_eq!(
        tree(root),
        [
            vec![(Some(2), vec![("flat::fa:000".to_owned(), Some(1000.0))])],
            vec![],
            vec![],
            vec![(None, vec![("flat::aux:001".to_owned(), Some(500.0))])],
        ]
    );
    assert!(root.turns[0].branches[0].on_send);
    assert!(root.turns[3].branches[0].on_send);
    let worker = &root.turns[0].branches[0].children[0];
    assert_eq!(outputs(worker), [2, 4]);
    // Its second request waits its own idle gap: 4.5 − (1.0 + 3.0) s.
    assert_eq!(worker.turns[1].delay_ms, Some(500.0));
    assert_eq!(outputs(&root.turns[3].branches[0].children[0]), [7]);
    // The main chain's turns wait the idle gaps of its own requests: r2 after r0.
    assert_eq!(root.turns[1].delay_ms, Some(1000.0));
}

#[test]
fn a_subagents_extra_chains_run_beside_it_and_a_spawn_after_the_reply_waits_for_it() {
    // The subagent's third request shares no context with its first two: a sibling
    // one-shot of a small context, `::sa:a:aux:000`, started with the subagent, 0.5 s
    // after the spawn. The spawn (at
    // 2 s) is after r0's end (1 s): the children start once r0 has its reply.
    let trace = serde_json::json!({
        "id": "nest", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            flat(0.0, 1.0, "m", 1, &[1, 2]),
            subagent("a", 2.0, Some(3000), &[
                flat(2.0, 0.3, "m", 2, &[5, 6]),
                flat(2.4, 0.5, "m", 3, &[5, 6, 7]),
                flat(2.5, 1.0, "m", 3, &[8, 9]),
            ]),
            flat(6.0, 1.0, "m", 4, &[1, 2, 3]),
        ]
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nest.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let root = &load(&file, false).conversations[0];
    assert_eq!(
        tree(root),
        [
            vec![(
                Some(1),
                vec![
                    ("nest::sa:a".to_owned(), Some(0.0)),
                    ("nest::sa:a:aux:000".to_owned(), Some(500.0)),
                ]
            )],
            vec![],
        ]
    );
    assert!(!root.turns[0].branches[0].on_send);
}

#[test]
fn prompts_come_from_the_coding_corpus_unless_another_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), TRACE).unwrap();
    let with_corpus = |corpus| {
        let options = CustomDatasetOptions {
            seed: 4,
            corpus,
            ..CustomDatasetOptions::default()
        };
        let loaded = load_custom_dataset(dir.path(), &options, &Tokenizer::builtin()).unwrap();
        loaded.conversations[0].turns[0].texts.clone()
    };
    let unnamed = with_corpus(None);
    assert_eq!(unnamed, with_corpus(Some(PromptCorpus::Coding)));
    assert_ne!(unnamed, with_corpus(Some(PromptCorpus::Sonnet)));
}

#[test]
fn a_request_longer_than_its_recorded_blocks_continues_with_fresh_tokens() {
    // Block size 16: both requests recorded one block for 40 tokens (prefix only, as
    // 0.13 reads them); the third is cut to the ⌈20 / 16⌉ = 2 blocks it needs.
    let trace = r#"{"id": "p", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
      "requests": [
        {"t": 0.0, "type": "n", "model": "m", "in": 40, "out": 1, "hash_ids": [1], "api_time": 0.1},
        {"t": 1.0, "type": "n", "model": "m", "in": 40, "out": 1, "hash_ids": [1], "api_time": 0.1},
        {"t": 2.0, "type": "n", "model": "m", "in": 20, "out": 1, "hash_ids": [1, 2, 3], "api_time": 0.1}
      ]}"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.json"), trace).unwrap();
    let options = CustomDatasetOptions {
        seed: 4,
        corpus: Some(PromptCorpus::Sonnet),
        ..CustomDatasetOptions::default()
    };
    let tokenizer = Tokenizer::builtin();
    let loaded = load_custom_dataset(dir.path(), &options, &tokenizer).unwrap();
    let tokens: Vec<Vec<u32>> = loaded.conversations[0]
        .turns
        .iter()
        .map(|t| tokenizer.encode(&t.texts[0]))
        .collect();
    assert_eq!(
        tokens.iter().map(Vec::len).collect::<Vec<_>>(),
        [40, 40, 20]
    );
    // Hash id 1 leads all three; the fresh tails of the first two differ.
    assert_eq!(tokens[0][..16], tokens[1][..16]);
    assert_eq!(tokens[0][..16], tokens[2][..16]);
    assert_ne!(tokens[0][16..], tokens[1][16..]);
}

#[test]
fn deferred_prompts_are_made_as_the_same_text_as_at_load() {
    // a: a subagent; b: flat requests split into agent chains (a worker and a sidecar);
    // c: prefix-only requests (their fresh tails drawn in request order) and one
    // without hash ids (drawn from the same stream).
    let flat_chains = serde_json::json!({
        "id": "flat", "models": ["m", "haiku"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            flat(0.0, 2.0, "m", 1, &[1, 2]),
            flat(1.0, 3.0, "m", 2, &[1, 2, 30]),
            flat(3.0, 1.0, "m", 3, &[1, 2, 3]),
            flat(4.5, 1.0, "m", 4, &[1, 2, 30, 31]),
            flat(7.5, 0.2, "haiku", 7, &[1, 2, 3, 4, 5, 6]),
        ]
    });
    let prefix_only = r#"{"id": "p", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
      "requests": [
        {"t": 0.0, "type": "n", "model": "m", "in": 40, "out": 1, "hash_ids": [1], "api_time": 0.1},
        {"t": 1.0, "type": "n", "model": "m", "in": 40, "out": 1, "hash_ids": [1], "api_time": 0.1},
        {"t": 1.5, "type": "n", "model": "m", "in": 12, "out": 1, "api_time": 0.1},
        {"t": 2.0, "type": "n", "model": "m", "in": 20, "out": 1, "hash_ids": [1, 2, 3], "api_time": 0.1}
      ]}"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), TRACE).unwrap();
    std::fs::write(dir.path().join("b.json"), flat_chains.to_string()).unwrap();
    std::fs::write(dir.path().join("c.json"), prefix_only).unwrap();
    let load = |defer_prompts| {
        let options = CustomDatasetOptions {
            seed: 4,
            defer_prompts,
            ..CustomDatasetOptions::default()
        };
        load_custom_dataset(dir.path(), &options, &Tokenizer::builtin()).unwrap()
    };
    let eager = load(false);
    let deferred = load(true);
    // (texts, has a recipe) of every turn, child sessions' included, in session order.
    let turns = |loaded: &LoadedDataset| -> Vec<(usize, bool)> {
        loaded
            .conversations
            .iter()
            .flat_map(Conversation::with_descendants)
            .flat_map(|session| &session.turns)
            .map(|turn| (turn.texts.len(), turn.deferred_text.is_some()))
            .collect()
    };
    assert_eq!(turns(&eager), [(1, false); 12]);
    assert_eq!(turns(&deferred), [(0, true); 12]);
    let sessions = |loaded: &LoadedDataset| -> Vec<String> {
        loaded
            .conversations
            .iter()
            .flat_map(Conversation::with_descendants)
            .map(|session| session.session_id.clone())
            .collect()
    };
    assert_eq!(
        sessions(&deferred),
        [
            "trace-a",
            "trace-a::sa:agent_001",
            "flat",
            "flat::fa:000",
            "flat::aux:001",
            "p"
        ]
    );
    // Made in any order (the last trace first), the same conversations: texts, timing,
    // output lengths and the chains and subagents they start.
    let made: Vec<Conversation> = deferred
        .conversations
        .iter()
        .rev()
        .map(Conversation::materialized)
        .collect();
    let eager_reversed: Vec<Conversation> = eager.conversations.iter().rev().cloned().collect();
    assert_eq!(made, eager_reversed);
    // p's prompts, made from recipes: 40 tokens each from hash id 1 and a fresh tail.
    let tokenizer = Tokenizer::builtin();
    let p: Vec<Vec<u32>> = made[0]
        .turns
        .iter()
        .map(|turn| tokenizer.encode(&turn.texts[0]))
        .collect();
    assert_eq!(p.iter().map(Vec::len).collect::<Vec<_>>(), [40, 40, 12, 20]);
    assert_eq!(p[0][..16], p[1][..16]);
    assert_ne!(p[0][16..], p[1][16..]);
}
