//! The [`Tokenizer`] type: one interface over the embedded tiktoken encodings and
//! Hugging Face `tokenizer.json` files (the latter with the `hf-tokenizers` feature).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use aiperf_core::{CounterId, TokenCounter};

use crate::bpe::{Bpe, Spec};
use crate::error::TokenizerError;

/// The tiktoken encodings embedded in the binary (usable offline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TiktokenEncoding {
    /// `o200k_base` (GPT-4o and later); what `builtin` means.
    O200kBase,
    /// `o200k_harmony` (gpt-oss): `o200k_base` plus the harmony special tokens.
    O200kHarmony,
    /// `cl100k_base` (GPT-3.5 / GPT-4).
    Cl100kBase,
    /// `p50k_base` (Codex, text-davinci-002/003).
    P50kBase,
    /// `p50k_edit` (edit models).
    P50kEdit,
    /// `r50k_base` (GPT-3, a.k.a. `gpt2`).
    R50kBase,
}

impl TiktokenEncoding {
    /// Every embedded encoding.
    pub const ALL: [TiktokenEncoding; 6] = [
        TiktokenEncoding::O200kBase,
        TiktokenEncoding::O200kHarmony,
        TiktokenEncoding::Cl100kBase,
        TiktokenEncoding::P50kBase,
        TiktokenEncoding::P50kEdit,
        TiktokenEncoding::R50kBase,
    ];

    /// The encoding's canonical name, e.g. `o200k_base`.
    pub fn name(self) -> &'static str {
        match self {
            TiktokenEncoding::O200kBase => "o200k_base",
            TiktokenEncoding::O200kHarmony => "o200k_harmony",
            TiktokenEncoding::Cl100kBase => "cl100k_base",
            TiktokenEncoding::P50kBase => "p50k_base",
            TiktokenEncoding::P50kEdit => "p50k_edit",
            TiktokenEncoding::R50kBase => "r50k_base",
        }
    }

    /// Parses an encoding name; `builtin` means `o200k_base`. Case-insensitive.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.trim().to_ascii_lowercase();
        if name == "builtin" {
            return Some(TiktokenEncoding::O200kBase);
        }
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The process-wide instance of this encoding, built on first use and shared after:
    /// a run that never counts or makes a token never loads it.
    fn bpe(self) -> &'static Bpe {
        static LOADED: [OnceLock<Bpe>; TiktokenEncoding::ALL.len()] =
            [const { OnceLock::new() }; TiktokenEncoding::ALL.len()];
        // The variants are numbered in declaration order, the order of `ALL`.
        LOADED[self as usize].get_or_init(|| Bpe::load(&self.spec()))
    }

    /// The table, pattern and special tokens of this encoding (tiktoken's).
    pub(crate) fn spec(self) -> Spec {
        match self {
            TiktokenEncoding::O200kBase => Spec {
                table: O200K_TABLE,
                pattern: O200K_PATTERN,
                ascii_split: Some(crate::bpe::o200k_ascii_piece_end),
                special: || special(&[("<|endoftext|>", 199_999), ("<|endofprompt|>", 200_018)]),
            },
            TiktokenEncoding::O200kHarmony => Spec {
                table: O200K_TABLE,
                pattern: O200K_PATTERN,
                ascii_split: Some(crate::bpe::o200k_ascii_piece_end),
                special: harmony_special,
            },
            TiktokenEncoding::Cl100kBase => Spec {
                table: include_bytes!("../assets/tiktoken/cl100k_base.bpe"),
                pattern: CL100K_PATTERN,
                ascii_split: None,
                special: || {
                    special(&[
                        ("<|endoftext|>", 100_257),
                        ("<|fim_prefix|>", 100_258),
                        ("<|fim_middle|>", 100_259),
                        ("<|fim_suffix|>", 100_260),
                        ("<|endofprompt|>", 100_276),
                    ])
                },
            },
            TiktokenEncoding::P50kBase => Spec {
                table: P50K_TABLE,
                pattern: R50K_PATTERN,
                ascii_split: None,
                special: || special(&[("<|endoftext|>", 50_256)]),
            },
            TiktokenEncoding::P50kEdit => Spec {
                table: P50K_TABLE,
                pattern: R50K_PATTERN,
                ascii_split: None,
                special: || {
                    special(&[
                        ("<|endoftext|>", 50_256),
                        ("<|fim_prefix|>", 50_281),
                        ("<|fim_middle|>", 50_282),
                        ("<|fim_suffix|>", 50_283),
                    ])
                },
            },
            TiktokenEncoding::R50kBase => Spec {
                table: include_bytes!("../assets/tiktoken/r50k_base.bpe"),
                pattern: R50K_PATTERN,
                ascii_split: None,
                special: || special(&[("<|endoftext|>", 50_256)]),
            },
        }
    }
}

