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
/// `defer`, prompts of hash ids are left as recipes ([`Turn::deferred_text`]), laid out
/// here: the text is decoded when the run needs it.
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
    let mut finished = Vec::with_capacity(pending.len());
    // In file order: the fresh parts of the prompts are drawn in that order.
    for (request, pending) in pending {
        let PendingTurn {
            line,
            mut turn,
            place,
        } = pending;
        if let Some(length) = request.input_length {
            let field = if request.hash_ids.is_empty() {
                "input_length"
            } else {
                "hash_ids"
            };
            prompts
                .give_prompt(&mut turn, length, request.hash_ids, defer)
                .map_err(|message| {
                    DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
                        .at_line(line)
                        .in_field(field)
                })?;
        }
        turn.timestamp_ms = request.timestamp_ms;
        turn.max_tokens = request.output_length;
        finished.push((turn, place));
    }
    Ok(finished)
}
