//! `--prompt-corpus` and `--random-corpus-style`: what synthetic prompt text is made of,
//! and which benchmark tool's conventions random-token prompts and range-ratio windows
//! follow.

use serde::{Deserialize, Serialize};

/// The text synthetic prompts are cut from (`--prompt-corpus`). Honoured wherever prompt
/// text is synthesized: the synthetic dataset and the `hash_ids` blocks of trace files;
/// verbatim dataset files are sent as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptCorpus {
    /// English prose. The Python AIPerf 0.13 cuts it from Shakespeare's sonnets, which are
    /// not shipped here: this selects the built-in prose corpus (the default).
    #[default]
    Sonnet,
    /// Coding-session content: source code in several languages, shell transcripts,
    /// JSON documents, error tracebacks and unified diffs.
    Coding,
    /// Random token ids from the tokenizer's vocabulary, decoded to text (the
    /// `vllm bench serve` random dataset); [`RandomCorpusStyle`] picks the pool.
    Random,
}

/// The benchmark tool whose conventions the random corpus and `--random-range-ratio`
/// follow (`--random-corpus-style`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RandomCorpusStyle {
    /// `vllm bench serve`: random tokens exclude special tokens; the range window is
    /// `[floor(m·(1−r)), ceil(m·(1+r))]` around the ISL mean less the special tokens
    /// the tokenizer adds, ratio in [0, 1).
    #[default]
    Vllm,
    /// `sglang.benchmark.serving --dataset-name random-ids`: random tokens from the whole
    /// vocabulary; the range window is `[max(1, int(m·r)), m]`, ratio in [0, 1], and the
    /// special tokens the tokenizer adds are taken off each drawn input length.
    Sglang,
}
