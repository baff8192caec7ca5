//! Trace prompts from `hash_ids`: equal hash ids give identical token blocks, the seed
//! and the hash id alone decide a block, prefix-only lines get fresh tails, the real
//! Qwen3 tokenizer separates blocks with its EOS token, and the real mooncake trace loads.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use aiperf_core::config::{CustomDatasetType, PromptCorpus, RandomCorpusStyle};
use aiperf_datasets::custom::HashIdPrompts;
use aiperf_datasets::{load_custom_dataset, CustomDatasetOptions, LoadedDataset, Tokenizer};

const TRACE: &str = "{\"input_length\": 48, \"hash_ids\": [1, 2, 3]}\n\
                     {\"input_length\": 40, \"hash_ids\": [1, 2, 4]}\n\
                     {\"input_length\": 20, \"hash_ids\": [5, 2]}\n";

/// Block size 16: lines 1 and 2 are prefix only (the two blocks whole, then 8 and 13
/// fresh tokens), line 3 is the two blocks alone.
const PREFIX_ONLY: &str = "{\"input_length\": 40, \"hash_ids\": [1, 2]}\n\
                           {\"input_length\": 45, \"hash_ids\": [1, 2]}\n\
                           {\"input_length\": 32, \"hash_ids\": [1, 2]}\n";

fn load_trace(tokenizer: &Tokenizer, seed: u64) -> LoadedDataset {
    load_text(TRACE, tokenizer, seed)
}

/// `trace` as a mooncake trace of 16-token blocks.
fn load_text(trace: &str, tokenizer: &Tokenizer, seed: u64) -> LoadedDataset {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(trace.as_bytes()).unwrap();
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::MooncakeTrace),
        block_size: Some(16),
        seed,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(file.path(), &options, tokenizer).unwrap()
}

/// The prompts `load_text` makes at seed 11: 16-token blocks of `sonnet`.
fn sonnet_blocks_of_16(tokenizer: &Tokenizer) -> HashIdPrompts {
    HashIdPrompts::new(
        tokenizer.clone(),
        11,
        16,
        PromptCorpus::Sonnet,
        RandomCorpusStyle::Vllm,
    )
    .unwrap()
}

fn prompts(loaded: &LoadedDataset) -> Vec<String> {
    loaded
        .conversations
        .iter()
        .map(|c| c.turns[0].texts[0].clone())
        .collect()
}

#[test]
fn shared_leading_hash_ids_share_exactly_those_token_blocks() {
    let tokenizer = Tokenizer::builtin();
    let texts = prompts(&load_trace(&tokenizer, 11));
    let tokens: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(t)).collect();
    // Blocks start at word boundaries, so the decoded text re-encodes to the same tokens.
    let mut expected = sonnet_blocks_of_16(&tokenizer);
    assert_eq!(tokens[0], expected.tokens(48, &[1, 2, 3]).unwrap());
    assert_eq!(tokens[1], expected.tokens(40, &[1, 2, 4]).unwrap());
    assert_eq!(tokens[2], expected.tokens(20, &[5, 2]).unwrap());
    assert_eq!(
        tokens.iter().map(Vec::len).collect::<Vec<_>>(),
        [48, 40, 20]
    );

    // [1, 2, 3] and [1, 2, 4]: the first two blocks (32 tokens) and nothing more.
    assert_eq!(tokens[0][..32], tokens[1][..32]);
    assert_ne!(tokens[0][32..40], tokens[1][32..40]);
    assert!(texts[1].starts_with(&tokenizer.decode(&tokens[0][..32])));
    // Hash id 2 is the same block at another position; hash id 5 is a new block.
    assert_eq!(tokens[2][16..], tokens[0][16..20]);
    assert_ne!(tokens[2][..16], tokens[0][..16]);
}

#[test]
fn prefix_only_lines_are_whole_blocks_then_fresh_tokens() {
    let tokenizer = Tokenizer::builtin();
    let texts = prompts(&load_text(PREFIX_ONLY, &tokenizer, 11));
    let tokens: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(t)).collect();
    assert_eq!(
        tokens.iter().map(Vec::len).collect::<Vec<_>>(),
        [40, 45, 32]
    );
    let mut expected = sonnet_blocks_of_16(&tokenizer);
    assert_eq!(tokens[0], expected.tokens(40, &[1, 2]).unwrap());
    assert_eq!(tokens[1], expected.tokens(45, &[1, 2]).unwrap());
    assert_eq!(tokens[2], expected.tokens(32, &[1, 2]).unwrap());
    // The blocks of hash ids 1 and 2 lead both prefix-only prompts; their tails are
    // their own.
    assert_eq!(tokens[0][..32], tokens[2][..]);
    assert_eq!(tokens[1][..32], tokens[2][..]);
    assert_ne!(tokens[0][32..40], tokens[1][32..40]);
    // A tail is not cached: the same line asked for again gets another.
    let again = expected.tokens(40, &[1, 2]).unwrap();
    assert_eq!(again[..32], tokens[0][..32]);
    assert_ne!(again[32..], tokens[0][32..]);
}

