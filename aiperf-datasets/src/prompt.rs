//! [`PromptGenerator`]: text that encodes to exactly N tokens for a given tokenizer, cut
//! from one of the corpora of [`PromptCorpus`].
//!
//! How it works for the prose and coding corpora:
//! 1. Prose: the built-in corpus (sentences written for this project) is split into words
//!    and each distinct word is tokenized once. A long token stream (2^18 tokens) is
//!    written by a seeded walk of a word bigram chain learned from the sentences (new
//!    sentences recombined from the old ones), remembering where each word starts.
//!    Coding: seeded documents of the coding corpus (`coding.rs`) are tokenized
//!    line by line into a stream of the same size; each line counts as one "word".
//! 2. A prompt of N tokens starts at a random word (one that tokenizes the same without
//!    its leading space, and not used by an earlier prompt) and takes the next N tokens
//!    of the stream (wrapping around), decoded to text.
//! 3. Decoding and re-encoding can shift token boundaries, so the text is re-encoded and
//!    corrected: too many tokens → keep the first N re-encoded tokens; too few → append
//!    the following corpus tokens. This converges in one or two rounds nearly always; a
//!    few restarts at other positions and a word-by-word fill back it up.
//!    With the tiktoken encodings a prose word encodes alike alone and between others,
//!    so a window's first round is known from its words' token counts (and the word it
//!    cuts, re-encoded alone): most prompts are decoded once and never re-encoded, ten
//!    times cheaper, on the same text (`settled_by_words`, checked against encoding).
//!
//! The random corpus (the `vllm bench serve` random dataset) takes a window of
//! consecutive ids of the tokenizer's pool ([`Tokenizer::token_ids`]: without special
//! tokens for the vLLM style, the whole vocabulary for the SGLang style) at a random
//! offset, decodes it and corrects it the same way, topping up with random pool ids.

use std::collections::HashMap;
use std::sync::Arc;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::{KnownTokenCount, TokenCounter};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::coding;
use crate::corpus::SENTENCES;
use crate::error::SyntheticError;
use crate::tokenizer::{counted_whole, Tokenizer};

/// Target size of the assembled corpus stream, in tokens. Large enough that two random
/// prompts rarely start at the same place (which would inflate server prefix-cache hits).
const CORPUS_TOKENS: usize = 1 << 18;
/// Correction rounds per start position.
const MAX_ROUNDS: usize = 8;
/// Correction rounds per offset of a random-token prompt: random byte-level tokens may
/// decode to partial characters, which take a few more rounds to settle.
const MAX_RANDOM_ROUNDS: usize = 16;
/// Start positions tried before the word-by-word fill.
const MAX_STARTS: usize = 4;
/// Draws tried to find a start position no earlier prompt of this generator used.
const MAX_FRESH_DRAWS: usize = 16;
/// Longest sentence the corpus chain writes, in words.
const MAX_SENTENCE_WORDS: usize = 60;
/// Marks the end of a sentence in the bigram chain.
const END: u32 = u32::MAX;

/// A distinct corpus word (a line, in the coding corpus) and how many tokens it adds to
/// a text.
#[derive(Debug)]
struct Word {
    /// The word as it is appended (with its leading space; a line with its newline).
    text: String,
    tokens: usize,
    /// The word encodes to the same tokens at the start of a text (without its space)
    /// as in the middle, so a prompt may start with it without shifting boundaries.
    clean_start: bool,
}

/// What prompts are cut from: a tokenized text corpus, or the random corpus' token pool.
#[derive(Debug)]
enum Source {
    Text(Corpus),
    Random(Vec<u32>),
}

impl Source {
    /// The tokens of `window`, appended to `out`.
    fn take(&self, window: TokenWindow, out: &mut Vec<u32>) {
        match self {
            Source::Text(corpus) => corpus.take(window.start, window.len, out),
            Source::Random(pool) => {
                out.extend((0..window.len).map(|j| pool[(window.start + j) % pool.len()]));
            }
        }
    }
}

/// Where a token block lies in a generator's corpus: `len` tokens from `start`, wrapping
/// at the end. A trace prompt is kept this way (a few bytes a block instead of 2 KB for
/// 512 tokens) and its tokens are copied only when it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenWindow {
    start: usize,
    len: usize,
}

impl TokenWindow {
    /// How many tokens the window holds.
    pub(crate) fn len(self) -> usize {
        self.len
    }
}

/// A generator's corpus, shared, to read [`TokenWindow`]s from on any thread.
#[derive(Debug, Clone)]
pub(crate) struct CorpusTokens(Arc<Source>);

impl CorpusTokens {
    /// The tokens of `window`, appended to `out`.
    pub(crate) fn take(&self, window: TokenWindow, out: &mut Vec<u32>) {
        self.0.take(window, out);
    }

