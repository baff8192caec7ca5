//! What to send: the synthetic workload, input files and the tokenizer (`--isl`,
//! `--input-file`, media and prompt options).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache_bust::CacheBust;
use crate::dataset::SamplingStrategy;

use super::{at_least_one, non_negative, out_of_range, positive, ConfigError};

mod corpus;
mod media;
mod range_ratio;
mod seq_dist;
mod speed_bench;

pub use corpus::{PromptCorpus, RandomCorpusStyle};
pub use media::{
    AudioFormat, AudioOptions, ImageFormat, ImageOptions, VideoFormat, VideoOptions,
    VideoSynthType, MIN_AUDIO_SECONDS,
};
pub use range_ratio::RangeRatio;
pub use seq_dist::{SeqDistPair, SequenceDistribution};
pub use speed_bench::{
    SpeedBenchVariant, SPEED_BENCH_HUB_ID, SPEED_BENCH_HUB_SPLIT, SPEED_BENCH_VARIANTS,
};

/// What is sent: the synthetic workload, input files and the tokenizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InputConfig {
    /// Mean input sequence length in tokens; 0 turns text off.
    pub isl_mean: u32,
    /// Standard deviation of the input sequence length.
    pub isl_stddev: f64,
    /// Mean output length; `None` sends no max-tokens field.
    pub osl_mean: Option<u32>,
    /// Standard deviation of the output length.
    pub osl_stddev: f64,
    /// `--seq-dist`: (ISL, OSL) pairs sampled per turn; replaces ISL/OSL when set.
    pub sequence_distribution: Option<SequenceDistribution>,
    /// `--random-range-ratio`: ISL and OSL drawn uniformly from windows around
    /// `isl_mean` and `osl_mean`; replaces their standard deviations when set.
    pub random_range_ratio: Option<RangeRatio>,
    /// `--num-dataset-entries`: distinct conversations generated; `None` means
    /// [`DEFAULT_NUM_DATASET_ENTRIES`] (kept apart because some rules need it explicit).
    pub num_dataset_entries: Option<usize>,
    /// Root seed of every random choice.
    pub random_seed: Option<u64>,
    /// Tokenizer name or path; `None` means the primary model's name.
    pub tokenizer: Option<String>,
    /// `--tokenizer-revision`: the branch, tag or commit of a Hugging Face tokenizer;
    /// `None` means `main`.
    pub tokenizer_revision: Option<String>,
    /// `--tokenizer-trust-remote-code`: accepted for compatibility. No Python runs here,
    /// so a tokenizer defined only by its repository's code (no `tokenizer.json`)
    /// cannot be loaded either way.
    pub tokenizer_trust_remote_code: bool,
    /// `--apply-chat-template`: a chat request's input sequence length counts its
    /// messages as the tokenizer's chat template renders them (role headers, special
    /// tokens, generation prompt), not the bare text.
    pub apply_chat_template: bool,
    /// `--input-file`: a dataset file or directory.
    pub input_file: Option<PathBuf>,
    /// `--custom-dataset-type`; `None` detects it from the file.
    pub custom_dataset_type: Option<CustomDatasetType>,
    /// `--public-dataset`.
    pub public_dataset: Option<PublicDataset>,
    /// `--dataset-sampling-strategy`; `None` takes the dataset's preferred strategy.
    pub sampling_strategy: Option<SamplingStrategy>,
    /// `--isl-block-size`: tokens per trace `hash_ids` block; `None` takes the trace
    /// format's default (mooncake 512, bailian 16).
    pub isl_block_size: Option<u32>,
    /// Texts per turn, prefixes, shared system prompt and user context.
    pub prompt: PromptOptions,
    /// Turns per conversation and the think time between them.
    pub session: SessionOptions,
    /// How a dataset file's timing is replayed and which of its sessions are kept.
    pub trace: TraceOptions,
    /// `--cache-bust`: where each played session gets its marker.
    pub cache_bust: CacheBust,
    /// `--dataset-filter`: `key=value` filters for a public dataset that declares them.
    pub dataset_filters: BTreeMap<String, String>,
    /// `--hf-subset`: the Hugging Face config (subset) of a public dataset, instead of
    /// the catalogue's.
    pub hf_subset: Option<String>,
    /// `--hf-weka-dataset`: the Hugging Face repository `--public-dataset weka_hf`
    /// replays (any `semianalysisai/cc-traces-weka-*` corpus); only with `weka_hf`.
    pub hf_weka_dataset: Option<String>,
    /// `--model-selection-strategy`: which model each generated turn names.
    pub model_selection: ModelSelectionStrategy,
    /// Synthetic images.
    pub image: ImageOptions,
    /// Synthetic audio.
    pub audio: AudioOptions,
    /// Synthetic video.
    pub video: VideoOptions,
    /// Synthetic ranking requests (used by the `*_rankings` endpoints).
    pub rankings: RankingsOptions,
}

/// The number of synthetic conversations when `--num-dataset-entries` is not given.
pub const DEFAULT_NUM_DATASET_ENTRIES: usize = 100;

/// Prompt shape options (docs/cli.md#input, rules in docs/cli-rules.md#input-rules).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptOptions {
    /// `--prompt-batch-size`: text contents per turn.
    pub batch_size: usize,
    /// `--prompt-prefix-pool-size`: how many random prefixes to draw from.
    pub prefix_pool_size: usize,
    /// `--prompt-prefix-length`: tokens per prefix.
    pub prefix_length: u32,
    /// `--shared-system-prompt-length`: one system prompt for every conversation.
    pub shared_system_length: Option<u32>,
    /// `--user-context-prompt-length`: a distinct leading user message per conversation.
    pub user_context_length: Option<u32>,
    /// `--system-prompt`: verbatim system prompt of every conversation, put before the
    /// dataset's own system message (joined by a blank line) when it has one.
    pub system_prompt: Option<String>,
    /// `--system-prompt-file`: a UTF-8 file holding the verbatim system prompt.
    pub system_prompt_file: Option<PathBuf>,
    /// `--prompt-corpus`: the text synthesized prompts are made of; `None` is the
    /// built-in prose ([`PromptCorpus::Sonnet`]), kept apart so that asking for the
    /// sonnets (not shipped here) can be answered with a warning.
    pub corpus: Option<PromptCorpus>,
    /// `--random-corpus-style`: the token pool of the random corpus and the shape of the
    /// `--random-range-ratio` windows.
    pub random_corpus_style: RandomCorpusStyle,
}

impl Default for PromptOptions {
    fn default() -> Self {
        Self {
            batch_size: 1,
            prefix_pool_size: 0,
            prefix_length: 0,
            shared_system_length: None,
            user_context_length: None,
            system_prompt: None,
            system_prompt_file: None,
            corpus: None,
            random_corpus_style: RandomCorpusStyle::Vllm,
        }
    }
}

