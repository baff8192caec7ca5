//! Each custom dataset format loads its fixture into exactly the expected conversations,
//! and the format of each is detected without `--custom-dataset-type`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use aiperf_core::config::{CustomDatasetType, PromptCorpus, RandomCorpusStyle};
use aiperf_core::{ContextMode, DatasetSource, SamplingStrategy, Turn};
use aiperf_datasets::custom::{CustomDataset, HashIdPrompts};
use aiperf_datasets::{detect_dataset_type, load_custom_dataset, CustomDatasetOptions, Tokenizer};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/custom")
        .join(name)
}

fn options(seed: u64) -> CustomDatasetOptions {
    CustomDatasetOptions {
        seed,
        ..CustomDatasetOptions::default()
    }
}

fn object(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

#[test]
fn single_turn_lines_sessions_and_media() {
    let tokenizer = Tokenizer::builtin();
    let loaded =
        load_custom_dataset(&fixture("single_turn.jsonl"), &options(1), &tokenizer).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::SingleTurn);
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Sequential);
    assert!(loaded.timestamped);
    let c = &loaded.conversations;
    assert_eq!(c.len(), 4, "{c:#?}");

    // A line without a session id opens a conversation numbered as in Python.
    assert_eq!(c[0].session_id, "session_000000");
    assert_eq!(c[0].context_mode, ContextMode::DeltasWithoutResponses);
    assert_eq!(
        c[0].turns,
        [Turn {
            texts: vec!["Hello there".into()],
            max_tokens: Some(12),
            timestamp_ms: Some(0.0),
            ..Turn::default()
        }]
    );

    assert_eq!(c[1].session_id, "chat-a");
    assert_eq!(c[1].context_mode, ContextMode::MessageArrayWithResponses);
    assert_eq!(
        c[1].turns,
        [
            Turn {
                role: Some("user".into()),
                texts: vec!["q1".into(), "p1".into(), "p2".into()],
                timestamp_ms: Some(250.5),
                ..Turn::default()
            },
            Turn {
                texts: vec!["Second of chat-a".into()],
                timestamp_ms: Some(900.0),
                extra: object(json!({"temperature": 0.5})),
                ..Turn::default()
            }
        ]
    );

    assert_eq!(
        c[2].turns,
        [Turn {
            texts: vec!["Describe the cat".into()],
            images: vec!["https://example.com/cat.png".into()],
            delay_ms: Some(30.0),
            ..Turn::default()
        }]
    );
    assert_eq!(c[3].turns[0].audios, ["wav,UklGRg=="]);
    assert_eq!(c[3].turns[0].videos, ["data:video/mp4;base64,AAAA"]);
    assert!(c[3].turns[0].texts.is_empty());
    assert_eq!(c[2].session_id, "session_000001");
    assert_eq!(c[3].session_id, "session_000002");

    let again =
        load_custom_dataset(&fixture("single_turn.jsonl"), &options(1), &tokenizer).unwrap();
    assert_eq!(again, loaded);
}

#[test]
fn single_turn_local_media_files_are_base64_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("dot.png");
    std::fs::write(&image, b"\x89PNG\r\n\x1a\n").unwrap();
    let audio = dir.path().join("beep.mp3");
    std::fs::write(&audio, b"ID3").unwrap();
    let file = dir.path().join("media.jsonl");
    std::fs::write(
        &file,
        json!({"images": [image], "audio": audio, "text": "t"}).to_string(),
    )
    .unwrap();
    let loaded = load_custom_dataset(&file, &options(0), &Tokenizer::builtin()).unwrap();
    let turn = &loaded.conversations[0].turns[0];
    assert_eq!(turn.images, ["data:image/png;base64,iVBORw0KGgo="]);
    assert_eq!(turn.audios, ["mp3,SUQz"]);
    assert!(!loaded.timestamped);
}

#[test]
fn multi_turn_lines_accumulate_into_sessions() {
    let loaded = load_custom_dataset(
        &fixture("multi_turn.jsonl"),
        &options(3),
        &Tokenizer::builtin(),
    )
    .unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::MultiTurn);
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Sequential);
    assert!(
        !loaded.timestamped,
        "the first turn has a delay, not a timestamp"
    );
    let c = &loaded.conversations;
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].session_id, "m1");
    assert_eq!(c[0].context_mode, ContextMode::DeltasWithoutResponses);
    assert_eq!(
        c[0].turns,
        [
            Turn {
                texts: vec!["Hi".into()],
                delay_ms: Some(0.0),
                ..Turn::default()
            },
            Turn {
                texts: vec!["Tell me more".into()],
                delay_ms: Some(1000.0),
                max_tokens: Some(5),
                ..Turn::default()
            },
            Turn::text("And finally"),
        ]
    );
    assert_eq!(c[1].session_id, "session_000000");
    assert_eq!(
        c[1].turns,
        [Turn {
            texts: vec!["a".into(), "b".into()],
            timestamp_ms: Some(10.0),
            extra: object(json!({"top_p": 0.9})),
            ..Turn::default()
        }]
    );
}

