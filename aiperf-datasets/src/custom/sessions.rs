//! Grouping turns into conversations: lines naming the same session id join one
//! conversation (in file order), lines without one become conversations of their own,
//! numbered `session_000000`, `session_000001`, … as the Python AIPerf numbers them.

use std::collections::HashMap;

use aiperf_core::{Conversation, Turn};

/// Collects turns into conversations in order of first appearance.
#[derive(Debug)]
pub(crate) struct Sessions {
    conversations: Vec<Conversation>,
    by_id: HashMap<String, usize>,
    ids_made: usize,
}

impl Sessions {
    /// No conversations yet.
    pub(crate) fn new() -> Self {
        Self {
            conversations: Vec::new(),
            by_id: HashMap::new(),
            ids_made: 0,
        }
    }

    /// Appends `turn` to the session `session_id` (a new conversation when `None` or not
    /// seen yet); returns the conversation's index.
    pub(crate) fn push(&mut self, session_id: Option<String>, turn: Turn) -> usize {
        let index = if let Some(id) = session_id {
            if let Some(&index) = self.by_id.get(&id) {
                index
            } else {
                self.by_id.insert(id.clone(), self.conversations.len());
                self.open(id)
            }
        } else {
            let id = crate::synthetic::session_id(self.ids_made);
            self.ids_made += 1;
            self.open(id)
        };
        let turns = &mut self.conversations[index].turns;
        if turns.is_empty() {
            // Room for one: a first push would make room for four (1.3 KB more per
            // conversation, most of a single-turn file's memory).
            turns.reserve_exact(1);
        }
        turns.push(turn);
        index
    }

    /// The conversation at `index` (as returned by [`Sessions::push`]).
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut Conversation> {
        self.conversations.get_mut(index)
    }

    fn open(&mut self, session_id: String) -> usize {
        self.conversations.push(Conversation {
            session_id,
            ..Conversation::default()
        });
        self.conversations.len() - 1
    }

    /// The conversations, in order of first appearance.
    pub(crate) fn finish(self) -> Vec<Conversation> {
        self.conversations
    }
}

/// A recorded agent session (weka, tracelab) as a conversation of `turns`, in the context
/// mode both formats replay with.
pub(super) fn replayed_session(session_id: String, turns: Vec<Turn>) -> Conversation {
    Conversation {
        session_id,
        turns,
        context_mode: aiperf_core::ContextMode::MessageArrayWithResponses,
        ..Conversation::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_turn_session_holds_room_for_one_turn_and_longer_ones_grow() {
        let mut sessions = Sessions::new();
        sessions.push(None, Turn::text("alone"));
        sessions.push(Some("s".into()), Turn::text("first"));
        sessions.push(Some("s".into()), Turn::text("second"));
        let conversations = sessions.finish();
        assert_eq!(conversations[0].turns.capacity(), 1);
        assert_eq!(conversations[1].turns.len(), 2);
        assert_eq!(conversations[1].turns[1].texts, ["second"]);
    }
}
