//! The workload: conversations made of turns.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::deferred::DeferredText;
use crate::tokens::KnownTokenCount;

/// One conversation (a "session"): an ordered list of turns sent one after another.
///
/// Single-turn datasets are conversations of one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// The dataset's identifier of this conversation.
    pub session_id: String,
    /// A system prompt sent before every turn (the shared system prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// A per-conversation user context sent after the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_context_message: Option<String>,
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// What each later turn's request carries besides the turn itself.
    #[serde(default, skip_serializing_if = "ContextMode::is_default")]
    pub context_mode: ContextMode,
    /// Sessions started in the background before the first turn is sent, never waited
    /// for by this one (a `dag_jsonl` line's `pre_session_spawns`). Shared, so that
    /// starting one is a pointer copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_session_spawns: Vec<Arc<Conversation>>,
}

/// What a request for turn `k > 0` of a conversation carries
/// (docs/datasets.md#multi-turn-context).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextMode {
    /// Every earlier user turn plus the assistant replies the server actually gave
    /// (synthetic sessions, `multi_turn` files, traces with `hash_ids`).
    #[default]
    DeltasWithoutResponses,
    /// Each turn is self-contained: the dataset already put any history in it
    /// (`single_turn` sessions, traces of `messages` or `payload`).
    MessageArrayWithResponses,
}

impl ContextMode {
    fn is_default(&self) -> bool {
        *self == ContextMode::default()
    }
}

/// One request's worth of input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Message role; `None` means "user".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Text contents, in order (more than one with `--prompt-batch-size`).
    #[serde(default)]
    pub texts: Vec<String>,
    /// Image URLs or `data:` URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Audio as `format,base64` strings or URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audios: Vec<String>,
    /// Length in seconds of the first audio clip (the one a transcription request
    /// uploads) when the dataset knows it: set where the audio is synthesised or
    /// loaded, read by the audio metrics from a record's credit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_duration_s: Option<f64>,
    /// Video URLs or `data:` URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub videos: Vec<String>,
    /// Model for this turn; `None` means the primary model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Requested output length (sent as the endpoint's max-tokens field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Trace timestamp in milliseconds (fixed-schedule replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ms: Option<f64>,
    /// Think time in milliseconds before this turn is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    /// Body fields of this turn only, merged over the endpoint's fields and
    /// `--extra-inputs` (a dataset line's `extra`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
    /// An OpenAI message list sent verbatim instead of messages built from the texts
    /// (a trace line's `messages`); chat-style endpoints only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_messages: Option<Vec<serde_json::Value>>,
    /// Tool definitions sent with `raw_messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_tools: Option<Vec<serde_json::Value>>,
    /// A complete request body sent verbatim, bypassing the endpoint's formatting (a
    /// trace line's `payload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_payload: Option<serde_json::Value>,
    /// Sessions started once this turn's reply is back (datasets whose sessions depend on
    /// each other: `dag_jsonl`, agentic traces with subagents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<Branch>,
    /// A prompt text made when the run needs it rather than when the dataset is loaded
    /// (a long trace's prompts take seconds to make and gigabytes to hold); it belongs
    /// after `texts` once [`Conversation::materialized`] made it. Never serialized.
    #[serde(skip)]
    pub deferred_text: Option<DeferredText>,
    /// How many tokens the turn's only text counts to, when the dataset made it to that
    /// count: the record processor takes it instead of counting a request's input text
    /// that is exactly this text ([`KnownTokenCount::tokens_of`]). Never serialized.
    #[serde(skip)]
    pub known_tokens: Option<KnownTokenCount>,
}

/// Child sessions a turn starts once its reply is back: every child runs on its own,
/// in parallel with its siblings and with the parent's later turns, until a join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    /// What the children start from.
    pub mode: BranchMode,
    /// The child sessions (each may start branches of its own). Shared, so that
    /// starting one is a pointer copy rather than a copy of its turns.
    pub children: Vec<Arc<Conversation>>,
    /// The parent's later turn that is sent only once every child ended; `None` when
    /// the parent never waits for them (a fork, or a spawn from the last turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_at: Option<usize>,
    /// The children start when the spawning turn is sent instead of once its reply
    /// arrived, each child's first-turn delay counted from that send: the recording
    /// shows them starting while that request was still in flight. Only a spawn may:
    /// a fork's children need the reply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_send: bool,
}

