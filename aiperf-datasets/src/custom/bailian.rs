//! `bailian_trace` (Alibaba Qwen serving traces): one request per line with `chat_id`
//! and `parent_chat_id` links; each chain of links is one session, turns sorted by
//! `turn`. Timestamps are in seconds.

use std::collections::HashMap;
use std::path::Path;

use aiperf_core::{Conversation, Turn};

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use super::record::{for_each_record, Record};
use super::trace_requests::{finish_turns, PendingTurn};
use crate::synthesis::{TraceRequest, TraceSynthesizer};

/// Every key a bailian line may have.
const KEYS: [&str; 8] = [
    "chat_id",
    "parent_chat_id",
    "timestamp",
    "input_length",
    "output_length",
    "type",
    "turn",
    "hash_ids",
];

/// One request's place in its chain of links, waiting for its session to be known.
#[derive(Debug)]
struct Link {
    chat_id: i64,
    parent: i64,
    turn_number: u64,
}

/// One finished request.
#[derive(Debug)]
struct Request {
    link: Link,
    turn: Turn,
}

/// The sessions of a bailian trace (after `synthesis`, if any) and whether its first
/// line has a timestamp.
pub(crate) fn load(
    path: &Path,
    prompts: &mut HashIdPrompts,
    synthesis: Option<&TraceSynthesizer>,
    defer: bool,
) -> Result<(Vec<Conversation>, bool), DatasetFileError> {
    let mut pending = Vec::new();
    for_each_record(path, |mut record| {
        let line = record.line;
        let chat_id = take_i64(&mut record, "chat_id")?.ok_or_else(|| record.missing("chat_id"))?;
        let parent = take_i64(&mut record, "parent_chat_id")?.unwrap_or(-1);
        let input_length = record
            .take_u64("input_length")?
            .ok_or_else(|| record.missing("input_length"))?;
        let hash_ids = record.take_u64_list("hash_ids")?.unwrap_or_default();
        prompts.check(input_length, &hash_ids).map_err(|message| {
            let field = if hash_ids.is_empty() {
                "input_length"
            } else {
                "hash_ids"
            };
            record.error(field, DatasetFileErrorKind::Invalid, message)
        })?;
        let output_length = match record.take_u64("output_length")? {
            None => None,
            Some(n) => Some(u32::try_from(n).map_err(|_| {
                record.error(
                    "output_length",
                    DatasetFileErrorKind::WrongType,
                    "too large",
                )
            })?),
        };
        let timestamp_ms = record.take_seconds_as_ms("timestamp")?;
        let turn_number = record.take_u64("turn")?.unwrap_or(0);
        // The request type (text, search, image, file) does not change what is sent.
        record.take_str("type")?;
        record.finish(&KEYS)?;
        let request = TraceRequest {
            input_length: Some(input_length),
            hash_ids,
            timestamp_ms,
            output_length,
        };
        let link = Link {
            chat_id,
            parent,
            turn_number,
        };
        pending.push((
            request,
            PendingTurn {
                line,
                turn: Turn::default(),
                place: link,
            },
        ));
        Ok(())
    })?;
    let timestamped = pending
        .first()
        .is_some_and(|(request, _)| request.timestamp_ms.is_some());
    let requests = finish_turns(path, pending, synthesis, prompts, defer)?
        .into_iter()
        .map(|(turn, link)| Request { link, turn })
        .collect();
    Ok((into_sessions(requests), timestamped))
}

/// Groups requests by the root of their parent chain (sessions in order of first
/// appearance), each sorted by turn number (file order among equals).
fn into_sessions(requests: Vec<Request>) -> Vec<Conversation> {
    let parents: HashMap<i64, i64> = requests
        .iter()
        .map(|r| (r.link.chat_id, r.link.parent))
        .collect();
    let root_of = |mut id: i64| {
        // Bounded walk: a malformed trace with a parent cycle must not hang.
        for _ in 0..=parents.len() {
            match parents.get(&id) {
                Some(&parent) if parent >= 0 && parents.contains_key(&parent) => id = parent,
                _ => break,
            }
        }
        id
    };
    let mut order: HashMap<i64, usize> = HashMap::new();
    let mut sessions: Vec<Vec<Request>> = Vec::new();
    for request in requests {
        let root = root_of(request.link.chat_id);
        let index = *order.entry(root).or_insert_with(|| {
            sessions.push(Vec::new());
            sessions.len() - 1
        });
        sessions[index].push(request);
    }
    sessions
        .into_iter()
        .map(|mut members| {
            members.sort_by_key(|r| r.link.turn_number);
            let root = members.first().map_or(0, |r| root_of(r.link.chat_id));
            Conversation {
                session_id: root.to_string(),
                turns: members.into_iter().map(|r| r.turn).collect(),
                ..Conversation::default()
            }
        })
        .collect()
}

/// An optional integer id (may be -1).
fn take_i64(record: &mut Record<'_>, key: &str) -> Result<Option<i64>, DatasetFileError> {
    match record.take(key) {
        None => Ok(None),
        Some(value) => value.as_i64().map(Some).ok_or_else(|| {
            record.error(key, DatasetFileErrorKind::WrongType, "expected an integer")
        }),
    }
}
