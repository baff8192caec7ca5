//! Trace prompts (docs/datasets.md#trace-prompts-from-hash-ids): each hash id of a trace
//! stands for one block of prompt tokens, so requests sharing leading hash ids share a
//! token prefix (and the server's KV-cache blocks for it). A line longer than its hash
//! ids' blocks is *prefix only*: the hash ids describe its cached prefix, and the rest is
//! fresh tokens of its own.

use std::sync::Arc;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::{DeferredText, Turn};
use rand::RngExt;

use crate::prompt::{BlockSeparator, CorpusTokens, PromptGenerator, TokenWindow};
use crate::seed::{derive_rng, derive_seed, HASH_BLOCKS, PROMPT_CORPUS};
use crate::{SyntheticError, Tokenizer};

/// The longest prompt a trace line may ask for, in tokens: far beyond any model's
/// context, and small enough that a typo such as an extra digit cannot exhaust memory.
pub(super) const MAX_PROMPT_TOKENS: u64 = 1 << 24;

/// Makes the prompts of a trace: one token block per hash id, fresh tokens after the
/// blocks of a prefix-only line, and independent exact-length prompts for lines without
/// hash ids. A block depends only on the seed, its hash id and its size, so the same hash
/// id has the same text in any trace file, slice or order; the fresh parts are drawn in
/// the order prompts are asked for. Same seed, tokenizer and order: same prompts.
///
/// ```
/// use aiperf_datasets::{custom::HashIdPrompts, Tokenizer};
///
/// use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
///
/// let mut prompts = HashIdPrompts::new(
///     Tokenizer::builtin(), 7, 4, PromptCorpus::Sonnet, RandomCorpusStyle::Vllm)?;
/// let a = prompts.tokens(10, &[1, 2, 3])?; // blocks of 4, 4 and 2 tokens
/// let b = prompts.tokens(6, &[1, 9])?;
/// assert_eq!(a.len(), 10);
/// assert_eq!(a[..4], b[..4]); // hash id 1: the same block
/// let c = prompts.tokens(13, &[1, 2, 3])?; // prefix only: 3 whole blocks, 1 fresh token
/// assert_eq!(c.len(), 13);
/// assert_eq!(c[..10], a[..]); // a short block is the start of the whole one
/// assert!(prompts.tokens(8, &[1, 2, 3]).is_err()); // no token left for hash id 3
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HashIdPrompts {
    /// The fresh parts: tails of prefix-only lines, prompts of lines without hash ids.
    generator: PromptGenerator,
    /// Shared with the deferred prompts made of it.
    blocks: Arc<Blocks>,
}

/// Where every hash id's block lies in the corpus, and how to decode prompts of them.
/// Nothing is kept per hash id: a block is the corpus window at the start its id maps to,
/// `(scale · id + shift) mod starts`. With `scale` coprime to the number of starts the map
/// is one-to-one, so ids below that number (every id of most traces) never share a start,
/// which would give unrelated prompts the same first block (a false prefix-cache hit).
#[derive(Debug)]
struct Blocks {
    tokenizer: Tokenizer,
    corpus: CorpusTokens,
    separator: Option<BlockSeparator>,
    size: usize,
    scale: u128,
    shift: u128,
}

/// A prompt of hash-id blocks, as [`HashIdPrompts::plan`] laid it out for one line.
#[derive(Debug, Clone)]
struct BlockPrompt {
    hash_ids: Vec<u64>,
    /// Tokens of the last hash id's block: all of it but in a short final block.
    final_block: usize,
    /// The fresh tokens after the blocks of a prefix-only line (after the separator).
    tail: Option<TokenWindow>,
}

/// How a prompt of `input_length` tokens lies over its hash ids' blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fit {
    /// Tokens of the last hash id's block (1 to the block size).
    final_block: u64,
    /// Fresh tokens after the last block.
    tail: u64,
}