#[test]
fn a_hash_id_has_the_same_block_in_a_slice_of_the_trace_or_another_trace() {
    let tokenizer = Tokenizer::builtin();
    let whole = prompts(&load_text(TRACE, &tokenizer, 11));
    // The trace's last line alone, and its lines in another order among other lines.
    let slice = prompts(&load_text(
        "{\"input_length\": 20, \"hash_ids\": [5, 2]}\n",
        &tokenizer,
        11,
    ));
    assert_eq!(slice[0], whole[2]);
    let other = prompts(&load_text(
        "{\"input_length\": 64, \"hash_ids\": [8, 7, 6, 4]}\n\
         {\"input_length\": 20, \"hash_ids\": [5, 2]}\n\
         {\"input_length\": 48, \"hash_ids\": [1, 2, 3]}\n",
        &tokenizer,
        11,
    ));
    assert_eq!(other[1], whole[2]);
    assert_eq!(other[2], whole[0]);
    // Hash id 4 is the whole block here and a short final block in the trace: the short
    // block is the start of the whole one.
    let whole_4 = tokenizer.encode(&other[0])[48..].to_vec();
    assert_eq!(tokenizer.encode(&whole[1])[32..], whole_4[..8]);
}

#[test]
fn the_seed_and_the_hash_id_alone_decide_a_block() {
    let block = |seed, id| {
        HashIdPrompts::new(
            Tokenizer::builtin(),
            seed,
            8,
            PromptCorpus::Sonnet,
            RandomCorpusStyle::Vllm,
        )
        .unwrap()
        .prompt(8, &[id])
        .unwrap()
    };
    // Pinned: a change here changes every trace prompt made with the same seed.
    assert_eq!(block(42, 1), " in neat rows behind the porch with great");
    assert_eq!(
        block(42, 1_000_000),
        " simple designs that used to unpack. The"
    );
    assert_ne!(block(43, 1), block(42, 1));
}

#[test]
fn the_seed_decides_the_blocks() {
    let tokenizer = Tokenizer::builtin();
    let a = prompts(&load_trace(&tokenizer, 1));
    assert_eq!(a, prompts(&load_trace(&tokenizer, 1)));
    let b = prompts(&load_trace(&tokenizer, 2));
    for (a, b) in a.iter().zip(&b) {
        assert_ne!(a, b);
    }
}

/// The Qwen3 `tokenizer.json` (beside its `tokenizer_config.json`), or `None` when
/// `AIPERF_TEST_TOKENIZER_DIR` is unset outside CI.
#[cfg(feature = "hf-tokenizers")]
fn qwen3_path() -> Option<std::path::PathBuf> {
    if let Ok(dir) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") {
        Some(
            std::path::PathBuf::from(dir)
                .join("qwen3")
                .join("tokenizer.json"),
        )
    } else {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true")),
            "CI=true but AIPERF_TEST_TOKENIZER_DIR is not set"
        );
        eprintln!("skipping Qwen3 block-separator test: AIPERF_TEST_TOKENIZER_DIR is not set");
        None
    }
}

#[cfg(feature = "hf-tokenizers")]
#[test]
fn qwen3_blocks_open_with_its_eos_token() {
    let Some(path) = qwen3_path() else {
        return;
    };
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    // Qwen3's tokenizer_config.json: no bos_token, eos_token <|im_end|>.
    let im_end = tokenizer.encode("<|im_end|>");
    assert_eq!(im_end.len(), 1);
    let generator = sonnet_blocks_of_16(&tokenizer);
    let separator = generator.separator().unwrap();
    assert_eq!(
        (separator.id, separator.text.as_str()),
        (im_end[0], "<|im_end|>")
    );

    let texts = prompts(&load_trace(&tokenizer, 11));
    assert_eq!(texts[0].matches("<|im_end|>").count(), 3);
    assert!(texts[0].starts_with("<|im_end|>"));
    let tokens: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(t)).collect();
    for (tokens, length) in tokens.iter().zip([48, 40, 20]) {
        assert_eq!(tokens.len(), length);
    }
    // Every block starts with the separator, so blocks re-encode independently.
    for start in [0, 16, 32] {
        assert_eq!(tokens[0][start], im_end[0]);
    }
    assert_eq!(tokens[0][..32], tokens[1][..32]);
    assert_ne!(tokens[0][33..40], tokens[1][33..40]);
}

