//! Times making the conversations of a default-sized synthetic run (one pass of
//! `SyntheticDataset::stream`, what the run's maker thread does) and prints a checksum of
//! every prompt, so two builds can be compared for speed and for identical bytes.
//!
//! ```text
//! cargo run --release -p aiperf-datasets --example conversation_cost [-- CONVERSATIONS [ISL...]]
//! ```
//! Defaults: 20,000 conversations at ISL 32 and at ISL 550, OSL 8, seed 1, the builtin
//! tokenizer (`o200k_base`).
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use std::time::Instant;

use aiperf_core::config::InputConfig;
use aiperf_datasets::{SyntheticDataset, Tokenizer};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let conversations: usize = args.next().map_or(Ok(20_000), |n| n.parse())?;
    let lengths: Vec<u32> = args.map(|n| n.parse()).collect::<Result<_, _>>()?;
    let lengths = if lengths.is_empty() {
        vec![32, 550]
    } else {
        lengths
    };
    for isl in lengths {
        let input = InputConfig {
            isl_mean: isl,
            osl_mean: Some(8),
            random_seed: Some(1),
            ..InputConfig::default()
        };
        let started = Instant::now();
        let stream = SyntheticDataset::new(&input, &[], Tokenizer::builtin())?
            .with_entries(conversations)
            .stream()?;
        let set_up = started.elapsed();
        let started = Instant::now();
        let mut checksum = Fnv::default();
        for conversation in stream.pass() {
            for text in conversation?.turns.iter().flat_map(|turn| &turn.texts) {
                checksum.add(text.as_bytes());
            }
        }
        let elapsed = started.elapsed();
        println!(
            "ISL {isl}: {conversations} conversations in {elapsed:.2?} ({:.2} µs each; set-up {set_up:.2?}), prompt checksum {:016x}",
            elapsed.as_secs_f64() * 1e6 / conversations as f64,
            checksum.0
        );
    }
    Ok(())
}

/// FNV-1a over every prompt's bytes, each followed by a 0 byte.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for byte in bytes.iter().chain(&[0]) {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}