    /// How many places a window may start at (at least 1): the prose and coding
    /// corpora's clean-start words, the random corpus' pool positions.
    pub(crate) fn starts(&self) -> usize {
        match &*self.0 {
            Source::Text(corpus) => corpus.prompt_starts.len().max(1),
            Source::Random(pool) => pool.len().max(1),
        }
    }

    /// The window of `len` tokens from start number `index` (modulo
    /// [`CorpusTokens::starts`]).
    pub(crate) fn window_at(&self, index: usize, len: usize) -> TokenWindow {
        let index = index % self.starts();
        let start = match &*self.0 {
            Source::Text(corpus) => corpus
                .prompt_starts
                .get(index)
                .and_then(|word| corpus.word_starts.get(*word as usize))
                .map_or(0, |start| *start as usize),
            Source::Random(_) => index,
        };
        TokenWindow { start, len }
    }
}

/// The tokenized corpus of one tokenizer, shared by generators of that tokenizer.
#[derive(Debug)]
struct Corpus {
    /// The token stream.
    tokens: Vec<u32>,
    /// Stream position of each word's first token, in stream order.
    word_starts: Vec<u32>,
    /// Indices into `word_starts` where a prompt may start: the clean-start words.
    prompt_starts: Vec<u32>,
    /// Which distinct word sits at each entry of `word_starts`.
    word_seq: Vec<u32>,
    /// The distinct words.
    words: Vec<Word>,
    /// Each word of the stream encodes to the same tokens in any text as alone (see
    /// [`Corpus::prose`]): a window's token count is known from its words without
    /// encoding it.
    words_encode_alone: bool,
}

impl Corpus {
    /// The corpus, where a prompt may start at any word when no word is a clean start.
    fn assemble(
        tokens: Vec<u32>,
        word_starts: Vec<u32>,
        mut prompt_starts: Vec<u32>,
        word_seq: Vec<u32>,
        words: Vec<Word>,
        words_encode_alone: bool,
    ) -> Self {
        if prompt_starts.is_empty() {
            prompt_starts = (0..word_starts.len())
                .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                .collect();
        }
        Self {
            tokens,
            word_starts,
            prompt_starts,
            word_seq,
            words,
            words_encode_alone,
        }
    }

    fn prose(tokenizer: &Tokenizer, rng: &mut ChaCha8Rng) -> Result<Self, SyntheticError> {
        // Does the tokenizer put the space between words itself (SentencePiece-style
        // `▁`, or a decoder that joins with spaces)? Then words are encoded bare;
        // otherwise (byte-level BPE) each word carries its leading space.
        let mut probe = tokenizer.encode("hello");
        probe.extend(tokenizer.encode("world"));
        let joins_with_space = tokenizer.decode(&probe).contains(' ');

        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut words: Vec<Word> = Vec::new();
        let mut word_tokens: Vec<Vec<u32>> = Vec::new();
        // A word-level bigram chain over the sentences: which words open a sentence and
        // which follow each word (`END` closes a sentence). Walking it recombines the
        // sentences, so even short prompts rarely repeat.
        let mut openers: Vec<u32> = Vec::new();
        let mut successors: Vec<Vec<u32>> = Vec::new();
        for line in SENTENCES.lines() {
            let mut previous: Option<u32> = None;
            for raw in line.split_whitespace() {
                let id = if let Some(id) = index.get(raw) {
                    *id
                } else {
                    let text = if joins_with_space {
                        raw.to_string()
                    } else {
                        format!(" {raw}")
                    };
                    let ids = tokenizer.encode(&text);
                    let clean_start = joins_with_space || tokenizer.encode(raw).len() == ids.len();
                    let id = u32::try_from(words.len()).unwrap_or(END - 1);
                    words.push(Word {
                        tokens: ids.len(),
                        text: format!(" {raw}"),
                        clean_start,
                    });
                    word_tokens.push(ids);
                    successors.push(Vec::new());
                    index.insert(raw, id);
                    id
                };
                if word_tokens[id as usize].is_empty() {
                    continue;
                }
                match previous {
                    None => openers.push(id),
                    Some(p) => successors[p as usize].push(id),
                }
                previous = Some(id);
            }
            if let Some(p) = previous {
                successors[p as usize].push(END);
            }
        }
        if openers.is_empty() {
            return Err(SyntheticError::EmptyCorpus {
                tokenizer: tokenizer.name().to_string(),
            });
        }

        let mut tokens = Vec::with_capacity(CORPUS_TOKENS + 256);
        let mut word_starts = Vec::with_capacity(CORPUS_TOKENS);
        let mut word_seq = Vec::with_capacity(CORPUS_TOKENS);
        let mut prompt_starts = Vec::with_capacity(CORPUS_TOKENS);
        while tokens.len() < CORPUS_TOKENS {
            let mut word = openers[rng.random_range(0..openers.len())];
            for _ in 0..MAX_SENTENCE_WORDS {
                let position = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
                if words[word as usize].clean_start {
                    prompt_starts.push(u32::try_from(word_starts.len()).unwrap_or(u32::MAX));
                }
                word_starts.push(position);
                word_seq.push(word);
                tokens.extend_from_slice(&word_tokens[word as usize]);
                let next = &successors[word as usize];
                if next.is_empty() {
                    break;
                }
                word = next[rng.random_range(0..next.len())];
                if word == END {
                    break;
                }
            }
        }
        // tiktoken's split patterns never make a piece that spans a space between two
        // words, or that depends on the text before it (a piece holds a space only as its
        // first character, and the patterns look ahead only over whitespace): a word
        // between spaces splits, and so encodes, as it does alone. Hugging Face
        // pre-tokenizers promise no such thing.
        let words_encode_alone = !joins_with_space && tokenizer.tiktoken_encoding().is_some();
        Ok(Self::assemble(
            tokens,
            word_starts,
            prompt_starts,
            word_seq,
            words,
            words_encode_alone,
        ))
    }

