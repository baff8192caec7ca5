//! Synthetic prompts encode to exactly the requested number of tokens, with the builtin
//! tokenizer (always) and with the real Qwen3 tokenizer (when
//! `AIPERF_TEST_TOKENIZER_DIR` points at the shared test tokenizers).
#![allow(clippy::print_stdout, clippy::print_stderr)]
// a test says on the terminal which optional input it skipped

// Test helpers outside `#[test]` functions: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use aiperf_datasets::{PromptGenerator, Tokenizer};
use proptest::prelude::*;

const LENGTHS: [usize; 6] = [1, 2, 7, 128, 550, 3000];
const SEEDS: [u64; 5] = [0, 1, 2, 42, 20_251_122];

fn assert_exact(tokenizer: &Tokenizer) {
    for seed in SEEDS {
        let mut generator = PromptGenerator::new(tokenizer.clone(), seed).unwrap();
        for n in LENGTHS {
            // Several prompts per length: each starts somewhere else in the corpus.
            for _ in 0..3 {
                let prompt = generator.generate(n);
                assert_eq!(
                    tokenizer.encode(&prompt).len(),
                    n,
                    "tokenizer {} seed {seed} length {n}: {prompt:?}",
                    tokenizer.name()
                );
            }
        }
    }
}

#[test]
fn builtin_prompts_have_exact_lengths() {
    assert_exact(&Tokenizer::builtin());
}

#[test]
fn other_tiktoken_encodings_have_exact_lengths() {
    for name in ["cl100k_base", "r50k_base"] {
        let encoding = aiperf_datasets::TiktokenEncoding::from_name(name).unwrap();
        let tokenizer = Tokenizer::tiktoken(encoding);
        let mut generator = PromptGenerator::new(tokenizer.clone(), 3).unwrap();
        for n in LENGTHS {
            assert_eq!(
                tokenizer.encode(&generator.generate(n)).len(),
                n,
                "{name} {n}"
            );
        }
    }
}

/// The Qwen3 `tokenizer.json`, or `None` (with a message) when the variable is unset
/// outside CI. In CI (`CI=true`) a missing variable is a failure.
#[cfg(feature = "hf-tokenizers")]
fn qwen3_path() -> Option<std::path::PathBuf> {
    let Ok(dir) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") else {
        let in_ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        assert!(
            !in_ci,
            "CI=true but AIPERF_TEST_TOKENIZER_DIR is not set: point it at the folder \
             holding qwen3/tokenizer.json so the real-tokenizer tests run"
        );
        eprintln!(
            "skipping Qwen3 exact-length test: set AIPERF_TEST_TOKENIZER_DIR to the \
             folder holding qwen3/tokenizer.json to run it"
        );
        return None;
    };
    let path = std::path::PathBuf::from(dir)
        .join("qwen3")
        .join("tokenizer.json");
    assert!(
        path.is_file(),
        "AIPERF_TEST_TOKENIZER_DIR is set but {} does not exist",
        path.display()
    );
    Some(path)
}

#[cfg(feature = "hf-tokenizers")]
#[test]
fn qwen3_prompts_have_exact_lengths() {
    let Some(path) = qwen3_path() else {
        return;
    };
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    assert!(tokenizer.tiktoken_encoding().is_none());
    assert_exact(&tokenizer);
}

#[cfg(feature = "hf-tokenizers")]
#[test]
fn qwen3_round_trips_multilingual_text() {
    let Some(path) = qwen3_path() else {
        return;
    };
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    let text = "Hello, world! Grüße aus München. 你好，世界。 こんにちは 🌍";
    let ids = tokenizer.encode(text);
    assert_eq!(tokenizer.decode(&ids), text);
    // No special tokens are added on encode.
    assert_eq!(tokenizer.encode("hello").len(), 1);
}

fn shared_builtin_generator() -> &'static PromptGenerator {
    static GENERATOR: OnceLock<PromptGenerator> = OnceLock::new();
    GENERATOR.get_or_init(|| PromptGenerator::new(Tokenizer::builtin(), 0).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_lengths_are_exact_with_builtin(n in 1usize..2000, seed in any::<u64>()) {
        let mut generator = shared_builtin_generator().fork(seed);
        let prompt = generator.generate(n);
        prop_assert_eq!(generator.tokenizer().encode(&prompt).len(), n);
    }
}