/// The byte strings of the ranks (see [`crate::bpe`]); shared by two encodings each.
const O200K_TABLE: &[u8] = include_bytes!("../assets/tiktoken/o200k_base.bpe");
const P50K_TABLE: &[u8] = include_bytes!("../assets/tiktoken/p50k_base.bpe");

/// tiktoken's split patterns.
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
const R50K_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

fn special(tokens: &[(&str, u32)]) -> Vec<(String, u32)> {
    tokens
        .iter()
        .map(|(text, id)| ((*text).to_owned(), *id))
        .collect()
}

/// `o200k_harmony`'s special tokens: the harmony ones and the reserved ids up to 201087.
fn harmony_special() -> Vec<(String, u32)> {
    let named = [
        ("<|startoftext|>", 199_998),
        ("<|endoftext|>", 199_999),
        ("<|return|>", 200_002),
        ("<|constrain|>", 200_003),
        ("<|channel|>", 200_005),
        ("<|start|>", 200_006),
        ("<|end|>", 200_007),
        ("<|message|>", 200_008),
        ("<|call|>", 200_012),
    ];
    let mut tokens = special(&named);
    for id in [200_000, 200_001, 200_004, 200_009, 200_010, 200_011]
        .into_iter()
        .chain(200_013..=201_087)
    {
        tokens.push((format!("<|reserved_{id}|>"), id));
    }
    tokens
}

impl fmt::Display for TiktokenEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone)]
enum Backend {
    /// Loaded on first use (see [`TiktokenEncoding::bpe`]).
    Tiktoken(TiktokenEncoding),
    HuggingFace {
        path: PathBuf,
        inner: Arc<hf::Inner>,
        /// This load's [`CounterId`]: two loads of one file are two ids, never mistaken
        /// for each other (nor for a tiktoken encoding's).
        id: CounterId,
    },
}

