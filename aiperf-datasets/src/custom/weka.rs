//! `weka_trace`: Weka KV-cache-tester agentic coding traces. A trace is one `.json`
//! file (`{"id", "models", "block_size", "hash_id_scope": "local", "requests": [...]}`);
//! `--input-file` is one such file or a folder of them (read in name order).
//!
//! A trace's top-level requests (`type` `n` or `s`: `t` seconds, `in`/`out` tokens,
//! `hash_ids`, `api_time`, `think_time`) form one session; each `type: "subagent"`
//! entry's inner requests form a session of their own (`<id>::sa:<agent_id>`). Every
//! request carries its whole context, so each turn is sent on its own, its prompt made
//! of its `hash_ids` blocks of the trace's `block_size`. Hash ids are local to a trace:
//! each trace's blocks come from its own seed stream, so traces never share a prefix.
//! A turn waits the recorded idle gap before it (`t` minus the previous request's `t +
//! api_time`, at least 0), or its `think_time` with `--use-think-time-only`.

use std::path::{Path, PathBuf};

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::{ContextMode, Conversation, Turn};
use serde::Deserialize;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use crate::seed::derive_seed;
use crate::Tokenizer;

/// How to read weka traces.
#[derive(Debug, Clone)]
pub(crate) struct WekaOptions {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) seed: u64,
    pub(crate) corpus: PromptCorpus,
    pub(crate) style: RandomCorpusStyle,
    /// `--max-context-length`: traces whose peak `in + out` is over this are left out.
    pub(crate) max_context_length: Option<u64>,
    /// `--use-think-time-only`.
    pub(crate) think_time_only: bool,
}

// Every recorded field is declared so that a typo is an error; the recorded model
// names, prefix sizes, summaries and telemetry are validated but not replayed.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trace {
    id: String,
    models: Vec<String>,
    block_size: u32,
    hash_id_scope: Scope,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<Entry>,
    #[serde(default)]
    totals: Option<serde_json::Value>,
}

/// Only trace-local hash ids exist in the format (0.13 rejects any other scope too).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Scope {
    Local,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Entry {
    #[serde(rename = "n")]
    Normal(Request),
    #[serde(rename = "s")]
    Streaming(Request),
    #[serde(rename = "subagent")]
    Subagent(SpawnedAgent),
}

#[allow(dead_code)] // see `Trace`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    t: f64,
    model: String,
    #[serde(rename = "in")]
    input_length: u64,
    #[serde(rename = "out")]
    output_length: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
    #[serde(default)]
    input_types: Vec<String>,
    #[serde(default)]
    output_types: Vec<String>,
    #[serde(default)]
    stop: String,
    api_time: Option<f64>,
    think_time: Option<f64>,
    #[serde(default)]
    ttft: Option<f64>,
}

#[allow(dead_code)] // see `Trace`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnedAgent {
    t: f64,
    agent_id: String,
    subagent_type: String,
    duration_ms: Option<u64>,
    total_tokens: Option<u64>,
    tool_use_count: Option<u64>,
    status: String,
    requests: Vec<Entry>,
    models: Vec<String>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
}

/// The sessions of the weka trace file or folder at `path`.
pub(crate) fn load(
    path: &Path,
    options: &WekaOptions,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut conversations = Vec::new();
    let mut over_limit = 0;
    for file in trace_files(path)? {
        let trace = read_trace(&file)?;
        if options
            .max_context_length
            .is_some_and(|max| peak_context(&trace.requests) > max)
        {
            over_limit += 1;
            continue;
        }
        let mut prompts = HashIdPrompts::new(
            options.tokenizer.clone(),
            derive_seed(options.seed, &format!("dataset.weka.{}", trace.id)),
            trace.block_size,
            options.corpus,
            options.style,
        )
        .map_err(|e| DatasetFileError::file(&file, DatasetFileErrorKind::Invalid, e.to_string()))?;
        let mut session = |session_id: String, requests: &[&Request], field: &str| {
            let turns = turns(
                requests,
                trace.block_size,
                &mut prompts,
                options.think_time_only,
            )
            .map_err(|message| {
                DatasetFileError::file(&file, DatasetFileErrorKind::Invalid, message)
                    .in_field(field.to_owned())
            })?;
            Ok::<_, DatasetFileError>(Conversation {
                session_id,
                turns,
                context_mode: ContextMode::MessageArrayWithResponses,
                ..Conversation::default()
            })
        };
        let parent: Vec<&Request> = trace.requests.iter().filter_map(request).collect();
        if !parent.is_empty() {
            conversations.push(session(trace.id.clone(), &parent, "requests")?);
        }
        for (index, entry) in trace.requests.iter().enumerate() {
            if let Entry::Subagent(agent) = entry {
                let inner: Vec<&Request> = agent.requests.iter().filter_map(request).collect();
                if !inner.is_empty() {
                    let id = format!("{}::sa:{}", trace.id, agent.agent_id);
                    conversations.push(session(id, &inner, &format!("requests[{index}]"))?);
                }
            }
        }
    }
    if over_limit > 0 {
        tracing::info!(
            skipped = over_limit,
            max_context_length = options.max_context_length,
            "left out weka traces whose peak context is over --max-context-length"
        );
    }
    if conversations.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "no weka trace requests to replay (every trace empty or over \
             --max-context-length)",
        ));
    }
    Ok(conversations)
}

