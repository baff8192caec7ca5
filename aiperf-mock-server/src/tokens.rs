//! Tokens in and out: the output corpus, prompt token counting and output length planning.
//!
//! **Output.** Output token `k` (0-based, reasoning tokens first) is the text
//! `" " + CORPUS[k % CORPUS.len()]`. Every corpus word, with its leading space, is exactly one
//! token in tiktoken `o200k_base`, `cl100k_base` and the Qwen3 tokenizer, and the words
//! concatenate without merging, so a client that counts the streamed text with any of those
//! tokenizers counts exactly the tokens the server reports in `usage`.
//!
//! **Prompt.** With a tokenizer file, prompt tokens are the length of its encoding (without
//! special tokens). Without one, the rule is: the number of whitespace-separated words of the
//! prompt, at least 1. A chat prompt is the text of all messages (string content or `text` parts)
//! joined by single spaces.

use std::sync::Arc;

/// Words that are each a single token (with a leading space) in o200k_base, cl100k_base and
/// Qwen3. Output token `k` is `" " + CORPUS[k % CORPUS.len()]`.
pub const CORPUS: [&str; 153] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "they", "you", "were", "her", "she", "there", "been", "one", "all", "we", "their", "has",
    "would", "when", "if", "so", "no", "will", "more", "what", "up", "out", "who", "about", "can",
    "them", "some", "could", "time", "into", "only", "then", "do", "its", "my", "like", "your",
    "any", "over", "me", "than", "now", "very", "our", "also", "after", "first", "new", "these",
    "may", "other", "most", "just", "should", "how", "where", "well", "way", "years", "because",
    "each", "people", "made", "many", "those", "much", "back", "good", "before", "down", "great",
    "man", "even", "through", "still", "make", "same", "own", "might", "old", "last", "long",
    "here", "must", "while", "life", "world", "know", "see", "little", "think", "never", "day",
    "under", "thing", "house", "water", "place", "work", "year", "name", "part", "hand", "head",
    "home", "light", "night", "right", "small", "word", "story", "area", "point", "heart", "book",
    "state", "city", "family", "school", "system", "group", "country", "number", "order", "power",
    "money",
];

/// Most output tokens a request without any max-tokens field gets.
pub const MAX_DEFAULT_OUTPUT: u32 = 4096;

/// Append the text of output tokens `range` (each `" " + word`) to `out`.
pub(crate) fn push_text(out: &mut Vec<u8>, range: std::ops::Range<u32>) {
    for k in range {
        out.push(b' ');
        out.extend_from_slice(CORPUS[k as usize % CORPUS.len()].as_bytes());
    }
}

/// The text of output tokens `range`.
pub fn output_text(range: std::ops::Range<u32>) -> String {
    let mut out = Vec::with_capacity(range.len() * 6);
    push_text(&mut out, range);
    // The corpus is ASCII, so this never fails; fall back to lossless-enough conversion anyway.
    String::from_utf8(out).unwrap_or_default()
}

/// The text of a response's output tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// Token `k` is `" " + CORPUS[k % CORPUS.len()]`.
    Corpus,
    /// Accuracy mode: the reasoning tokens are corpus text, the content tokens are the
    /// pieces of a fixed reply.
    Reply { reasoning: u32, pieces: Vec<String> },
}

impl Output {
    /// A fixed reply after `plan`'s reasoning, and the plan that sends it: the reply's
    /// pieces (one per word, its leading whitespace attached) are the content tokens,
    /// finish `stop`, unless a max-tokens budget cuts it short (finish `length`).
    pub(crate) fn reply(text: &str, plan: Plan) -> (Output, Plan) {
        let mut pieces: Vec<String> = Vec::new();
        let mut after_word = false;
        for c in text.chars() {
            match pieces.last_mut() {
                Some(piece) if !(c.is_whitespace() && after_word) => piece.push(c),
                _ => pieces.push(c.to_string()),
            }
            after_word = !c.is_whitespace();
        }
        let n = u32::try_from(pieces.len()).unwrap_or(u32::MAX).max(1);
        let plan = if plan.finish == Finish::Length && n > plan.content {
            plan
        } else {
            Plan {
                content: n,
                finish: Finish::Stop,
                ..plan
            }
        };
        let reasoning = plan.reasoning;
        (Output::Reply { reasoning, pieces }, plan)
    }

