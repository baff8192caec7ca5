//! `aiperf validate mooncake-trace FILE`: whether a trace file loads as a benchmark would
//! load it, without a server or a model's tokenizer.
//!
//! ```
//! use aiperf_datasets::trace_check::check_mooncake_trace;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("trace.jsonl");
//! std::fs::write(&path, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n").unwrap();
//! assert_eq!(check_mooncake_trace(&path).unwrap(), 1);
//! std::fs::write(&path, "{\"timestamp\": 0, \"input_length\": -1}\n").unwrap();
//! assert!(check_mooncake_trace(&path).unwrap_err().to_string().contains(":1: input_length"));
//! ```

use std::path::Path;

use aiperf_core::config::CustomDatasetType;

use crate::custom::{load_custom_dataset, CustomDatasetOptions, DatasetFileError};
use crate::tokenizer::Tokenizer;

/// Loads `path` as a `mooncake_trace` and returns its number of rows (requests), or the
/// first malformed line as `path:line: field: message`. Prompts are built with the
/// builtin tokenizer, so the check runs offline; a model's tokenizer changes only the
/// prompt text, never whether a line is valid.
pub fn check_mooncake_trace(path: &Path) -> Result<usize, DatasetFileError> {
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::MooncakeTrace),
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(path, &options, &Tokenizer::builtin())?;
    Ok(loaded.conversations.iter().map(|c| c.turns.len()).sum())
}
