//! Trace prompts (docs/datasets.md#trace-prompts-from-hash-ids): each hash id of a trace
//! stands for one block of prompt tokens, so requests sharing leading hash ids share a
//! token prefix (and the server's KV-cache blocks for it).

use std::collections::HashMap;
use std::sync::Arc;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::DeferredText;

use crate::prompt::{BlockSeparator, CorpusTokens, PromptGenerator, TokenWindow};
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
    /// Shared with the deferred prompts made of it (copied if it grows after that).
    table: Arc<BlockTable>,
}

/// The token block of every hash id seen so far, and how to decode them. A block is kept
/// as where its tokens lie in the corpus, not as the tokens: a long trace's distinct
/// blocks would otherwise hold hundreds of megabytes before the first request.
#[derive(Debug, Clone)]
struct BlockTable {
    tokenizer: Tokenizer,
    corpus: CorpusTokens,
    separator: Option<BlockSeparator>,
    blocks: HashMap<u64, Block>,
}

/// One hash id's tokens: the separator first when there is one, then corpus windows (more
/// than one when the block was first made short and grown later).
#[derive(Debug, Clone, Default)]
struct Block {
    separator: bool,
    windows: Vec<TokenWindow>,
}

impl Block {
    fn len(&self) -> usize {
        usize::from(self.separator) + self.windows.iter().map(|w| w.len()).sum::<usize>()
    }
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
        let generator = PromptGenerator::with_corpus(
            tokenizer.clone(),
            derive_seed(seed, PROMPT_CORPUS),
            corpus,
            style,
        )?;
        let table = BlockTable {
            separator: BlockSeparator::of(&tokenizer),
            tokenizer,
            corpus: generator.shared_corpus(),
            blocks: HashMap::new(),
        };
        Ok(Self {
            generator,
            block_size: block_size as usize,
            table: Arc::new(table),
        })
    }

    /// The block separator in use (the tokenizer's BOS, else EOS), if any.
    pub fn separator(&self) -> Option<&BlockSeparator> {
        self.table.separator.as_ref()
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
        let final_block = self.make_blocks(input_length, hash_ids)?;
        Ok(self.table.tokens(hash_ids, final_block, self.block_size))
    }

    /// Makes (and caches) the blocks of a prompt of `input_length` tokens made of
    /// `hash_ids`, in the order every prompt of the trace needs them (the corpus stream
    /// is drawn from as blocks are first seen); `Ok` is the size of the final block.
    pub(super) fn make_blocks(
        &mut self,
        input_length: u64,
        hash_ids: &[u64],
    ) -> Result<u64, String> {
        let final_block = self.check(input_length, hash_ids)?;
        for (index, id) in hash_ids.iter().enumerate() {
            let size = if index + 1 == hash_ids.len() {
                final_block as usize
            } else {
                self.block_size
            };
            let cached = self.table.blocks.get(id).map_or(0, Block::len);
            if cached == 0 {
                let fresh = self.fresh_block(size);
                Arc::make_mut(&mut self.table).blocks.insert(*id, fresh);
            } else if cached < size {
                // First seen as a short final block, now needed whole: grow it, so
                // every prompt with this hash id still shares its leading tokens.
                let more = self.generator.token_window(size - cached);
                if let Some(block) = Arc::make_mut(&mut self.table).blocks.get_mut(id) {
                    block.windows.push(more);
                }
            }
        }
        Ok(final_block)
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
        Ok(self.table.decode(&tokens))
    }

    /// The prompt of [`HashIdPrompts::prompt`] as a recipe, made when a run needs it,
    /// for blocks made already by [`HashIdPrompts::make_blocks`]. Ask for the recipes once
    /// every prompt's blocks are made: the recipes share the blocks, which are copied if
    /// more are made after.
    pub(super) fn deferred_prompt(&self, hash_ids: Vec<u64>, final_block: u64) -> DeferredText {
        let table = Arc::clone(&self.table);
        let block_size = self.block_size;
        DeferredText::new(move || table.decode(&table.tokens(&hash_ids, final_block, block_size)))
    }

    /// Checks that a prompt of `input_length` tokens can be made of `hash_ids` (see
    /// [`HashIdPrompts::tokens`]; any length up to the limit without hash ids), before
    /// any prompt is made; `Ok` is the size of the final block. `Err` is the reason.
    pub(super) fn check(&self, input_length: u64, hash_ids: &[u64]) -> Result<u64, String> {
        check_blocks(self.block_size as u64, input_length, hash_ids)
    }

    fn fresh_block(&mut self, size: usize) -> Block {
        let separator = self.table.separator.is_some();
        Block {
            separator,
            windows: vec![self.generator.token_window(size - usize::from(separator))],
        }
    }
}

impl BlockTable {
    /// The tokens of a prompt of `hash_ids`' blocks (made already): every block whole but
    /// the last, of which `final_block` tokens.
    fn tokens(&self, hash_ids: &[u64], final_block: u64, block_size: usize) -> Vec<u32> {
        let mut tokens =
            Vec::with_capacity(block_size * (hash_ids.len() - 1) + final_block as usize);
        for (index, id) in hash_ids.iter().enumerate() {
            let size = if index + 1 == hash_ids.len() {
                final_block as usize
            } else {
                block_size
            };
            if let Some(block) = self.blocks.get(id) {
                // A full block may end this prompt: only its first `size` tokens.
                self.take(block, size, &mut tokens);
            }
        }
        tokens
    }

    /// The first `size` tokens of `block`, appended to `out`.
    fn take(&self, block: &Block, mut size: usize, out: &mut Vec<u32>) {
        if let (true, Some(separator)) = (block.separator, &self.separator) {
            if size == 0 {
                return;
            }
            out.push(separator.id);
            size -= 1;
        }
        for window in &block.windows {
            if size == 0 {
                break;
            }
            let window = window.prefix(size);
            self.corpus.take(window, out);
            size -= window.len();
        }
    }

    /// Decodes prompt tokens. Decoding skips special tokens, so the separator's text is
    /// put back between the decoded runs (a server re-encodes it as the one token).
    fn decode(&self, tokens: &[u32]) -> String {
        match &self.separator {
            None => self.tokenizer.decode(tokens),
            Some(separator) => tokens
                .split(|id| *id == separator.id)
                .map(|run| self.tokenizer.decode(run))
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