impl PromptOptions {
    /// The corpus synthesized prompts are made of.
    pub fn corpus(&self) -> PromptCorpus {
        self.corpus.unwrap_or_default()
    }

    /// Whether a prefix pool is configured.
    pub fn has_prefix_pool(&self) -> bool {
        self.prefix_pool_size > 0 && self.prefix_length > 0
    }

    /// The verbatim system prompt: `system_prompt`, or the contents of
    /// `system_prompt_file` (read now). Fails when the file cannot be read or either is
    /// empty or whitespace only.
    pub fn system_prompt_text(&self) -> Result<Option<String>, ConfigError> {
        if let Some(text) = &self.system_prompt {
            return non_blank("input.prompt.system_prompt", text.clone()).map(Some);
        }
        let Some(path) = &self.system_prompt_file else {
            return Ok(None);
        };
        let text = read_text(path).map_err(|reason| ConfigError::Invalid {
            field: "input.prompt.system_prompt_file",
            reason,
        })?;
        non_blank("input.prompt.system_prompt_file", text).map(Some)
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

fn non_blank(field: &'static str, text: String) -> Result<String, ConfigError> {
    if text.trim().is_empty() {
        return Err(ConfigError::Invalid {
            field,
            reason: "the system prompt is empty or whitespace only".into(),
        });
    }
    Ok(text)
}

/// Parses `--dataset-filter` values, each `key=value` (both non-empty once trimmed, each
/// key once).
///
/// ```
/// let filters = aiperf_core::config::parse_dataset_filters(["lang = en"]).unwrap();
/// assert_eq!(filters["lang"], "en");
/// assert!(aiperf_core::config::parse_dataset_filters(["lang"]).is_err());
/// ```
pub fn parse_dataset_filters<'a>(
    items: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut filters = BTreeMap::new();
    for item in items {
        let invalid = |reason: String| ConfigError::Invalid {
            field: "input.dataset_filters",
            reason,
        };
        let (key, value) = item
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| invalid(format!("{item:?} is not a non-empty key=value")))?;
        if filters.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(invalid(format!("the key {key:?} is given twice")));
        }
    }
    Ok(filters)
}

/// How the turns of a dataset file are timed and which of its sessions are replayed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceOptions {
    /// `--ignore-trace-delays`: drop every turn's timestamp and think time at load, so
    /// turns go back to back under concurrency or a request rate. No effect on an
    /// explicit fixed schedule, which needs the timestamps.
    pub ignore_delays: bool,
    /// `--use-think-time-only`: `weka_trace` turns wait their recorded `think_time`
    /// rather than the idle gap between the previous request's end and their start.
    pub use_think_time_only: bool,
    /// `--trace-session-sample-ratio`: the fraction of sessions kept (whole sessions,
    /// the same ones for the same random seed); in (0, 1].
    pub session_sample_ratio: Option<f64>,
    /// `--replay-speedup`: timestamps and think times are divided by this (2 replays
    /// twice as fast).
    pub replay_speedup: Option<f64>,
    /// `--max-context-length`: `weka_trace` traces whose recorded peak context (input
    /// plus output tokens of any request) is over this are left out.
    pub max_context_length: Option<u64>,
    /// `--allow-dataset-wrap`: in the Python AIPerf 0.13, lets agentic (weka) trace
    /// replay reuse traces across concurrency lanes when there are more lanes than
    /// traces. Every dataset, weka traces included, is reused as the run needs here, so
    /// it changes nothing.
    pub allow_dataset_wrap: bool,
    /// `--omit-kv-hints`: `baseten_trace` turns leave out the recorded KV-cache routing
    /// hints (`hash_ids`, `block_size`) the Python AIPerf 0.13 puts in their bodies, for
    /// servers that reject unknown body fields.
    pub omit_kv_hints: bool,
    /// `--no-force-min-tokens`: `baseten_trace` turns send no `min_tokens` (0.13 sends
    /// the recorded output length by default).
    pub omit_min_tokens: bool,
    /// `--synthesis-*`: reshapes a mooncake, bailian or BurstGPT trace at load
    /// (docs/datasets.md#trace-synthesis).
    pub synthesis: TraceSynthesis,
    /// `--inter-turn-delay-cap-seconds`: a dataset file's think times (turn `delay`s,
    /// the gaps of agentic traces) longer than this are shortened to it; timestamps are
    /// left alone. `>= 0`.
    pub inter_turn_delay_cap_seconds: Option<f64>,
    /// How a `tracelab` file's subagent sessions are linked to the sessions that
    /// spawned them (0.13's `AIPERF_DATASET_TRACELAB_*` switches).
    pub tracelab_join: TracelabJoin,
}

/// How a `tracelab` file's subagents are found: a session whose whole span lies in
/// another session's spawning window becomes its child (docs/datasets.md). The default
/// is 0.13's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracelabJoin {
    /// Link subagents to their parents at all; off, every recorded session is replayed
    /// as a session of its own, as the corpus literally records them.
    pub subagents: bool,
    /// Codex sessions' windows (first `spawn_agent` to last `wait_agent` result) count
    /// too; off, only Claude's blocking spawning tool calls do.
    pub codex: bool,
    /// The shortest Claude spawning tool call (its `tool_wall_latency_ms`) taken as a
    /// subagent's run.
    pub min_spawn_ms: u64,
}

impl Default for TracelabJoin {
    fn default() -> Self {
        Self {
            subagents: true,
            codex: true,
            min_spawn_ms: 10_000,
        }
    }
}

impl TracelabJoin {
    /// The defaults, changed by the `AIPERF_DATASET_TRACELAB_*` environment variables the
    /// Python AIPerf 0.13 reads (`SUBAGENT_JOIN`, `CODEX_SUBAGENT_JOIN`, `MIN_SPAWN_MS`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`TracelabJoin::from_env`] with the variables `lookup` finds set.
    ///
    /// ```
    /// use aiperf_core::config::TracelabJoin;
    ///
    /// let join = TracelabJoin::from_lookup(|name| {
    ///     (name == "AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN").then(|| "off".to_owned())
    /// })?;
    /// assert!(!join.subagents && join.codex);
    /// # Ok::<(), aiperf_core::config::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut join = Self::default();
        if let Some(text) = lookup("AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN") {
            join.subagents = env_bool("AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN", &text)?;
        }
        if let Some(text) = lookup("AIPERF_DATASET_TRACELAB_CODEX_SUBAGENT_JOIN") {
            join.codex = env_bool("AIPERF_DATASET_TRACELAB_CODEX_SUBAGENT_JOIN", &text)?;
        }
        if let Some(text) = lookup("AIPERF_DATASET_TRACELAB_MIN_SPAWN_MS") {
            join.min_spawn_ms = text.trim().parse().map_err(|_| ConfigError::OutOfRange {
                field: "AIPERF_DATASET_TRACELAB_MIN_SPAWN_MS",
                rule: "a whole number of milliseconds (0 or more)",
                value: format!("{text:?}"),
            })?;
        }
        Ok(join)
    }
}

