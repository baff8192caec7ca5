//! `aiperf synthesize trace`: a mooncake trace file re-synthesized into a new one
//! (docs/datasets.md#trace-synthesis). Keys synthesis does not touch (`session_id`,
//! `delay`, `text_input`, …) pass through unchanged, in their order.

use std::path::Path;

use aiperf_core::config::TraceSynthesis;
use serde_json::{Map, Value};

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::check_blocks;
use super::record::for_each_record;
use crate::synthesis::{SynthesisSummary, TraceRequest, TraceSynthesizer};

/// A re-synthesized trace: one JSON object per request, ready to be written as JSONL.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthesizedTrace {
    /// The requests, in file order minus those over `max_isl`.
    pub lines: Vec<Map<String, Value>>,
    /// What was skipped or capped.
    pub summary: SynthesisSummary,
}

impl SynthesizedTrace {
    /// The trace as a mooncake JSONL file's text: one compact JSON object per line, in
    /// order (what `aiperf synthesize trace` writes and `--input-file` reads back).
    pub fn to_jsonl(&self) -> String {
        let mut text = String::new();
        for line in &self.lines {
            text.push_str(&Value::Object(line.clone()).to_string());
            text.push('\n');
        }
        text
    }
}

/// Reads the mooncake trace at `path` (blocks of `block_size` tokens) and applies
/// `synthesis` with `seed`. A line whose `hash_ids` do not fit its `input_length`, or
/// whose synthesized fields have the wrong type, is a [`DatasetFileError`] naming it.
pub fn synthesize_mooncake_trace(
    path: &Path,
    synthesis: &TraceSynthesis,
    block_size: u32,
    seed: u64,
) -> Result<SynthesizedTrace, DatasetFileError> {
    let mut requests = Vec::new();
    for_each_record(path, |mut record| {
        let input_length = record.take_u64("input_length")?;
        let hash_ids = record.take_u64_list("hash_ids")?.unwrap_or_default();
        match input_length {
            Some(length) => check_blocks(u64::from(block_size), length, &hash_ids),
            None if hash_ids.is_empty() => Ok(()),
            None => Err("hash_ids are only allowed with input_length".to_string()),
        }
        .map_err(|message| {
            let field = if hash_ids.is_empty() {
                "input_length"
            } else {
                "hash_ids"
            };
            record.error(field, DatasetFileErrorKind::Invalid, message)
        })?;
        let timestamp_ms = record.take_ms("timestamp")?;
        let output_length = record.take_u32("output_length")?;
        let request = TraceRequest {
            input_length,
            hash_ids,
            timestamp_ms,
            output_length,
        };
        requests.push((request, record.into_fields()));
        Ok(())
    })?;
    let synthesizer = TraceSynthesizer::new(synthesis.clone(), block_size, seed);
    let (requests, summary) = synthesizer.apply(requests);
    let lines = requests
        .into_iter()
        .map(|(request, rest)| {
            let mut line = Map::new();
            if let Some(timestamp) = request.timestamp_ms {
                // Whole milliseconds after synthesis: written as an integer.
                line.insert("timestamp".into(), Value::from(timestamp as u64));
            }
            if let Some(length) = request.input_length {
                line.insert("input_length".into(), Value::from(length));
            }
            if let Some(length) = request.output_length {
                line.insert("output_length".into(), Value::from(length));
            }
            if !request.hash_ids.is_empty() {
                line.insert("hash_ids".into(), Value::from(request.hash_ids));
            }
            line.extend(rest);
            line
        })
        .collect();
    Ok(SynthesizedTrace { lines, summary })
}
