//! `--prompt-corpus coding|random` and `--random-corpus-style`: prompts of the other
//! corpora hit exact token counts too, with the builtin tokenizer (always) and the real
//! Qwen3 tokenizer (when `AIPERF_TEST_TOKENIZER_DIR` points at the shared test
//! tokenizers).

// Test helpers outside `#[test]` functions: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use aiperf_core::config::{InputConfig, PromptCorpus, RandomCorpusStyle, RangeRatio};
use aiperf_core::DatasetSource;
use aiperf_datasets::{PromptGenerator, SyntheticDataset, Tokenizer};

const LENGTHS: [usize; 6] = [1, 2, 7, 128, 550, 3000];
const SEEDS: [u64; 3] = [0, 42, 20_251_122];
/// Seeds for the Qwen3 tokenizer, slow in debug builds.
const QWEN_SEEDS: [u64; 1] = [7];

fn generator(tokenizer: &Tokenizer, seed: u64, corpus: PromptCorpus) -> PromptGenerator {
    PromptGenerator::with_corpus(tokenizer.clone(), seed, corpus, RandomCorpusStyle::Vllm).unwrap()
}

/// Every prompt of every length and seed encodes to exactly its length; returns the ids
/// of every prompt.
fn assert_exact(tokenizer: &Tokenizer, corpus: PromptCorpus, seeds: &[u64]) -> Vec<Vec<u32>> {
    let mut all = Vec::new();
    for &seed in seeds {
        let mut generator = generator(tokenizer, seed, corpus);
        for n in LENGTHS {
            for _ in 0..3 {
                let prompt = generator.generate(n);
                let ids = tokenizer.encode(&prompt);
                assert_eq!(
                    ids.len(),
                    n,
                    "{corpus:?} tokenizer {} seed {seed} length {n}: {prompt:?}",
                    tokenizer.name()
                );
                all.push(ids);
            }
        }
    }
    all
}

fn qwen3() -> Option<Tokenizer> {
    let dir = std::env::var("AIPERF_TEST_TOKENIZER_DIR").ok()?;
    Some(Tokenizer::from_file(std::path::Path::new(&dir).join("qwen3/tokenizer.json")).unwrap())
}

#[test]
fn random_prompts_have_exact_lengths_and_no_special_tokens() {
    let builtin = Tokenizer::builtin();
    assert_exact(&builtin, PromptCorpus::Random, &SEEDS);
    let mut generator = generator(&builtin, 1, PromptCorpus::Random);
    for _ in 0..50 {
        assert!(!generator.generate(550).contains("<|endoftext|>"));
    }
    let Some(qwen) = qwen3() else {
        return;
    };
    // Qwen3's special tokens are its added tokens, 151643 and up: a prompt containing
    // one's text would encode to its id.
    for ids in assert_exact(&qwen, PromptCorpus::Random, &QWEN_SEEDS) {
        assert!(ids.iter().all(|id| *id < 151_643), "{ids:?}");
    }
}

#[test]
fn random_prompts_are_seeded_vocabulary_windows() {
    let tokenizer = Tokenizer::builtin();
    let prompts = |seed| {
        let mut generator = generator(&tokenizer, seed, PromptCorpus::Random);
        (0..5).map(|_| generator.generate(64)).collect::<Vec<_>>()
    };
    assert_eq!(prompts(3), prompts(3));
    assert_ne!(prompts(3), prompts(4));
    let random = generator(&tokenizer, 3, PromptCorpus::Random);
    assert_eq!(
        random.corpus_tokens(),
        199_998,
        "o200k_base without special tokens"
    );
    let sglang = PromptGenerator::with_corpus(
        tokenizer.clone(),
        3,
        PromptCorpus::Random,
        RandomCorpusStyle::Sglang,
    )
    .unwrap();
    assert_eq!(
        sglang.corpus_tokens(),
        200_000,
        "with <|endoftext|> and <|endofprompt|>"
    );
    // A hash-id block is consecutive pool ids.
    let block = random.fork(9).token_block(4);
    assert_eq!(
        block.windows(2).filter(|w| w[1] != w[0] + 1).count(),
        0,
        "{block:?}"
    );
}

#[test]
fn coding_prompts_have_exact_lengths_and_read_like_code() {
    let builtin = Tokenizer::builtin();
    assert_exact(&builtin, PromptCorpus::Coding, &SEEDS);
    let mut generator = generator(&builtin, 5, PromptCorpus::Coding);
    let long = generator.generate(3000);
    assert!(long.lines().count() > 50, "{long}");
    let markers = [
        "def ",
        "fn ",
        "export ",
        "$ ",
        "\"id\"",
        "Traceback",
        "@@ -",
    ];
    assert!(
        markers.iter().filter(|m| long.contains(*m)).count() >= 3,
        "{long}"
    );
    if let Some(qwen) = qwen3() {
        assert_exact(&qwen, PromptCorpus::Coding, &QWEN_SEEDS);
    }
}

#[test]
fn coding_prompts_are_deterministic_per_seed() {
    let tokenizer = Tokenizer::builtin();
    let prompts = |seed| {
        let mut generator = generator(&tokenizer, seed, PromptCorpus::Coding);
        (0..5).map(|_| generator.generate(200)).collect::<Vec<_>>()
    };
    let first = prompts(1);
    assert_eq!(first, prompts(1));
    assert_ne!(first, prompts(2));
    assert_ne!(first[0], first[1]);
    let prose = generator(&tokenizer, 1, PromptCorpus::Sonnet).generate(200);
    assert!(!first.contains(&prose));
}

fn input(corpus: PromptCorpus, style: RandomCorpusStyle) -> InputConfig {
    let mut input = InputConfig {
        isl_mean: 550,
        osl_mean: Some(20),
        num_dataset_entries: Some(40),
        random_seed: Some(7),
        ..InputConfig::default()
    };
    input.prompt.corpus = Some(corpus);
    input.prompt.random_corpus_style = style;
    input
}

fn prompt_lengths(input: &InputConfig, tokenizer: &Tokenizer) -> Vec<usize> {
    let dataset = SyntheticDataset::new(input, &[], tokenizer.clone())
        .unwrap()
        .load()
        .unwrap();
    dataset
        .conversations
        .iter()
        .map(|c| tokenizer.encode(&c.turns[0].texts[0]).len())
        .collect()
}

#[test]
fn the_synthetic_dataset_takes_the_corpus_and_the_style() {
    let tokenizer = Tokenizer::builtin();
    for corpus in [PromptCorpus::Coding, PromptCorpus::Random] {
        let lengths = prompt_lengths(&input(corpus, RandomCorpusStyle::Vllm), &tokenizer);
        assert_eq!(lengths, vec![550; 40], "{corpus:?}");
    }
    // The SGLang window of ratio 0.5 around 550 is [275, 550]; the vLLM one [275, 825].
    let ratio = Some(RangeRatio {
        input: 0.5,
        output: 0.5,
    });
    let mut sglang = input(PromptCorpus::Random, RandomCorpusStyle::Sglang);
    sglang.random_range_ratio = ratio;
    let lengths = prompt_lengths(&sglang, &tokenizer);
    assert!(
        lengths.iter().all(|n| (275..=550).contains(n)),
        "{lengths:?}"
    );
    let mut vllm = input(PromptCorpus::Random, RandomCorpusStyle::Vllm);
    vllm.random_range_ratio = ratio;
    let lengths = prompt_lengths(&vllm, &tokenizer);
    assert!(
        lengths.iter().all(|n| (275..=825).contains(n)),
        "{lengths:?}"
    );
    assert!(lengths.iter().any(|n| *n > 550), "{lengths:?}");
}
