//! Trace prompts (docs/datasets.md#trace-prompts-from-hash-ids): each hash id of a trace
//! stands for one block of prompt tokens, so requests sharing leading hash ids share a
//! token prefix (and the server's KV-cache blocks for it).

use std::collections::HashMap;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};

use crate::prompt::{BlockSeparator, PromptGenerator};
use crate::seed::{derive_seed, PROMPT_CORPUS};
use crate::{SyntheticError, Tokenizer};

/// The longest prompt a trace line may ask for, in tokens: far beyond any model's
/// context, and small enough that a typo such as an extra digit cannot exhaust memory.
pub(super) const MAX_PROMPT_TOKENS: u64 = 1 << 24;

/// Makes the prompts of a trace: one cached token block per hash id, and independent
/// exact-length prompts for lines without hash ids. Same seed and tokenizer, same
/// prompts.
///
/// ```
/// use aiperf_datasets::{custom::HashIdPrompts, Tokenizer};
///
/// use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
///
/// let mut prompts = HashIdPrompts::new(
///     Tokenizer::builtin(), 7, 4, PromptCorpus::Sonnet, RandomCorpusStyle::Vllm)?;
/// let a = prompts.tokens(10, &[1, 2, 3])?;
/// let b = prompts.tokens(6, &[1, 9])?;
/// assert_eq!(a.len(), 10);
/// assert_eq!(a[..4], b[..4]); // hash id 1: the same block
/// assert!(prompts.tokens(13, &[1, 2, 3]).is_err()); // final block of 5 > 4
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HashIdPrompts {
    generator: PromptGenerator,
    block_size: usize,
    separator: Option<BlockSeparator>,
    blocks: HashMap<u64, Vec<u32>>,
}

impl HashIdPrompts {
    /// Prompts for `tokenizer` with `block_size`-token blocks (at least 1), drawn from
    /// `corpus` (see [`PromptGenerator::with_corpus`]) with the corpus stream of `seed`.
    pub fn new(
        tokenizer: Tokenizer,
        seed: u64,
        block_size: u32,
        corpus: PromptCorpus,
        style: RandomCorpusStyle,
    ) -> Result<Self, SyntheticError> {
        if block_size == 0 {
            return Err(SyntheticError::InvalidDistribution {
                what: "block size",
                reason: "must be at least 1 token (--isl-block-size)".to_string(),
            });
        }
        let separator = BlockSeparator::of(&tokenizer);
        Ok(Self {
            generator: PromptGenerator::with_corpus(
                tokenizer,
                derive_seed(seed, PROMPT_CORPUS),
                corpus,
                style,
            )?,
            block_size: block_size as usize,
            separator,
            blocks: HashMap::new(),
        })
    }

    /// The block separator in use (the tokenizer's BOS, else EOS), if any.
    pub fn separator(&self) -> Option<&BlockSeparator> {
        self.separator.as_ref()
    }

    /// The token ids of a prompt of `input_length` tokens made of the blocks of
    /// `hash_ids`: every block but the last has the block size, the last one
    /// `input_length − (n−1)·block size`, which must be in `1..=block size`. `Err` is the
    /// reason, for an error naming the line.
    pub fn tokens(&mut self, input_length: u64, hash_ids: &[u64]) -> Result<Vec<u32>, String> {
        if hash_ids.is_empty() {
            check_length(input_length)?;
            return Err(misfit(
                self.block_size as u64,
                input_length,
                hash_ids,
                i128::from(input_length),
            ));
        }
        let final_block = self.check(input_length, hash_ids)?;
        let mut tokens = Vec::with_capacity(input_length as usize);
        for (index, id) in hash_ids.iter().enumerate() {
            let size = if index + 1 == hash_ids.len() {
                final_block as usize
            } else {
                self.block_size
            };
            let cached = self.blocks.get(id).map_or(0, Vec::len);
            if cached == 0 {
                let fresh = self.fresh_block(size);
                self.blocks.insert(*id, fresh);
            } else if cached < size {
                // First seen as a short final block, now needed whole: grow it, so
                // every prompt with this hash id still shares its leading tokens.
                let more = self.generator.token_block(size - cached);
                if let Some(block) = self.blocks.get_mut(id) {
                    block.extend(more);
                }
            }
            if let Some(block) = self.blocks.get(id) {
                // A full block may end this prompt: only its first `size` tokens.
                tokens.extend_from_slice(&block[..size.min(block.len())]);
            }
        }
        Ok(tokens)
    }

    /// The prompt text for `input_length` tokens and `hash_ids` (see
    /// [`HashIdPrompts::tokens`]), decoded once; without hash ids an independent prompt
    /// of exactly `input_length` tokens.
    pub fn prompt(&mut self, input_length: u64, hash_ids: &[u64]) -> Result<String, String> {
        if hash_ids.is_empty() {
            check_length(input_length)?;
            return Ok(self.generator.generate(input_length as usize));
        }
        let tokens = self.tokens(input_length, hash_ids)?;
        Ok(self.decode(&tokens))
    }

    /// Checks that a prompt of `input_length` tokens can be made of `hash_ids` (see
    /// [`HashIdPrompts::tokens`]; any length up to the limit without hash ids), before
    /// any prompt is made; `Ok` is the size of the final block. `Err` is the reason.
    pub(super) fn check(&self, input_length: u64, hash_ids: &[u64]) -> Result<u64, String> {
        check_blocks(self.block_size as u64, input_length, hash_ids)
    }

    fn fresh_block(&mut self, size: usize) -> Vec<u32> {
        match &self.separator {
            Some(separator) => {
                let mut block = vec![separator.id];
                block.extend(self.generator.token_block(size - 1));
                block
            }
            None => self.generator.token_block(size),
        }
    }

    /// Decodes prompt tokens. Decoding skips special tokens, so the separator's text is
    /// put back between the decoded runs (a server re-encodes it as the one token).
    fn decode(&self, tokens: &[u32]) -> String {
        let tokenizer = self.generator.tokenizer();
        match &self.separator {
            None => tokenizer.decode(tokens),
            Some(separator) => tokens
                .split(|id| *id == separator.id)
                .map(|run| tokenizer.decode(run))
                .collect::<Vec<_>>()
                .join(&separator.text),
        }
    }
}

/// [`HashIdPrompts::check`] for `block`-token blocks.
pub(super) fn check_blocks(block: u64, input_length: u64, hash_ids: &[u64]) -> Result<u64, String> {
    check_length(input_length)?;
    if hash_ids.is_empty() {
        return Ok(input_length);
    }
    let full_blocks = hash_ids.len() as u64 - 1;
    let final_block = i128::from(input_length) - i128::from(full_blocks) * i128::from(block);
    if final_block <= 0 || final_block > i128::from(block) {
        return Err(misfit(block, input_length, hash_ids, final_block));
    }
    Ok(final_block as u64)
}

fn misfit(block: u64, input_length: u64, hash_ids: &[u64], final_block: i128) -> String {
    format!(
        "input_length {input_length} does not fit {} hash ids of {block}-token blocks: \
         the final block would hold {final_block} tokens (must be 1 to {block}); \
         check --isl-block-size",
        hash_ids.len()
    )
}

/// Rejects prompt lengths over [`MAX_PROMPT_TOKENS`].
fn check_length(input_length: u64) -> Result<(), String> {
    if input_length > MAX_PROMPT_TOKENS {
        return Err(format!(
            "input_length {input_length} is more than the {MAX_PROMPT_TOKENS} tokens a prompt \
             may have"
        ));
    }
    Ok(())
}
