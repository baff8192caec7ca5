//! AFL++ target: the trace loaders, which synthesize a prompt for each line (mooncake,
//! bailian, BurstGPT CSV, TraceLab) or decode captured requests (SageMaker), and the
//! custom-file loader detecting the format.
//!
//! Input: byte 0 picks the loader (modulo 6): `load_custom_dataset` detecting the format,
//! then with `--custom-dataset-type` mooncake, bailian, BurstGPT, SageMaker and TraceLab. Byte 1 is
//! `--isl-block-size` (0 = the format's default). The rest is the file, written to one
//! scratch file per process (the loaders only read paths). Asserts: no panic; failures
//! are `Err` values whose message formats. `AIPERF_FUZZ_SHOW=1` prints each result.
//!
//! An `input_length` of millions of tokens is slow by design (up to 2^24 are accepted),
//! not a bug, so inputs holding a number of more than [`MAX_DIGITS`] digits are skipped.
//! Every load tokenizes the prompt corpus first, which sets this target's speed.

use aiperf_core::config::CustomDatasetType;
use aiperf_datasets::custom::{load_custom_dataset, CustomDatasetOptions};
use aiperf_datasets::Tokenizer;
use aiperf_fuzz::report;

/// Longest run of digits given to the loaders.
const MAX_DIGITS: usize = 5;

const TRACES: [Option<CustomDatasetType>; 6] = [
    None,
    Some(CustomDatasetType::MooncakeTrace),
    Some(CustomDatasetType::BailianTrace),
    Some(CustomDatasetType::BurstGptTrace),
    Some(CustomDatasetType::SagemakerDataCapture),
    Some(CustomDatasetType::Tracelab),
];

fn longest_digit_run(data: &[u8]) -> usize {
    data.split(|byte| !byte.is_ascii_digit())
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

fn main() {
    let tokenizer = Tokenizer::builtin();
    let path = aiperf_fuzz::scratch_file("traces");
    let show = std::env::var_os("AIPERF_FUZZ_SHOW").is_some();
    afl::fuzz!(|data: &[u8]| {
        let mut file = data;
        let (Some(which), Some(option)) = (
            aiperf_fuzz::take_byte(&mut file),
            aiperf_fuzz::take_byte(&mut file),
        ) else {
            return;
        };
        if longest_digit_run(file) > MAX_DIGITS {
            return;
        }
        std::fs::write(&path, file).expect("the scratch file is writable");
        let options = CustomDatasetOptions {
            dataset_type: TRACES[usize::from(which) % TRACES.len()],
            block_size: (option != 0).then_some(u32::from(option)),
            num_conversations: Some(8),
            seed: 7,
            ..CustomDatasetOptions::default()
        };
        let result = load_custom_dataset(&path, &options, &tokenizer);
        report(
            show,
            &result.map(|loaded| (loaded.dataset_type, loaded.conversations.len())),
        );
    });
    // AFL restarts the process every few thousand runs: leave no file per process.
    let _ = std::fs::remove_file(&path);
}
