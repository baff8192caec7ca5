//! Token counts of repeated texts, remembered.
//!
//! A benchmark sends the same dataset prompts over and over (100 synthetic prompts by
//! default), and re-tokenizing an identical prompt is most of the cost of a record.
//! Hashing the text is two orders of magnitude cheaper than encoding it, and with
//! foldhash rather than the standard SipHash, cheaper again (every record hashes its
//! prompt and its reply).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aiperf_core::{CounterId, TokenCounter};

/// How many distinct texts are remembered; later texts are counted but not stored, so
/// memory stays bounded when every text is new (e.g. generated outputs).
const CAPACITY: usize = 16_384;

/// A [`TokenCounter`] that remembers the counts of the texts it has seen.
pub(crate) struct MemoizedCounter {
    inner: Arc<dyn TokenCounter>,
    counts: Mutex<HashMap<String, usize, foldhash::fast::RandomState>>,
}

impl MemoizedCounter {
    pub(crate) fn new(inner: Arc<dyn TokenCounter>) -> Self {
        Self {
            inner,
            counts: Mutex::new(HashMap::default()),
        }
    }
}

impl TokenCounter for MemoizedCounter {
    fn count_tokens(&self, text: &str) -> usize {
        if let Some(count) = self.counts.lock().ok().and_then(|c| c.get(text).copied()) {
            return count;
        }
        let count = self.inner.count_tokens(text);
        if let Ok(mut counts) = self.counts.lock() {
            if counts.len() < CAPACITY {
                counts.insert(text.to_owned(), count);
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