    /// A stream of seeded coding documents, tokenized line by line; every line may start
    /// a prompt.
    fn coding(tokenizer: &Tokenizer, rng: &mut ChaCha8Rng) -> Result<Self, SyntheticError> {
        let mut index: HashMap<String, u32> = HashMap::new();
        let mut words: Vec<Word> = Vec::new();
        let mut word_tokens: Vec<Vec<u32>> = Vec::new();
        let mut tokens = Vec::with_capacity(CORPUS_TOKENS + 512);
        let mut word_starts = Vec::new();
        let mut word_seq = Vec::new();
        while tokens.len() < CORPUS_TOKENS {
            let before = tokens.len();
            for line in lines(&coding::document(rng)) {
                let id = if let Some(id) = index.get(line) {
                    *id
                } else {
                    let ids = tokenizer.encode(line);
                    let id = u32::try_from(words.len()).unwrap_or(END - 1);
                    words.push(Word {
                        text: line.to_string(),
                        tokens: ids.len(),
                        clean_start: !line.starts_with(char::is_whitespace),
                    });
                    word_tokens.push(ids);
                    index.insert(line.to_string(), id);
                    id
                };
                if word_tokens[id as usize].is_empty() {
                    continue;
                }
                word_starts.push(u32::try_from(tokens.len()).unwrap_or(u32::MAX));
                word_seq.push(id);
                tokens.extend_from_slice(&word_tokens[id as usize]);
            }
            if tokens.len() == before {
                return Err(SyntheticError::EmptyCorpus {
                    tokenizer: tokenizer.name().to_string(),
                });
            }
        }
        let prompt_starts: Vec<u32> = (0..word_seq.len())
            .filter(|i| words[word_seq[*i] as usize].clean_start)
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect();
        // Lines run into each other through their indentation and newlines.
        Ok(Self::assemble(
            tokens,
            word_starts,
            prompt_starts,
            word_seq,
            words,
            false,
        ))
    }

    /// `len` tokens from `start`, wrapping around the stream.
    fn take(&self, start: usize, len: usize, out: &mut Vec<u32>) {
        let total = self.tokens.len();
        let mut pos = start % total;
        let mut left = len;
        while left > 0 {
            let chunk = left.min(total - pos);
            out.extend_from_slice(&self.tokens[pos..pos + chunk]);
            left -= chunk;
            pos = (pos + chunk) % total;
        }
    }
}

/// Generates prompts of an exact token count for one tokenizer, reproducibly for a seed.
///
/// ```
/// use aiperf_datasets::{PromptGenerator, Tokenizer};
///
/// let tokenizer = Tokenizer::builtin();
/// let mut generator = PromptGenerator::new(tokenizer.clone(), 42).unwrap();
/// let prompt = generator.generate(128);
/// assert_eq!(tokenizer.encode(&prompt).len(), 128);
/// ```
#[derive(Debug, Clone)]
pub struct PromptGenerator {
    tokenizer: Tokenizer,
    source: Arc<Source>,
    rng: ChaCha8Rng,
    /// Start positions already used, one bit each: two prompts of equal length never
    /// start at the same place (identical prompts would inflate server prefix-cache hits).
    used_starts: Vec<u64>,
}

impl PromptGenerator {
    /// A generator of prose prompts ([`PromptCorpus::Sonnet`]): see
    /// [`PromptGenerator::with_corpus`].
    pub fn new(tokenizer: Tokenizer, seed: u64) -> Result<Self, SyntheticError> {
        Self::with_corpus(
            tokenizer,
            seed,
            PromptCorpus::Sonnet,
            RandomCorpusStyle::Vllm,
        )
    }