/// A boolean environment variable, spelled as 0.13's settings accept it.
fn env_bool(name: &'static str, text: &str) -> Result<bool, ConfigError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        _ => Err(ConfigError::OutOfRange {
            field: name,
            rule: "true or false",
            value: format!("{text:?}"),
        }),
    }
}

/// Trace re-synthesis (`--synthesis-*`, docs/datasets.md#trace-synthesis): how a
/// `hash_ids` trace is scaled before it is replayed or written by `aiperf synthesize`.
/// The default changes nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceSynthesis {
    /// Timestamps are divided by this (2 replays the trace in half the time); > 0.
    pub speedup_ratio: f64,
    /// Scales the shared-prefix blocks of each request (blocks seen in 2+ requests); > 0.
    pub prefix_len_multiplier: f64,
    /// Spreads requests over this many independent prefix trees (distinct roots); >= 1.
    pub prefix_root_multiplier: u32,
    /// Scales the unique (unshared) part of each prompt; > 0.
    pub prompt_len_multiplier: f64,
    /// Scales output lengths (at least 1 token stays); >= 0.
    pub output_len_multiplier: f64,
    /// Requests whose recorded input length exceeds this are skipped.
    pub max_isl: Option<u64>,
    /// Output lengths above this are capped to it.
    pub max_osl: Option<u32>,
}

impl Default for TraceSynthesis {
    fn default() -> Self {
        Self {
            speedup_ratio: 1.0,
            prefix_len_multiplier: 1.0,
            prefix_root_multiplier: 1,
            prompt_len_multiplier: 1.0,
            output_len_multiplier: 1.0,
            max_isl: None,
            max_osl: None,
        }
    }
}

impl TraceSynthesis {
    /// Whether any option differs from the default (the trace is touched at all).
    pub fn is_active(&self) -> bool {
        *self != Self::default()
    }

    /// Whether a multiplier or the speed-up is set: the trace is re-synthesized, not
    /// only filtered by `max_isl`/`max_osl`.
    pub fn reshapes(&self) -> bool {
        Self {
            max_isl: None,
            max_osl: None,
            ..self.clone()
        } != Self::default()
    }

    /// Checks every option's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive("input.trace.synthesis.speedup_ratio", self.speedup_ratio)?;
        positive(
            "input.trace.synthesis.prefix_len_multiplier",
            self.prefix_len_multiplier,
        )?;
        at_least_one(
            "input.trace.synthesis.prefix_root_multiplier",
            u64::from(self.prefix_root_multiplier),
        )?;
        positive(
            "input.trace.synthesis.prompt_len_multiplier",
            self.prompt_len_multiplier,
        )?;
        non_negative(
            "input.trace.synthesis.output_len_multiplier",
            self.output_len_multiplier,
        )?;
        if let Some(isl) = self.max_isl {
            at_least_one("input.trace.synthesis.max_isl", isl)?;
        }
        if let Some(osl) = self.max_osl {
            at_least_one("input.trace.synthesis.max_osl", u64::from(osl))?;
        }
        Ok(())
    }
}

/// Multi-turn synthetic sessions (docs/cli.md#input; how they are sampled:
/// docs/datasets.md#synthetic-dataset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionOptions {
    /// Mean turns per conversation.
    pub turns_mean: u32,
    /// Standard deviation of the turn count.
    pub turns_stddev: u32,
    /// Mean think time before turns after the first, in milliseconds (0: none).
    pub delay_mean_ms: f64,
    /// Think time standard deviation in milliseconds.
    pub delay_stddev_ms: f64,
    /// Factor applied to every sampled think time.
    pub delay_ratio: f64,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            turns_mean: 1,
            turns_stddev: 0,
            delay_mean_ms: 0.0,
            delay_stddev_ms: 0.0,
            delay_ratio: 1.0,
        }
    }
}

/// `--model-selection-strategy`, or a configuration file's `models.strategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSelectionStrategy {
    /// The n-th generated turn names model n mod k.
    #[default]
    RoundRobin,
    /// A uniformly drawn model per turn.
    Random,
    /// A model drawn per turn with these probabilities, one per `endpoint.models` entry in
    /// the same order. As in the Python AIPerf they must sum to 1 (within 0.01) and are
    /// not rescaled, so a typo cannot silently shift the traffic split.
    Weighted(Vec<f64>),
}

impl ModelSelectionStrategy {
    /// Checks a weighted strategy against the number of models it chooses among.
    pub fn check(&self, models: usize) -> Result<(), ConfigError> {
        let Self::Weighted(weights) = self else {
            return Ok(());
        };
        if weights.len() != models {
            return Err(ConfigError::Invalid {
                field: "input.model_selection",
                reason: format!(
                    "weighted selection needs one weight per model: {} weights for {models} \
                     models",
                    weights.len()
                ),
            });
        }
        if let Some(bad) = weights.iter().find(|w| !(0.0..=1.0).contains(*w)) {
            return Err(out_of_range(
                "input.model_selection",
                "a list of weights each in [0, 1]",
                bad,
            ));
        }
        let total: f64 = weights.iter().sum();
        if !(0.99..=1.01).contains(&total) {
            return Err(ConfigError::Invalid {
                field: "input.model_selection",
                reason: format!("model weights must sum to 1.0 (within 0.01), got {total}"),
            });
        }
        Ok(())
    }
}

/// `--rankings-*`: one query and some passages per ranking request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankingsOptions {
    /// Mean passages per request.
    pub passages_mean: f64,
    /// Standard deviation of the passage count.
    pub passages_stddev: f64,
    /// Mean tokens per passage.
    pub passage_tokens_mean: f64,
    /// Standard deviation of the passage length.
    pub passage_tokens_stddev: f64,
    /// Mean tokens of the query.
    pub query_tokens_mean: f64,
    /// Standard deviation of the query length.
    pub query_tokens_stddev: f64,
}

impl Default for RankingsOptions {
    fn default() -> Self {
        Self {
            passages_mean: 1.0,
            passages_stddev: 0.0,
            passage_tokens_mean: 550.0,
            passage_tokens_stddev: 0.0,
            query_tokens_mean: 550.0,
            query_tokens_stddev: 0.0,
        }
    }
}

