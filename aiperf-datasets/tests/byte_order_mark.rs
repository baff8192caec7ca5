//! A UTF-8 byte-order mark at the start of a dataset file (as Windows editors and
//! Excel's "CSV UTF-8" write it) is skipped by every text loader: the file loads exactly
//! as it does without one.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use aiperf_core::Conversation;
use aiperf_datasets::trace_analysis::analyze_trace_file;
use aiperf_datasets::{load_custom_dataset, load_sharegpt, CustomDatasetOptions, Tokenizer};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/custom")
        .join(name)
}

/// A copy of fixture `name` in `dir` with a byte-order mark in front.
fn with_bom(dir: &Path, name: &str) -> PathBuf {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(fixture(name)).unwrap());
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The conversations and the detected type of a custom dataset file (seed 7; the
/// mooncake fixture is written for 10-token blocks).
fn custom(path: &Path) -> (String, Vec<Conversation>) {
    let mooncake = path.ends_with("mooncake.jsonl");
    let options = CustomDatasetOptions {
        seed: 7,
        block_size: mooncake.then_some(10),
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(path, &options, &Tokenizer::builtin())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (
        loaded.dataset_type.as_str().to_owned(),
        loaded.conversations,
    )
}

#[test]
fn jsonl_formats_load_and_are_detected_as_without_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "single_turn.jsonl",
        "multi_turn.jsonl",
        "mooncake.jsonl",
        "bailian.jsonl",
    ] {
        assert_eq!(
            custom(&with_bom(dir.path(), name)),
            custom(&fixture(name)),
            "{name}"
        );
    }
}

#[test]
fn a_burst_gpt_csv_loads_and_is_detected_as_without_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    let (kind, conversations) = custom(&with_bom(dir.path(), "burst.csv"));
    assert_eq!(kind, "burst_gpt_trace");
    assert_eq!((kind, conversations), custom(&fixture("burst.csv")));
}

#[test]
fn a_sharegpt_json_file_loads_as_without_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = Tokenizer::builtin();
    let with = load_sharegpt(&with_bom(dir.path(), "sharegpt.json"), false, &tokenizer).unwrap();
    assert_eq!(
        with,
        load_sharegpt(&fixture("sharegpt.json"), false, &tokenizer).unwrap()
    );
}

#[test]
fn a_trace_is_analysed_as_without_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "{\"input_length\": 20, \"output_length\": 5, \"hash_ids\": [1, 2]}\n\
                 {\"input_length\": 25, \"output_length\": 6, \"hash_ids\": [1, 3]}\n";
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, trace).unwrap();
    let bom = dir.path().join("bom.jsonl");
    std::fs::write(&bom, format!("\u{feff}{trace}")).unwrap();
    let with = analyze_trace_file(&bom, 16).unwrap();
    let without = analyze_trace_file(&plain, 16).unwrap();
    assert_eq!(format!("{with:?}"), format!("{without:?}"));
}