#[cfg(feature = "hf-tokenizers")]
#[test]
fn qwen3_prefix_only_lines_encode_to_exactly_their_input_length() {
    let Some(path) = qwen3_path() else {
        return;
    };
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    let im_end = tokenizer.encode("<|im_end|>")[0];
    let texts = prompts(&load_text(PREFIX_ONLY, &tokenizer, 11));
    let tokens: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(t)).collect();
    assert_eq!(
        tokens.iter().map(Vec::len).collect::<Vec<_>>(),
        [40, 45, 32]
    );
    // Two blocks and the tail, each opened by the separator.
    assert_eq!(texts[0].matches("<|im_end|>").count(), 3);
    assert_eq!(texts[2].matches("<|im_end|>").count(), 2);
    for start in [0, 16, 32] {
        assert_eq!(tokens[0][start], im_end);
        assert_eq!(tokens[1][start], im_end);
    }
    assert_eq!(tokens[0][..32], tokens[2][..]);
    assert_eq!(tokens[1][..32], tokens[2][..]);
    assert_ne!(tokens[0][33..40], tokens[1][33..40]);
}

#[test]
fn the_real_mooncake_trace_loads_one_conversation_per_line() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/mooncake_synthetic_trace.jsonl");
    if !path.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} is missing and CI=true",
            path.display()
        );
        eprintln!("skipping: {} not found", path.display());
        return;
    }
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let options = CustomDatasetOptions {
        seed: 42,
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(&path, &options, &Tokenizer::builtin()).unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::MooncakeTrace);
    assert!(loaded.timestamped);
    assert_eq!(loaded.conversations.len(), lines);
    assert_eq!(lines, 3993);
    let first = &loaded.conversations[0].turns[0];
    assert_eq!(first.max_tokens, Some(6));
    assert_eq!(first.timestamp_ms, Some(0.0));

    // Its 2,211 distinct first hash ids (all below 44,000) get 2,211 distinct first
    // blocks: no two unrelated requests share a false prefix.
    let roots: HashSet<u64> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).ok()?;
            line["hash_ids"][0].as_u64()
        })
        .collect();
    assert_eq!(roots.len(), 2211);
    let mut blocks = HashIdPrompts::new(
        Tokenizer::builtin(),
        42,
        512,
        PromptCorpus::Sonnet,
        RandomCorpusStyle::Vllm,
    )
    .unwrap();
    let distinct: HashSet<Vec<u32>> = roots
        .iter()
        .map(|root| blocks.tokens(512, &[*root]).unwrap())
        .collect();
    assert_eq!(distinct.len(), 2211);
}

#[test]
fn deferred_prompts_are_made_as_the_same_text_as_at_load() {
    // Block 9 is first a short final block, then needed whole; line 3 has no hash ids
    // (made at load either way, from the same corpus stream); line 5 is prefix only.
    let trace = "{\"timestamp\": 0, \"input_length\": 21, \"hash_ids\": [1, 9]}\n\
                 {\"timestamp\": 5, \"input_length\": 40, \"hash_ids\": [1, 9, 2]}\n\
                 {\"timestamp\": 9, \"input_length\": 7}\n\
                 {\"timestamp\": 12, \"input_length\": 16, \"hash_ids\": [3]}\n\
                 {\"timestamp\": 15, \"input_length\": 50, \"hash_ids\": [1, 9]}\n";
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(trace.as_bytes()).unwrap();
    let tokenizer = Tokenizer::builtin();
    let load = |defer_prompts| {
        let options = CustomDatasetOptions {
            dataset_type: Some(CustomDatasetType::MooncakeTrace),
            block_size: Some(16),
            seed: 5,
            defer_prompts,
            ..CustomDatasetOptions::default()
        };
        load_custom_dataset(file.path(), &options, &tokenizer).unwrap()
    };
    let eager = load(false);
    let deferred = load(true);
    let turns = |loaded: &LoadedDataset| {
        loaded
            .conversations
            .iter()
            .map(|c| (c.turns[0].texts.len(), c.turns[0].deferred_text.is_some()))
            .collect::<Vec<_>>()
    };
    assert_eq!(turns(&eager), [(1, false); 5]);
    assert_eq!(
        turns(&deferred),
        [(0, true), (0, true), (1, false), (0, true), (0, true)]
    );
    // Made in any order (the last first), the same text.
    let made: Vec<_> = deferred
        .conversations
        .iter()
        .rev()
        .map(aiperf_core::Conversation::materialized)
        .collect();
    let eager_reversed: Vec<_> = eager.conversations.iter().rev().cloned().collect();
    assert_eq!(made, eager_reversed);
    let prefix_only = &made[0].turns[0].texts[0];
    assert_eq!(tokenizer.count(prefix_only), 50);
    assert!(prefix_only.starts_with(&made[4].turns[0].texts[0][..]));
}