/// A [`CounterId`] no Hugging Face tokenizer loaded before in this process has: the
/// tiktoken encodings' are their numbers in [`TiktokenEncoding::ALL`], below these.
fn next_hugging_face_id() -> CounterId {
    static NEXT: AtomicU64 = AtomicU64::new(TiktokenEncoding::ALL.len() as u64);
    CounterId(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The Hugging Face backend: the `tokenizers` crate.
#[cfg(feature = "hf-tokenizers")]
mod hf {
    use std::path::{Path, PathBuf};

    use crate::error::TokenizerError;

    pub(super) type Inner = tokenizers::Tokenizer;

    pub(super) fn from_file(path: &Path, _name: &str) -> Result<Inner, TokenizerError> {
        Inner::from_file(path).map_err(|e| TokenizerError::InvalidFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    pub(super) fn from_bytes(bytes: &[u8], name: &str) -> Result<Inner, TokenizerError> {
        Inner::from_bytes(bytes).map_err(|e| TokenizerError::InvalidFile {
            path: PathBuf::from(name),
            reason: e.to_string(),
        })
    }

    pub(super) fn encode(inner: &Inner, text: &str) -> Result<Vec<u32>, String> {
        inner
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }

    pub(super) fn decode(inner: &Inner, ids: &[u32]) -> Result<String, String> {
        inner.decode(ids, true).map_err(|e| e.to_string())
    }

    /// The ids of the base vocabulary (Python's `range(tokenizer.vocab_size)`), without
    /// the special ones when `with_special` is false.
    pub(super) fn token_ids(inner: &Inner, with_special: bool) -> Vec<u32> {
        let special: std::collections::HashSet<u32> = inner
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, token)| token.special && !with_special)
            .map(|(id, _)| id)
            .collect();
        let size = u32::try_from(inner.get_vocab_size(false)).unwrap_or(u32::MAX);
        (0..size).filter(|id| !special.contains(id)).collect()
    }

    /// The special tokens the post-processor adds around one sequence.
    pub(super) fn special_tokens_added(inner: &Inner) -> usize {
        use tokenizers::PostProcessor;
        inner
            .get_post_processor()
            .map_or(0, |processor| processor.added_tokens(false))
    }
}

/// Without the `hf-tokenizers` feature `Inner` has no values: every constructor says
/// which feature is missing, and the backend's match arms cannot be reached.
#[cfg(not(feature = "hf-tokenizers"))]
mod hf {
    use std::path::Path;

    use crate::error::TokenizerError;

    pub(super) enum Inner {}

    pub(super) fn from_file(_path: &Path, name: &str) -> Result<Inner, TokenizerError> {
        Err(TokenizerError::HuggingFaceDisabled {
            tokenizer: name.to_string(),
        })
    }

    pub(super) fn from_bytes(_bytes: &[u8], name: &str) -> Result<Inner, TokenizerError> {
        Err(TokenizerError::HuggingFaceDisabled {
            tokenizer: name.to_string(),
        })
    }

    pub(super) fn encode(inner: &Inner, _text: &str) -> Result<Vec<u32>, String> {
        match *inner {}
    }

    pub(super) fn decode(inner: &Inner, _ids: &[u32]) -> Result<String, String> {
        match *inner {}
    }

    pub(super) fn token_ids(inner: &Inner, _with_special: bool) -> Vec<u32> {
        match *inner {}
    }

    pub(super) fn special_tokens_added(inner: &Inner) -> usize {
        match *inner {}
    }
}

/// A tokenizer: the embedded tiktoken encodings or a Hugging Face `tokenizer.json`.
///
/// Cheap to clone (a reference count), `Send + Sync`. Encoding never adds special
/// tokens (no BOS/EOS, no chat template), which is how the benchmark counts tokens.
///
/// ```
/// use aiperf_datasets::Tokenizer;
///
/// let tokenizer = Tokenizer::builtin();
/// let ids = tokenizer.encode("Hello, world!");
/// assert_eq!(tokenizer.decode(&ids), "Hello, world!");
/// assert_eq!(tokenizer.name(), "o200k_base");
/// ```
#[derive(Clone)]
pub struct Tokenizer {
    name: Arc<str>,
    backend: Backend,
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.backend {
            Backend::Tiktoken(_) => "tiktoken",
            Backend::HuggingFace { .. } => "huggingface",
        };
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .field("backend", &kind)
            .finish()
    }
}

impl Tokenizer {
    /// The offline builtin tokenizer: tiktoken `o200k_base`.
    pub fn builtin() -> Self {
        Self::tiktoken(TiktokenEncoding::O200kBase)
    }

    /// One of the embedded tiktoken encodings. Its tables load the first time a token is
    /// made or counted (about 3 MB and a few milliseconds for `o200k_base`), so a run
    /// that never needs one never pays for them.
    pub fn tiktoken(encoding: TiktokenEncoding) -> Self {
        Self {
            name: Arc::from(encoding.name()),
            backend: Backend::Tiktoken(encoding),
        }
    }

    /// Loads a Hugging Face `tokenizer.json` file. Its name is the file's path.
    ///
    /// Blocking: reads and parses the file (a large vocabulary takes a moment). Needs the
    /// `hf-tokenizers` feature (on by default); without it the answer is
    /// [`TokenizerError::HuggingFaceDisabled`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        Self::from_file_named(path, name)
    }

    /// Like [`Tokenizer::from_file`], with the name reported by [`Tokenizer::name`]
    /// (e.g. the Hugging Face repository id the file came from).
    pub fn from_file_named(
        path: impl AsRef<Path>,
        name: impl Into<String>,
    ) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let name = name.into();
        if !path.is_file() {
            return Err(TokenizerError::PathNotFound {
                path: path.to_path_buf(),
            });
        }
        let inner = hf::from_file(path, &name)?;
        tracing::debug!(path = %path.display(), "loaded Hugging Face tokenizer");
        Ok(Self {
            name: Arc::from(name),
            backend: Backend::HuggingFace {
                path: path.to_path_buf(),
                inner: Arc::new(inner),
                id: next_hugging_face_id(),
            },
        })
    }

    /// Parses a Hugging Face `tokenizer.json` held in memory; `name` is what
    /// [`Tokenizer::name`] reports. Needs the `hf-tokenizers` feature, like
    /// [`Tokenizer::from_file`].
    pub fn from_json_bytes(bytes: &[u8], name: impl Into<String>) -> Result<Self, TokenizerError> {
        let name = name.into();
        let inner = hf::from_bytes(bytes, &name)?;
        Ok(Self {
            name: Arc::from(name),
            backend: Backend::HuggingFace {
                path: PathBuf::new(),
                inner: Arc::new(inner),
                id: next_hugging_face_id(),
            },
        })
    }

    /// The tokenizer's name: the tiktoken encoding name, the Hugging Face repository
    /// id, or the path of the `tokenizer.json` it was loaded from.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tiktoken encoding, when this is one.
    pub fn tiktoken_encoding(&self) -> Option<TiktokenEncoding> {
        match &self.backend {
            Backend::Tiktoken(encoding) => Some(*encoding),
            Backend::HuggingFace { .. } => None,
        }
    }

    /// The `tokenizer.json` this was loaded from, for a Hugging Face tokenizer read from
    /// disk.
    pub fn source_path(&self) -> Option<&Path> {
        match &self.backend {
            Backend::HuggingFace { path, .. } if !path.as_os_str().is_empty() => Some(path),
            _ => None,
        }
    }

    /// Encodes `text` without special tokens.
    pub fn try_encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        match &self.backend {
            Backend::Tiktoken(encoding) => Ok(encoding.bpe().encode(text)),
            Backend::HuggingFace { inner, .. } => {
                hf::encode(inner, text).map_err(|reason| TokenizerError::Encode {
                    tokenizer: self.name.to_string(),
                    reason,
                })
            }
        }
    }

    /// Encodes `text` without special tokens. A failure inside the Hugging Face
    /// tokenizer (rare: a malformed tokenizer) is logged and yields no tokens; use
    /// [`Tokenizer::try_encode`] to see it.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.try_encode(text).unwrap_or_else(|error| {
            tracing::warn!(%error, "tokenizer failed to encode text; counting it as 0 tokens");
            Vec::new()
        })
    }

    /// Decodes token ids to text (special tokens skipped for Hugging Face tokenizers;
    /// invalid UTF-8 at the edges becomes U+FFFD).
    pub fn try_decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        match &self.backend {
            Backend::Tiktoken(encoding) => encoding
                .bpe()
                .decode(ids)
                // Nearly always valid: taken as it is, not copied.
                .map(|bytes| {
                    String::from_utf8(bytes).unwrap_or_else(|invalid| {
                        String::from_utf8_lossy(invalid.as_bytes()).into_owned()
                    })
                })
                .map_err(|id| TokenizerError::Decode {
                    tokenizer: self.name.to_string(),
                    reason: format!("Invalid token for decoding: {id}"),
                }),
            Backend::HuggingFace { inner, .. } => {
                hf::decode(inner, ids).map_err(|reason| TokenizerError::Decode {
                    tokenizer: self.name.to_string(),
                    reason,
                })
            }
        }
    }

    /// Decodes token ids to text. Unknown ids are logged and yield an empty string; use
    /// [`Tokenizer::try_decode`] to see the failure.
    pub fn decode(&self, ids: &[u32]) -> String {
        self.try_decode(ids).unwrap_or_else(|error| {
            tracing::warn!(%error, "tokenizer failed to decode token ids");
            String::new()
        })
    }

    /// The token ids a random prompt may be made of, ascending: the decodable ids
    /// without the special tokens, or (`with_special`) with them. For a Hugging Face
    /// tokenizer the base vocabulary, `0..vocab_size` (added tokens past it left out);
    /// for tiktoken its byte-pair ranks and special tokens (the gaps between them do not
    /// decode).
    pub fn token_ids(&self, with_special: bool) -> Vec<u32> {
        match &self.backend {
            Backend::Tiktoken(encoding) => {
                let bpe = encoding.bpe();
                let mut ids: Vec<u32> = bpe.ordinary_ids().collect();
                if with_special {
                    ids.extend(bpe.special_tokens().iter().map(|(_, id)| *id));
                    ids.sort_unstable();
                }
                ids
            }
            Backend::HuggingFace { inner, .. } => hf::token_ids(inner, with_special),
        }
    }

    /// How many special tokens a server adds when it encodes one prompt (a BOS token, for
    /// example): what the Hugging Face post-processor adds to a single sequence; 0 for
    /// tiktoken.
    pub fn special_tokens_added(&self) -> usize {
        match &self.backend {
            Backend::Tiktoken(_) => 0,
            Backend::HuggingFace { inner, .. } => hf::special_tokens_added(inner),
        }
    }

    /// The number of tokens `text` encodes to (no special tokens).
    ///
    /// Byte-pair encoding takes time that grows faster than linearly with the length of
    /// one unbroken run of characters (a 50 MB response without a space took a minute).
    /// So a run of more than [`LONGEST_RUN`] bytes without a change between space and
    /// non-space is counted in pieces of that size: ordinary text is counted exactly, and
    /// such a run within about one token per piece, in time linear in its length.
    pub fn count(&self, text: &str) -> usize {
        split_long_runs(text)
            .map(|piece| match &self.backend {
                Backend::Tiktoken(encoding) => encoding.bpe().count(piece),
                Backend::HuggingFace { .. } => self.encode(piece).len(),
            })
            .sum()
    }
}

