//! AFL++ target: every dataset loader of aiperf-datasets.
//!
//! Input: byte 0 picks the loader (modulo 9): the custom-file loader with the format
//! detected, then with each `--custom-dataset-type` (mooncake, bailian, BurstGPT CSV,
//! multi-turn, single-turn, random pool), the ShareGPT JSON loader, and the trace
//! analyser (`analyze-trace`). Byte 1 is an option: `--isl-block-size` (0 = the format's
//! default; the analyser gets it as is, so 0 tests its error), and its low bit is
//! ShareGPT's `osl_given`. The rest is the file.
//!
//! The loaders only read paths, so the file is written to one temporary file per process
//! (in `/dev/shm` when there is one); the analyser has a reader API and gets the bytes.
//! Asserts: no panic; failures are `Err` values whose message formats. With
//! `AIPERF_FUZZ_SHOW=1` set, the binary prints each result (to check a seed or a crash
//! by hand: `AIPERF_FUZZ_SHOW=1 target/release/datasets < file`).
//!
//! Prompts of trace lines are synthesized: an `input_length` of millions of tokens is
//! slow by design (up to 2^24 tokens are accepted), not a bug, so inputs with a number
//! of more than [`MAX_DIGITS`] digits skip the loaders that synthesize prompts.

use std::path::{Path, PathBuf};

use aiperf_core::config::CustomDatasetType;
use aiperf_datasets::custom::{load_custom_dataset, CustomDatasetOptions};
use aiperf_datasets::{analyze_trace_reader, load_sharegpt, Tokenizer};

/// Longest run of digits given to the loaders that synthesize prompts.
const MAX_DIGITS: usize = 5;

/// A temporary file for this process, removed by nobody (it is overwritten every run).
fn scratch_file() -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("aiperf-fuzz-datasets-{}.input", std::process::id()))
}

fn longest_digit_run(data: &[u8]) -> usize {
    data.split(|byte| !byte.is_ascii_digit())
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

/// Formats an error (its `Display` must not panic either); prints the result if `show`.
fn report<T: std::fmt::Debug, E: std::fmt::Display>(show: bool, result: &Result<T, E>) {
    let text = match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(error) => format!("Err({error})"),
    };
    if show {
        println!("{text}");
    }
}

fn main() {
    let tokenizer = Tokenizer::builtin();
    let path = scratch_file();
    let show = std::env::var_os("AIPERF_FUZZ_SHOW").is_some();
    afl::fuzz!(|data: &[u8]| {
        let mut file = data;
        let (Some(which), Some(option)) = (
            aiperf_fuzz::take_byte(&mut file),
            aiperf_fuzz::take_byte(&mut file),
        ) else {
            return;
        };
        let which = usize::from(which % 9);
        if which == 8 {
            let result = analyze_trace_reader(file, "fuzz.jsonl", u64::from(option));
            report(show, &result.map(|stats| stats.total_requests));
            return;
        }
        std::fs::write(&path, file).expect("the scratch file is writable");
        if which == 7 {
            let result = load_sharegpt(&path, option & 1 == 1, &tokenizer);
            report(show, &result.map(|conversations| conversations.len()));
            return;
        }
        let dataset_type = which.checked_sub(1).map(|i| CustomDatasetType::ALL[i]);
        let synthesizes = !matches!(
            dataset_type,
            Some(
                CustomDatasetType::SingleTurn
                    | CustomDatasetType::MultiTurn
                    | CustomDatasetType::RandomPool
            )
        );
        if synthesizes && longest_digit_run(file) > MAX_DIGITS {
            return;
        }
        let options = CustomDatasetOptions {
            dataset_type,
            block_size: (option != 0).then_some(u32::from(option)),
            num_conversations: Some(8),
            seed: 7,
        };
        let result = load_custom_dataset(&path, &options, &tokenizer);
        report(
            show,
            &result.map(|loaded| (loaded.dataset_type, loaded.conversations.len())),
        );
    });
}
