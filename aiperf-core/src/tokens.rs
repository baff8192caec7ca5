//! The [`TokenCounter`] trait: how metrics count tokens without knowing the tokenizer;
//! and [`KnownTokenCount`]: a text's count known when it was made, so it is not counted
//! again.

use std::borrow::Cow;
use std::hash::BuildHasher;

/// Counts tokens the way the server's tokenizer would (no special tokens added).
pub trait TokenCounter: Send + Sync {
    /// The number of tokens `text` encodes to.
    fn count_tokens(&self, text: &str) -> usize;

    /// The text whose tokens are the input sequence length of a request with input text
    /// `input_text` and body `payload`: `input_text` itself, unless the counter applies
    /// a chat template, which renders the body's messages as the server would.
    fn input_text_to_count<'a>(&self, input_text: &'a str, payload: &[u8]) -> Cow<'a, str> {
        let _ = payload;
        Cow::Borrowed(input_text)
    }

    /// Which way of counting this is, when it has a name: a [`KnownTokenCount`] made
    /// for this id is taken instead of counting its text. `None` (the default) means
    /// every text is counted.
    ///
    /// An implementation returns `Some` only if every counter with that id gives every
    /// text the same [`count_tokens`](Self::count_tokens).
    fn id(&self) -> Option<CounterId> {
        None
    }
}

/// Names a way of counting tokens (one tokenizer's): see [`TokenCounter::id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CounterId(pub u64);

/// How many tokens one text counts to, as the counter with a given [`CounterId`] counts
/// it: known where the text was made (a synthetic prompt is made to an exact count),
/// taken by the record processor instead of counting the text again.
///
/// It keeps the text's length and a 64-bit hash rather than the text, and
/// [`tokens_of`](Self::tokens_of) answers only for a text of that length and hash: a
/// text changed after the count was made (a cache-bust marker, a system prompt or history
/// joined to it, a chat template rendered around it) is counted, not taken for the
/// original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownTokenCount {
    tokens: usize,
    counter: CounterId,
    text_len: usize,
    text_hash: u64,
}

impl KnownTokenCount {
    /// `text` counts to `tokens` with the counter `counter` names.
    pub fn new(text: &str, tokens: usize, counter: CounterId) -> Self {
        Self {
            tokens,
            counter,
            text_len: text.len(),
            text_hash: text_hash(text),
        }
    }

    /// The count, if `text` is the text it was made for and `counter` the counter that
    /// counts it so; `None` otherwise (count the text).
    pub fn tokens_of(&self, text: &str, counter: CounterId) -> Option<usize> {
        (counter == self.counter
            && text.len() == self.text_len
            && text_hash(text) == self.text_hash)
            .then_some(self.tokens)
    }
}

/// A hash of `text` with a fixed seed: a known count is made on one thread and checked on
/// another.
fn text_hash(text: &str) -> u64 {
    foldhash::quality::FixedState::with_seed(0x6169_7065_7266).hash_one(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_count_answers_only_for_its_text_and_counter() {
        let counter = CounterId(7);
        let known = KnownTokenCount::new("four score and seven", 4, counter);
        assert_eq!(known.tokens_of("four score and seven", counter), Some(4));
        assert_eq!(known.tokens_of("four score and seven", CounterId(8)), None);
        // Same length, one letter changed; longer by a marker; a prefix of it.
        assert_eq!(known.tokens_of("four score and seveN", counter), None);
        assert_eq!(known.tokens_of("[x] four score and seven", counter), None);
        assert_eq!(known.tokens_of("four score", counter), None);
    }

    #[test]
    fn counters_have_no_id_unless_they_say_so() {
        struct Bytes;
        impl TokenCounter for Bytes {
            fn count_tokens(&self, text: &str) -> usize {
                text.len()
            }
        }
        assert_eq!(Bytes.id(), None);
    }
}