    /// Append the text of tokens `range`, escaped for a JSON string, to `out`.
    pub(crate) fn push_json(&self, out: &mut Vec<u8>, range: std::ops::Range<u32>) {
        match self {
            Output::Reply { reasoning, pieces } if range.end > *reasoning => {
                push_text(out, range.start..range.start.max(*reasoning));
                let text = self.text(range.start.max(*reasoning)..range.end);
                let quoted = crate::routes::json_str(&text);
                out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
            }
            _ => push_text(out, range),
        }
    }

    /// The text of tokens `range`.
    pub(crate) fn text(&self, range: std::ops::Range<u32>) -> String {
        match self {
            Output::Reply { reasoning, pieces } if range.end > *reasoning => {
                let mut text = output_text(range.start..range.start.max(*reasoning));
                let from = range.start.max(*reasoning) - reasoning;
                for piece in pieces
                    .iter()
                    .skip(from as usize)
                    .take((range.end - reasoning - from) as usize)
                {
                    text.push_str(piece);
                }
                text
            }
            _ => output_text(range),
        }
    }
}

/// A prompt-token count supplied by the program that embeds the server (e.g. the
/// benchmark's own tokenizer, so the usage it reports agrees with the client's count).
pub type PromptTokenCounter = Arc<dyn Fn(&str) -> usize + Send + Sync>;

/// Counts prompt tokens: a real tokenizer, a function the embedder gave, or the word rule.
#[derive(Clone, Default)]
pub(crate) struct PromptCounter {
    tokenizer: Option<Arc<tokenizers::Tokenizer>>,
    function: Option<PromptTokenCounter>,
}

impl std::fmt::Debug for PromptCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptCounter")
            .field("tokenizer", &self.tokenizer.is_some())
            .field("function", &self.function.is_some())
            .finish()
    }
}

impl PromptCounter {
    pub(crate) fn new(
        tokenizer: Option<tokenizers::Tokenizer>,
        function: Option<PromptTokenCounter>,
    ) -> Self {
        Self {
            tokenizer: tokenizer.map(Arc::new),
            function,
        }
    }

    /// Number of tokens of `text` (at least 1).
    pub(crate) fn count(&self, text: &str) -> u32 {
        let n = if let Some(count) = &self.function {
            count(text)
        } else if let Some(t) = &self.tokenizer {
            match t.encode(text, false) {
                Ok(enc) => enc.len(),
                Err(e) => {
                    tracing::warn!(error = %e, "tokenizer failed; counting words instead");
                    count_words(text)
                }
            }
        } else {
            count_words(text)
        };
        u32::try_from(n).unwrap_or(u32::MAX).max(1)
    }
}

/// The default prompt rule: whitespace-separated words, at least 1.
pub fn count_words(text: &str) -> usize {
    text.split_whitespace().count().max(1)
}

/// 64-bit FNV-1a, used to pick a deterministic output length from the prompt text.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The max-tokens budget was used up.
    Length,
    /// The model "chose" to stop.
    Stop,
}

impl Finish {
    pub(crate) fn openai(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
}

/// How many tokens a response has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub prompt_tokens: u32,
    /// Reasoning tokens, emitted first (part of `completion_tokens`).
    pub reasoning: u32,
    /// Content tokens (always at least 1).
    pub content: u32,
    pub finish: Finish,
}

impl Plan {
    pub(crate) fn completion(&self) -> u32 {
        self.reasoning + self.content
    }
}

/// What a request asked for about its output length.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LengthAsk {
    pub max: Option<u32>,
    pub min: Option<u32>,
    /// Reasoning tokens wanted (effort), when reasoning is on.
    pub reasoning: Option<u32>,
}