#[test]
fn random_pool_file_draws_seeded_single_turn_conversations() {
    let tokenizer = Tokenizer::builtin();
    let mut opts = options(5);
    opts.num_conversations = Some(40);
    opts.dataset_type = Some(CustomDatasetType::RandomPool);
    let loaded = load_custom_dataset(&fixture("pool.jsonl"), &opts, &tokenizer).unwrap();
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Shuffle);
    assert_eq!(loaded.conversations.len(), 40);
    let entries: [&[&str]; 3] = [
        &["pool one"],
        &["pool two"],
        &["pool three a", "pool three b"],
    ];
    let mut seen = [false; 3];
    for conversation in &loaded.conversations {
        assert_eq!(conversation.turns.len(), 1);
        let texts = &conversation.turns[0].texts;
        let which = entries.iter().position(|e| texts == e).unwrap();
        seen[which] = true;
    }
    assert_eq!(
        seen, [true; 3],
        "40 draws with replacement reach every entry"
    );
    assert_eq!(
        load_custom_dataset(&fixture("pool.jsonl"), &opts, &tokenizer).unwrap(),
        loaded
    );
    opts.seed = 6;
    assert_ne!(
        load_custom_dataset(&fixture("pool.jsonl"), &opts, &tokenizer).unwrap(),
        loaded
    );
}

#[test]
fn random_pool_folder_is_one_pool_per_file() {
    let loaded =
        load_custom_dataset(&fixture("pool_dir"), &options(1), &Tokenizer::builtin()).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::RandomPool);
    assert_eq!(loaded.conversations.len(), 100, "the default pool size");
    for conversation in &loaded.conversations {
        let turn = &conversation.turns[0];
        assert_eq!(turn.images.len(), 1);
        assert!(turn.images[0].starts_with("https://example.com/"));
        assert_eq!(turn.texts.len(), 1);
        assert!(turn.texts[0].starts_with("query "));
    }
}

#[test]
fn mooncake_modes_sessions_and_prompts() {
    let tokenizer = Tokenizer::builtin();
    let mut opts = options(9);
    opts.block_size = Some(10);
    let loaded = load_custom_dataset(&fixture("mooncake.jsonl"), &opts, &tokenizer).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::MooncakeTrace);
    assert_eq!(loaded.preferred_sampling, SamplingStrategy::Sequential);
    assert!(loaded.timestamped);
    let c = &loaded.conversations;
    assert_eq!(c.len(), 5, "{c:#?}");

    // hash_ids [1, 2] and [1, 2, 3]: the same two leading blocks.
    let mut prompts = HashIdPrompts::new(
        tokenizer.clone(),
        9,
        10,
        PromptCorpus::Sonnet,
        RandomCorpusStyle::Vllm,
    )
    .unwrap();
    let first = prompts.tokens(20, &[1, 2]).unwrap();
    let second = prompts.tokens(25, &[1, 2, 3]).unwrap();
    assert_eq!(first[..], second[..20]);
    assert_eq!(c[0].turns[0].texts, [tokenizer.decode(&first)]);
    assert_eq!(c[1].turns[0].texts, [tokenizer.decode(&second)]);
    assert!(c[1].turns[0].texts[0].starts_with(&c[0].turns[0].texts[0]));
    assert_eq!(c[0].turns[0].max_tokens, Some(5));
    assert_eq!(c[1].turns[0].timestamp_ms, Some(10.0));
    assert_eq!(c[0].context_mode, ContextMode::DeltasWithoutResponses);

    // Session "s": a literal prompt, then a synthetic one of exactly 8 tokens.
    assert_eq!(c[2].session_id, "s");
    assert_eq!(c[2].context_mode, ContextMode::DeltasWithoutResponses);
    assert_eq!(
        c[2].turns[0],
        Turn {
            texts: vec!["a literal prompt".into()],
            max_tokens: Some(7),
            timestamp_ms: Some(20.0),
            ..Turn::default()
        }
    );
    let synthetic = &c[2].turns[1];
    assert_eq!(tokenizer.count(&synthetic.texts[0]), 8);
    assert_eq!(synthetic.max_tokens, None);
    assert_eq!(synthetic.extra, object(json!({"ignore_eos": true})));

    // Session "m": messages (with tools) sent verbatim, each line self-contained.
    assert_eq!(c[3].session_id, "m");
    assert_eq!(c[3].context_mode, ContextMode::MessageArrayWithResponses);
    assert_eq!(c[3].turns.len(), 2);
    assert_eq!(
        c[3].turns[0],
        Turn {
            raw_messages: Some(vec![json!({"role": "user", "content": "hi"})]),
            raw_tools: Some(vec![json!({"type": "function", "function": {"name": "f"}})]),
            timestamp_ms: Some(40.0),
            ..Turn::default()
        }
    );
    assert_eq!(c[3].turns[1].raw_messages.as_ref().unwrap().len(), 3);
    assert!(c[3].turns[1].texts.is_empty());

    assert_eq!(c[4].context_mode, ContextMode::MessageArrayWithResponses);
    assert_eq!(
        c[4].turns,
        [Turn {
            raw_payload: Some(json!({"prompt": "raw", "max_tokens": 3})),
            delay_ms: Some(60.0),
            ..Turn::default()
        }]
    );
}

