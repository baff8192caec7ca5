//! `--synthesis-*` applied while a trace loads: the prompts follow the synthesized
//! lengths and shared blocks, timestamps and output lengths are scaled, and requests
//! over `max_isl` are gone; a prefix-only line's fresh tail gets blocks of its own. Non-trace
//! formats refuse synthesis.
#![allow(clippy::unwrap_used)]

use std::io::Write;

use aiperf_core::config::{CustomDatasetType, TraceSynthesis};
use aiperf_datasets::custom::synthesize_mooncake_trace;
use aiperf_datasets::{load_custom_dataset, CustomDatasetOptions, LoadedDataset, Tokenizer};

const TRACE: &str = "{\"timestamp\": 1000, \"input_length\": 40, \"output_length\": 9, \"hash_ids\": [1, 2, 3]}\n\
                     {\"timestamp\": 3001, \"input_length\": 36, \"output_length\": 4, \"hash_ids\": [1, 2, 4]}\n\
                     {\"timestamp\": 5000, \"input_length\": 90, \"output_length\": 5, \"hash_ids\": [7, 8, 9, 10, 11, 12]}\n";

fn load(
    contents: &str,
    dataset_type: CustomDatasetType,
    synthesis: TraceSynthesis,
) -> Result<LoadedDataset, aiperf_datasets::DatasetFileError> {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(contents.as_bytes()).unwrap();
    let options = CustomDatasetOptions {
        dataset_type: Some(dataset_type),
        block_size: Some(16),
        seed: 3,
        synthesis,
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(file.path(), &options, &Tokenizer::builtin())
}

#[test]
fn a_mooncake_trace_is_synthesized_before_its_prompts_are_made() {
    let synthesis = TraceSynthesis {
        speedup_ratio: 2.0,
        prompt_len_multiplier: 2.0,
        output_len_multiplier: 1.5,
        max_isl: Some(64),
        max_osl: Some(12),
        ..TraceSynthesis::default()
    };
    let loaded = load(TRACE, CustomDatasetType::MooncakeTrace, synthesis).unwrap();
    let turns: Vec<_> = loaded.conversations.iter().map(|c| &c.turns[0]).collect();
    // The 90-token line is over max_isl.
    assert_eq!(turns.len(), 2);
    assert_eq!(
        turns.iter().map(|t| t.timestamp_ms).collect::<Vec<_>>(),
        vec![Some(500.0), Some(1500.0)]
    );
    // 9 × 1.5 = 13.5 → 14, capped to 12; 4 × 1.5 = 6.
    assert_eq!(
        turns.iter().map(|t| t.max_tokens).collect::<Vec<_>>(),
        vec![Some(12), Some(6)]
    );
    // Shared prefix [1, 2] = 32 tokens stays; the unique 8 and 4 tokens double.
    let tokenizer = Tokenizer::builtin();
    let tokens: Vec<Vec<u32>> = turns
        .iter()
        .map(|t| tokenizer.encode(&t.texts[0]))
        .collect();
    assert_eq!(tokens[0].len(), 32 + 16);
    assert_eq!(tokens[1].len(), 32 + 8);
}

#[test]
fn synthesis_of_a_non_trace_format_is_an_error() {
    let synthesis = TraceSynthesis {
        speedup_ratio: 2.0,
        ..TraceSynthesis::default()
    };
    let error = load(
        "{\"text\": \"hi\"}\n",
        CustomDatasetType::SingleTurn,
        synthesis,
    )
    .unwrap_err();
    assert!(
        error.to_string().ends_with(
            "--synthesis-* options apply to mooncake_trace, bailian_trace and \
             burst_gpt_trace files, not single_turn"
        ),
        "{error}"
    );
}

#[test]
fn a_prefix_only_line_is_synthesized_with_blocks_for_its_fresh_tail() {
    // Block size 16: line 1 is prefix only (two whole blocks, then 8 fresh tokens).
    let trace = "{\"input_length\": 40, \"hash_ids\": [1, 2]}\n\
                 {\"input_length\": 32, \"hash_ids\": [1, 2]}\n";
    let synthesis = TraceSynthesis {
        prompt_len_multiplier: 2.0,
        ..TraceSynthesis::default()
    };
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(trace.as_bytes()).unwrap();
    let written = synthesize_mooncake_trace(file.path(), &synthesis, 16, 3).unwrap();
    // The shared [1, 2] stays; the 8 fresh tokens double and get a block id of their own.
    assert_eq!(
        written.to_jsonl(),
        "{\"input_length\":48,\"hash_ids\":[1,2,3]}\n{\"input_length\":32,\"hash_ids\":[1,2]}\n"
    );

    let loaded = load(trace, CustomDatasetType::MooncakeTrace, synthesis).unwrap();
    let tokenizer = Tokenizer::builtin();
    let tokens: Vec<Vec<u32>> = loaded
        .conversations
        .iter()
        .map(|c| tokenizer.encode(&c.turns[0].texts[0]))
        .collect();
    assert_eq!(tokens[0].len(), 48);
    assert_eq!(tokens[0][..32], tokens[1][..]);
}
