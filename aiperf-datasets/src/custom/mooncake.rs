//! `mooncake_trace`: one request per line in one of four input modes (`input_length`
//! with optional `hash_ids`, `text_input`, `messages`, `payload`); lines sharing a
//! `session_id` form one multi-turn session in file order.

use std::collections::HashMap;
use std::path::Path;

use aiperf_core::{ContextMode, Conversation, Turn};
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use super::record::{for_each_record, Record};
use super::sessions::Sessions;
use super::trace_requests::{finish_turns, PendingTurn};
use crate::synthesis::{TraceRequest, TraceSynthesizer};

/// Every key a mooncake line may have (`group_id` and `is_restart` are written by
/// `aiperf synthesize agentic-code`, as by the Python AIPerf 0.13, and change nothing).
pub(crate) const KEYS: [&str; 13] = [
    "input_length",
    "text_input",
    "messages",
    "tools",
    "payload",
    "output_length",
    "hash_ids",
    "timestamp",
    "delay",
    "session_id",
    "extra",
    "group_id",
    "is_restart",
];

/// Whether a line's prompt is text (synthesized or literal) or sent verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Verbatim,
}

/// How a parsed mooncake line joins its session.
#[derive(Debug)]
struct Place {
    mode: Mode,
    session_id: Option<String>,
}

/// The conversations of a mooncake trace (after `synthesis`, if any) and whether its
/// first line has a timestamp.
pub(crate) fn load(
    path: &Path,
    prompts: &mut HashIdPrompts,
    synthesis: Option<&TraceSynthesizer>,
    defer: bool,
) -> Result<(Vec<Conversation>, bool), DatasetFileError> {
    let mut session_modes: HashMap<String, Mode> = HashMap::new();
    let mut pending = Vec::new();
    for_each_record(path, |record| {
        let line = record.line;
        let (request, turn, place) = parse_line(record, prompts)?;
        if let Some(id) = &place.session_id {
            let first = *session_modes.entry(id.clone()).or_insert(place.mode);
            if first != place.mode {
                return Err(DatasetFileError::file(
                    path,
                    DatasetFileErrorKind::Invalid,
                    "a session cannot mix messages/payload lines with input_length/text_input \
                     lines",
                )
                .at_line(line)
                .in_field("session_id"));
            }
        }
        pending.push((request, PendingTurn { line, turn, place }));
        Ok(())
    })?;
    let timestamped = pending
        .first()
        .is_some_and(|(request, _)| request.timestamp_ms.is_some());
    let mut sessions = Sessions::new();
    for (turn, place) in finish_turns(path, pending, synthesis, prompts, defer)? {
        let index = sessions.push(place.session_id, turn);
        if let (Mode::Verbatim, Some(conversation)) = (place.mode, sessions.get_mut(index)) {
            // Each line already carries the whole history.
            conversation.context_mode = ContextMode::MessageArrayWithResponses;
        }
    }
    Ok((sessions.finish(), timestamped))
}

/// A line's request (for synthesis and its prompt), its turn without those, and its
/// place. A prompt that cannot be made is rejected here, before any is made.
fn parse_line(
    mut record: Record<'_>,
    prompts: &HashIdPrompts,
) -> Result<(TraceRequest, Turn, Place), DatasetFileError> {
    let given = ["input_length", "text_input", "messages", "payload"]
        .into_iter()
        .filter(|key| record.has(key))
        .count();
    if given == 0 {
        return Err(record.record_error(
            DatasetFileErrorKind::MissingField,
            "exactly one of input_length, text_input, messages or payload is required",
        ));
    }
    if given > 1 {
        return Err(record.record_error(
            DatasetFileErrorKind::Invalid,
            "input_length, text_input, messages and payload are mutually exclusive: use one",
        ));
    }
    if record.has("hash_ids") && !record.has("input_length") {
        return Err(record.error(
            "hash_ids",
            DatasetFileErrorKind::Invalid,
            "hash_ids are only allowed with input_length",
        ));
    }
    if record.has("tools") && !record.has("messages") {
        return Err(record.error(
            "tools",
            DatasetFileErrorKind::Invalid,
            "tools are only allowed with messages",
        ));
    }

    let mut turn = Turn::default();
    let mut mode = Mode::Text;
    let mut synthesized = None;
    if let Some(length) = record.take_u64("input_length")? {
        let hash_ids = record.take_u64_list("hash_ids")?.unwrap_or_default();
        prompts.check(length, &hash_ids).map_err(|message| {
            let field = if hash_ids.is_empty() {
                "input_length"
            } else {
                "hash_ids"
            };
            record.error(field, DatasetFileErrorKind::Invalid, message)
        })?;
        synthesized = Some((length, hash_ids));
    } else if let Some(text) = record.take_str("text_input")? {
        turn.texts.push(text);
    } else if let Some(messages) = record.take_array("messages")? {
        check_messages(&record, &messages)?;
        turn.raw_messages = Some(messages);
        turn.raw_tools = record.take_array("tools")?;
        mode = Mode::Verbatim;
    } else if let Some(payload) = record.take_object("payload")? {
        if payload.is_empty() {
            return Err(record.error(
                "payload",
                DatasetFileErrorKind::Invalid,
                "must be a non-empty object",
            ));
        }
        turn.raw_payload = Some(Value::Object(payload));
        mode = Mode::Verbatim;
    }
    let output_length = record.take_u32("output_length")?;
    let timestamp_ms = record.take_ms("timestamp")?;
    turn.delay_ms = record.take_ms("delay")?;
    turn.extra = record.take_object("extra")?;
    let session_id = record.take_id("session_id")?;
    record.take("group_id");
    record.take("is_restart");
    record.finish(&KEYS)?;
    let (input_length, hash_ids) = match synthesized {
        Some((length, hash_ids)) => (Some(length), hash_ids),
        None => (None, Vec::new()),
    };
    let request = TraceRequest {
        input_length,
        hash_ids,
        timestamp_ms,
        output_length,
    };
    Ok((request, turn, Place { mode, session_id }))
}

/// A non-empty list of message objects, each with a `role`.
pub(crate) fn check_messages(
    record: &Record<'_>,
    messages: &[Value],
) -> Result<(), DatasetFileError> {
    if messages.is_empty() {
        return Err(record.error(
            "messages",
            DatasetFileErrorKind::Invalid,
            "must be a non-empty list",
        ));
    }
    match messages
        .iter()
        .position(|m| m.get("role").and_then(Value::as_str).is_none())
    {
        Some(index) => Err(record.error(
            &format!("messages[{index}]"),
            DatasetFileErrorKind::WrongType,
            "expected a message object with a string role",
        )),
        None => Ok(()),
    }
}