#[test]
fn bailian_chains_become_sessions_sorted_by_turn() {
    let tokenizer = Tokenizer::builtin();
    let loaded = load_custom_dataset(&fixture("bailian.jsonl"), &options(4), &tokenizer).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::BailianTrace);
    assert!(loaded.timestamped);
    let c = &loaded.conversations;
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].session_id, "10");
    assert_eq!(c[1].session_id, "20");
    let stamps: Vec<Option<f64>> = c[0].turns.iter().map(|t| t.timestamp_ms).collect();
    assert_eq!(stamps, [Some(1500.0), Some(3000.0), Some(4250.0)]);
    let lengths: Vec<Option<u32>> = c[0].turns.iter().map(|t| t.max_tokens).collect();
    assert_eq!(lengths, [Some(4), Some(5), Some(6)]);
    assert_eq!(c[1].turns[0].timestamp_ms, Some(2000.0));

    // Default block size 16: the turns share hash ids 100 and 101.
    let mut prompts = HashIdPrompts::new(
        tokenizer.clone(),
        4,
        16,
        PromptCorpus::Sonnet,
        RandomCorpusStyle::Vllm,
    )
    .unwrap();
    let first = prompts.tokens(20, &[100, 101]).unwrap();
    let _other_session = prompts.tokens(16, &[200]).unwrap();
    let third = prompts.tokens(40, &[100, 101, 102]).unwrap();
    let second = prompts.tokens(33, &[100, 101, 103]).unwrap();
    assert_eq!(first[..], second[..20]);
    assert_eq!(second[..32], third[..32]);
    assert_ne!(second[32..33], third[32..33]);
    assert_eq!(c[0].turns[0].texts, [tokenizer.decode(&first)]);
    assert_eq!(c[0].turns[1].texts, [tokenizer.decode(&second)]);
    assert_eq!(c[0].turns[2].texts, [tokenizer.decode(&third)]);
}

#[test]
fn burst_gpt_rows_are_timestamped_single_turns() {
    let tokenizer = Tokenizer::builtin();
    let loaded = load_custom_dataset(&fixture("burst.csv"), &options(2), &tokenizer).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::BurstGptTrace);
    assert!(loaded.timestamped);
    let c = &loaded.conversations;
    assert_eq!(c.len(), 2);
    let summary: Vec<(usize, Option<u32>, Option<f64>)> = c
        .iter()
        .map(|c| {
            let turn = &c.turns[0];
            (
                tokenizer.count(&turn.texts[0]),
                turn.max_tokens,
                turn.timestamp_ms,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [(10, Some(20), Some(5000.0)), (7, Some(3), Some(6500.0))]
    );
}

#[test]
fn every_format_is_detected() {
    let cases = [
        ("single_turn.jsonl", CustomDatasetType::SingleTurn),
        ("multi_turn.jsonl", CustomDatasetType::MultiTurn),
        ("pool_dir", CustomDatasetType::RandomPool),
        ("mooncake.jsonl", CustomDatasetType::MooncakeTrace),
        ("bailian.jsonl", CustomDatasetType::BailianTrace),
        ("burst.csv", CustomDatasetType::BurstGptTrace),
    ];
    for (name, expected) in cases {
        assert_eq!(
            detect_dataset_type(&fixture(name)).unwrap(),
            expected,
            "{name}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for (line, expected) in [
        (r#"{"text_input": "x"}"#, CustomDatasetType::MooncakeTrace),
        (r#"{"messages": []}"#, CustomDatasetType::MooncakeTrace),
        (r#"{"payload": {}}"#, CustomDatasetType::MooncakeTrace),
        (r#"{"hash_ids": [1]}"#, CustomDatasetType::MooncakeTrace),
        (r#"{"images": ["u"]}"#, CustomDatasetType::SingleTurn),
    ] {
        let path = dir.path().join("probe.jsonl");
        std::fs::write(&path, format!("\n\n{line}\n")).unwrap();
        assert_eq!(detect_dataset_type(&path).unwrap(), expected, "{line}");
    }
}

#[test]
fn custom_dataset_is_a_dataset_source() {
    let mut source = CustomDataset::new(
        fixture("multi_turn.jsonl"),
        options(3),
        Tokenizer::builtin(),
    );
    let dataset = source.load().unwrap();
    assert_eq!(dataset.conversations.len(), 2);
    assert_eq!(dataset.preferred_sampling, SamplingStrategy::Sequential);
    assert!(!dataset.timestamped);
    assert_eq!(
        source.load_dataset().unwrap().conversations,
        dataset.conversations
    );
}
