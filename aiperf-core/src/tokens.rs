//! The [`TokenCounter`] trait: how metrics count tokens without knowing the tokenizer.

/// Counts tokens the way the server's tokenizer would (no special tokens added).
pub trait TokenCounter: Send + Sync {
    /// The number of tokens `text` encodes to.
    fn count_tokens(&self, text: &str) -> usize;
}
