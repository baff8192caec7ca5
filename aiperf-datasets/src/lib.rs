//! Tokenizers and synthetic datasets for aiperf-rs.
//!
//! This crate answers two questions the benchmark asks before it sends anything:
//!
//! * **How are tokens counted?** A [`Tokenizer`] is either one of the tiktoken encodings
//!   embedded in the binary (`builtin` = `o200k_base`, works offline) or a Hugging Face
//!   `tokenizer.json`. [`choose_tokenizer`] maps `--tokenizer` (or the model name) to a
//!   [`TokenizerSpec`], and [`load_tokenizer`] finds it on disk, in the local Hugging Face
//!   cache, or downloads it through the caller's [`aiperf_core::Transport`]. It implements
//!   [`aiperf_core::TokenCounter`], which is how metrics count input and output tokens.
//! * **What is sent?** [`PromptGenerator`] makes text of an *exact* token count for a
//!   given tokenizer (English prose, coding content or random vocabulary tokens: see
//!   [`aiperf_core::config::PromptCorpus`]), and [`SyntheticDataset`] (an [`aiperf_core::DatasetSource`])
//!   builds the default workload from an [`aiperf_core::config::InputConfig`]: multi-turn
//!   conversations with sampled input and output lengths (or a `--seq-dist` mix), prefix
//!   pools, a shared system prompt, user contexts, synthetic [`media`] (images, audio,
//!   video) and per-turn models, byte-identical for the same seed.
//! * **What does the user's file say?** [`load_custom_dataset`] reads `--input-file`
//!   (single-turn, multi-turn and random-pool JSONL; mooncake, bailian and BurstGPT
//!   traces, whose `hash_ids` become shared prompt blocks) and [`load_sharegpt`] the
//!   ShareGPT public dataset; a malformed line is a [`DatasetFileError`] naming the file,
//!   line and field. [`SyntheticDataset`], [`CustomDataset`] and [`ShareGptDataset`] are
//!   [`DatasetSource`](aiperf_core::DatasetSource)s: each returns its conversations with
//!   how to draw them and whether they carry timestamps.
//!
//! ```
//! use aiperf_core::DatasetSource;
//! use aiperf_datasets::{choose_tokenizer, load_tokenizer_offline, HubEnv};
//! use aiperf_core::config::InputConfig;
//! use aiperf_datasets::SyntheticDataset;
//!
//! // `--model mock-llm` without `--tokenizer`: a placeholder name, so the builtin one.
//! let choice = choose_tokenizer(None, "mock-llm", None)?;
//! assert!(choice.placeholder_substituted);
//! let tokenizer = load_tokenizer_offline(&choice.spec, &HubEnv::from_process_env())?;
//!
//! let input = InputConfig {
//!     isl_mean: 100,
//!     num_dataset_entries: Some(2),
//!     random_seed: Some(1),
//!     ..InputConfig::default()
//! };
//! let dataset = SyntheticDataset::new(&input, &["mock-llm".into()], tokenizer.clone())?.load()?;
//! assert_eq!(tokenizer.encode(&dataset.conversations[0].turns[0].texts[0]).len(), 100);
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! Nothing here prints: diagnostics go through `tracing`, failures are typed errors
//! ([`TokenizerError`], [`SyntheticError`]) that say what failed and what to do next.
//!
//! Cargo features, both on by default; an embedding that needs neither can leave them out
//! (`default-features = false`) and the API stays the same:
//!
//! * `hf-tokenizers`: Hugging Face `tokenizer.json` files, local or from the hub cache (the
//!   `tokenizers` crate). Without it only the tiktoken encodings load, and asking for
//!   anything else is [`TokenizerError::HuggingFaceDisabled`].
//! * `media`: synthetic images, audio and video ([`media`]: the PNG and JPEG encoders).
//!   Without it an input that enables any of them is
//!   [`MediaError::Disabled`](media::MediaError::Disabled).

#![warn(missing_docs)]

pub mod accuracy;
pub mod adjust;
pub mod agentic_code;
pub mod agentic_code_report;
mod bpe;
pub mod catalogue;
pub mod chat_template;
mod coding;
mod corpus;
pub mod custom;
pub mod error;
#[cfg(feature = "hub")]
pub mod hub;
pub mod listing;
pub mod media;
pub mod model_choice;
pub mod prompt;
pub mod public;
pub mod resolve;
pub mod seed;
pub mod seq_dist;
pub mod synthesis;
pub mod synthetic;
mod text_file;
pub mod tokenizer;
pub mod trace_analysis;
pub mod trace_check;

pub use custom::{
    detect_dataset_type, load_custom_dataset, CustomDataset, CustomDatasetOptions,
    DatasetFileError, DatasetFileErrorKind, LoadedDataset,
};
pub use error::{SyntheticError, TokenizerError};
pub use media::MediaError;
pub use prompt::{BlockSeparator, PromptGenerator};
pub use public::{
    fetch_sharegpt, fetch_spec_bench, load_sharegpt, load_spec_bench, sharegpt_cache_path,
    spec_bench_cache_path, ShareGptDataset, SpecBenchDataset, SHAREGPT_URL, SPEC_BENCH_URL,
};
pub use resolve::{
    choose_tokenizer, find_cached_tokenizer, is_placeholder_model_name, load_tokenizer,
    load_tokenizer_offline, repo_cache_dir, HubEnv, TokenizerChoice, TokenizerSpec,
};
pub use seed::{derive_rng, derive_seed};
pub use seq_dist::SeqDistSampler;
pub use synthetic::{LengthDistribution, SyntheticDataset};
pub use tokenizer::{TiktokenEncoding, Tokenizer};
pub use trace_analysis::{
    analyze_trace_file, analyze_trace_reader, AnalysisStats, DistributionStats, TraceAnalyzer,
    TraceError, TraceRecord,
};
