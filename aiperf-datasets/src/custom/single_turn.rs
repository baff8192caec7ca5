//! `single_turn`: one request per line; lines sharing a `session_id` form one
//! conversation whose turns are self-contained (no history is accumulated).

use std::path::Path;

use aiperf_core::{ContextMode, Conversation};

use super::error::DatasetFileError;
use super::record::for_each_record;
use super::sessions::Sessions;
use super::turn_fields::parse_turn;

/// The conversations of a `single_turn` file and whether its first line has a timestamp.
pub(crate) fn load(path: &Path) -> Result<(Vec<Conversation>, bool), DatasetFileError> {
    let mut sessions = Sessions::new();
    let mut timestamped = None;
    for_each_record(path, |record| {
        let parsed = parse_turn(record, false)?;
        timestamped.get_or_insert(parsed.turn.timestamp_ms.is_some());
        let named = parsed.session_id.is_some();
        let index = sessions.push(parsed.session_id, parsed.turn);
        if let (true, Some(conversation)) = (named, sessions.get_mut(index)) {
            conversation.context_mode = ContextMode::MessageArrayWithResponses;
        }
        Ok(())
    })?;
    Ok((sessions.finish(), timestamped.unwrap_or(false)))
}
