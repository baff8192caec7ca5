//! Custom dataset files (`--input-file`, docs/datasets.md#custom-dataset-files): JSONL
//! single-turn, multi-turn, random-pool and DAG (`dag_jsonl`) datasets, mooncake, bailian, BurstGPT and
//! Baseten traces, SageMaker data captures, TraceLab and weka agentic-coding traces, and request
//! bodies replayed verbatim (`raw_payload` files, `inputs.json`).
//!
//! [`load_custom_dataset`] reads a file (or a folder, for random pools) into
//! conversations, detecting the format with [`detect_dataset_type`] when none is given.
//! Every line is validated: a typo in a key, a wrong type or a trace line whose
//! `input_length` is too short for its `hash_ids` is a [`DatasetFileError`] naming the
//! file, line and field.
//!
//! ```
//! use aiperf_core::config::CustomDatasetType;
//! use aiperf_datasets::custom::{load_custom_dataset, CustomDatasetOptions};
//! use aiperf_datasets::Tokenizer;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("trace.jsonl");
//! std::fs::write(&path, "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 5, \"hash_ids\": [7]}\n")?;
//! let options = CustomDatasetOptions { seed: 1, ..Default::default() };
//! let loaded = load_custom_dataset(&path, &options, &Tokenizer::builtin())?;
//! assert_eq!(loaded.dataset_type, CustomDatasetType::MooncakeTrace);
//! assert!(loaded.timestamped);
//! assert_eq!(loaded.conversations[0].turns[0].max_tokens, Some(5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bailian;
#[cfg(feature = "parquet")]
mod baseten;
mod burst_gpt;
mod dag;
mod detect;
pub mod error;
mod hash_prompts;
mod inputs_json;
pub mod iso_time;
mod media;
mod mooncake;
mod multi_turn;
mod random_pool;
mod raw_payload;
mod record;
mod resynthesize;
mod sagemaker;
mod sessions;
mod single_turn;
mod speed_bench;
mod trace_requests;
mod tracelab;
mod turn_fields;
mod verbatim;
mod weka;
mod weka_chains;
mod weka_prompts;

use std::path::{Path, PathBuf};

use aiperf_core::config::{
    CustomDatasetType, PromptCorpus, RandomCorpusStyle, TraceSynthesis, TracelabJoin,
};
use aiperf_core::dataset::DatasetError;
use aiperf_core::{Conversation, Dataset, DatasetSource, SamplingStrategy};

pub use detect::detect_dataset_type;
pub use error::{DatasetFileError, DatasetFileErrorKind};
pub use hash_prompts::HashIdPrompts;
pub use resynthesize::{synthesize_mooncake_trace, SynthesizedTrace};
#[cfg(feature = "hub")]
pub use speed_bench::{load_from_hub as load_speed_bench_from_hub, SpeedBenchHubError};

use crate::synthesis::TraceSynthesizer;
use crate::Tokenizer;

/// Tokens per `hash_ids` block of mooncake traces (and BurstGPT) when
/// `--isl-block-size` is not given.
pub const MOONCAKE_BLOCK_SIZE: u32 = 512;
/// Tokens per `hash_ids` block of bailian traces when `--isl-block-size` is not given.
pub const BAILIAN_BLOCK_SIZE: u32 = 16;
/// Tokens per synthesized block of TraceLab traces when `--isl-block-size` is not
/// given (the Python AIPerf 0.13's default).
pub const TRACELAB_BLOCK_SIZE: u32 = 64;
/// Conversations drawn from a random pool when `--num-conversations` is not given.
pub const DEFAULT_POOL_CONVERSATIONS: usize = 100;

/// How to read a custom dataset file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CustomDatasetOptions {
    /// `--custom-dataset-type`; `None` detects it from the file.
    pub dataset_type: Option<CustomDatasetType>,
    /// `--isl-block-size`: tokens per trace `hash_ids` block; `None` takes the format's
    /// default ([`MOONCAKE_BLOCK_SIZE`], [`BAILIAN_BLOCK_SIZE`], [`TRACELAB_BLOCK_SIZE`]).
    pub block_size: Option<u32>,
    /// Conversations drawn from a random pool (a run passes
    /// `BenchmarkConfig::dataset_entries`); `None` means [`DEFAULT_POOL_CONVERSATIONS`].
    pub num_conversations: Option<usize>,
    /// The run's root seed (`--random-seed`): prompts and pool draws.
    pub seed: u64,
    /// `--prompt-corpus`: what the prompts of `hash_ids` traces are made of (the other
    /// formats send their own text); `None` takes the format's default
    /// ([`default_corpus`]).
    pub corpus: Option<PromptCorpus>,
    /// `--random-corpus-style`: the token pool of the random corpus.
    pub random_corpus_style: RandomCorpusStyle,
    /// `--omit-kv-hints`: Baseten trace turns carry no `hash_ids` and `block_size`.
    pub omit_kv_hints: bool,
    /// `--no-force-min-tokens`: Baseten trace turns carry no `min_tokens`.
    pub omit_min_tokens: bool,
    /// `--max-context-length`: weka traces whose peak context is over this are left out.
    pub max_context_length: Option<u64>,
    /// `--use-think-time-only`: weka trace turns wait their recorded think time.
    pub use_think_time_only: bool,
    /// `--synthesis-*`: reshapes mooncake, bailian and BurstGPT traces
    /// ([`crate::synthesis`]); any other format with an active synthesis is an error.
    pub synthesis: TraceSynthesis,
    /// Leave the `hash_ids` prompts of mooncake, bailian, BurstGPT, TraceLab and weka
    /// traces (files and [`load_weka_corpus`]) as recipes
    /// ([`aiperf_core::Turn::deferred_text`]) decoded when a run needs them, instead of
    /// text: loading a long trace then takes milliseconds, not seconds. The run (or
    /// [`aiperf_core::Conversation::materialized`]) makes the same text either way.
    pub defer_prompts: bool,
    /// How `tracelab` subagents are linked to their parents (0.13's
    /// `AIPERF_DATASET_TRACELAB_*` switches).
    pub tracelab_join: TracelabJoin,
}