/// The formats of `--input-file` (docs/datasets.md#custom-dataset-files). Written as
/// its `--custom-dataset-type` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CustomDatasetType {
    /// One request per line; lines sharing a `session_id` form a session.
    SingleTurn,
    /// One conversation per line: `{"session_id", "turns": [...]}`.
    MultiTurn,
    /// Pools of turns sampled into conversations.
    RandomPool,
    /// Mooncake traces: `input_length`/`hash_ids`, `text_input`, `messages` or `payload`.
    MooncakeTrace,
    /// Alibaba Bailian (Qwen) traces with parent chat links.
    BailianTrace,
    /// BurstGPT CSV traces.
    BurstGptTrace,
    /// Complete request bodies, one per line (or one multi-turn conversation per `.jsonl`
    /// file of a folder), sent verbatim.
    RawPayload,
    /// An `inputs.json` of an earlier run (`{"data": [{"session_id", "payloads"}]}`), its
    /// bodies sent again verbatim.
    InputsJson,
    /// Baseten completion traces (Parquet or Arrow IPC): recorded prompts replayed
    /// verbatim at their recorded start times.
    BasetenTrace,
    /// Amazon SageMaker endpoint data capture (JSONL, or a folder of it): the captured
    /// chat requests replayed at their inference times.
    SagemakerDataCapture,
    /// The TraceLab agentic-coding corpus (JSONL, gzipped or not): each session's rounds
    /// replayed in order with their think times, prompts rebuilt from token counts.
    Tracelab,
    /// Agentic conversations whose sessions start one another (`forks`, `spawns`), one
    /// session per line.
    DagJsonl,
    /// Weka KV-cache-tester agentic traces (a `.json` file per trace, or a folder of
    /// them): each trace's requests replayed in order, prompts from its `hash_ids`.
    WekaTrace,
    /// A SPEED-Bench split or category (`speed_bench_*`), read from `--input-file` or
    /// the Hugging Face hub.
    SpeedBench(SpeedBenchVariant),
}

impl CustomDatasetType {
    /// Every type, in the order auto-detection probes them.
    pub const ALL: [CustomDatasetType; 13] = [
        CustomDatasetType::MooncakeTrace,
        CustomDatasetType::BailianTrace,
        CustomDatasetType::BurstGptTrace,
        CustomDatasetType::BasetenTrace,
        CustomDatasetType::SagemakerDataCapture,
        CustomDatasetType::Tracelab,
        CustomDatasetType::WekaTrace,
        CustomDatasetType::DagJsonl,
        CustomDatasetType::MultiTurn,
        CustomDatasetType::SingleTurn,
        CustomDatasetType::RandomPool,
        CustomDatasetType::RawPayload,
        CustomDatasetType::InputsJson,
    ];

    /// Every type: [`Self::ALL`], then the SPEED-Bench variants (never detected: a
    /// SPEED-Bench row does not say which variant it belongs to).
    pub fn every() -> impl Iterator<Item = CustomDatasetType> {
        Self::ALL.into_iter().chain(
            SPEED_BENCH_VARIANTS
                .into_iter()
                .map(CustomDatasetType::SpeedBench),
        )
    }

    /// The type spelled `name` (`--custom-dataset-type`); `-` may stand for `_`.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.replace('-', "_");
        Self::every().find(|t| t.as_str() == name)
    }

    /// The `--custom-dataset-type` spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            CustomDatasetType::SpeedBench(variant) => variant.name,
            CustomDatasetType::SingleTurn => "single_turn",
            CustomDatasetType::MultiTurn => "multi_turn",
            CustomDatasetType::RandomPool => "random_pool",
            CustomDatasetType::MooncakeTrace => "mooncake_trace",
            CustomDatasetType::BailianTrace => "bailian_trace",
            CustomDatasetType::BurstGptTrace => "burst_gpt_trace",
            CustomDatasetType::RawPayload => "raw_payload",
            CustomDatasetType::InputsJson => "inputs_json",
            CustomDatasetType::BasetenTrace => "baseten_trace",
            CustomDatasetType::SagemakerDataCapture => "sagemaker_data_capture",
            CustomDatasetType::Tracelab => "tracelab",
            CustomDatasetType::WekaTrace => "weka_trace",
            CustomDatasetType::DagJsonl => "dag_jsonl",
        }
    }

    /// One line on the format, for listings (`aiperf plugins`).
    pub fn summary(&self) -> &'static str {
        match self {
            CustomDatasetType::SpeedBench(variant) => variant.summary,
            CustomDatasetType::SingleTurn => {
                "JSONL, one request per line (text, images, audio, video, timestamps); lines \
                 sharing a session_id form a session"
            }
            CustomDatasetType::MultiTurn => {
                "JSONL, one conversation per line: {\"session_id\", \"turns\": [...]}"
            }
            CustomDatasetType::RandomPool => {
                "a file or folder of turns drawn at random into conversations"
            }
            CustomDatasetType::MooncakeTrace => {
                "Mooncake trace: timestamped input_length/hash_ids, text_input, messages or \
                 payload lines"
            }
            CustomDatasetType::BailianTrace => {
                "Alibaba Bailian (Qwen) trace: timestamped requests with parent-chat links"
            }
            CustomDatasetType::BurstGptTrace => {
                "BurstGPT CSV trace of request and response lengths"
            }
            CustomDatasetType::RawPayload => {
                "JSONL of complete request bodies, sent verbatim (a folder: one session per file)"
            }
            CustomDatasetType::InputsJson => {
                "an inputs.json (ours or the Python AIPerf's): the same payloads sent again"
            }
            CustomDatasetType::BasetenTrace => {
                "Baseten trace (Parquet or Arrow IPC): recorded prompts at their recorded \
                 start times"
            }
            CustomDatasetType::SagemakerDataCapture => {
                "SageMaker endpoint data capture: the captured chat requests at their times"
            }
            CustomDatasetType::Tracelab => {
                "TraceLab agentic-coding trace (JSONL, gzipped or not): rounds with think times"
            }
            CustomDatasetType::DagJsonl => {
                "JSONL of agentic sessions that start one another: turns with messages, \
                 spawns (joined later) and forks (continuing the history)"
            }
            CustomDatasetType::WekaTrace => {
                "Weka agentic trace (a .json per trace, or a folder): requests with hash_ids \
                 and think times; subagents as sessions of their own"
            }
        }
    }

    /// Whether the type reads only `--input-file`: all but the SPEED-Bench variants,
    /// which otherwise read the Hugging Face hub.
    pub fn needs_input_file(&self) -> bool {
        !matches!(self, CustomDatasetType::SpeedBench(_))
    }

    /// Whether this is a timestamped trace format (fixed-schedule replay candidates).
    pub fn is_trace(&self) -> bool {
        matches!(
            self,
            CustomDatasetType::MooncakeTrace
                | CustomDatasetType::BailianTrace
                | CustomDatasetType::BurstGptTrace
                | CustomDatasetType::BasetenTrace
                | CustomDatasetType::SagemakerDataCapture
        )
    }
}

impl TryFrom<String> for CustomDatasetType {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::from_name(&name).ok_or_else(|| format!("unknown custom dataset type {name:?}"))
    }
}

