//! Error types: each says what failed and what to do next.

use std::path::PathBuf;

/// Why a tokenizer could not be resolved, loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// A local path was given but nothing is there.
    #[error(
        "tokenizer file {path} does not exist; pass --tokenizer with the path of a \
         tokenizer.json (or a folder holding one), a Hugging Face id like org/name, or `builtin`"
    )]
    PathNotFound {
        /// The path as given.
        path: PathBuf,
    },

    /// A folder was given but it holds no `tokenizer.json`.
    #[error(
        "folder {dir} holds no tokenizer.json; point --tokenizer at the tokenizer.json file \
         itself or at a folder that contains one (only Hugging Face tokenizer.json files are \
         supported, not tokenizer.model / vocab files)"
    )]
    NoTokenizerJsonInDir {
        /// The folder.
        dir: PathBuf,
    },

    /// The file exists but is not a usable Hugging Face `tokenizer.json`.
    #[error(
        "could not load tokenizer from {path}: {reason}; the file must be a Hugging Face \
         tokenizer.json (as saved by `tokenizer.save_pretrained`)"
    )]
    InvalidFile {
        /// The file (or the name of in-memory bytes).
        path: PathBuf,
        /// What the tokenizers library reported.
        reason: String,
    },

    /// `tokenizer_config.json` is unreadable or its chat template does not compile.
    #[error("cannot use the chat template of {path} (--apply-chat-template): {reason}")]
    InvalidChatTemplate {
        /// The `tokenizer_config.json`.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// The tokenizer name is neither a known encoding, a path, nor a Hugging Face id.
    #[error(
        "`{name}` is not a tokenizer name aiperf understands: use `builtin`, a tiktoken \
         encoding (cl100k_base, o200k_base, o200k_harmony, p50k_base, p50k_edit, r50k_base), \
         a path to a tokenizer.json, or a Hugging Face id like org/name"
    )]
    InvalidName {
        /// The name as given.
        name: String,
    },

    /// The revision cannot name a branch, tag or commit.
    #[error(
        "`{revision}` is not a usable tokenizer revision: give a branch, tag or commit sha \
         (e.g. main, v1.0, refs/pr/1) without `..`, `\\` or a leading `/`"
    )]
    InvalidRevision {
        /// The revision as given.
        revision: String,
    },

    /// The tokenizer is not in the local Hugging Face cache and downloads are disabled.
    #[error(
        "tokenizer for {repo} (revision {revision}) is not in the Hugging Face cache and \
         HF_HUB_OFFLINE is set; looked for {looked_for}. Pass --tokenizer \
         /path/to/tokenizer.json (or `builtin`), or set HF_HUB_OFFLINE=0 to allow the download"
    )]
    Offline {
        /// The repository id.
        repo: String,
        /// The revision asked for.
        revision: String,
        /// Where the file was looked for.
        looked_for: String,
    },

    /// The tokenizer is not cached and no way to download it was given.
    #[error(
        "tokenizer for {repo} (revision {revision}) is not in the Hugging Face cache \
         (looked for {looked_for}) and downloading is not available here; pass --tokenizer \
         with a local tokenizer.json or `builtin`"
    )]
    NotCachedNoTransport {
        /// The repository id.
        repo: String,
        /// The revision asked for.
        revision: String,
        /// Where the file was looked for.
        looked_for: String,
    },

    /// The download failed.
    #[error(
        "could not download tokenizer for {repo} from {url}: {reason}; the machine may be \
         offline: pass --tokenizer with a local tokenizer.json or `builtin`"
    )]
    Download {
        /// The repository id.
        repo: String,
        /// The URL requested.
        url: String,
        /// What went wrong (transport error or HTTP status with a hint).
        reason: String,
    },

    /// The downloaded file could not be stored in the cache.
    #[error(
        "could not write the downloaded tokenizer to {path}: {source}; check that the \
         Hugging Face cache folder is writable or set HF_HUB_CACHE to one that is"
    )]
    CacheWrite {
        /// The file or folder being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// No cache folder could be determined (no `HF_HUB_CACHE`, `HF_HOME` or home folder).
    #[error(
        "cannot locate the Hugging Face cache for {repo}: none of HF_HUB_CACHE, HF_HOME or \
         HOME is set; set HF_HUB_CACHE or pass --tokenizer /path/to/tokenizer.json"
    )]
    NoCacheDir {
        /// The repository id.
        repo: String,
    },

    /// A Hugging Face tokenizer was asked for, but this build cannot load one (the
    /// crate's `hf-tokenizers` feature is off).
    #[error(
        "{tokenizer} is a Hugging Face tokenizer, but this build has no Hugging Face tokenizer \
         support (feature \"hf-tokenizers\" of aiperf-datasets); use `builtin` or another \
         tiktoken encoding (cl100k_base, o200k_base, o200k_harmony, p50k_base, p50k_edit, \
         r50k_base)"
    )]
    HuggingFaceDisabled {
        /// The tokenizer asked for: a path or a Hugging Face id.
        tokenizer: String,
    },

    /// Encoding failed inside the tokenizer.
    #[error("tokenizer {tokenizer} failed to encode text: {reason}")]
    Encode {
        /// The tokenizer's name.
        tokenizer: String,
        /// What the tokenizer reported.
        reason: String,
    },

    /// Decoding failed inside the tokenizer (an id outside its vocabulary).
    #[error("tokenizer {tokenizer} failed to decode token ids: {reason}")]
    Decode {
        /// The tokenizer's name.
        tokenizer: String,
        /// What the tokenizer reported.
        reason: String,
    },
}

/// Why a synthetic dataset or prompt generator could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SyntheticError {
    /// A length distribution parameter is unusable.
    #[error("invalid {what}: {reason}")]
    InvalidDistribution {
        /// Which parameter (e.g. `input tokens stddev`).
        what: &'static str,
        /// Why it is invalid and what to use instead.
        reason: String,
    },

    /// The tokenizer produced no tokens for the built-in corpus.
    #[error(
        "tokenizer {tokenizer} produced no tokens for the built-in prompt corpus; use a \
         tokenizer with an English vocabulary (e.g. --tokenizer builtin)"
    )]
    EmptyCorpus {
        /// The tokenizer's name.
        tokenizer: String,
    },

    /// The input options break a rule (docs/cli-rules.md#input-rules).
    #[error(transparent)]
    Config(#[from] aiperf_core::ConfigError),

    /// Synthetic media could not be made.
    #[error(transparent)]
    Media(#[from] crate::media::MediaError),
}