/// A loaded custom dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedDataset {
    /// The conversations, in file order (sessions in order of first appearance).
    pub conversations: Vec<Conversation>,
    /// The format the file was read as (given or detected).
    pub dataset_type: CustomDatasetType,
    /// The format's sampling strategy, for when `--dataset-sampling-strategy` is not
    /// given: sequential for all but random pools (shuffle).
    pub preferred_sampling: SamplingStrategy,
    /// The first record has a timestamp: the file can be replayed on a fixed schedule.
    pub timestamped: bool,
}

/// The prompt corpus of a format's `hash_ids` prompts when `--prompt-corpus` is not
/// given, as the Python AIPerf 0.13 registers it: `coding` for the agentic-coding traces
/// (`weka_trace`, `tracelab`, and the Weka corpora on the hub), `sonnet` for the rest.
pub fn default_corpus(dataset_type: CustomDatasetType) -> PromptCorpus {
    match dataset_type {
        CustomDatasetType::WekaTrace | CustomDatasetType::Tracelab => PromptCorpus::Coding,
        _ => PromptCorpus::Sonnet,
    }
}

/// Loads the custom dataset at `path` (docs/datasets.md#custom-dataset-files). Blocking:
/// reads the file and builds prompts with `tokenizer`.
pub fn load_custom_dataset(
    path: &Path,
    options: &CustomDatasetOptions,
    tokenizer: &Tokenizer,
) -> Result<LoadedDataset, DatasetFileError> {
    if !path.exists() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Io,
            "no such file or folder; check --input-file",
        ));
    }
    let dataset_type = match options.dataset_type {
        Some(given) => given,
        None => detect_dataset_type(path)?,
    };
    let seed = options.seed;
    let prompts = |default_block: u32| {
        let block = options.block_size.unwrap_or(default_block);
        HashIdPrompts::new(
            tokenizer.clone(),
            seed,
            block,
            options.corpus.unwrap_or(default_corpus(dataset_type)),
            options.random_corpus_style,
        )
        .map_err(|e| DatasetFileError::file(path, DatasetFileErrorKind::Invalid, e.to_string()))
    };
    let synthesizes = matches!(
        dataset_type,
        CustomDatasetType::MooncakeTrace
            | CustomDatasetType::BailianTrace
            | CustomDatasetType::BurstGptTrace
    );
    if options.synthesis.is_active() && !synthesizes {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Invalid,
            format!(
                "--synthesis-* options apply to mooncake_trace, bailian_trace and \
                 burst_gpt_trace files, not {}",
                dataset_type.as_str()
            ),
        ));
    }
    let synthesizer = |default_block: u32| {
        options.synthesis.is_active().then(|| {
            let block = options.block_size.unwrap_or(default_block);
            TraceSynthesizer::new(options.synthesis.clone(), block, seed)
        })
    };
    let (conversations, timestamped) = match dataset_type {
        CustomDatasetType::SingleTurn => single_turn::load(path)?,
        CustomDatasetType::MultiTurn => multi_turn::load(path)?,
        CustomDatasetType::RandomPool => {
            let count = options
                .num_conversations
                .unwrap_or(DEFAULT_POOL_CONVERSATIONS);
            (random_pool::load(path, count, seed)?, false)
        }
        CustomDatasetType::MooncakeTrace => mooncake::load(
            path,
            &mut prompts(MOONCAKE_BLOCK_SIZE)?,
            synthesizer(MOONCAKE_BLOCK_SIZE).as_ref(),
            options.defer_prompts,
        )?,
        CustomDatasetType::BailianTrace => bailian::load(
            path,
            &mut prompts(BAILIAN_BLOCK_SIZE)?,
            synthesizer(BAILIAN_BLOCK_SIZE).as_ref(),
            options.defer_prompts,
        )?,
        CustomDatasetType::BurstGptTrace => (
            burst_gpt::load(
                path,
                &mut prompts(MOONCAKE_BLOCK_SIZE)?,
                synthesizer(MOONCAKE_BLOCK_SIZE).as_ref(),
                options.defer_prompts,
            )?,
            true,
        ),
        CustomDatasetType::DagJsonl => (dag::load(path)?, false),
        CustomDatasetType::RawPayload => (raw_payload::load(path)?, false),
        CustomDatasetType::InputsJson => (inputs_json::load(path)?, false),
        CustomDatasetType::BasetenTrace => (load_baseten(path, options)?, true),
        CustomDatasetType::SagemakerDataCapture => (sagemaker::load(path)?, true),
        CustomDatasetType::Tracelab => {
            let block = options.block_size.unwrap_or(TRACELAB_BLOCK_SIZE);
            (
                tracelab::load(
                    path,
                    &mut prompts(block)?,
                    block,
                    options.tracelab_join,
                    options.defer_prompts,
                )?,
                false,
            )
        }
        CustomDatasetType::SpeedBench(variant) => (speed_bench::load(path, variant)?, false),
        CustomDatasetType::WekaTrace => {
            (weka::load(path, &weka_options(options, tokenizer))?, false)
        }
    };
    tracing::debug!(
        path = %path.display(),
        dataset_type = dataset_type.as_str(),
        conversations = conversations.len(),
        "loaded custom dataset"
    );
    Ok(LoadedDataset {
        conversations,
        dataset_type,
        preferred_sampling: match dataset_type {
            CustomDatasetType::RandomPool => SamplingStrategy::Shuffle,
            _ => SamplingStrategy::Sequential,
        },
        timestamped,
    })
}

