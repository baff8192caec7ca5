//! `tracelab`: the TraceLab agentic-coding corpus (JSONL, usually gzipped): one row per
//! LLM round of a coding-agent session. Rows sharing `session_id` form one session whose
//! rounds are replayed in the order they were submitted, each after the think time the
//! agent took once the previous round's reply ended.
//!
//! The corpus records token counts, not text, and no content hashes: each round's
//! prompt is made of [hash-id blocks](super::hash_prompts) whose chain is rebuilt from
//! the engine-reported `prefix_tokens` — a round keeps the first `prefix_tokens / B`
//! blocks of the round before it and gets fresh blocks for the rest — so the server's
//! KV cache sees the prefix reuse the corpus recorded. Every round carries its whole
//! context, so each turn is sent on its own.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use aiperf_core::{ContextMode, Conversation, Turn};

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use super::iso_time::unix_ms;
use super::record::{for_each_record_of, Record};

/// Event types that feed a round: the request is submitted once the last one landed.
const INPUT_EVENTS: [&str; 2] = ["user_message", "tool_result"];
/// Event types the model emitted: the last one ends the round's reply.
const OUTPUT_EVENTS: [&str; 3] = ["text", "reasoning", "tool_call"];
/// The first bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// One dated round of a session.
#[derive(Debug)]
struct Round {
    /// When the request was submitted, in Unix ms.
    submitted_ms: f64,
    /// How long the reply took (submission to the last emitted event), when recorded.
    reply_ms: Option<f64>,
    /// The corpus's `round_index`: breaks ties of submission time.
    index: u64,
    input_tokens: u64,
    prefix_tokens: u64,
    output_tokens: u64,
}

/// The sessions of a TraceLab file, in order of first appearance; rounds with no
/// timestamped event are left out (nothing says when to send them).
pub(crate) fn load(
    path: &Path,
    prompts: &mut HashIdPrompts,
    block_size: u32,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut sessions: Vec<(String, Vec<Round>)> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for_each_row(path, |mut record| {
        let session_id = record
            .take_id("session_id")?
            .ok_or_else(|| record.missing("session_id"))?;
        let round = parse_round(&mut record)?;
        let index = *by_id.entry(session_id.clone()).or_insert_with(|| {
            sessions.push((session_id, Vec::new()));
            sessions.len() - 1
        });
        if let Some(round) = round {
            sessions[index].1.push(round);
        }
        Ok(())
    })?;
    let mut next_block_id = 0;
    let mut conversations = Vec::new();
    for (session_id, mut rounds) in sessions {
        if rounds.is_empty() {
            continue;
        }
        rounds.sort_by(|a, b| {
            a.submitted_ms
                .total_cmp(&b.submitted_ms)
                .then(a.index.cmp(&b.index))
        });
        let turns =
            session_turns(&rounds, block_size, &mut next_block_id, prompts).map_err(|message| {
                DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
                    .in_field(format!("session {session_id}"))
            })?;
        conversations.push(Conversation {
            session_id,
            turns,
            context_mode: ContextMode::MessageArrayWithResponses,
            ..Conversation::default()
        });
    }
    Ok(conversations)
}

/// The turns of one session's rounds (in replay order). Block ids are unique across the
/// file (`next_block_id`), so sessions never share blocks, as in the corpus.
fn session_turns(
    rounds: &[Round],
    block_size: u32,
    next_block_id: &mut u64,
    prompts: &mut HashIdPrompts,
) -> Result<Vec<Turn>, String> {
    let block = u64::from(block_size);
    let mut fresh = |count: u64| {
        let ids: Vec<u64> = (*next_block_id..*next_block_id + count).collect();
        *next_block_id += count;
        ids
    };
    let mut previous_blocks: Vec<u64> = Vec::new();
    let mut previous_end: Option<f64> = None;
    let mut turns = Vec::with_capacity(rounds.len());
    for round in rounds {
        let input = round.input_tokens.max(1);
        let whole_blocks = input / block;
        let reused = (round.prefix_tokens.min(input) / block)
            .min(previous_blocks.len() as u64)
            .min(whole_blocks);
        let mut blocks = previous_blocks[..reused as usize].to_vec();
        blocks.extend(fresh(whole_blocks - reused));
        // The partial tail past the last whole block is never reused: a block of its own.
        let mut hash_ids = blocks.clone();
        if input % block != 0 {
            hash_ids.extend(fresh(1));
        }
        let prompt = prompts.prompt(input, &hash_ids)?;
        let delay_ms = previous_end.map(|end| (round.submitted_ms - end).max(0.0));
        previous_end = Some(round.submitted_ms + round.reply_ms.unwrap_or(0.0));
        previous_blocks = blocks;
        turns.push(Turn {
            texts: vec![prompt],
            max_tokens: Some(u32::try_from(round.output_tokens.max(1)).unwrap_or(u32::MAX)),
            delay_ms,
            ..Turn::default()
        });
    }
    Ok(turns)
}

