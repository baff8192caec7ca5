//! `multi_turn`: one conversation per line, `{"session_id": …, "turns": [<turn>…]}`;
//! the turns accumulate history (user deltas plus the live replies).

use std::path::Path;

use aiperf_core::Conversation;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::record::for_each_record;
use super::sessions::Sessions;
use super::turn_fields::parse_turn;

/// The conversations of a `multi_turn` file and whether its first turn has a timestamp.
/// Lines repeating a `session_id` continue that conversation.
pub(crate) fn load(path: &Path) -> Result<(Vec<Conversation>, bool), DatasetFileError> {
    let mut sessions = Sessions::new();
    let mut timestamped = None;
    for_each_record(path, |mut record| {
        let session_id = record.take_id("session_id")?;
        let Some(turns) = record.take_array("turns")? else {
            return Err(record.missing("turns"));
        };
        if turns.is_empty() {
            return Err(record.error(
                "turns",
                DatasetFileErrorKind::Invalid,
                "at least one turn is required",
            ));
        }
        let mut parsed = Vec::with_capacity(turns.len());
        for (index, value) in turns.into_iter().enumerate() {
            let nested = record.nested(&format!("turns[{index}]"), value)?;
            parsed.push(parse_turn(nested, false)?.turn);
        }
        record.finish(&["session_id", "turns"])?;
        // The line's turns go to one conversation: its session (continued when the id
        // was seen before) or, without an id, a fresh one.
        let mut parsed = parsed.into_iter();
        if let Some(first) = parsed.next() {
            timestamped.get_or_insert(first.timestamp_ms.is_some());
            let index = sessions.push(session_id, first);
            if let Some(conversation) = sessions.get_mut(index) {
                conversation.turns.extend(parsed);
            }
        }
        Ok(())
    })?;
    Ok((sessions.finish(), timestamped.unwrap_or(false)))
}