/// Decide the output length.
///
/// With a max: exactly `max` tokens, finish `length`; reasoning takes at most half of it.
/// Without: reasoning (effort) + a content length of 0.8–1.2 × prompt tokens (chosen by a hash
/// of the prompt), at least 16 and `min`, at most [`MAX_DEFAULT_OUTPUT`]; finish `stop`.
pub(crate) fn plan(prompt_tokens: u32, prompt_hash: u64, ask: LengthAsk) -> Plan {
    let effort = ask.reasoning.unwrap_or(0);
    if let Some(max) = ask.max {
        let max = max.max(1);
        let reasoning = effort.min(max / 2);
        Plan {
            prompt_tokens,
            reasoning,
            content: max - reasoning,
            finish: Finish::Length,
        }
    } else {
        // factor in [0.8, 1.2] from the hash
        let frac = (prompt_hash >> 11) as f64 / (1u64 << 53) as f64;
        let factor = 0.8 + 0.4 * frac;
        let derived = (f64::from(prompt_tokens) * factor).round() as u32;
        let content = derived
            .max(16)
            .max(ask.min.unwrap_or(0))
            .min(MAX_DEFAULT_OUTPUT.max(ask.min.unwrap_or(0)));
        Plan {
            prompt_tokens,
            reasoning: effort,
            content,
            finish: Finish::Stop,
        }
    }
}

/// Reasoning tokens for a `reasoning_effort` value (default medium = 250).
pub(crate) fn effort_tokens(effort: Option<&str>) -> u32 {
    match effort.map(str::to_ascii_lowercase).as_deref() {
        Some("none") => 0,
        Some("minimal") => 50,
        Some("low") => 100,
        Some("high") => 500,
        _ => 250,
    }
}

/// Whether a model name makes the mock emit reasoning tokens.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.contains("qwen") || m.contains("gpt-oss") || m.contains("deepseek-r1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_is_exact_and_reasoning_at_most_half() {
        let p = plan(
            10,
            0,
            LengthAsk {
                max: Some(100),
                min: None,
                reasoning: Some(250),
            },
        );
        assert_eq!((p.reasoning, p.content, p.finish), (50, 50, Finish::Length));
        let p = plan(
            10,
            0,
            LengthAsk {
                max: Some(1),
                min: None,
                reasoning: Some(250),
            },
        );
        assert_eq!((p.reasoning, p.content), (0, 1));
        let p = plan(
            10,
            0,
            LengthAsk {
                max: Some(1000),
                min: Some(2000),
                reasoning: Some(100),
            },
        );
        assert_eq!(p.completion(), 1000);
    }

    #[test]
    fn default_length_is_deterministic_and_bounded() {
        for n in [1u32, 10, 100, 1000] {
            let h = fnv1a(format!("prompt {n}").as_bytes());
            let p = plan(n, h, LengthAsk::default());
            assert_eq!(p, plan(n, h, LengthAsk::default()));
            assert!(p.content >= 16);
            let lo = (f64::from(n) * 0.8).floor() as u32;
            let hi = (f64::from(n) * 1.2).ceil() as u32;
            assert!(
                p.content == 16 || (lo..=hi).contains(&p.content),
                "{n} -> {}",
                p.content
            );
            assert_eq!(p.finish, Finish::Stop);
        }
        let p = plan(
            5,
            7,
            LengthAsk {
                min: Some(40),
                ..LengthAsk::default()
            },
        );
        assert_eq!(p.content, 40);
    }

    #[test]
    fn words_rule() {
        assert_eq!(count_words(""), 1);
        assert_eq!(count_words("  a b\tc\n d "), 4);
        assert_eq!(output_text(0..3), " the of and");
        assert_eq!(output_text(153..154), " the");
    }

    #[test]
    fn reasoning_names() {
        assert!(is_reasoning_model("Qwen/Qwen3-0.6B"));
        assert!(is_reasoning_model("openai/gpt-oss-20b"));
        assert!(is_reasoning_model("DeepSeek-R1-Distill"));
        assert!(!is_reasoning_model("mock-model"));
        assert_eq!(effort_tokens(Some("LOW")), 100);
        assert_eq!(effort_tokens(None), 250);
        assert_eq!(effort_tokens(Some("high")), 500);
    }
}