/// Loads a weka corpus from the Hugging Face hub (`--public-dataset
/// semianalysis_cc_traces_weka*`): each row of `files` (JSON Lines or Parquet, as
/// [`crate::hub::resolve`] finds them) is one whole trace, replayed exactly as
/// [`load_custom_dataset`] replays the same trace from a `weka_trace` file with the same
/// `options`. A malformed row is an error naming its file and line.
#[cfg(feature = "hub")]
pub fn load_weka_corpus(
    files: &[PathBuf],
    options: &CustomDatasetOptions,
    tokenizer: &Tokenizer,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let what = files
        .first()
        .and_then(|file| file.parent())
        .unwrap_or(Path::new("."));
    weka::load_rows(
        crate::hub::read_rows(files, None),
        &weka_options(options, tokenizer),
        what,
    )
}

fn weka_options(options: &CustomDatasetOptions, tokenizer: &Tokenizer) -> weka::WekaOptions {
    weka::WekaOptions {
        tokenizer: tokenizer.clone(),
        seed: options.seed,
        corpus: options
            .corpus
            .unwrap_or(default_corpus(CustomDatasetType::WekaTrace)),
        style: options.random_corpus_style,
        max_context_length: options.max_context_length,
        think_time_only: options.use_think_time_only,
        defer_prompts: options.defer_prompts,
    }
}

#[cfg(feature = "parquet")]
fn load_baseten(
    path: &Path,
    options: &CustomDatasetOptions,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let body = baseten::BodyFields {
        min_tokens: !options.omit_min_tokens,
        kv_hints: !options.omit_kv_hints,
    };
    baseten::load(path, body)
}

#[cfg(not(feature = "parquet"))]
fn load_baseten(
    path: &Path,
    _options: &CustomDatasetOptions,
) -> Result<Vec<Conversation>, DatasetFileError> {
    Err(DatasetFileError::file(
        path,
        DatasetFileErrorKind::Invalid,
        "baseten_trace files are Parquet or Arrow IPC, which this build cannot read: \
         build aiperf-datasets with its `parquet` feature",
    ))
}

/// A custom dataset file as an [`aiperf_core::DatasetSource`]. Outside a
/// [`DatasetSource`], [`CustomDataset::load_dataset`] also says which format was
/// detected.
#[derive(Debug, Clone)]
pub struct CustomDataset {
    path: PathBuf,
    options: CustomDatasetOptions,
    tokenizer: Tokenizer,
}

impl CustomDataset {
    /// A source reading `path` with `options`; nothing is read until it is loaded.
    pub fn new(
        path: impl Into<PathBuf>,
        options: CustomDatasetOptions,
        tokenizer: Tokenizer,
    ) -> Self {
        Self {
            path: path.into(),
            options,
            tokenizer,
        }
    }

    /// Loads the file with everything known about it.
    pub fn load_dataset(&self) -> Result<LoadedDataset, DatasetFileError> {
        load_custom_dataset(&self.path, &self.options, &self.tokenizer)
    }
}

impl DatasetSource for CustomDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        let loaded = self.load_dataset()?;
        Ok(Dataset {
            conversations: loaded.conversations,
            preferred_sampling: loaded.preferred_sampling,
            timestamped: loaded.timestamped,
        })
    }
}