    /// Tokenizes `corpus` for `tokenizer` (the prose and coding corpora take a few
    /// milliseconds; the random corpus lists the vocabulary) and seeds the generator;
    /// `style` picks the random corpus' token pool. The same seed, corpus and tokenizer
    /// give the same prompts in the same order.
    ///
    /// ```
    /// use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
    /// use aiperf_datasets::{PromptGenerator, Tokenizer};
    ///
    /// let tokenizer = Tokenizer::builtin();
    /// let mut coding = PromptGenerator::with_corpus(
    ///     tokenizer.clone(), 7, PromptCorpus::Coding, RandomCorpusStyle::Vllm)?;
    /// assert_eq!(tokenizer.count(&coding.generate(300)), 300);
    /// # Ok::<(), aiperf_datasets::SyntheticError>(())
    /// ```
    pub fn with_corpus(
        tokenizer: Tokenizer,
        seed: u64,
        corpus: PromptCorpus,
        style: RandomCorpusStyle,
    ) -> Result<Self, SyntheticError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let source = match corpus {
            PromptCorpus::Sonnet => Source::Text(Corpus::prose(&tokenizer, &mut rng)?),
            PromptCorpus::Coding => Source::Text(Corpus::coding(&tokenizer, &mut rng)?),
            PromptCorpus::Random => {
                let pool = tokenizer.token_ids(style == RandomCorpusStyle::Sglang);
                if pool.is_empty() {
                    return Err(SyntheticError::EmptyCorpus {
                        tokenizer: tokenizer.name().to_string(),
                    });
                }
                Source::Random(pool)
            }
        };
        let generator = Self {
            tokenizer,
            source: Arc::new(source),
            rng,
            used_starts: Vec::new(),
        };
        tracing::debug!(
            tokenizer = generator.tokenizer.name(),
            ?corpus,
            corpus_tokens = generator.corpus_tokens(),
            "prompt corpus tokenized"
        );
        Ok(generator)
    }

    /// A generator sharing this one's tokenized corpus, with its own random stream.
    #[must_use]
    pub fn fork(&self, seed: u64) -> Self {
        Self {
            tokenizer: self.tokenizer.clone(),
            source: Arc::clone(&self.source),
            rng: ChaCha8Rng::seed_from_u64(seed),
            used_starts: Vec::new(),
        }
    }

    /// The tokenizer prompts are measured with.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The number of tokens in the assembled corpus stream (prompts longer than this
    /// repeat it); for the random corpus, the size of its token pool.
    pub fn corpus_tokens(&self) -> usize {
        match &*self.source {
            Source::Text(corpus) => corpus.tokens.len(),
            Source::Random(pool) => pool.len(),
        }
    }

    /// A text that encodes to exactly `tokens` tokens (empty for 0). Exactness holds for
    /// every tokenizer whose vocabulary covers plain English (checked for every corpus with
    /// the tiktoken encodings and Qwen3); should all strategies fail
    /// (a degenerate tokenizer), the closest text found is returned and a warning logged.
    pub fn generate(&mut self, tokens: usize) -> String {
        self.generate_exact(tokens).unwrap_or_else(|text| text)
    }

    /// A prompt as [`PromptGenerator::generate`] makes it, with its count for the
    /// record processor: `Some` when [`Tokenizer::count`] of the text is known to be
    /// `tokens` (it settled, and the count takes it in one piece), so the processor need
    /// not count it again; `None` for the closest text of a search that failed.
    ///
    /// ```
    /// use aiperf_core::TokenCounter;
    /// use aiperf_datasets::{PromptGenerator, Tokenizer};
    ///
    /// let tokenizer = Tokenizer::builtin();
    /// let mut generator = PromptGenerator::new(tokenizer.clone(), 42).unwrap();
    /// let (prompt, known) = generator.generate_counted(128);
    /// let counter = tokenizer.id().unwrap();
    /// assert_eq!(known.unwrap().tokens_of(&prompt, counter), Some(128));
    /// assert_eq!(tokenizer.count(&prompt), 128);
    /// ```
    pub fn generate_counted(&mut self, tokens: usize) -> (String, Option<KnownTokenCount>) {
        match self.generate_exact(tokens) {
            Ok(text) if counted_whole(&text) => {
                let known = self
                    .tokenizer
                    .id()
                    .map(|counter| KnownTokenCount::new(&text, tokens, counter));
                (text, known)
            }
            Ok(text) | Err(text) => (text, None),
        }
    }

    /// A text of exactly `tokens` tokens, or `Err` with the closest one found.
    fn generate_exact(&mut self, tokens: usize) -> Result<String, String> {
        if tokens == 0 {
            return Ok(String::new());
        }
        let source = Arc::clone(&self.source);
        let result = match &*source {
            Source::Text(corpus) => self.generate_text(corpus, tokens),
            Source::Random(pool) => self.generate_random(pool, tokens),
        };
        result.map_err(|(miss, text)| {
            tracing::warn!(
                tokenizer = self.tokenizer.name(),
                wanted = tokens,
                off_by = miss,
                "could not build a prompt of the exact token count; using the closest"
            );
            text
        })
    }

    /// `len` consecutive corpus tokens from a random word start (for the random corpus,
    /// consecutive pool ids from a random offset), not corrected to any text length: the
    /// raw material of hash-id prompt blocks, which are concatenated as tokens and decoded
    /// once.
    pub fn token_block(&mut self, len: usize) -> Vec<u32> {
        let mut ids = Vec::with_capacity(len);
        let window = self.token_window(len);
        self.source.take(window, &mut ids);
        ids
    }

    /// Where [`PromptGenerator::token_block`] would take its tokens from, drawn the same
    /// way (an empty window draws nothing).
    pub(crate) fn token_window(&mut self, len: usize) -> TokenWindow {
        if len == 0 {
            return TokenWindow { start: 0, len };
        }
        let source = Arc::clone(&self.source);
        let start = match &*source {
            Source::Text(corpus) => corpus.word_starts[self.fresh_start(corpus)] as usize,
            Source::Random(pool) => self.rng.random_range(0..pool.len()),
        };
        TokenWindow { start, len }
    }

    /// The corpus the windows of [`PromptGenerator::token_window`] lie in.
    pub(crate) fn shared_corpus(&self) -> CorpusTokens {
        CorpusTokens(Arc::clone(&self.source))
    }

    fn generate_text(&mut self, corpus: &Corpus, tokens: usize) -> Result<String, (usize, String)> {
        if tokens > corpus.tokens.len() {
            tracing::debug!(
                tokens,
                corpus = corpus.tokens.len(),
                "prompt longer than the corpus: text repeats"
            );
        }
        let mut best: Option<(usize, String)> = None;
        for _ in 0..MAX_STARTS {
            let word = self.fresh_start(corpus);
            match self.settle_window(corpus, word, tokens) {
                Ok(text) => return Ok(text),
                Err(miss) => best = Some(closer(best, miss)),
            }
        }
        match self.fill_words(corpus, tokens) {
            Ok(text) => Ok(text),
            Err(miss) => Err(closer(best, miss)),
        }
    }

    /// A window of consecutive pool ids at a random offset (the `vllm bench serve`
    /// random dataset), corrected to exactly `n` tokens with random pool ids.
    fn generate_random(&mut self, pool: &[u32], n: usize) -> Result<String, (usize, String)> {
        let mut best: Option<(usize, String)> = None;
        for _ in 0..MAX_STARTS {
            let offset = self.rng.random_range(0..pool.len());
            let mut ids: Vec<u32> = (0..n).map(|j| pool[(offset + j) % pool.len()]).collect();
            for _ in 0..MAX_RANDOM_ROUNDS {
                let text = self.tokenizer.decode(&ids);
                ids = self.tokenizer.encode(&text);
                if ids.len() == n {
                    return Ok(text);
                }
                best = Some(closer(best, (ids.len().abs_diff(n), text)));
                if ids.len() > n {
                    ids.truncate(n);
                }
                while ids.len() < n {
                    ids.push(pool[self.rng.random_range(0..pool.len())]);
                }
            }
        }
        Err(best.unwrap_or_default())
    }

    /// A random prompt start, preferring one no earlier prompt used.
    /// Returns an index into the corpus' words.
    fn fresh_start(&mut self, corpus: &Corpus) -> usize {
        let starts = &corpus.prompt_starts;
        let mut start = starts[self.rng.random_range(0..starts.len())] as usize;
        for _ in 1..MAX_FRESH_DRAWS {
            if !self.start_used(start) {
                break;
            }
            start = starts[self.rng.random_range(0..starts.len())] as usize;
        }
        let (word, bit) = (start / 64, start % 64);
        if word >= self.used_starts.len() {
            self.used_starts.resize(word + 1, 0);
        }
        self.used_starts[word] |= 1 << bit;
        start
    }

    fn start_used(&self, start: usize) -> bool {
        self.used_starts
            .get(start / 64)
            .is_some_and(|word| word & (1 << (start % 64)) != 0)
    }

    /// The `n` tokens from the corpus word number `word`, decoded, re-encoded and
    /// corrected until the text encodes to `n` tokens. `Err((distance, text))` when it
    /// did not settle.
    fn settle_window(
        &self,
        corpus: &Corpus,
        word: usize,
        n: usize,
    ) -> Result<String, (usize, String)> {
        match self.settled_by_words(corpus, word, n) {
            Some(text) => Ok(text),
            None => self.settle_by_encoding(corpus, corpus.word_starts[word] as usize, n),
        }
    }

    /// What the first round of [`PromptGenerator::settle_by_encoding`] settles on,
    /// found without encoding the window, when its words say it settles there: its
    /// whole words add up to the tokens they have alone (`words_encode_alone`, the first
    /// a clean start), and the word it cuts, if any, re-encodes to the tokens it keeps.
    /// `None` when that is not known: the window is then settled by encoding it.
    fn settled_by_words(&self, corpus: &Corpus, word: usize, n: usize) -> Option<String> {
        let first = corpus.words.get(*corpus.word_seq.get(word)? as usize)?;
        if !corpus.words_encode_alone || !first.clean_start {
            return None;
        }
        let mut covered = 0;
        let mut at = word;
        loop {
            let tokens = corpus.words[corpus.word_seq[at] as usize].tokens;
            if covered + tokens > n {
                break;
            }
            covered += tokens;
            if covered == n {
                break;
            }
            at = (at + 1) % corpus.word_seq.len();
        }
        let mut ids = Vec::with_capacity(n);
        if covered < n {
            // The window ends inside word `at`, which is not its first.
            if covered == 0 {
                return None;
            }
            let kept = n - covered;
            corpus.take(corpus.word_starts[at] as usize, kept, &mut ids);
            if self.tokenizer.count(&self.tokenizer.decode(&ids)) != kept {
                return None;
            }
            ids.clear();
        }
        corpus.take(corpus.word_starts[word] as usize, n, &mut ids);
        let mut text = self.tokenizer.decode(&ids);
        let space = text.len() - text.trim_start().len();
        text.drain(..space);
        Some(text)
    }

    /// Window, decode, re-encode, correct. `Err((distance, text))` when it did not settle.
    fn settle_by_encoding(
        &self,
        corpus: &Corpus,
        start: usize,
        n: usize,
    ) -> Result<String, (usize, String)> {
        let mut ids = Vec::with_capacity(n + 8);
        corpus.take(start, n, &mut ids);
        let mut next = start + n;
        let mut last = (usize::MAX, String::new());
        for _ in 0..MAX_ROUNDS {
            let decoded = self.tokenizer.decode(&ids);
            let text = decoded.trim_start();
            let encoded = self.tokenizer.encode(text);
            let got = encoded.len();
            if got == n {
                return Ok(text.to_string());
            }
            last = (got.abs_diff(n), text.to_string());
            ids = encoded;
            if got > n {
                ids.truncate(n);
            } else {
                let missing = n - got;
                corpus.take(next, missing, &mut ids);
                next += missing;
            }
        }
        Err(last)
    }

    /// Whole words whose token counts add up to `n`, starting at a random word; relies on
    /// token counts being additive across spaces, then checks.
    fn fill_words(&mut self, corpus: &Corpus, n: usize) -> Result<String, (usize, String)> {
        let mut pos = self.fresh_start(corpus);
        let mut text = String::new();
        let mut count = 0usize;
        let mut budget = corpus.word_seq.len().max(4 * n);
        while count < n && budget > 0 {
            let word = &corpus.words[corpus.word_seq[pos] as usize];
            if word.tokens > 0 && count + word.tokens <= n {
                text.push_str(&word.text);
                count += word.tokens;
            }
            pos = (pos + 1) % corpus.word_seq.len();
            budget -= 1;
        }
        let text = text.trim_start().to_string();
        let got = self.tokenizer.count(&text);
        if got == n {
            Ok(text)
        } else {
            Err((got.abs_diff(n), text))
        }
    }
}

