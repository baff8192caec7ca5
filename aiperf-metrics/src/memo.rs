//! Token counts of repeated texts, remembered.
//!
//! A benchmark sends the same dataset prompts over and over (100 synthetic prompts by
//! default), and re-tokenizing an identical prompt is most of the cost of a record.
//! Hashing the text is two orders of magnitude cheaper than encoding it.
//!
//! A text is remembered by its length and a 64-bit hash, not by a copy: a memo of copies
//! held every distinct prompt of a long-context trace until the run ended (4,000
//! requests of ISL ≈ 10,500 tokens: about 200 MB; bench/README.md). Two distinct texts
//! of one length share a hash with a chance of 2⁻⁶⁴ per pair: for the 16,384 texts the
//! memo keeps at most, below one in a hundred billion per run. A known count
//! ([`aiperf_core::KnownTokenCount`]) names its text the same way.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use aiperf_core::{CounterId, TokenCounter};

/// How many distinct texts are remembered; later texts are counted but not stored, so
/// memory stays bounded when every text is new (e.g. generated outputs).
const CAPACITY: usize = 16_384;

/// A text as the memo knows it: its length in bytes and its hash.
type TextKey = (usize, u64);

/// A [`TokenCounter`] that remembers the counts of the texts it has seen.
pub(crate) struct MemoizedCounter {
    inner: Arc<dyn TokenCounter>,
    /// Hashes the texts (seeded once per counter).
    text_hasher: foldhash::quality::RandomState,
    counts: Mutex<HashMap<TextKey, usize, foldhash::fast::RandomState>>,
}

impl MemoizedCounter {
    pub(crate) fn new(inner: Arc<dyn TokenCounter>) -> Self {
        Self {
            inner,
            text_hasher: foldhash::quality::RandomState::default(),
            counts: Mutex::new(HashMap::default()),
        }
    }
}

impl TokenCounter for MemoizedCounter {
    fn count_tokens(&self, text: &str) -> usize {
        let key = (text.len(), self.text_hasher.hash_one(text));
        if let Some(count) = self.counts.lock().ok().and_then(|c| c.get(&key).copied()) {
            return count;
        }
        let count = self.inner.count_tokens(text);
        if let Ok(mut counts) = self.counts.lock() {
            if counts.len() < CAPACITY {
                counts.insert(key, count);
            }
        }
        count
    }

    fn input_text_to_count<'a>(&self, input_text: &'a str, payload: &[u8]) -> Cow<'a, str> {
        self.inner.input_text_to_count(input_text, payload)
    }

    /// The inner counter's: remembering counts does not change them.
    fn id(&self) -> Option<CounterId> {
        self.inner.id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Words(AtomicUsize);

    impl TokenCounter for Words {
        fn count_tokens(&self, text: &str) -> usize {
            self.0.fetch_add(1, Ordering::Relaxed);
            text.split_whitespace().count()
        }
    }

    #[test]
    fn a_repeated_text_is_counted_once() {
        let words = Arc::new(Words(AtomicUsize::new(0)));
        let memo = MemoizedCounter::new(words.clone());
        assert_eq!(memo.count_tokens("a b c"), 3);
        assert_eq!(memo.count_tokens("a b c"), 3);
        assert_eq!(memo.count_tokens("d"), 1);
        assert_eq!(words.0.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn texts_of_one_length_keep_their_own_counts() {
        let words = Arc::new(Words(AtomicUsize::new(0)));
        let memo = MemoizedCounter::new(words.clone());
        for _ in 0..2 {
            assert_eq!(memo.count_tokens("a b c"), 3);
            assert_eq!(memo.count_tokens("ab  c"), 2);
            assert_eq!(memo.count_tokens("abc  "), 1);
        }
        assert_eq!(words.0.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn it_counts_under_the_inner_counters_id() {
        struct Named;
        impl TokenCounter for Named {
            fn count_tokens(&self, text: &str) -> usize {
                text.len()
            }
            fn id(&self) -> Option<CounterId> {
                Some(CounterId(42))
            }
        }
        assert_eq!(
            MemoizedCounter::new(Arc::new(Named)).id(),
            Some(CounterId(42))
        );
        let words = Arc::new(Words(AtomicUsize::new(0)));
        assert_eq!(MemoizedCounter::new(words).id(), None);
    }
}
