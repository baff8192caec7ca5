//! Times synthetic prompt generation, for each corpus of `--prompt-corpus`.
//!
//! ```text
//! cargo run --release -p aiperf-datasets --example prompt_speed [-- /path/to/tokenizer.json]
//! ```
//! Without an argument the builtin tokenizer (`o200k_base`) is used.
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use std::time::Instant;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_datasets::{PromptGenerator, Tokenizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tokenizer = match std::env::args().nth(1) {
        Some(path) => Tokenizer::from_file(path)?,
        None => Tokenizer::builtin(),
    };
    for corpus in [
        PromptCorpus::Sonnet,
        PromptCorpus::Coding,
        PromptCorpus::Random,
    ] {
        time_corpus(&tokenizer, corpus)?;
    }
    Ok(())
}

fn time_corpus(
    tokenizer: &Tokenizer,
    corpus: PromptCorpus,
) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut generator =
        PromptGenerator::with_corpus(tokenizer.clone(), 42, corpus, RandomCorpusStyle::Vllm)?;
    println!(
        "tokenizer {}, {corpus:?} corpus of {} tokens built in {:?}",
        tokenizer.name(),
        generator.corpus_tokens(),
        started.elapsed()
    );
    for (count, length) in [(1000, 550), (1000, 128), (100, 3000)] {
        let started = Instant::now();
        let prompts: Vec<String> = (0..count).map(|_| generator.generate(length)).collect();
        let elapsed = started.elapsed();

        let exact = prompts
            .iter()
            .filter(|p| tokenizer.encode(p).len() == length)
            .count();
        println!(
            "{count} prompts of {length} tokens: {elapsed:?} ({:.1} µs each), {exact}/{count} exact",
            elapsed.as_secs_f64() * 1e6 / f64::from(count)
        );
    }
    Ok(())
}