impl From<CustomDatasetType> for String {
    fn from(format: CustomDatasetType) -> Self {
        format.as_str().to_owned()
    }
}

/// The public dataset that replays the weka corpus `hf_weka_dataset` names.
pub const WEKA_HF: &str = "weka_hf";

/// The public dataset of `--public-dataset`: ShareGPT, or one of the Hugging Face
/// datasets of `aiperf_datasets`' catalogue, by name (the catalogue is the datasets
/// crate's data, so a name is checked when the dataset is loaded). Written as its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PublicDataset {
    /// ShareGPT (Vicuna, unfiltered, cleaned split).
    Sharegpt,
    /// A catalogue entry other than ShareGPT (`aimo`, `spec_al_gsm8k`, `librispeech`, …).
    Hub(String),
}

impl PublicDataset {
    /// The name a user passes.
    pub fn name(&self) -> &str {
        match self {
            PublicDataset::Sharegpt => "sharegpt",
            PublicDataset::Hub(name) => name,
        }
    }

    /// Whether it takes `--dataset-filter` (the Exgentic traces, as in the Python AIPerf
    /// 0.13).
    pub fn takes_filters(&self) -> bool {
        matches!(self.name(), "exgentic" | "exgentic_v2")
    }
}

impl From<String> for PublicDataset {
    fn from(name: String) -> Self {
        if name == "sharegpt" {
            PublicDataset::Sharegpt
        } else {
            PublicDataset::Hub(name)
        }
    }
}

impl From<PublicDataset> for String {
    fn from(dataset: PublicDataset) -> Self {
        dataset.name().to_string()
    }
}

impl Default for InputConfig {
    fn default() -> Self {
        Self {
            isl_mean: 550,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            sequence_distribution: None,
            random_range_ratio: None,
            num_dataset_entries: None,
            random_seed: None,
            tokenizer: None,
            tokenizer_revision: None,
            tokenizer_trust_remote_code: false,
            apply_chat_template: false,
            input_file: None,
            custom_dataset_type: None,
            public_dataset: None,
            sampling_strategy: None,
            isl_block_size: None,
            prompt: PromptOptions::default(),
            session: SessionOptions::default(),
            trace: TraceOptions::default(),
            cache_bust: CacheBust::None,
            dataset_filters: BTreeMap::new(),
            hf_subset: None,
            hf_weka_dataset: None,
            model_selection: ModelSelectionStrategy::default(),
            image: ImageOptions::default(),
            audio: AudioOptions::default(),
            video: VideoOptions::default(),
            rankings: RankingsOptions::default(),
        }
    }
}

impl InputConfig {
    /// `--num-dataset-entries`, or its default. A run also counts its requests or
    /// sessions: see [`BenchmarkConfig::dataset_entries`](crate::BenchmarkConfig::dataset_entries).
    pub fn dataset_entries(&self) -> usize {
        self.num_dataset_entries
            .unwrap_or(DEFAULT_NUM_DATASET_ENTRIES)
    }

    /// Whether the workload is generated (no input file and no public dataset).
    pub fn is_synthetic(&self) -> bool {
        self.input_file.is_none()
            && self.public_dataset.is_none()
            && self.custom_dataset_type.is_none()
    }

    /// Whether synthetic turns carry text.
    pub fn text_enabled(&self) -> bool {
        (self.isl_mean > 0 || self.sequence_distribution.is_some()) && self.prompt.batch_size > 0
    }