/// A row's round; `None` when none of its events has a timestamp. The corpus has many
/// more fields (tools, models, costs): they do not change what is sent and are ignored.
fn parse_round(record: &mut Record<'_>) -> Result<Option<Round>, DatasetFileError> {
    let round_index = record.take_u64("round_index")?.unwrap_or(0);
    let input_tokens = record.take_u64("input_tokens_total")?.unwrap_or(0);
    let prefix_tokens = record.take_u64("prefix_tokens")?.unwrap_or(0);
    // Reasoning is generated too: it counts towards the round's output.
    let output_tokens = record.take_u64("output_tokens")?.unwrap_or(0)
        + record.take_u64("reasoning_output_tokens")?.unwrap_or(0);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (index, event) in record
        .take_array("timing_events")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let mut event = record.nested(&format!("timing_events[{index}]"), event)?;
        let kind = event.take_str("event_type")?.unwrap_or_default();
        let Some(time) = event.take_str("timestamp")? else {
            continue;
        };
        let at = unix_ms(&time).ok_or_else(|| {
            event.error(
                "timestamp",
                DatasetFileErrorKind::WrongType,
                format!("expected an ISO 8601 time such as 2025-01-31T12:00:00.123Z, got {time:?}"),
            )
        })?;
        if INPUT_EVENTS.contains(&kind.as_str()) {
            inputs.push(at);
        } else if OUTPUT_EVENTS.contains(&kind.as_str()) {
            outputs.push(at);
        }
    }
    let last_output = outputs.iter().copied().reduce(f64::max);
    let submitted_ms = match inputs.iter().copied().reduce(f64::max) {
        Some(at) => at,
        None => match outputs.iter().copied().reduce(f64::min) {
            Some(at) => at,
            None => return Ok(None),
        },
    };
    Ok(Some(Round {
        submitted_ms,
        reply_ms: last_output.map(|end| (end - submitted_ms).max(0.0)),
        index: round_index,
        input_tokens,
        prefix_tokens,
        output_tokens,
    }))
}

/// The lines of a text file, gzipped or not (told by its first bytes, whatever its
/// name).
fn lines(path: &Path) -> Result<impl Iterator<Item = std::io::Result<String>>, DatasetFileError> {
    let mut file = BufReader::new(File::open(path).map_err(|e| DatasetFileError::io(path, e))?);
    let gzipped = file
        .fill_buf()
        .map_err(|e| DatasetFileError::io(path, e))?
        .starts_with(&GZIP_MAGIC);
    let reader: Box<dyn Read> = if gzipped {
        Box::new(flate2::bufread::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(BufReader::with_capacity(1 << 16, reader).lines())
}

/// Streams the non-blank lines of a (possibly gzipped) JSONL file, parsed as objects.
fn for_each_row<'p>(
    path: &'p Path,
    visit: impl FnMut(Record<'p>) -> Result<(), DatasetFileError>,
) -> Result<(), DatasetFileError> {
    for_each_record_of(path, lines(path)?, visit)
}

/// Keys that only TraceLab rows have together.
const DETECT_KEYS: [&str; 4] = [
    "session_id",
    "prefix_tokens",
    "newly_append_tokens",
    "timing_events",
];

/// Whether the first non-blank line of a (possibly gzipped) file is a TraceLab row.
pub(crate) fn is_tracelab(path: &Path) -> bool {
    let Ok(mut lines) = lines(path) else {
        return false;
    };
    let first = lines.find_map(|line| match line {
        Ok(text) if text.trim().is_empty() => None,
        other => Some(other),
    });
    match first {
        Some(Ok(text)) => matches!(
            serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}')),
            Ok(serde_json::Value::Object(fields)) if DETECT_KEYS.iter().all(|key| fields.contains_key(*key))
        ),
        _ => false,
    }
}