/// The lines of `text` with their newlines, blank lines kept with the line before them:
/// tokenizers merge consecutive newlines into one token, so a line's tokens match the
/// text's only if its following blank lines come with it.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.find('\n').map_or(rest.len(), |at| at + 1);
        while rest[end..].starts_with('\n') {
            end += 1;
        }
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// The nearer of two near misses `(distance, text)`.
fn closer(best: Option<(usize, String)>, miss: (usize, String)) -> (usize, String) {
    match best {
        Some(best) if best.0 <= miss.0 => best,
        _ => miss,
    }
}

/// A special token that opens every hash-id block so blocks never merge across their
/// boundaries: the tokenizer's BOS token, else its EOS token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSeparator {
    /// The token id.
    pub id: u32,
    /// The token's text (decoding skips special tokens, so the text is put back by hand).
    pub text: String,
}

impl BlockSeparator {
    /// The separator of `tokenizer`: `bos_token`, else `eos_token`, of the
    /// `tokenizer_config.json` beside its `tokenizer.json`, when that token encodes to a
    /// single id. `None` for the embedded tiktoken encodings and tokenizers without a
    /// config (their blocks are sampled tokens only).
    pub fn of(tokenizer: &Tokenizer) -> Option<Self> {
        let config = tokenizer
            .source_path()?
            .with_file_name("tokenizer_config.json");
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(config).ok()?).ok()?;
        ["bos_token", "eos_token"].iter().find_map(|key| {
            // Either a string or an `AddedToken` object with `content`.
            let value = config.get(*key)?;
            let text = value.as_str().or_else(|| value.get("content")?.as_str())?;
            match tokenizer.try_encode(text).ok()?.as_slice() {
                [id] => Some(Self {
                    id: *id,
                    text: text.to_string(),
                }),
                _ => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::tokenizer::TiktokenEncoding;

    #[test]
    fn exact_lengths_with_builtin() {
        let tokenizer = Tokenizer::builtin();
        let mut generator = PromptGenerator::new(tokenizer.clone(), 7).unwrap();
        for n in [1, 2, 3, 7, 50, 128, 550, 3000] {
            let prompt = generator.generate(n);
            assert_eq!(tokenizer.encode(&prompt).len(), n, "n={n}: {prompt:?}");
        }
        assert_eq!(generator.generate(0), "");
    }

    #[test]
    fn same_seed_same_prompts_other_seed_other_prompts() {
        let tokenizer = Tokenizer::builtin();
        let mut a = PromptGenerator::new(tokenizer.clone(), 1).unwrap();
        let mut b = PromptGenerator::new(tokenizer.clone(), 1).unwrap();
        let mut c = PromptGenerator::new(tokenizer, 2).unwrap();
        let pa: Vec<String> = (0..5).map(|_| a.generate(64)).collect();
        let pb: Vec<String> = (0..5).map(|_| b.generate(64)).collect();
        let pc: Vec<String> = (0..5).map(|_| c.generate(64)).collect();
        assert_eq!(pa, pb);
        assert_ne!(pa, pc);
        assert_ne!(pa[0], pa[1]);
    }

    #[test]
    fn prompts_read_like_words() {
        let mut generator = PromptGenerator::new(Tokenizer::builtin(), 3).unwrap();
        let prompt = generator.generate(200);
        assert!(prompt.is_ascii());
        assert!(!prompt.starts_with(' '));
        let words = prompt.split_whitespace().count();
        assert!(words > 100, "{words} words in {prompt:?}");
    }

    #[test]
    fn longer_than_corpus_still_exact() {
        let tokenizer = Tokenizer::builtin();
        let mut generator = PromptGenerator::new(tokenizer.clone(), 5).unwrap();
        let n = generator.corpus_tokens() + 123;
        assert_eq!(tokenizer.count(&generator.generate(n)), n);
    }

    #[test]
    fn word_fill_fallback_is_exact_with_builtin() {
        let tokenizer = Tokenizer::builtin();
        let mut generator = PromptGenerator::new(tokenizer.clone(), 9).unwrap();
        for n in [1, 5, 99, 700] {
            let corpus = Arc::clone(&generator.source);
            let Source::Text(corpus) = &*corpus else {
                unreachable!("the prose corpus is text")
            };
            let text = generator.fill_words(corpus, n).unwrap();
            assert_eq!(tokenizer.count(&text), n);
        }
    }

    #[test]
    fn prompts_of_equal_length_start_at_different_places() {
        let mut generator = PromptGenerator::new(Tokenizer::builtin(), 11).unwrap();
        let prompts: HashSet<String> = (0..2000).map(|_| generator.generate(20)).collect();
        assert_eq!(prompts.len(), 2000);
    }

    #[test]
    fn token_blocks_are_seeded_corpus_windows() {
        let generator = PromptGenerator::new(Tokenizer::builtin(), 4).unwrap();
        let (mut a, mut b) = (generator.fork(1), generator.fork(1));
        let block = a.token_block(100);
        assert_eq!(block.len(), 100);
        assert_eq!(block, b.token_block(100));
        assert_ne!(a.token_block(100), block);
        assert!(a.token_block(0).is_empty());
        assert_eq!(BlockSeparator::of(&Tokenizer::builtin()), None);
    }

    #[test]
    fn blank_lines_stay_with_the_line_before() {
        let text = "a\n\n\n  b\nc";
        assert_eq!(lines(text).collect::<Vec<_>>(), ["a\n\n\n", "  b\n", "c"]);
    }

    /// FNV-1a of every prompt, each followed by a 0 byte: a fingerprint of their bytes.
    fn fingerprint<'a>(prompts: impl IntoIterator<Item = &'a String>) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for prompt in prompts {
            for byte in prompt.as_bytes().iter().chain(&[0]) {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }

    /// The same seed makes the same prompts from one build to the next: `inputs.json` and
    /// every request body of a seeded run depend on it. The fingerprints were taken with
    /// the generator as it was before prompts were settled without re-encoding them
    /// (main at 0e79e2c); a change that moves any byte of any prompt fails here.
    #[test]
    fn fixed_seeds_make_the_prompts_they_always_made() {
        let lengths: Vec<usize> = [1, 2, 3, 4, 5, 7, 8, 13, 21, 32, 33, 64, 100, 128, 550, 1000]
            .into_iter()
            .chain((0..400).map(|i| 1 + i % 40))
            .collect();
        let mut found = Vec::new();
        for encoding in [TiktokenEncoding::O200kBase, TiktokenEncoding::Cl100kBase] {
            for corpus in [
                PromptCorpus::Sonnet,
                PromptCorpus::Coding,
                PromptCorpus::Random,
            ] {
                for seed in [1, 42] {
                    let mut generator = PromptGenerator::with_corpus(
                        Tokenizer::tiktoken(encoding),
                        seed,
                        corpus,
                        RandomCorpusStyle::Vllm,
                    )
                    .unwrap();
                    let prompts: Vec<String> =
                        lengths.iter().map(|n| generator.generate(*n)).collect();
                    found.push(format!(
                        "{encoding} {corpus:?} {seed}: {:016x}",
                        fingerprint(&prompts)
                    ));
                }
            }
        }
        let expected = [
            "o200k_base Sonnet 1: 9d36c0544aa3324d",
            "o200k_base Sonnet 42: 3709fdd05f95eef5",
            "o200k_base Coding 1: 5d40a0b3a207a3ef",
            "o200k_base Coding 42: b19a85bcccaf8fe1",
            "o200k_base Random 1: 9b95115d834789e0",
            "o200k_base Random 42: 28006e70bb931630",
            "cl100k_base Sonnet 1: e8ea69b117aefefe",
            "cl100k_base Sonnet 42: e8ab3c3acabc5a85",
            "cl100k_base Coding 1: fbb8f07450d9eb36",
            "cl100k_base Coding 42: 7f09d69eee24b322",
            "cl100k_base Random 1: b7223d4e4eb30f54",
            "cl100k_base Random 42: af29504c036c526e",
        ];
        assert_eq!(found, expected);
    }

    /// Wherever the prose corpus' words settle a window without encoding it, encoding
    /// settles it on the same text, for every embedded encoding; and they settle most
    /// windows, or the shortcut would save nothing.
    #[test]
    fn windows_settled_by_their_words_are_what_encoding_settles() {
        for encoding in TiktokenEncoding::ALL {
            let mut generator = PromptGenerator::new(Tokenizer::tiktoken(encoding), 3).unwrap();
            let source = Arc::clone(&generator.source);
            let Source::Text(corpus) = &*source else {
                unreachable!("the prose corpus is text")
            };
            assert!(corpus.words_encode_alone, "{encoding}");
            let (mut windows, mut by_words) = (0, 0);
            for n in (1..=48).chain([64, 100, 333, 550, 1000]) {
                for _ in 0..60 {
                    let word = generator.fresh_start(corpus);
                    windows += 1;
                    if let Some(text) = generator.settled_by_words(corpus, word, n) {
                        by_words += 1;
                        let start = corpus.word_starts[word] as usize;
                        assert_eq!(
                            generator.settle_by_encoding(corpus, start, n),
                            Ok(text),
                            "{encoding}, {n} tokens from word {word}"
                        );
                    }
                }
            }
            assert!(
                by_words * 10 > windows * 8,
                "{encoding}: {by_words} of {windows}"
            );
        }
    }

    #[test]
    fn the_coding_corpus_is_always_settled_by_encoding() {
        let generator = PromptGenerator::with_corpus(
            Tokenizer::builtin(),
            1,
            PromptCorpus::Coding,
            RandomCorpusStyle::Vllm,
        )
        .unwrap();
        let Source::Text(corpus) = &*generator.source else {
            unreachable!("the coding corpus is text")
        };
        assert!(!corpus.words_encode_alone);
        assert_eq!(generator.settled_by_words(corpus, 0, 10), None);
    }

    #[test]
    fn fork_shares_corpus() {
        let generator = PromptGenerator::new(Tokenizer::builtin(), 9).unwrap();
        let mut a = generator.fork(1);
        let mut b = generator.fork(1);
        assert!(Arc::ptr_eq(&a.source, &generator.source));
        assert_eq!(a.generate(30), b.generate(30));
    }
}