    /// Checks the input options on their own (docs/cli-rules.md#input-rules).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(n) = self.num_dataset_entries {
            at_least_one("input.num_dataset_entries", n as u64)?;
        }
        non_negative("input.isl_stddev", self.isl_stddev)?;
        non_negative("input.osl_stddev", self.osl_stddev)?;
        if let Some(osl) = self.osl_mean {
            at_least_one("input.osl_mean", u64::from(osl))?;
        }
        if let Some(distribution) = &self.sequence_distribution {
            distribution.check()?;
        }
        if let Some(ratio) = &self.random_range_ratio {
            self.validate_range_ratio(ratio)?;
        }
        if let Some(size) = self.isl_block_size {
            at_least_one("input.isl_block_size", u64::from(size))?;
        }
        self.validate_prompt()?;
        self.validate_session()?;
        self.validate_trace()?;
        self.validate_dataset_filters()?;
        if self.hf_subset.is_some() && !matches!(self.public_dataset, Some(PublicDataset::Hub(_))) {
            return Err(ConfigError::Requires {
                field: "input.hf_subset",
                needs: "a Hugging Face input.public_dataset (not sharegpt)",
            });
        }
        self.validate_hf_weka_dataset()?;
        let has_system_prompt = self.prompt.shared_system_length.is_some()
            || self.prompt.system_prompt.is_some()
            || self.prompt.system_prompt_file.is_some();
        if self.cache_bust == CacheBust::WarmupIsolationSystem
            && self.is_synthetic()
            && !has_system_prompt
        {
            return Err(ConfigError::Requires {
                field: "input.cache_bust",
                needs: "a system prompt (input.prompt.system_prompt, \
                        input.prompt.system_prompt_file or input.prompt.shared_system_length)",
            });
        }
        self.validate_rankings()?;
        media::validate_media(&self.image, &self.audio, &self.video)?;
        let media = self.image.enabled() || self.audio.enabled() || self.video.enabled();
        if self.is_synthetic() && !self.text_enabled() && !media {
            return Err(out_of_range(
                "input.isl_mean",
                "at least 1 (with input.prompt.batch_size at least 1) when no image, audio or \
                 video input is enabled",
                self.isl_mean,
            ));
        }
        Ok(())
    }

    fn validate_range_ratio(&self, ratio: &RangeRatio) -> Result<(), ConfigError> {
        ratio.check(self.prompt.random_corpus_style)?;
        if self.sequence_distribution.is_some() {
            return Err(ConfigError::Conflict {
                first: "input.random_range_ratio",
                second: "input.sequence_distribution",
            });
        }
        if self.osl_mean.is_none() {
            return Err(ConfigError::Requires {
                field: "input.random_range_ratio",
                needs: "input.osl_mean",
            });
        }
        at_least_one("input.isl_mean", u64::from(self.isl_mean))
    }

    fn validate_prompt(&self) -> Result<(), ConfigError> {
        let prompt = &self.prompt;
        if prompt.prefix_pool_size > 0 && prompt.prefix_length == 0 {
            return Err(ConfigError::Requires {
                field: "input.prompt.prefix_pool_size",
                needs: "input.prompt.prefix_length",
            });
        }
        if prompt.prefix_length > 0 && prompt.prefix_pool_size == 0 {
            return Err(ConfigError::Requires {
                field: "input.prompt.prefix_length",
                needs: "input.prompt.prefix_pool_size",
            });
        }
        let prefix_flag = if prompt.prefix_pool_size > 0 {
            "input.prompt.prefix_pool_size"
        } else {
            "input.prompt.prefix_length"
        };
        let has_prefix = prompt.prefix_pool_size > 0 || prompt.prefix_length > 0;
        if let Some(length) = prompt.shared_system_length {
            at_least_one("input.prompt.shared_system_length", u64::from(length))?;
            if has_prefix {
                return Err(ConfigError::Conflict {
                    first: "input.prompt.shared_system_length",
                    second: prefix_flag,
                });
            }
        }
        let system_prompt_field = match (&prompt.system_prompt, &prompt.system_prompt_file) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Conflict {
                    first: "input.prompt.system_prompt",
                    second: "input.prompt.system_prompt_file",
                })
            }
            (Some(_), None) => Some("input.prompt.system_prompt"),
            (None, Some(_)) => Some("input.prompt.system_prompt_file"),
            (None, None) => None,
        };
        if let Some(field) = system_prompt_field {
            prompt.system_prompt_text()?;
            if prompt.shared_system_length.is_some() {
                return Err(ConfigError::Conflict {
                    first: field,
                    second: "input.prompt.shared_system_length",
                });
            }
            if has_prefix {
                return Err(ConfigError::Conflict {
                    first: field,
                    second: prefix_flag,
                });
            }
        }
        if let Some(length) = prompt.user_context_length {
            at_least_one("input.prompt.user_context_length", u64::from(length))?;
            if has_prefix {
                return Err(ConfigError::Conflict {
                    first: "input.prompt.user_context_length",
                    second: prefix_flag,
                });
            }
            if self.num_dataset_entries.is_none() {
                return Err(ConfigError::Requires {
                    field: "input.prompt.user_context_length",
                    needs: "input.num_dataset_entries",
                });
            }
        }
        Ok(())
    }

    fn validate_session(&self) -> Result<(), ConfigError> {
        let session = &self.session;
        non_negative("input.session.delay_mean_ms", session.delay_mean_ms)?;
        non_negative("input.session.delay_stddev_ms", session.delay_stddev_ms)?;
        non_negative("input.session.delay_ratio", session.delay_ratio)
    }

    fn validate_trace(&self) -> Result<(), ConfigError> {
        let trace = &self.trace;
        if trace.ignore_delays && trace.use_think_time_only {
            return Err(ConfigError::Conflict {
                first: "input.trace.ignore_delays",
                second: "input.trace.use_think_time_only",
            });
        }
        if let Some(ratio) = trace.session_sample_ratio {
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(out_of_range(
                    "input.trace.session_sample_ratio",
                    "greater than 0 and at most 1",
                    ratio,
                ));
            }
        }
        if let Some(speedup) = trace.replay_speedup {
            positive("input.trace.replay_speedup", speedup)?;
        }
        if let Some(cap) = trace.inter_turn_delay_cap_seconds {
            non_negative("input.trace.inter_turn_delay_cap_seconds", cap)?;
        }
        trace.synthesis.validate()?;
        for (field, given) in [
            (
                "input.trace.inter_turn_delay_cap_seconds",
                trace.inter_turn_delay_cap_seconds.is_some(),
            ),
            (
                "input.trace.session_sample_ratio",
                trace.session_sample_ratio.is_some(),
            ),
            ("input.trace.replay_speedup", trace.replay_speedup.is_some()),
            ("input.trace.synthesis", trace.synthesis.is_active()),
        ] {
            if given && self.input_file.is_none() {
                return Err(ConfigError::Requires {
                    field,
                    needs: "input.input_file",
                });
            }
        }
        if let Some(length) = trace.max_context_length {
            at_least_one("input.trace.max_context_length", length)?;
        }
        Ok(())
    }

    /// `weka_hf` names its corpus with `hf_weka_dataset`, and only it takes one.
    fn validate_hf_weka_dataset(&self) -> Result<(), ConfigError> {
        let is_weka_hf = self
            .public_dataset
            .as_ref()
            .is_some_and(|d| d.name() == WEKA_HF);
        match &self.hf_weka_dataset {
            Some(_) if !is_weka_hf => Err(ConfigError::Requires {
                field: "input.hf_weka_dataset",
                needs: "input.public_dataset weka_hf",
            }),
            Some(repo) if repo.trim().is_empty() => Err(ConfigError::Invalid {
                field: "input.hf_weka_dataset",
                reason: "must name a Hugging Face dataset repository".into(),
            }),
            None if is_weka_hf => Err(ConfigError::Requires {
                field: "input.public_dataset weka_hf",
                needs: "input.hf_weka_dataset (the Hugging Face repository to replay)",
            }),
            _ => Ok(()),
        }
    }

    fn validate_dataset_filters(&self) -> Result<(), ConfigError> {
        if self.dataset_filters.is_empty() {
            return Ok(());
        }
        match &self.public_dataset {
            None => Err(ConfigError::Requires {
                field: "input.dataset_filters",
                needs: "input.public_dataset",
            }),
            // The loader checks the keys and values it takes.
            Some(dataset) if dataset.takes_filters() => Ok(()),
            Some(dataset) => Err(ConfigError::Invalid {
                field: "input.dataset_filters",
                reason: format!(
                    "Public dataset '{}' does not support --dataset-filter",
                    dataset.name()
                ),
            }),
        }
    }

    fn validate_rankings(&self) -> Result<(), ConfigError> {
        let rankings = &self.rankings;
        for (field, value) in [
            ("input.rankings.passages_mean", rankings.passages_mean),
            ("input.rankings.passages_stddev", rankings.passages_stddev),
            (
                "input.rankings.passage_tokens_mean",
                rankings.passage_tokens_mean,
            ),
            (
                "input.rankings.passage_tokens_stddev",
                rankings.passage_tokens_stddev,
            ),
            (
                "input.rankings.query_tokens_mean",
                rankings.query_tokens_mean,
            ),
            (
                "input.rankings.query_tokens_stddev",
                rankings.query_tokens_stddev,
            ),
        ] {
            non_negative(field, value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracelab_switches_are_read_as_0_13_spells_them() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(
            TracelabJoin::from_lookup(env(&[])).unwrap(),
            TracelabJoin::default()
        );
        assert_eq!(
            TracelabJoin::from_lookup(env(&[
                ("AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN", "False"),
                ("AIPERF_DATASET_TRACELAB_CODEX_SUBAGENT_JOIN", "0"),
                ("AIPERF_DATASET_TRACELAB_MIN_SPAWN_MS", " 2500 "),
            ]))
            .unwrap(),
            TracelabJoin {
                subagents: false,
                codex: false,
                min_spawn_ms: 2500
            }
        );
        assert_eq!(
            TracelabJoin::from_lookup(env(&[("AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN", "maybe")]))
                .unwrap_err()
                .to_string(),
            "AIPERF_DATASET_TRACELAB_SUBAGENT_JOIN must be true or false, got \"maybe\""
        );
        assert_eq!(
            TracelabJoin::from_lookup(env(&[("AIPERF_DATASET_TRACELAB_MIN_SPAWN_MS", "-1")]))
                .unwrap_err()
                .to_string(),
            "AIPERF_DATASET_TRACELAB_MIN_SPAWN_MS must be a whole number of milliseconds \
             (0 or more), got \"-1\""
        );
    }

    fn err(config: InputConfig) -> String {
        config.validate().unwrap_err().to_string()
    }

    fn with(change: impl FnOnce(&mut InputConfig)) -> InputConfig {
        let mut config = InputConfig::default();
        change(&mut config);
        config
    }

    #[test]
    fn defaults_are_valid() {
        InputConfig::default().validate().unwrap();
        assert_eq!(InputConfig::default().dataset_entries(), 100);
    }

    #[test]
    fn weighted_selection_needs_one_weight_per_model_in_range_summing_to_one() {
        let weighted = |w: &[f64]| ModelSelectionStrategy::Weighted(w.to_vec());
        weighted(&[0.7, 0.3]).check(2).unwrap();
        weighted(&[0.5, 0.495]).check(2).unwrap();
        ModelSelectionStrategy::Random.check(5).unwrap();
        let err = |w: &[f64], models| weighted(w).check(models).unwrap_err().to_string();
        assert_eq!(
            err(&[1.0], 2),
            "invalid input.model_selection: weighted selection needs one weight per model: \
             1 weights for 2 models"
        );
        assert_eq!(
            err(&[1.5, -0.5], 2),
            "input.model_selection must be a list of weights each in [0, 1], got 1.5"
        );
        assert_eq!(
            err(&[0.5, 0.4], 2),
            "invalid input.model_selection: model weights must sum to 1.0 (within 0.01), got 0.9"
        );
        assert!(err(&[f64::NAN, 1.0], 2).contains("each in [0, 1], got NaN"));
    }

    #[test]
    fn system_and_user_context_exclude_prefix_pools() {
        let prefix = |c: &mut InputConfig| {
            c.prompt.prefix_pool_size = 3;
            c.prompt.prefix_length = 10;
            c.num_dataset_entries = Some(5);
        };
        with(prefix).validate().unwrap();
        assert_eq!(
            err(with(|c| {
                prefix(c);
                c.prompt.shared_system_length = Some(5);
            })),
            "input.prompt.shared_system_length cannot be combined with input.prompt.prefix_pool_size"
        );
        assert_eq!(
            err(with(|c| {
                prefix(c);
                c.prompt.user_context_length = Some(5);
            })),
            "input.prompt.user_context_length cannot be combined with input.prompt.prefix_pool_size"
        );
    }

    #[test]
    fn a_verbatim_system_prompt_is_one_source_of_the_system_message() {
        let text = |c: &mut InputConfig| c.prompt.system_prompt = Some("Be brief.".into());
        with(text).validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("system.txt");
        std::fs::write(&file, "From a file.\n").unwrap();
        let from_file = with(|c| c.prompt.system_prompt_file = Some(file.clone()));
        assert_eq!(
            from_file.prompt.system_prompt_text().unwrap().as_deref(),
            Some("From a file.\n")
        );
        assert_eq!(
            err(with(|c| {
                text(c);
                c.prompt.system_prompt_file = Some(file.clone());
            })),
            "input.prompt.system_prompt cannot be combined with input.prompt.system_prompt_file"
        );
        assert_eq!(
            err(with(|c| {
                text(c);
                c.prompt.shared_system_length = Some(5);
            })),
            "input.prompt.system_prompt cannot be combined with input.prompt.shared_system_length"
        );
        assert_eq!(
            err(with(|c| {
                text(c);
                c.prompt.prefix_pool_size = 2;
                c.prompt.prefix_length = 5;
            })),
            "input.prompt.system_prompt cannot be combined with input.prompt.prefix_pool_size"
        );
        assert_eq!(
            err(with(|c| c.prompt.system_prompt = Some(" \n".into()))),
            "invalid input.prompt.system_prompt: the system prompt is empty or whitespace only"
        );
        std::fs::write(&file, "  ").unwrap();
        assert_eq!(
            err(with(|c| c.prompt.system_prompt_file = Some(file.clone()))),
            "invalid input.prompt.system_prompt_file: the system prompt is empty or whitespace \
             only"
        );
        let missing = dir.path().join("missing.txt");
        assert!(
            err(with(|c| c.prompt.system_prompt_file = Some(missing.clone()))).starts_with(
                &format!(
                    "invalid input.prompt.system_prompt_file: cannot read {}",
                    missing.display()
                )
            )
        );
    }

    #[test]
    fn a_range_ratio_needs_an_osl_and_excludes_seq_dist() {
        let ratio = |c: &mut InputConfig| {
            c.random_range_ratio = Some(RangeRatio {
                input: 0.2,
                output: 0.2,
            });
        };
        assert_eq!(
            err(with(ratio)),
            "input.random_range_ratio requires input.osl_mean"
        );
        with(|c| {
            ratio(c);
            c.osl_mean = Some(8);
        })
        .validate()
        .unwrap();
        assert_eq!(
            err(with(|c| {
                ratio(c);
                c.osl_mean = Some(8);
                c.sequence_distribution = Some(SequenceDistribution::parse("10,10:100").unwrap());
            })),
            "input.random_range_ratio cannot be combined with input.sequence_distribution"
        );
    }

    #[test]
    fn warmup_isolation_of_the_system_message_needs_one() {
        let isolate = |c: &mut InputConfig| c.cache_bust = CacheBust::WarmupIsolationSystem;
        assert!(err(with(isolate)).starts_with("input.cache_bust requires a system prompt"));
        with(|c| {
            isolate(c);
            c.prompt.shared_system_length = Some(4);
        })
        .validate()
        .unwrap();
    }

    #[test]
    fn trace_options_rules() {
        let file = |c: &mut InputConfig| c.input_file = Some("trace.jsonl".into());
        with(|c| {
            file(c);
            c.trace.session_sample_ratio = Some(1.0);
            c.trace.replay_speedup = Some(0.5);
        })
        .validate()
        .unwrap();
        assert_eq!(
            err(with(|c| c.trace.replay_speedup = Some(2.0))),
            "input.trace.replay_speedup requires input.input_file"
        );
        assert_eq!(
            err(with(|c| {
                file(c);
                c.trace.replay_speedup = Some(0.0);
            })),
            "input.trace.replay_speedup must be greater than 0, got 0"
        );
        for ratio in [0.0, 1.5] {
            assert_eq!(
                err(with(|c| {
                    file(c);
                    c.trace.session_sample_ratio = Some(ratio);
                })),
                format!(
                    "input.trace.session_sample_ratio must be greater than 0 and at most 1, \
                     got {ratio}"
                )
            );
        }
        assert_eq!(
            err(with(|c| {
                c.trace.ignore_delays = true;
                c.trace.use_think_time_only = true;
            })),
            "input.trace.ignore_delays cannot be combined with input.trace.use_think_time_only"
        );
        assert_eq!(
            err(with(|c| c.trace.max_context_length = Some(0))),
            "input.trace.max_context_length must be at least 1, got 0"
        );
    }

    #[test]
    fn weka_hf_and_hf_weka_dataset_go_together() {
        let weka_hf = Some(PublicDataset::Hub(WEKA_HF.into()));
        assert_eq!(
            err(with(|c| c.hf_weka_dataset = Some("org/corpus".into()))),
            "input.hf_weka_dataset requires input.public_dataset weka_hf"
        );
        assert_eq!(
            err(with(|c| c.public_dataset = weka_hf.clone())),
            "input.public_dataset weka_hf requires input.hf_weka_dataset (the Hugging Face \
             repository to replay)"
        );
        assert_eq!(
            err(with(|c| {
                c.public_dataset = weka_hf.clone();
                c.hf_weka_dataset = Some(" ".into());
            })),
            "invalid input.hf_weka_dataset: must name a Hugging Face dataset repository"
        );
        with(|c| {
            c.public_dataset = weka_hf.clone();
            c.hf_weka_dataset = Some("org/corpus".into());
        })
        .validate()
        .unwrap();
    }

    #[test]
    fn dataset_filters_need_a_public_dataset_that_takes_them() {
        let filters = parse_dataset_filters(["a=1"]).unwrap();
        assert_eq!(
            err(with(|c| c.dataset_filters = filters.clone())),
            "input.dataset_filters requires input.public_dataset"
        );
        assert_eq!(
            err(with(|c| {
                c.dataset_filters = filters.clone();
                c.public_dataset = Some(PublicDataset::Sharegpt);
            })),
            "invalid input.dataset_filters: Public dataset 'sharegpt' does not support \
             --dataset-filter"
        );
        with(|c| {
            c.dataset_filters = filters.clone();
            c.public_dataset = Some(PublicDataset::Hub("exgentic_v2".into()));
        })
        .validate()
        .unwrap();
        for bad in ["a", "=1", "a= "] {
            assert!(parse_dataset_filters([bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefix_pool_and_length_go_together() {
        assert_eq!(
            err(with(|c| c.prompt.prefix_pool_size = 2)),
            "input.prompt.prefix_pool_size requires input.prompt.prefix_length"
        );
        assert_eq!(
            err(with(|c| c.prompt.prefix_length = 2)),
            "input.prompt.prefix_length requires input.prompt.prefix_pool_size"
        );
    }

    #[test]
    fn user_context_needs_explicit_dataset_entries() {
        assert_eq!(
            err(with(|c| c.prompt.user_context_length = Some(8))),
            "input.prompt.user_context_length requires input.num_dataset_entries"
        );
        with(|c| {
            c.prompt.user_context_length = Some(8);
            c.num_dataset_entries = Some(100);
        })
        .validate()
        .unwrap();
    }

    #[test]
    fn video_width_and_height_go_together() {
        assert_eq!(
            err(with(|c| c.video.width = Some(64))),
            "input.video.width requires input.video.height"
        );
        assert_eq!(
            err(with(|c| c.video.height = Some(64))),
            "input.video.height requires input.video.width"
        );
        with(|c| {
            c.video.width = Some(64);
            c.video.height = Some(32);
        })
        .validate()
        .unwrap();
    }

    #[test]
    fn all_modalities_disabled_is_an_error_for_synthetic_data_only() {
        assert_eq!(
            err(with(|c| c.isl_mean = 0)),
            "input.isl_mean must be at least 1 (with input.prompt.batch_size at least 1) when no image, \
             audio or video input is enabled, got 0"
        );
        with(|c| {
            c.isl_mean = 0;
            c.image.width_mean = 10.0;
            c.image.height_mean = 10.0;
        })
        .validate()
        .unwrap();
        with(|c| {
            c.isl_mean = 0;
            c.input_file = Some("x.jsonl".into());
        })
        .validate()
        .unwrap();
    }

    #[test]
    fn audio_rules() {
        assert_eq!(
            err(with(|c| c.audio.length_mean = 0.005)),
            "input.audio.length_mean must be 0 (no audio) or at least 0.01 seconds, got 0.005"
        );
        let audio = |c: &mut InputConfig| c.audio.length_mean = 1.0;
        with(audio).validate().unwrap();
        assert!(err(with(|c| {
            audio(c);
            c.audio.format = AudioFormat::Mp3;
        }))
        .starts_with("invalid input.audio.format: mp3 is not supported"));
        assert_eq!(
            err(with(|c| {
                audio(c);
                c.audio.depths = vec![16, 12];
            })),
            "input.audio.depths must be 8, 16, 24 or 32, got 12"
        );
        assert_eq!(
            err(with(|c| {
                audio(c);
                c.audio.num_channels = 3;
            })),
            "input.audio.num_channels must be 1 or 2, got 3"
        );
    }

    #[test]
    fn stddevs_must_not_be_negative() {
        for (change, field) in [
            (
                Box::new(|c: &mut InputConfig| c.isl_stddev = -1.0)
                    as Box<dyn Fn(&mut InputConfig)>,
                "input.isl_stddev",
            ),
            (Box::new(|c| c.osl_stddev = -1.0), "input.osl_stddev"),
            (
                Box::new(|c| c.image.width_stddev = -1.0),
                "input.image.width_stddev",
            ),
            (
                Box::new(|c| c.image.height_stddev = -1.0),
                "input.image.height_stddev",
            ),
            (
                Box::new(|c| c.audio.length_stddev = -1.0),
                "input.audio.length_stddev",
            ),
            (
                Box::new(|c| c.session.delay_stddev_ms = -1.0),
                "input.session.delay_stddev_ms",
            ),
            (
                Box::new(|c| c.rankings.passages_stddev = -1.0),
                "input.rankings.passages_stddev",
            ),
        ] {
            let mut config = InputConfig::default();
            change(&mut config);
            assert_eq!(err(config), format!("{field} must be 0 or more, got -1"));
        }
    }

    #[test]
    fn seq_dist_is_checked_even_when_built_by_hand() {
        let config = with(|c| {
            c.sequence_distribution = Some(SequenceDistribution {
                pairs: vec![SeqDistPair {
                    isl: 10,
                    isl_stddev: 0.0,
                    osl: 10,
                    osl_stddev: 0.0,
                    prob: 50.0,
                }],
            });
        });
        assert_eq!(
            err(config),
            "invalid input.sequence_distribution: probabilities sum to 50, they must sum to 100"
        );
    }
}