/// Runs longer than this many bytes are counted in pieces (see [`Tokenizer::count`]).
pub const LONGEST_RUN: usize = 1024;

/// Whether [`Tokenizer::count`] counts `text` in one piece (it has no run longer than
/// [`LONGEST_RUN`] bytes), so that its count is the length of its encoding. May say `false`
/// of a text that is: it only costs a count.
pub(crate) fn counted_whole(text: &str) -> bool {
    if text.len() <= LONGEST_RUN {
        return true;
    }
    if !text.is_ascii() {
        return first_cut(text).is_none();
    }
    // A run of more than LONGEST_RUN bytes covers a multiple of LONGEST_RUN: measuring
    // the runs there (ASCII whitespace as `char::is_whitespace` has it) answers for the
    // whole text without reading most of it.
    let bytes = text.as_bytes();
    let is_space = |byte: &u8| matches!(byte, b' ' | b'\t'..=b'\r');
    (LONGEST_RUN..bytes.len())
        .step_by(LONGEST_RUN)
        .all(|probe| {
            let space = is_space(&bytes[probe]);
            let other = |byte: &u8| is_space(byte) != space;
            let start = bytes[..probe]
                .iter()
                .rposition(other)
                .map_or(0, |at| at + 1);
            let end = bytes[probe..]
                .iter()
                .position(other)
                .map_or(bytes.len(), |at| probe + at);
            end - start <= LONGEST_RUN
        })
}

