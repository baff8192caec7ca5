//! Grouping turns into conversations: lines naming the same session id join one
//! conversation (in file order), lines without one become conversations of their own
//! with a deterministic id drawn from the seed.

use std::collections::HashMap;

use aiperf_core::{Conversation, Turn};
use rand_chacha::ChaCha8Rng;

use crate::seed::{derive_rng, SESSION_ID};
use crate::synthetic::session_uuid;

/// Collects turns into conversations in order of first appearance.
#[derive(Debug)]
pub(crate) struct Sessions {
    conversations: Vec<Conversation>,
    by_id: HashMap<String, usize>,
    ids: ChaCha8Rng,
}

impl Sessions {
    /// Fresh ids come from the seed's session-id stream.
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            conversations: Vec::new(),
            by_id: HashMap::new(),
            ids: derive_rng(seed, SESSION_ID),
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
            let id = session_uuid(&mut self.ids);
            self.open(id)
        };
        self.conversations[index].turns.push(turn);
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