fn request(entry: &Entry) -> Option<&Request> {
    match entry {
        Entry::Normal(request) | Entry::Streaming(request) => Some(request),
        Entry::Subagent(_) => None,
    }
}

/// The `.json` files of a folder in name order, or the file itself.
fn trace_files(path: &Path) -> Result<Vec<PathBuf>, DatasetFileError> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| DatasetFileError::io(path, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|file| file.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the folder holds no .json weka traces",
        ));
    }
    Ok(files)
}

/// One trace file; a schema error names its line.
fn read_trace(file: &Path) -> Result<Trace, DatasetFileError> {
    let text = std::fs::read_to_string(file).map_err(|e| DatasetFileError::io(file, e))?;
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Err(DatasetFileError::file(
            file,
            DatasetFileErrorKind::Empty,
            "the file holds no records (it is empty or has only blank lines)",
        ));
    }
    let trace: Trace = serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        // The line is given on its own; serde's message repeats it.
        let message = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&position).unwrap_or(&message);
        DatasetFileError::file(
            file,
            DatasetFileErrorKind::Syntax,
            format!("not a weka trace: {message}"),
        )
        .at_line(e.line())
    })?;
    if trace.block_size == 0 {
        return Err(DatasetFileError::file(
            file,
            DatasetFileErrorKind::Invalid,
            "must be at least 1",
        )
        .in_field("block_size"));
    }
    Ok(trace)
}

/// The largest `in + max(out, 1)` of any request, subagents included.
fn peak_context(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|entry| match entry {
            Entry::Normal(r) | Entry::Streaming(r) => r.input_length + r.output_length.max(1),
            Entry::Subagent(agent) => peak_context(&agent.requests),
        })
        .max()
        .unwrap_or(0)
}

/// The turns of one session's requests, in recorded order.
fn turns(
    requests: &[&Request],
    block_size: u32,
    prompts: &mut HashIdPrompts,
    think_time_only: bool,
) -> Result<Vec<Turn>, String> {
    let mut turns = Vec::with_capacity(requests.len());
    let mut previous: Option<&Request> = None;
    for (index, request) in requests.iter().enumerate() {
        let input = request.input_length.max(1);
        let blocks = fitted_blocks(&request.hash_ids, input, u64::from(block_size));
        let text = prompts
            .prompt(input, &blocks)
            .map_err(|message| format!("requests[{index}]: {message}"))?;
        let delay_ms = previous.map(|before| match request.think_time {
            Some(think) if think_time_only => think.max(0.0) * 1000.0,
            _ => {
                let busy = before
                    .api_time
                    .filter(|t| t.is_finite())
                    .unwrap_or(0.0)
                    .max(0.0);
                ((request.t - before.t - busy) * 1000.0).max(0.0)
            }
        });
        turns.push(Turn {
            texts: vec![text],
            max_tokens: Some(u32::try_from(request.output_length.max(1)).unwrap_or(u32::MAX)),
            delay_ms,
            ..Turn::default()
        });
        previous = Some(request);
    }
    Ok(turns)
}

/// Exactly ⌈input / block⌉ block ids: the recorded ones, cut to that count, or padded
/// with ids past every recorded one when the recording hashed fewer blocks.
fn fitted_blocks(recorded: &[u64], input: u64, block: u64) -> Vec<u64> {
    let needed = input.div_ceil(block) as usize;
    let mut blocks: Vec<u64> = recorded.iter().copied().take(needed).collect();
    let mut next = recorded.iter().max().map_or(0, |max| max + 1) + (1 << 40);
    while blocks.len() < needed {
        blocks.push(next);
        next += 1;
    }
    blocks
}

/// Whether `path` is a weka trace file, or a folder whose first `.json` file is one.
pub(crate) fn is_weka(path: &Path) -> bool {
    let file = if path.is_dir() {
        match trace_files(path) {
            Ok(files) => files.into_iter().next(),
            Err(_) => None,
        }
    } else {
        Some(path.to_owned())
    };
    file.filter(|f| f.extension().is_some_and(|ext| ext == "json"))
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|value| {
            value.get("hash_id_scope").is_some()
                && value
                    .get("requests")
                    .is_some_and(serde_json::Value::is_array)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_cut_or_padded_to_the_input() {
        assert_eq!(fitted_blocks(&[5, 6, 7], 20, 16), vec![5, 6]);
        assert_eq!(
            fitted_blocks(&[5], 40, 16),
            vec![5, 6 + (1 << 40), 7 + (1 << 40)]
        );
    }
}
