//! The prompts of `hash_ids` traces (mooncake, bailian, BurstGPT) are made once the whole
//! file is read: trace synthesis (`--synthesis-*`) needs every request's `hash_ids`
//! before it can tell shared prefixes from unique prompts.

use std::path::Path;

use aiperf_core::Turn;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use crate::synthesis::{TraceRequest, TraceSynthesizer};

/// A parsed trace line whose prompt is not made yet: `turn` has everything but the
/// prompt text, timestamp and output length, which `request` holds.
#[derive(Debug)]
pub(super) struct PendingTurn<T> {
    pub(super) line: usize,
    pub(super) turn: Turn,
    /// What the loader needs to place the turn in a session.
    pub(super) place: T,
}

/// Applies `synthesis` (if any) to the read requests, then makes each synthesized
/// prompt in file order; returns the finished turns with their placement data. With
/// `defer`, prompts of hash ids are left as recipes ([`Turn::deferred_text`]) whose
/// blocks are made here: the text is decoded when the run needs it.
pub(super) fn finish_turns<T>(
    path: &Path,
    pending: Vec<(TraceRequest, PendingTurn<T>)>,
    synthesis: Option<&TraceSynthesizer>,
    prompts: &mut HashIdPrompts,
    defer: bool,
) -> Result<Vec<(Turn, T)>, DatasetFileError> {
    let pending = match synthesis {
        Some(synthesizer) => synthesizer.apply(pending).0,
        None => pending,
    };
    // First every line's blocks, in file order (the corpus is drawn from in that order),
    // then the recipes, which share the finished blocks.
    let mut made = Vec::with_capacity(pending.len());
    for (request, pending) in pending {
        let prompt = match request.input_length {
            Some(length) => Some(
                make_prompt(prompts, length, request.hash_ids.clone()).map_err(|message| {
                    let field = if request.hash_ids.is_empty() {
                        "input_length"
                    } else {
                        "hash_ids"
                    };
                    DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
                        .at_line(pending.line)
                        .in_field(field)
                })?,
            ),
            None => None,
        };
        made.push((request, pending, prompt));
    }
    Ok(made
        .into_iter()
        .map(
            |(
                request,
                PendingTurn {
                    mut turn, place, ..
                },
                prompt,
            )| {
                match prompt {
                    Some(Prompt::Text(text)) => turn.texts.push(text),
                    Some(Prompt::Blocks(hash_ids, final_block)) => {
                        let deferred = prompts.deferred_prompt(hash_ids, final_block);
                        if defer {
                            turn.deferred_text = Some(deferred);
                        } else {
                            turn.texts.push(deferred.make());
                        }
                    }
                    None => {}
                }
                turn.timestamp_ms = request.timestamp_ms;
                turn.max_tokens = request.output_length;
                (turn, place)
            },
        )
        .collect())
}

/// A line's prompt: made already, or blocks to decode.
enum Prompt {
    Text(String),
    Blocks(Vec<u64>, u64),
}

/// Makes a prompt without hash ids now; makes the blocks of one with hash ids.
fn make_prompt(
    prompts: &mut HashIdPrompts,
    length: u64,
    hash_ids: Vec<u64>,
) -> Result<Prompt, String> {
    if hash_ids.is_empty() {
        return prompts.prompt(length, &hash_ids).map(Prompt::Text);
    }
    let final_block = prompts.make_blocks(length, &hash_ids)?;
    Ok(Prompt::Blocks(hash_ids, final_block))
}