/// What the children of a [`Branch`] start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchMode {
    /// The child continues the parent's conversation: its requests carry the parent's
    /// history up to and including the forking turn and its reply.
    Fork,
    /// The child starts a fresh conversation of its own.
    Spawn,
}

impl Turn {
    /// A user turn holding one text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            texts: vec![text.into()],
            ..Self::default()
        }
    }

    /// The turn's texts concatenated, as they count towards the input sequence length.
    pub fn joined_text(&self) -> String {
        self.texts.concat()
    }
}

impl Conversation {
    /// This conversation and every session it may start (branch children and
    /// pre-session spawns, recursively), parents before children.
    pub fn with_descendants(&self) -> Vec<&Conversation> {
        let mut all = vec![self];
        let mut next = 0;
        while let Some(conversation) = all.get(next).copied() {
            all.extend(conversation.pre_session_spawns.iter().map(Arc::as_ref));
            for turn in &conversation.turns {
                let children = turn.branches.iter().flat_map(|b| b.children.iter());
                all.extend(children.map(Arc::as_ref));
            }
            next += 1;
        }
        all
    }

    /// This conversation and every session it may start, mutably, parents before
    /// children (a loader or an adjustment changing them all). A child shared with
    /// another parent is copied first, so only this conversation's copy changes.
    pub fn for_each_session_mut(&mut self, visit: &mut impl FnMut(&mut Conversation)) {
        visit(self);
        for child in &mut self.pre_session_spawns {
            Arc::make_mut(child).for_each_session_mut(visit);
        }
        for branch in self.turns.iter_mut().flat_map(|t| t.branches.iter_mut()) {
            for child in &mut branch.children {
                Arc::make_mut(child).for_each_session_mut(visit);
            }
        }
    }

    /// Every turn of this conversation and of the sessions it may start, mutably.
    pub fn for_each_turn_mut(&mut self, visit: &mut impl FnMut(&mut Turn)) {
        self.for_each_session_mut(&mut |session| session.turns.iter_mut().for_each(&mut *visit));
    }

    /// The text whose token count is the input sequence length of the request that sends
    /// `turns` of this conversation: system message, user context and every turn's texts,
    /// joined by one space (images, audio and video are never counted).
    ///
    /// Written into one string sized up front: the record processor builds it for every
    /// record, and a copy of each part before the join doubled the copying.
    pub fn input_text(&self, turns: &[Turn]) -> String {
        let messages = self.system_message.iter().chain(&self.user_context_message);
        let parts = messages.clone().count() + turns.len();
        let length = messages.clone().map(String::len).sum::<usize>()
            + turns
                .iter()
                .flat_map(|turn| &turn.texts)
                .map(String::len)
                .sum::<usize>()
            + parts.saturating_sub(1);
        let mut text = String::with_capacity(length);
        let pieces = messages
            .map(std::slice::from_ref)
            .chain(turns.iter().map(|turn| turn.texts.as_slice()));
        for (index, part) in pieces.enumerate() {
            if index > 0 {
                text.push(' ');
            }
            for piece in part {
                text.push_str(piece);
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_text_joins_system_context_and_turns_with_one_space() {
        let conversation = Conversation {
            session_id: "s".into(),
            system_message: Some("sys".into()),
            user_context_message: Some("ctx".into()),
            turns: vec![Turn {
                texts: vec!["a".into(), "b".into()],
                ..Turn::default()
            }],
            ..Conversation::default()
        };
        assert_eq!(conversation.input_text(&conversation.turns), "sys ctx ab");
    }

    #[test]
    fn input_text_separates_every_part_even_empty_ones() {
        let turn = |texts: &[&str]| Turn {
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
            ..Turn::default()
        };
        let bare = Conversation {
            session_id: "s".into(),
            ..Conversation::default()
        };
        assert_eq!(bare.input_text(&[]), "");
        assert_eq!(bare.input_text(&[turn(&["only"])]), "only");
        assert_eq!(
            bare.input_text(&[turn(&["a", "b"]), turn(&[]), turn(&["c"])]),
            "ab  c"
        );
        let with_context = Conversation {
            user_context_message: Some("ctx".into()),
            ..bare
        };
        assert_eq!(with_context.input_text(&[]), "ctx");
        assert_eq!(with_context.input_text(&[turn(&["q"])]), "ctx q");
    }
}
