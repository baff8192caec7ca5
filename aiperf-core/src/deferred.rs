//! Prompt texts made when a run needs them rather than when the dataset is loaded.
//!
//! A trace of 12,000 long-context requests holds about 126 M tokens of prompts: decoding
//! them takes seconds and holding them gigabytes, all before the first request if the
//! dataset is made whole. A loader can instead leave a turn's prompt as a
//! [`DeferredText`] (a recipe, e.g. "these cached token blocks, decoded"); the engine
//! makes each conversation's texts on a thread of its own, ahead of the schedule
//! (never on the sending path), and `inputs.json` is written from texts made again by
//! the same recipes.
//!
//! ```
//! use aiperf_core::{Conversation, DeferredText, Turn};
//!
//! let conversation = Conversation {
//!     session_id: "s".into(),
//!     turns: vec![Turn {
//!         deferred_text: Some(DeferredText::new(|| "made later".to_string())),
//!         ..Turn::default()
//!     }],
//!     ..Conversation::default()
//! };
//! assert!(conversation.has_deferred_text());
//! let made = conversation.materialized();
//! assert_eq!(made.turns[0].texts, ["made later"]);
//! assert!(!made.has_deferred_text());
//! ```

use std::fmt;
use std::sync::Arc;

use crate::conversation::Conversation;

/// A turn's prompt text, made on demand: the same text every time it is made, on any
/// thread, in any order (so a run and its `inputs.json` agree byte for byte).
#[derive(Clone)]
pub struct DeferredText(Arc<dyn Fn() -> String + Send + Sync>);

impl DeferredText {
    /// A text made by `make`, which must return the same text on every call.
    pub fn new(make: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Arc::new(make))
    }

    /// Makes the text.
    pub fn make(&self) -> String {
        (self.0)()
    }
}

impl fmt::Debug for DeferredText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeferredText(..)")
    }
}

/// Two deferred texts are equal when they are the same recipe (texts are not made to
/// compare them).
impl PartialEq for DeferredText {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Conversation {
    /// True when a turn of this conversation or of a session it may start still has its
    /// prompt to make.
    pub fn has_deferred_text(&self) -> bool {
        self.with_descendants()
            .iter()
            .flat_map(|session| &session.turns)
            .any(|turn| turn.deferred_text.is_some())
    }

    /// A copy of this conversation (and of the sessions it may start) with every
    /// deferred prompt made and appended to its turn's texts.
    #[must_use]
    pub fn materialized(&self) -> Conversation {
        let mut made = self.clone();
        made.for_each_turn_mut(&mut |turn| {
            if let Some(deferred) = turn.deferred_text.take() {
                turn.texts.push(deferred.make());
            }
        });
        made
    }
}
