//! AFL++ target: the dataset loaders that read a file as it is (the loaders that
//! synthesize prompts are in `traces.rs`).
//!
//! Input: byte 0 picks the parser (modulo 6): format detection (`detect_dataset_type`),
//! the multi-turn, single-turn and random-pool JSONL loaders (`load_custom_dataset` with
//! that `--custom-dataset-type`), the ShareGPT JSON loader, and the trace analyser
//! (`analyze-trace`). Byte 1 is an option: ShareGPT's `osl_given` (low bit) and the
//! analyser's block size (0 tests its error). The rest is the file.
//!
//! The loaders only read paths, so the file is written to one scratch file per process;
//! the analyser has a reader API and gets the bytes. Asserts: no panic; failures are
//! `Err` values whose message formats. With `AIPERF_FUZZ_SHOW=1` set, the binary prints
//! each result (`AIPERF_FUZZ_SHOW=1 target/release/datasets < file`).

use aiperf_core::config::CustomDatasetType;
use aiperf_datasets::custom::{detect_dataset_type, load_custom_dataset, CustomDatasetOptions};
use aiperf_datasets::{analyze_trace_reader, load_sharegpt, Tokenizer};
use aiperf_fuzz::report;

const JSONL: [CustomDatasetType; 3] = [
    CustomDatasetType::MultiTurn,
    CustomDatasetType::SingleTurn,
    CustomDatasetType::RandomPool,
];

fn main() {
    let tokenizer = Tokenizer::builtin();
    let path = aiperf_fuzz::scratch_file("datasets");
    let show = std::env::var_os("AIPERF_FUZZ_SHOW").is_some();
    afl::fuzz!(|data: &[u8]| {
        let mut file = data;
        let (Some(which), Some(option)) = (
            aiperf_fuzz::take_byte(&mut file),
            aiperf_fuzz::take_byte(&mut file),
        ) else {
            return;
        };
        let which = usize::from(which % 6);
        if which == 5 {
            let result = analyze_trace_reader(file, "fuzz.jsonl", u64::from(option));
            report(show, &result.map(|stats| stats.total_requests));
            return;
        }
        std::fs::write(&path, file).expect("the scratch file is writable");
        match which {
            0 => report(show, &detect_dataset_type(&path)),
            4 => {
                let result = load_sharegpt(&path, option & 1 == 1, &tokenizer);
                report(show, &result.map(|conversations| conversations.len()));
            }
            _ => {
                let options = CustomDatasetOptions {
                    dataset_type: Some(JSONL[which - 1]),
                    num_conversations: Some(8),
                    seed: 7,
                    ..CustomDatasetOptions::default()
                };
                let result = load_custom_dataset(&path, &options, &tokenizer);
                report(show, &result.map(|loaded| loaded.conversations.len()));
            }
        }
    });
    // AFL restarts the process every few thousand runs: leave no file per process.
    let _ = std::fs::remove_file(&path);
}
