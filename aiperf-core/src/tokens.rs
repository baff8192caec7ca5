//! The [`TokenCounter`] trait: how metrics count tokens without knowing the tokenizer.

use std::borrow::Cow;

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
}