/// `text` cut inside every run of more than [`LONGEST_RUN`] bytes of only spaces or only
/// non-spaces, at character boundaries; text without such runs comes back whole.
fn split_long_runs(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = first_cut(rest).unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// Where the first run of `text` longer than [`LONGEST_RUN`] bytes is cut.
fn first_cut(text: &str) -> Option<usize> {
    let mut run_start = 0;
    let mut run_is_space = None;
    for (at, c) in text.char_indices() {
        let is_space = c.is_whitespace();
        if run_is_space != Some(is_space) {
            run_start = at;
            run_is_space = Some(is_space);
        } else if at - run_start >= LONGEST_RUN {
            return Some(at);
        }
    }
    None
}

impl TokenCounter for Tokenizer {
    fn count_tokens(&self, text: &str) -> usize {
        self.count(text)
    }

    /// A tiktoken encoding's number (every instance counts alike), or a Hugging Face
    /// tokenizer's load (its clones share it).
    fn id(&self) -> Option<CounterId> {
        Some(match &self.backend {
            Backend::Tiktoken(encoding) => CounterId(*encoding as u64),
            Backend::HuggingFace { id, .. } => *id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiktoken_pools_are_its_ranks_and_special_tokens() {
        let t = Tokenizer::builtin();
        let ordinary = t.token_ids(false);
        assert_eq!(ordinary.len(), 199_998);
        assert_eq!(ordinary.last(), Some(&199_997));
        let all = t.token_ids(true);
        assert_eq!(
            all[199_998..],
            [199_999, 200_018],
            "<|endoftext|>, <|endofprompt|>"
        );
        assert_eq!(t.special_tokens_added(), 0);
    }

    #[test]
    fn builtin_round_trips_and_counts() {
        let t = Tokenizer::builtin();
        let text = "The quick brown fox jumps over the lazy dog.";
        let ids = t.encode(text);
        assert!(!ids.is_empty());
        assert_eq!(t.decode(&ids), text);
        assert_eq!(t.count_tokens(text), ids.len());
        assert_eq!(t.tiktoken_encoding(), Some(TiktokenEncoding::O200kBase));
    }

    #[test]
    fn ordinary_text_is_counted_whole_and_exactly() {
        let t = Tokenizer::builtin();
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(2_000);
        assert_eq!(split_long_runs(&text).count(), 1);
        assert_eq!(t.count(&text), t.encode(&text).len());
    }

    #[test]
    fn a_long_unbroken_run_is_counted_in_pieces_close_to_exact() {
        let t = Tokenizer::builtin();
        // Three runs: 3000 letters, 2500 spaces, a word; cut at 1024-byte steps inside
        // the long ones, and only at character boundaries (é is two bytes).
        let text = format!("{}{}end", "é".repeat(1500), " ".repeat(2500));
        let pieces: Vec<&str> = split_long_runs(&text).collect();
        assert_eq!(pieces.concat(), text);
        assert_eq!(
            pieces.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [1024, 1024, 952 + 1024, 1024, 452 + 3]
        );
        let exact = t.encode(&text).len();
        let counted = t.count(&text);
        assert!(
            counted.abs_diff(exact) <= pieces.len(),
            "{counted} vs {exact}"
        );
    }

    #[test]
    fn counted_whole_is_what_the_cut_says() {
        let texts = [
            "short".to_owned(),
            "x".repeat(LONGEST_RUN),
            "x".repeat(LONGEST_RUN + 1),
            " ".repeat(LONGEST_RUN + 1),
            // A vertical tab is whitespace to `char::is_whitespace`: it breaks the run.
            format!("{}\u{b}{}", "x".repeat(900), "y".repeat(900)),
            format!("{}!{}", "x".repeat(900), "y".repeat(900)),
            "The quick brown fox jumps over the lazy dog. ".repeat(100),
            "é".repeat(LONGEST_RUN / 2),
            "é".repeat(LONGEST_RUN / 2 + 1),
            format!("{} {}", "é".repeat(400), "é".repeat(400)),
            // Runs of 1,025 and 1,024 bytes that do not start at a probe.
            format!("{} {} end", "a".repeat(500), "b".repeat(LONGEST_RUN + 1)),
            format!("{} {} end", "a".repeat(500), "b".repeat(LONGEST_RUN)),
            format!("{}{}", "ab ".repeat(400), " ".repeat(LONGEST_RUN + 1)),
        ];
        let answers: Vec<bool> = texts.iter().map(|t| counted_whole(t)).collect();
        assert_eq!(
            answers,
            [true, true, false, false, true, false, true, true, false, true, false, true, false]
        );
        for text in &texts {
            assert_eq!(counted_whole(text), first_cut(text).is_none(), "{text:?}");
        }
        // Runs about the limit, of letters and of spaces, at offsets about the probes.
        for offset in [0, 1, 2, 511, 1022, 1023, 1024, 1025, 2047] {
            for run in [1, 1023, 1024, 1025, 1026, 2049] {
                for text in [
                    format!(
                        "{} {} {}",
                        "p".repeat(offset),
                        "r".repeat(run),
                        "s".repeat(3)
                    ),
                    format!("{}x{}y", "p".repeat(offset), " ".repeat(run)),
                ] {
                    let cut = first_cut(&text).is_none();
                    assert_eq!(counted_whole(&text), cut, "{offset} {run}");
                }
            }
        }
    }

    #[test]
    fn counter_ids_tell_encodings_and_loads_apart() {
        let id = |t: &Tokenizer| t.id().unwrap();
        let builtin = Tokenizer::builtin();
        assert_eq!(
            id(&builtin),
            id(&Tokenizer::tiktoken(TiktokenEncoding::O200kBase))
        );
        assert_eq!(id(&builtin), id(&builtin.clone()));
        let cl100k = Tokenizer::tiktoken(TiktokenEncoding::Cl100kBase);
        assert_ne!(id(&builtin), id(&cl100k));
        #[cfg(feature = "hf-tokenizers")]
        {
            let json = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
                "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
                "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},
                "unk_token":"[UNK]"}}"#;
            let first = Tokenizer::from_json_bytes(json.as_bytes(), "tiny").unwrap();
            let second = Tokenizer::from_json_bytes(json.as_bytes(), "tiny").unwrap();
            assert_eq!(id(&first), id(&first.clone()));
            assert_ne!(id(&first), id(&second));
            let tiktoken_ids: Vec<_> = TiktokenEncoding::ALL
                .iter()
                .map(|e| id(&Tokenizer::tiktoken(*e)))
                .collect();
            assert!(!tiktoken_ids.contains(&id(&first)));
        }
    }

    #[test]
    fn a_cut_through_a_character_decodes_to_the_replacement_character() {
        let t = Tokenizer::builtin();
        // Rare characters: their UTF-8 bytes are split over byte-level tokens.
        let ids = t.encode("𓀀𓀁𓀂 𐌰𐌱𐌲 naïve");
        let mut cut = 0;
        for end in 1..=ids.len() {
            let bytes = TiktokenEncoding::O200kBase
                .bpe()
                .decode(&ids[..end])
                .unwrap();
            let expected = String::from_utf8_lossy(&bytes);
            cut += usize::from(std::str::from_utf8(&bytes).is_err());
            assert_eq!(t.decode(&ids[..end]), expected, "{end} tokens");
        }
        assert!(cut > 0, "no prefix ends inside a character");
    }

    #[test]
    fn special_token_text_is_encoded_as_ordinary_text() {
        let t = Tokenizer::builtin();
        let ids = t.encode("<|endoftext|>");
        assert!(ids.len() > 1, "special token text must not become one id");
    }

    #[test]
    fn every_embedded_encoding_loads_offline() {
        for encoding in TiktokenEncoding::ALL {
            let t = Tokenizer::tiktoken(encoding);
            assert_eq!(t.name(), encoding.name());
            assert_eq!(TiktokenEncoding::from_name(encoding.name()), Some(encoding));
            assert_eq!(t.decode(&t.encode("hello there")), "hello there");
        }
        assert_eq!(
            TiktokenEncoding::from_name("BUILTIN"),
            Some(TiktokenEncoding::O200kBase)
        );
        assert_eq!(TiktokenEncoding::from_name("gpt2"), None);
    }

    #[test]
    fn tokenizer_is_send_sync_and_cheap_to_clone() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Tokenizer>();
        let a = Tokenizer::builtin();
        let b = a.clone();
        assert_eq!(a.encode("abc"), b.encode("abc"));
    }

    #[test]
    fn missing_file_error_names_the_path() {
        let err = Tokenizer::from_file("/definitely/not/here/tokenizer.json").unwrap_err();
        assert!(err
            .to_string()
            .contains("/definitely/not/here/tokenizer.json"));
    }

    #[cfg(not(feature = "hf-tokenizers"))]
    #[test]
    fn without_hf_tokenizers_the_constructors_name_the_feature() {
        // Any existing file: it is never read.
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        for err in [
            Tokenizer::from_json_bytes(b"{}", "org/name").unwrap_err(),
            Tokenizer::from_file_named(&file, "org/name").unwrap_err(),
        ] {
            assert!(
                matches!(&err, TokenizerError::HuggingFaceDisabled { tokenizer } if tokenizer == "org/name"),
                "{err:?}"
            );
            assert!(err.to_string().contains("\"hf-tokenizers\""), "{err}");
        }
    }
}