impl HashIdPrompts {
    /// Prompts for `tokenizer` with `block_size`-token blocks (at least 1), drawn from
    /// `corpus` (see [`PromptGenerator::with_corpus`]) with the streams of `seed`.
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
        let corpus = generator.shared_corpus();
        let starts = corpus.starts() as u64;
        let mut rng = derive_rng(seed, HASH_BLOCKS);
        let scale = loop {
            let scale = if starts > 1 {
                rng.random_range(1..starts)
            } else {
                1
            };
            if gcd(scale, starts) == 1 {
                break scale;
            }
        };
        let blocks = Blocks {
            separator: BlockSeparator::of(&tokenizer),
            tokenizer,
            corpus,
            size: block_size as usize,
            scale: u128::from(scale),
            shift: u128::from(rng.random_range(0..starts)),
        };
        Ok(Self {
            generator,
            blocks: Arc::new(blocks),
        })
    }

    /// The block separator in use (the tokenizer's BOS, else EOS), if any.
    pub fn separator(&self) -> Option<&BlockSeparator> {
        self.blocks.separator.as_ref()
    }

    /// The token ids of a prompt of `input_length` tokens made of the blocks of
    /// `hash_ids` (at least one): every block but the last has the block size, the last
    /// one `input_length − (n−1)·block size` up to the block size, which must leave it at
    /// least 1 token; a longer prompt is prefix only, the blocks whole and then fresh
    /// tokens. `Err` is the reason, for an error naming the line.
    pub fn tokens(&mut self, input_length: u64, hash_ids: &[u64]) -> Result<Vec<u32>, String> {
        if hash_ids.is_empty() {
            return Err(
                "no hash ids: a prompt without them is made as text (HashIdPrompts::prompt)"
                    .to_string(),
            );
        }
        let plan = self.plan(input_length, hash_ids.to_vec())?;
        Ok(self.blocks.tokens(&plan))
    }

    /// Lays out a prompt of `input_length` tokens made of `hash_ids` (see
    /// [`HashIdPrompts::tokens`]), drawing its fresh tail now, if it has one (the
    /// generator's stream is drawn from in the order prompts are planned).
    fn plan(&mut self, input_length: u64, hash_ids: Vec<u64>) -> Result<BlockPrompt, String> {
        let fit = fit(self.blocks.size as u64, input_length, &hash_ids)?;
        let tail = (fit.tail > 0).then(|| {
            let separator = usize::from(self.blocks.separator.is_some());
            self.generator.token_window(fit.tail as usize - separator)
        });
        Ok(BlockPrompt {
            hash_ids,
            final_block: fit.final_block as usize,
            tail,
        })
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
        Ok(self.blocks.decode(&tokens))
    }

    /// Gives `turn` its prompt of `input_length` tokens made of `hash_ids` (see
    /// [`HashIdPrompts::prompt`]): as text, or with `defer` and hash ids as a recipe
    /// ([`Turn::deferred_text`]) laid out now (its fresh tail drawn in the same order)
    /// and decoded to the same text when a run needs it. A prompt without hash ids is
    /// made now either way. `Err` is the reason, for an error naming the line.
    pub(super) fn give_prompt(
        &mut self,
        turn: &mut Turn,
        input_length: u64,
        hash_ids: Vec<u64>,
        defer: bool,
    ) -> Result<(), String> {
        if hash_ids.is_empty() {
            turn.texts.push(self.prompt(input_length, &hash_ids)?);
            return Ok(());
        }
        let plan = self.plan(input_length, hash_ids)?;
        if defer {
            let blocks = Arc::clone(&self.blocks);
            turn.deferred_text = Some(DeferredText::new(move || {
                blocks.decode(&blocks.tokens(&plan))
            }));
        } else {
            turn.texts
                .push(self.blocks.decode(&self.blocks.tokens(&plan)));
        }
        Ok(())
    }

    /// Checks that a prompt of `input_length` tokens can be made of `hash_ids` (see
    /// [`HashIdPrompts::tokens`]; any length up to the limit without hash ids), before
    /// any prompt is made. `Err` is the reason.
    pub(super) fn check(&self, input_length: u64, hash_ids: &[u64]) -> Result<(), String> {
        check_blocks(self.blocks.size as u64, input_length, hash_ids)
    }
}

impl Blocks {
    /// The tokens of `plan`: every block whole but the last, of which `final_block`
    /// tokens, then the tail.
    fn tokens(&self, plan: &BlockPrompt) -> Vec<u32> {
        let last = plan.hash_ids.len().saturating_sub(1);
        let tail = plan.tail.map_or(0, |tail| tail.len() + 1);
        let mut tokens = Vec::with_capacity(self.size * last + plan.final_block + tail);
        for (index, id) in plan.hash_ids.iter().enumerate() {
            let size = if index == last {
                plan.final_block
            } else {
                self.size
            };
            let body = size - usize::from(self.separator.is_some());
            self.push(self.corpus.window_at(self.start(*id), body), &mut tokens);
        }
        if let Some(tail) = plan.tail {
            self.push(tail, &mut tokens);
        }
        tokens
    }

    /// The start number of hash id `id`'s block.
    fn start(&self, id: u64) -> usize {
        let starts = self.corpus.starts() as u128;
        ((self.scale * (u128::from(id) % starts) + self.shift) % starts) as usize
    }

    /// The separator, if any, then the tokens of `window`, appended to `out`.
    fn push(&self, window: TokenWindow, out: &mut Vec<u32>) {
        if let Some(separator) = &self.separator {
            out.push(separator.id);
        }
        self.corpus.take(window, out);
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
pub(super) fn check_blocks(block: u64, input_length: u64, hash_ids: &[u64]) -> Result<(), String> {
    fit(block, input_length, hash_ids).map(drop)
}

/// How `input_length` tokens lie over `hash_ids`' `block`-token blocks: the final block
/// gets what the others leave, up to a whole block, and must get at least 1 token; the
/// rest is the tail (the whole prompt without hash ids).
fn fit(block: u64, input_length: u64, hash_ids: &[u64]) -> Result<Fit, String> {
    check_length(input_length)?;
    let Some(full_blocks) = (hash_ids.len() as u64).checked_sub(1) else {
        return Ok(Fit {
            final_block: 0,
            tail: input_length,
        });
    };
    let rest = i128::from(input_length) - i128::from(full_blocks) * i128::from(block);
    if rest <= 0 {
        return Err(format!(
            "input_length {input_length} is too short for {} hash ids of {block}-token \
             blocks: the final block would hold {rest} tokens (must be at least 1); check \
             --isl-block-size",
            hash_ids.len()
        ));
    }
    let final_block = rest.min(i128::from(block)) as u64;
    Ok(Fit {
        final_block,
        tail: (rest as u64) - final_block,
    })
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

/// The greatest common divisor of `a` and `b`.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
