//! The input flags: synthetic prompts, input files, media and the tokenizer.

use std::path::PathBuf;

use aiperf_core::cache_bust::CacheBust;
use aiperf_core::config::{
    parse_dataset_filters, AudioFormat, CustomDatasetType, ImageFormat, InputConfig,
    ModelSelectionStrategy, PromptCorpus, PublicDataset, RandomCorpusStyle, RangeRatio,
    SequenceDistribution, TraceOptions, TraceSynthesis, TracelabJoin, VideoFormat, VideoSynthType,
    WEKA_HF,
};
use aiperf_core::SamplingStrategy;
use clap::{Args, ValueEnum};

use super::{count, count_at_least_one};

/// What is sent.
#[derive(Debug, Args)]
#[command(next_help_heading = "Input")]
pub(crate) struct InputArgs {
    /// Mean input sequence length of synthetic prompts, in tokens. A comma list
    /// (128,512) runs a sweep.
    #[arg(long = "isl", value_parser = count::<u32>,
          visible_aliases = ["prompt-input-tokens-mean", "synthetic-input-tokens-mean"],
          default_value_t = 550)]
    pub isl: u32,

    /// Standard deviation of the input sequence length. A comma list runs a sweep.
    #[arg(long = "isl-stddev",
          visible_aliases = ["prompt-input-tokens-stddev", "synthetic-input-tokens-stddev"],
          default_value_t = 0.0)]
    pub isl_stddev: f64,

    /// Mean output length: each request asks for this many tokens. Unset: no limit is sent.
    /// A comma list runs a sweep.
    #[arg(long = "osl", value_parser = count_at_least_one::<u32>,
          visible_aliases = ["prompt-output-tokens-mean", "output-tokens-mean"])]
    pub osl: Option<u32>,

    /// Standard deviation of the output length. A comma list runs a sweep.
    #[arg(long = "osl-stddev",
          visible_aliases = ["prompt-output-tokens-stddev", "output-tokens-stddev"],
          default_value_t = 0.0)]
    pub osl_stddev: f64,

    /// A mix of (ISL, OSL) pairs sampled per turn, replacing --isl/--osl:
    /// "256,128:60;512|20,64|5:40", "[(256,128):60,(512,64):40]" or
    /// '{"pairs":[{"isl":256,"osl":128,"prob":60},…]}' (probabilities in percent).
    #[arg(long = "seq-dist", visible_alias = "sequence-distribution")]
    pub seq_dist: Option<String>,

    /// Draw ISL and OSL uniformly from a window around their means (its shape:
    /// --random-corpus-style; vllm: [floor(mean·(1−r)), ceil(mean·(1+r))]): one ratio for
    /// both, or '{"input":0.3,"output":0.5}'. Needs --osl; excludes --seq-dist.
    #[arg(long = "random-range-ratio")]
    pub random_range_ratio: Option<String>,

    /// What synthetic prompt text is made of (also the hash-id blocks of trace files;
    /// other dataset files are sent as written). sonnet: built-in English prose (the
    /// default; Shakespeare's sonnets are not shipped, so this is our own prose). coding:
    /// source code, shell transcripts, JSON, tracebacks and diffs (the default of
    /// weka_trace and tracelab files and the Weka corpora). random: random token ids
    /// of the tokenizer's vocabulary, as `vllm bench serve` sends.
    #[arg(long = "prompt-corpus", value_enum)]
    pub prompt_corpus: Option<PromptCorpusArg>,

    /// Whose conventions --prompt-corpus random and --random-range-ratio follow. vllm:
    /// special tokens left out of the random pool; window [floor(m·(1−r)), ceil(m·(1+r))]
    /// around the mean less the special tokens the tokenizer adds. sglang: the whole
    /// vocabulary; window [max(1, int(m·r)), m], the special tokens taken off each drawn
    /// length; ratio up to 1.
    #[arg(long = "random-corpus-style", value_enum, default_value_t = RandomCorpusStyleArg::Vllm)]
    pub random_corpus_style: RandomCorpusStyleArg,

    /// Text contents per request (embeddings, rankings and completions take a list).
    #[arg(short = 'b', long = "prompt-batch-size", value_parser = count::<usize>,
          visible_aliases = ["batch-size-text", "batch-size"], default_value_t = 1)]
    pub prompt_batch_size: usize,

    /// Number of random prefixes; one is prepended to the first turn of each conversation.
    #[arg(long = "num-prefix-prompts", value_parser = count::<usize>,
          visible_aliases = ["prompt-prefix-pool-size", "prefix-prompt-pool-size"],
          default_value_t = 0)]
    pub prefix_pool_size: usize,

    /// Tokens per prefix prompt.
    #[arg(
        long = "prefix-prompt-length",
        value_parser = count::<u32>,
        visible_alias = "prompt-prefix-length",
        default_value_t = 0
    )]
    pub prefix_length: u32,

    /// Tokens of one system prompt shared by every conversation.
    #[arg(long = "shared-system-prompt-length", value_parser = count_at_least_one::<u32>)]
    pub shared_system_prompt_length: Option<u32>,

    /// Verbatim system prompt of every conversation, put before a dataset's own system
    /// message. Its tokens add to --isl.
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,

    /// A UTF-8 file holding the verbatim system prompt (read at startup).
    #[arg(long = "system-prompt-file")]
    pub system_prompt_file: Option<PathBuf>,

    /// Tokens of a distinct leading user message per conversation (needs
    /// --num-dataset-entries).
    #[arg(long = "user-context-prompt-length", value_parser = count_at_least_one::<u32>)]
    pub user_context_prompt_length: Option<u32>,

    /// Number of distinct synthetic conversations (reused as the benchmark runs).
    /// Default: --num-sessions, else --request-count, else 100.
    #[arg(long = "num-dataset-entries", value_parser = count_at_least_one::<usize>,
          visible_alias = "num-prompts")]
    pub num_dataset_entries: Option<usize>,

    /// Mean turns per synthetic conversation.
    #[arg(
        long = "session-turns-mean",
        value_parser = count::<u32>,
        visible_alias = "conversation-turn-mean",
        default_value_t = 1
    )]
    pub session_turns_mean: u32,

    /// Standard deviation of the turns per conversation.
    #[arg(
        long = "session-turns-stddev",
        value_parser = count::<u32>,
        visible_alias = "conversation-turn-stddev",
        default_value_t = 0
    )]
    pub session_turns_stddev: u32,

    /// Mean think time before each turn after the first, in milliseconds.
    #[arg(
        long = "session-turn-delay-mean",
        visible_alias = "conversation-turn-delay-mean",
        default_value_t = 0.0
    )]
    pub session_turn_delay_mean: f64,

    /// Standard deviation of the think time, in milliseconds.
    #[arg(
        long = "session-turn-delay-stddev",
        visible_alias = "conversation-turn-delay-stddev",
        default_value_t = 0.0
    )]
    pub session_turn_delay_stddev: f64,

    /// Factor applied to every think time.
    #[arg(
        long = "session-delay-ratio",
        visible_alias = "conversation-turn-delay-ratio",
        default_value_t = 1.0
    )]
    pub session_delay_ratio: f64,

    /// How generated turns are spread over several --model values.
    #[arg(long = "model-selection-strategy", value_enum, default_value_t = ModelSelectionArg::RoundRobin)]
    pub model_selection_strategy: ModelSelectionArg,

    /// A dataset file or directory instead of synthetic prompts.
    #[arg(long = "input-file")]
    pub input_file: Option<PathBuf>,

    /// The format of --input-file (detected when omitted); a `speed_bench_*` variant
    /// without --input-file reads nvidia/SPEED-Bench from the Hugging Face hub.
    #[arg(long = "custom-dataset-type", value_parser = CustomDatasetTypeParser)]
    pub custom_dataset_type: Option<CustomDatasetType>,

    /// A public dataset instead of synthetic prompts (`aiperf plugins
    /// public-dataset-loader` lists those this build loads).
    #[arg(long = "public-dataset", value_parser = public_dataset_names())]
    pub public_dataset: Option<String>,

    /// The Hugging Face config (subset) of --public-dataset, instead of the catalogue's.
    #[arg(long = "hf-subset")]
    pub hf_subset: Option<String>,

    /// The Hugging Face repository of a weka trace corpus to replay (e.g.
    /// `semianalysisai/cc-traces-weka-061526`); selects --public-dataset weka_hf.
    #[arg(long = "hf-weka-dataset")]
    pub hf_weka_dataset: Option<String>,

    /// The order conversations are drawn in (default: the dataset's preference).
    #[arg(long = "dataset-sampling-strategy", value_enum)]
    pub dataset_sampling_strategy: Option<SamplingStrategyArg>,

    /// Drop the timestamps and think times of a dataset file, so turns go back to back
    /// (no effect with --fixed-schedule).
    #[arg(long = "ignore-trace-delays")]
    pub ignore_trace_delays: bool,

    /// Time weka_trace turns by their recorded think time rather than the idle gap
    /// after the previous request.
    #[arg(long = "use-think-time-only")]
    pub use_think_time_only: bool,

    /// Fraction of a dataset file's sessions to replay, whole sessions, the same ones
    /// for the same --random-seed.
    #[arg(long = "trace-session-sample-ratio")]
    pub trace_session_sample_ratio: Option<f64>,

    /// Replay a dataset file this many times faster: timestamps and think times are
    /// divided by it.
    #[arg(long = "replay-speedup")]
    pub replay_speedup: Option<f64>,

    /// Shorten a dataset file's think times (turn delays, gaps of agentic traces) longer
    /// than this many seconds to it; timestamps are left alone.
    #[arg(long = "inter-turn-delay-cap-seconds")]
    pub inter_turn_delay_cap_seconds: Option<f64>,

    /// Let agentic (weka) trace replay reuse traces across concurrency lanes (no effect:
    /// every dataset is reused as the run needs).
    #[arg(long = "allow-dataset-wrap", overrides_with = "no_allow_dataset_wrap")]
    pub allow_dataset_wrap: bool,

    /// Do not let agentic trace replay reuse traces (the default).
    #[arg(long = "no-allow-dataset-wrap", overrides_with = "allow_dataset_wrap")]
    pub no_allow_dataset_wrap: bool,

    /// Leave the recorded KV-cache hints (hash_ids, block_size) out of baseten_trace
    /// request bodies.
    #[arg(long = "omit-kv-hints")]
    pub omit_kv_hints: bool,

    /// Send the recorded output length as min_tokens in baseten_trace requests (the
    /// default).
    #[arg(long = "force-min-tokens", overrides_with = "no_force_min_tokens")]
    pub force_min_tokens: bool,

    /// Send no min_tokens in baseten_trace requests.
    #[arg(long = "no-force-min-tokens", overrides_with = "force_min_tokens")]
    pub no_force_min_tokens: bool,

    /// Leave out weka traces whose recorded peak context (input + output tokens) is
    /// over this.
    #[arg(long = "max-context-length", value_parser = count::<u64>)]
    pub max_context_length: Option<u64>,

    /// Trace synthesis: divide trace timestamps by this (2 = twice as fast).
    #[arg(long = "synthesis-speedup-ratio")]
    pub synthesis_speedup_ratio: Option<f64>,

    /// Trace synthesis: scale the shared-prefix blocks of each request.
    #[arg(long = "synthesis-prefix-len-multiplier")]
    pub synthesis_prefix_len_multiplier: Option<f64>,

    /// Trace synthesis: spread requests over this many independent prefix trees.
    #[arg(long = "synthesis-prefix-root-multiplier", value_parser = count_at_least_one::<u32>)]
    pub synthesis_prefix_root_multiplier: Option<u32>,

    /// Trace synthesis: scale the unique (unshared) part of each prompt.
    #[arg(long = "synthesis-prompt-len-multiplier")]
    pub synthesis_prompt_len_multiplier: Option<f64>,

    /// Trace synthesis: scale output lengths.
    #[arg(long = "synthesis-output-len-multiplier")]
    pub synthesis_output_len_multiplier: Option<f64>,

    /// Trace synthesis: skip requests whose input length is over this.
    #[arg(long = "synthesis-max-isl", value_parser = count_at_least_one::<u64>)]
    pub synthesis_max_isl: Option<u64>,

    /// Trace synthesis: cap output lengths to this.
    #[arg(long = "synthesis-max-osl", value_parser = count_at_least_one::<u32>)]
    pub synthesis_max_osl: Option<u32>,

    /// Where each played session gets a cache-bust marker: a per-session `[rid:…]` digest
    /// (system-/first-turn- prefix or suffix), or `[warmup]` in warmup sessions only.
    #[arg(long = "cache-bust", value_enum, default_value_t = CacheBustArg::None)]
    pub cache_bust: CacheBustArg,

    /// A public dataset's key=value filter; repeat for more. The Exgentic traces take
    /// harness, source_model and (exgentic_v2) benchmark; other datasets take none.
    #[arg(long = "dataset-filter")]
    pub dataset_filters: Vec<String>,

    /// Tokens per trace hash_ids block (default: mooncake 512, bailian 16).
    #[arg(long = "isl-block-size", value_parser = count_at_least_one::<u32>,
          visible_aliases = ["prompt-input-tokens-block-size", "synthetic-input-tokens-block-size"])]
    pub isl_block_size: Option<u32>,

    #[command(flatten)]
    pub media: MediaArgs,

    /// Seed for every random choice: the same seed gives the same prompts and schedule.
    #[arg(long = "random-seed", value_parser = count::<u64>)]
    pub random_seed: Option<u64>,

    /// Tokenizer: `builtin` (offline), a tiktoken encoding, a path to tokenizer.json or a
    /// Hugging Face model id. Default: the model name.
    #[arg(long)]
    pub tokenizer: Option<String>,

    /// Branch, tag or commit of a Hugging Face tokenizer. Default: main.
    #[arg(long = "tokenizer-revision")]
    pub tokenizer_revision: Option<String>,

    /// Accepted for compatibility: no Python runs here, so a tokenizer needs its
    /// tokenizer.json either way.
    #[arg(long = "tokenizer-trust-remote-code")]
    pub tokenizer_trust_remote_code: bool,

    /// Count a chat request's input tokens on its messages as the tokenizer's chat
    /// template (tokenizer_config.json beside tokenizer.json) renders them.
    #[arg(long = "apply-chat-template")]
    pub apply_chat_template: bool,

    /// Per-request SLOs, e.g. "time_to_first_token:200 request_latency:1000" (ms).
    #[arg(long)]
    pub goodput: Option<String>,

    /// Run-level SLOs checked after the run, e.g. "time_to_first_token:p99:200
    /// request_throughput:avg:50"; any miss exits with status 3.
    #[arg(long)]
    pub slo: Option<String>,
}

/// The synthetic ranking requests of the `*_rankings` endpoint types: one query and some
/// passages per request.
#[derive(Debug, Args)]
#[command(next_help_heading = "Rankings")]
pub(crate) struct RankingsArgs {
    /// Mean number of passages per ranking request.
    #[arg(long = "rankings-passages-mean", default_value_t = 1.0)]
    pub passages_mean: f64,

    /// Standard deviation of the passage count.
    #[arg(long = "rankings-passages-stddev", default_value_t = 0.0)]
    pub passages_stddev: f64,

    /// Mean tokens per passage.
    #[arg(long = "rankings-passages-prompt-token-mean", default_value_t = 550.0)]
    pub passage_tokens_mean: f64,

    /// Standard deviation of the tokens per passage.
    #[arg(long = "rankings-passages-prompt-token-stddev", default_value_t = 0.0)]
    pub passage_tokens_stddev: f64,

    /// Mean tokens of the query.
    #[arg(long = "rankings-query-prompt-token-mean", default_value_t = 550.0)]
    pub query_tokens_mean: f64,

    /// Standard deviation of the query's tokens.
    #[arg(long = "rankings-query-prompt-token-stddev", default_value_t = 0.0)]
    pub query_tokens_stddev: f64,
}

impl InputArgs {
    /// Copies the input flags into `input` (validation happens on the whole config).
    /// Fails only when --seq-dist, --random-range-ratio or a --dataset-filter does not
    /// parse.
    pub(crate) fn apply(&self, input: &mut InputConfig) -> anyhow::Result<()> {
        input.isl_mean = self.isl;
        input.isl_stddev = self.isl_stddev;
        input.osl_mean = self.osl;
        input.osl_stddev = self.osl_stddev;
        input.sequence_distribution = self
            .seq_dist
            .as_deref()
            .map(SequenceDistribution::parse)
            .transpose()?;
        input.random_range_ratio = self
            .random_range_ratio
            .as_deref()
            .map(RangeRatio::parse)
            .transpose()?;
        input.num_dataset_entries = self.num_dataset_entries;
        input.random_seed = self.random_seed;
        input.tokenizer = self.tokenizer.clone();
        input.tokenizer_revision = self.tokenizer_revision.clone();
        input.tokenizer_trust_remote_code = self.tokenizer_trust_remote_code;
        input.apply_chat_template = self.apply_chat_template;
        input.input_file = self.input_file.clone();
        input.custom_dataset_type = self.custom_dataset_type;
        input.public_dataset = self.public_dataset.clone().map(PublicDataset::from);
        input.hf_subset.clone_from(&self.hf_subset);
        input.hf_weka_dataset.clone_from(&self.hf_weka_dataset);
        if input.hf_weka_dataset.is_some() && input.public_dataset.is_none() {
            input.public_dataset = Some(PublicDataset::Hub(WEKA_HF.to_string()));
        }
        input.sampling_strategy = self.dataset_sampling_strategy.map(|s| match s {
            SamplingStrategyArg::Sequential => SamplingStrategy::Sequential,
            SamplingStrategyArg::Random => SamplingStrategy::Random,
            SamplingStrategyArg::Shuffle => SamplingStrategy::Shuffle,
        });
        input.isl_block_size = self.isl_block_size;
        input.trace = TraceOptions {
            ignore_delays: self.ignore_trace_delays,
            use_think_time_only: self.use_think_time_only,
            session_sample_ratio: self.trace_session_sample_ratio,
            replay_speedup: self.replay_speedup,
            inter_turn_delay_cap_seconds: self.inter_turn_delay_cap_seconds,
            max_context_length: self.max_context_length,
            allow_dataset_wrap: self.allow_dataset_wrap,
            omit_kv_hints: self.omit_kv_hints,
            omit_min_tokens: self.no_force_min_tokens,
            synthesis: self.synthesis(),
            // Set from the environment by the assembly, as 0.13 reads it.
            tracelab_join: TracelabJoin::default(),
        };
        input.cache_bust = self.cache_bust.into_config();
        input.dataset_filters =
            parse_dataset_filters(self.dataset_filters.iter().map(String::as_str))?;
        let prompt = &mut input.prompt;
        prompt.batch_size = self.prompt_batch_size;
        prompt.prefix_pool_size = self.prefix_pool_size;
        prompt.prefix_length = self.prefix_length;
        prompt.shared_system_length = self.shared_system_prompt_length;
        prompt.user_context_length = self.user_context_prompt_length;
        prompt.system_prompt = self.system_prompt.clone();
        prompt.system_prompt_file = self.system_prompt_file.clone();
        prompt.corpus = self.prompt_corpus.map(|corpus| match corpus {
            PromptCorpusArg::Sonnet => PromptCorpus::Sonnet,
            PromptCorpusArg::Coding => PromptCorpus::Coding,
            PromptCorpusArg::Random => PromptCorpus::Random,
        });
        prompt.random_corpus_style = match self.random_corpus_style {
            RandomCorpusStyleArg::Vllm => RandomCorpusStyle::Vllm,
            RandomCorpusStyleArg::Sglang => RandomCorpusStyle::Sglang,
        };
        let session = &mut input.session;
        session.turns_mean = self.session_turns_mean;
        session.turns_stddev = self.session_turns_stddev;
        session.delay_mean_ms = self.session_turn_delay_mean;
        session.delay_stddev_ms = self.session_turn_delay_stddev;
        session.delay_ratio = self.session_delay_ratio;
        input.model_selection = match self.model_selection_strategy {
            ModelSelectionArg::RoundRobin => ModelSelectionStrategy::RoundRobin,
            ModelSelectionArg::Random => ModelSelectionStrategy::Random,
            ModelSelectionArg::Weighted => anyhow::bail!(
                "--model-selection-strategy weighted needs a weight for every model, which \
                 the command line cannot give (the Python AIPerf 0.13 refuses it there too); \
                 give them in a configuration file, `models: {{strategy: weighted, items: \
                 [{{name: a, weight: 0.7}}, {{name: b, weight: 0.3}}]}}`, and pass it with -f"
            ),
        };
        self.media.apply(input);
        Ok(())
    }

    /// The `--synthesis-*` flags; those not given keep the default (no change).
    fn synthesis(&self) -> TraceSynthesis {
        let default = TraceSynthesis::default();
        TraceSynthesis {
            speedup_ratio: self
                .synthesis_speedup_ratio
                .unwrap_or(default.speedup_ratio),
            prefix_len_multiplier: self
                .synthesis_prefix_len_multiplier
                .unwrap_or(default.prefix_len_multiplier),
            prefix_root_multiplier: self
                .synthesis_prefix_root_multiplier
                .unwrap_or(default.prefix_root_multiplier),
            prompt_len_multiplier: self
                .synthesis_prompt_len_multiplier
                .unwrap_or(default.prompt_len_multiplier),
            output_len_multiplier: self
                .synthesis_output_len_multiplier
                .unwrap_or(default.output_len_multiplier),
            max_isl: self.synthesis_max_isl,
            max_osl: self.synthesis_max_osl,
        }
    }
}

impl RankingsArgs {
    /// Copies the rankings flags into `input.rankings`.
    pub(crate) fn apply(&self, input: &mut InputConfig) {
        let rankings = &mut input.rankings;
        rankings.passages_mean = self.passages_mean;
        rankings.passages_stddev = self.passages_stddev;
        rankings.passage_tokens_mean = self.passage_tokens_mean;
        rankings.passage_tokens_stddev = self.passage_tokens_stddev;
        rankings.query_tokens_mean = self.query_tokens_mean;
        rankings.query_tokens_stddev = self.query_tokens_stddev;
    }
}

/// `--model-selection-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum ModelSelectionArg {
    /// The n-th generated turn uses model n mod k.
    #[value(alias = "round-robin")]
    RoundRobin,
    /// A uniformly drawn model per turn.
    Random,
    /// Per-model weights (refused: only a configuration file can give the weights).
    Weighted,
}

/// `--prompt-corpus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PromptCorpusArg {
    /// Built-in English prose (0.13: Shakespeare's sonnets, not shipped).
    Sonnet,
    /// Code, shell transcripts, JSON, tracebacks and diffs.
    Coding,
    /// Random token ids of the tokenizer's vocabulary.
    Random,
}

/// `--random-corpus-style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RandomCorpusStyleArg {
    /// `vllm bench serve`.
    Vllm,
    /// `sglang.benchmark.serving --dataset-name random-ids`.
    Sglang,
}

/// `--custom-dataset-type`: every [`CustomDatasetType`] name, `-` standing for `_`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CustomDatasetTypeParser;

impl clap::builder::TypedValueParser for CustomDatasetTypeParser {
    type Value = CustomDatasetType;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        if let Some(format) = value.to_str().and_then(CustomDatasetType::from_name) {
            return Ok(format);
        }
        // Not a name: clap's own error, which lists the names.
        let names: Vec<&str> = CustomDatasetType::every().map(|t| t.as_str()).collect();
        clap::builder::PossibleValuesParser::new(names)
            .parse_ref(cmd, arg, value)
            .and_then(|name| {
                CustomDatasetType::from_name(&name)
                    .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue))
            })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            CustomDatasetType::every().map(|t| clap::builder::PossibleValue::new(t.as_str())),
        ))
    }
}

/// `--cache-bust`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CacheBustArg {
    /// No marker.
    None,
    /// A per-session marker before the system message.
    #[value(alias = "system_prefix")]
    SystemPrefix,
    /// A per-session marker after the system message.
    #[value(alias = "system_suffix")]
    SystemSuffix,
    /// A per-session marker before the first turn.
    #[value(alias = "first_turn_prefix")]
    FirstTurnPrefix,
    /// A per-session marker after the first turn.
    #[value(alias = "first_turn_suffix")]
    FirstTurnSuffix,
    /// `[warmup]` before the system message of warmup sessions.
    #[value(alias = "warmup_isolation_system")]
    WarmupIsolationSystem,
    /// `[warmup]` before the first turn of warmup sessions.
    #[value(alias = "warmup_isolation_first_turn")]
    WarmupIsolationFirstTurn,
}

impl CacheBustArg {
    fn into_config(self) -> CacheBust {
        match self {
            CacheBustArg::None => CacheBust::None,
            CacheBustArg::SystemPrefix => CacheBust::SystemPrefix,
            CacheBustArg::SystemSuffix => CacheBust::SystemSuffix,
            CacheBustArg::FirstTurnPrefix => CacheBust::FirstTurnPrefix,
            CacheBustArg::FirstTurnSuffix => CacheBust::FirstTurnSuffix,
            CacheBustArg::WarmupIsolationSystem => CacheBust::WarmupIsolationSystem,
            CacheBustArg::WarmupIsolationFirstTurn => CacheBust::WarmupIsolationFirstTurn,
        }
    }
}

/// `--public-dataset`: every name of the Python AIPerf 0.13's catalogue.
fn public_dataset_names() -> clap::builder::PossibleValuesParser {
    aiperf_datasets::catalogue::CATALOGUE
        .iter()
        .map(|entry| entry.name)
        .collect::<Vec<_>>()
        .into()
}

/// `--dataset-sampling-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SamplingStrategyArg {
    /// In order, wrapping around.
    Sequential,
    /// Uniformly, with replacement.
    Random,
    /// A fresh permutation per pass.
    Shuffle,
}

/// Synthetic images, audio and video.
#[derive(Debug, Args)]
#[command(next_help_heading = "Audio / Image / Video input")]
pub(crate) struct MediaArgs {
    /// Mean image width in pixels (images are sent when width and height means are above 0).
    #[arg(long = "image-width-mean", default_value_t = 0.0)]
    pub image_width_mean: f64,
    /// Standard deviation of the image width.
    #[arg(long = "image-width-stddev", default_value_t = 0.0)]
    pub image_width_stddev: f64,
    /// Mean image height in pixels.
    #[arg(long = "image-height-mean", default_value_t = 0.0)]
    pub image_height_mean: f64,
    /// Standard deviation of the image height.
    #[arg(long = "image-height-stddev", default_value_t = 0.0)]
    pub image_height_stddev: f64,
    /// Images per request.
    #[arg(
        long = "image-batch-size",
        value_parser = count::<usize>,
        visible_alias = "batch-size-image",
        default_value_t = 1
    )]
    pub image_batch_size: usize,
    /// Image encoding.
    #[arg(long = "image-format", value_enum, default_value_t = ImageFormatArg::Png)]
    pub image_format: ImageFormatArg,

    /// Mean audio clip length in seconds (0: no audio).
    #[arg(long = "audio-length-mean", default_value_t = 0.0)]
    pub audio_length_mean: f64,
    /// Standard deviation of the clip length in seconds.
    #[arg(long = "audio-length-stddev", default_value_t = 0.0)]
    pub audio_length_stddev: f64,
    /// Audio clips per request.
    #[arg(
        long = "audio-batch-size",
        value_parser = count::<usize>,
        visible_alias = "batch-size-audio",
        default_value_t = 1
    )]
    pub audio_batch_size: usize,
    /// Audio container (mp3 is not supported by aiperf-rs).
    #[arg(long = "audio-format", value_enum, default_value_t = AudioFormatArg::Wav)]
    pub audio_format: AudioFormatArg,
    /// Bit depths to draw from (8, 16, 24, 32).
    #[arg(long = "audio-depths", value_parser = count::<u16>,
          num_args = 1.., value_delimiter = ',', default_value = "16")]
    pub audio_depths: Vec<u16>,
    /// Sample rates in kHz to draw from.
    #[arg(long = "audio-sample-rates", num_args = 1.., value_delimiter = ',',
          default_value = "16")]
    pub audio_sample_rates: Vec<f64>,
    /// Audio channels (1 or 2).
    #[arg(long = "audio-num-channels", value_parser = count::<u16>, default_value_t = 1)]
    pub audio_num_channels: u16,

    /// Video frame width (with --video-height; needs ffmpeg).
    #[arg(long = "video-width", value_parser = count::<u32>)]
    pub video_width: Option<u32>,
    /// Video frame height (with --video-width).
    #[arg(long = "video-height", value_parser = count::<u32>)]
    pub video_height: Option<u32>,
    /// Video length in seconds.
    #[arg(long = "video-duration", default_value_t = 5.0)]
    pub video_duration: f64,
    /// Video frames per second.
    #[arg(long = "video-fps", value_parser = count::<u32>, default_value_t = 4)]
    pub video_fps: u32,
    /// Videos per request.
    #[arg(
        long = "video-batch-size",
        value_parser = count::<usize>,
        visible_alias = "batch-size-video",
        default_value_t = 1
    )]
    pub video_batch_size: usize,
    /// What the video frames show.
    #[arg(long = "video-synth-type", value_enum, default_value_t = VideoSynthTypeArg::MovingShapes)]
    pub video_synth_type: VideoSynthTypeArg,
    /// Video container.
    #[arg(long = "video-format", value_enum, default_value_t = VideoFormatArg::Webm)]
    pub video_format: VideoFormatArg,
    /// ffmpeg video codec.
    #[arg(long = "video-codec", default_value = "libvpx-vp9")]
    pub video_codec: String,
}

impl MediaArgs {
    fn apply(&self, input: &mut InputConfig) {
        let image = &mut input.image;
        image.width_mean = self.image_width_mean;
        image.width_stddev = self.image_width_stddev;
        image.height_mean = self.image_height_mean;
        image.height_stddev = self.image_height_stddev;
        image.batch_size = self.image_batch_size;
        image.format = match self.image_format {
            ImageFormatArg::Png => ImageFormat::Png,
            ImageFormatArg::Jpeg => ImageFormat::Jpeg,
            ImageFormatArg::Random => ImageFormat::Random,
        };
        let audio = &mut input.audio;
        audio.length_mean = self.audio_length_mean;
        audio.length_stddev = self.audio_length_stddev;
        audio.batch_size = self.audio_batch_size;
        audio.format = match self.audio_format {
            AudioFormatArg::Wav => AudioFormat::Wav,
            AudioFormatArg::Mp3 => AudioFormat::Mp3,
        };
        audio.depths = self.audio_depths.clone();
        audio.sample_rates_khz = self.audio_sample_rates.clone();
        audio.num_channels = self.audio_num_channels;
        let video = &mut input.video;
        video.width = self.video_width;
        video.height = self.video_height;
        video.duration = self.video_duration;
        video.fps = self.video_fps;
        video.batch_size = self.video_batch_size;
        video.synth_type = match self.video_synth_type {
            VideoSynthTypeArg::MovingShapes => VideoSynthType::MovingShapes,
            VideoSynthTypeArg::GridClock => VideoSynthType::GridClock,
            VideoSynthTypeArg::Noise => VideoSynthType::Noise,
        };
        video.format = match self.video_format {
            VideoFormatArg::Webm => VideoFormat::Webm,
            VideoFormatArg::Mp4 => VideoFormat::Mp4,
        };
        video.codec = self.video_codec.clone();
    }
}

/// `--image-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImageFormatArg {
    /// PNG.
    Png,
    /// JPEG (quality 85, no chroma subsampling).
    Jpeg,
    /// PNG or JPEG per image.
    Random,
}

/// `--audio-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AudioFormatArg {
    /// PCM WAV.
    Wav,
    /// MP3 (rejected: no encoder).
    Mp3,
}

/// `--video-synth-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum VideoSynthTypeArg {
    /// Moving coloured squares.
    #[value(alias = "moving-shapes")]
    MovingShapes,
    /// A grid whose lit cell counts frames.
    #[value(alias = "grid-clock")]
    GridClock,
    /// Random pixels.
    Noise,
}

/// `--video-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VideoFormatArg {
    /// WebM.
    Webm,
    /// MP4.
    Mp4,
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::config::SeqDistPair;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        rankings: RankingsArgs,
    }

    fn config(args: &[&str]) -> InputConfig {
        let flags =
            Flags::try_parse_from(std::iter::once("aiperf").chain(args.iter().copied())).unwrap();
        let mut input = InputConfig::default();
        flags.input.apply(&mut input).unwrap();
        flags.rankings.apply(&mut input);
        input
    }

    #[test]
    fn defaults_match_input_config_defaults() {
        assert_eq!(config(&[]), InputConfig::default());
    }

    #[test]
    fn python_input_flags_reach_the_configuration() {
        let input = config(&[
            "--system-prompt",
            "Be brief.",
            "--tokenizer-revision",
            "v1",
            "--tokenizer-trust-remote-code",
            "--apply-chat-template",
            "--ignore-trace-delays",
            "--trace-session-sample-ratio",
            "0.25",
            "--replay-speedup",
            "10",
            "--inter-turn-delay-cap-seconds",
            "2.5",
            "--dataset-filter",
            "lang=en",
            "--dataset-filter",
            "split = test",
            "--random-range-ratio",
            "0.2",
            "--cache-bust",
            "first-turn-suffix",
        ]);
        assert_eq!(input.cache_bust, CacheBust::FirstTurnSuffix);
        assert_eq!(
            config(&["--cache-bust", "warmup_isolation_first_turn"]).cache_bust,
            CacheBust::WarmupIsolationFirstTurn
        );
        assert_eq!(
            input.random_range_ratio,
            Some(RangeRatio {
                input: 0.2,
                output: 0.2
            })
        );
        assert_eq!(input.prompt.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(input.tokenizer_revision.as_deref(), Some("v1"));
        assert!(input.tokenizer_trust_remote_code);
        assert!(input.apply_chat_template);
        assert_eq!(
            input.trace,
            TraceOptions {
                ignore_delays: true,
                use_think_time_only: false,
                session_sample_ratio: Some(0.25),
                replay_speedup: Some(10.0),
                inter_turn_delay_cap_seconds: Some(2.5),
                max_context_length: None,
                allow_dataset_wrap: false,
                omit_kv_hints: false,
                omit_min_tokens: false,
                synthesis: TraceSynthesis::default(),
                tracelab_join: TracelabJoin::default(),
            }
        );
        let baseten = config(&["--omit-kv-hints", "--no-force-min-tokens"]).trace;
        assert!(baseten.omit_kv_hints && baseten.omit_min_tokens);
        let forced = config(&["--no-force-min-tokens", "--force-min-tokens"]).trace;
        assert!(!forced.omit_min_tokens);
        assert_eq!(
            input.dataset_filters,
            [("lang", "en"), ("split", "test")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into()
        );
        assert!(config(&["--allow-dataset-wrap"]).trace.allow_dataset_wrap);
        assert!(
            !config(&["--allow-dataset-wrap", "--no-allow-dataset-wrap"])
                .trace
                .allow_dataset_wrap
        );
        let file = config(&["--system-prompt-file", "p.txt", "--use-think-time-only"]);
        assert_eq!(file.prompt.system_prompt_file, Some("p.txt".into()));
        assert!(file.trace.use_think_time_only);
        assert_eq!(
            config(&["--max-context-length", "4096"])
                .trace
                .max_context_length,
            Some(4096)
        );
        let synthesis = config(&[
            "--synthesis-speedup-ratio",
            "2.5",
            "--synthesis-prefix-root-multiplier",
            "3",
            "--synthesis-max-osl",
            "100",
        ])
        .trace
        .synthesis;
        assert_eq!(
            synthesis,
            TraceSynthesis {
                speedup_ratio: 2.5,
                prefix_root_multiplier: 3,
                max_osl: Some(100),
                ..TraceSynthesis::default()
            }
        );
    }

    #[test]
    fn the_corpus_flags_reach_the_configuration() {
        assert_eq!(config(&[]).prompt.corpus, None);
        let input = config(&[
            "--prompt-corpus",
            "random",
            "--random-corpus-style",
            "sglang",
        ]);
        assert_eq!(input.prompt.corpus, Some(PromptCorpus::Random));
        assert_eq!(input.prompt.random_corpus_style, RandomCorpusStyle::Sglang);
        for (name, corpus) in [
            ("sonnet", PromptCorpus::Sonnet),
            ("coding", PromptCorpus::Coding),
        ] {
            assert_eq!(
                config(&["--prompt-corpus", name]).prompt.corpus,
                Some(corpus)
            );
        }
        let error = Flags::try_parse_from(["aiperf", "--prompt-corpus", "bogus"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
        assert!(
            error
                .to_string()
                .contains("[possible values: sonnet, coding, random]"),
            "{error}"
        );
        let error = Flags::try_parse_from(["aiperf", "--random-corpus-style", "tgi"]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("[possible values: vllm, sglang]"),
            "{error}"
        );
    }

    #[test]
    fn a_repeated_dataset_filter_key_is_refused() {
        let flags = Flags::try_parse_from([
            "aiperf",
            "--dataset-filter",
            "a=1",
            "--dataset-filter",
            "a=2",
        ])
        .unwrap();
        let error = flags.input.apply(&mut InputConfig::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid input.dataset_filters: the key \"a\" is given twice"
        );
    }

    #[test]
    fn prompt_flags_and_aliases() {
        for batch in [
            "-b",
            "--prompt-batch-size",
            "--batch-size-text",
            "--batch-size",
        ] {
            assert_eq!(config(&[batch, "3"]).prompt.batch_size, 3, "{batch}");
        }
        for pool in [
            "--num-prefix-prompts",
            "--prompt-prefix-pool-size",
            "--prefix-prompt-pool-size",
        ] {
            assert_eq!(config(&[pool, "4"]).prompt.prefix_pool_size, 4, "{pool}");
        }
        for length in ["--prefix-prompt-length", "--prompt-prefix-length"] {
            assert_eq!(config(&[length, "9"]).prompt.prefix_length, 9, "{length}");
        }
        let c = config(&[
            "--shared-system-prompt-length",
            "20",
            "--user-context-prompt-length",
            "30",
            "--num-prompts",
            "7",
        ]);
        assert_eq!(c.prompt.shared_system_length, Some(20));
        assert_eq!(c.prompt.user_context_length, Some(30));
        assert_eq!(c.num_dataset_entries, Some(7));
    }

    #[test]
    fn session_flags_and_aliases() {
        let pairs = [
            ("--session-turns-mean", "--conversation-turn-mean"),
            ("--session-turns-stddev", "--conversation-turn-stddev"),
            (
                "--session-turn-delay-mean",
                "--conversation-turn-delay-mean",
            ),
            (
                "--session-turn-delay-stddev",
                "--conversation-turn-delay-stddev",
            ),
            ("--session-delay-ratio", "--conversation-turn-delay-ratio"),
        ];
        for (name, alias) in pairs {
            assert_eq!(config(&[name, "3"]), config(&[alias, "3"]), "{alias}");
        }
        let s = config(&[
            "--session-turns-mean",
            "4",
            "--session-turns-stddev",
            "1",
            "--session-turn-delay-mean",
            "250",
            "--session-turn-delay-stddev",
            "10",
            "--session-delay-ratio",
            "0.5",
        ])
        .session;
        assert_eq!(
            (
                s.turns_mean,
                s.turns_stddev,
                s.delay_mean_ms,
                s.delay_stddev_ms,
                s.delay_ratio
            ),
            (4, 1, 250.0, 10.0, 0.5)
        );
    }

    #[test]
    fn seq_dist_parses_and_reports_the_bad_part() {
        for flag in ["--seq-dist", "--sequence-distribution"] {
            let c = config(&[flag, "100,10:100"]);
            assert_eq!(
                c.sequence_distribution.unwrap().pairs,
                [SeqDistPair {
                    isl: 100,
                    isl_stddev: 0.0,
                    osl: 10,
                    osl_stddev: 0.0,
                    prob: 100.0
                }]
            );
        }
        let flags = Flags::try_parse_from(["aiperf", "--seq-dist", "1,x:100"]).unwrap();
        let err = flags.input.apply(&mut InputConfig::default()).unwrap_err();
        assert_eq!(
            crate::usage::flag_words(&err.to_string()),
            r#"invalid --seq-dist: entry "1,x:100": OSL "x" is not an integer"#
        );
    }

    #[test]
    fn dataset_source_flags() {
        let c = config(&[
            "--input-file",
            "data.jsonl",
            "--custom-dataset-type",
            "mooncake_trace",
            "--dataset-sampling-strategy",
            "shuffle",
            "--synthetic-input-tokens-block-size",
            "16",
            "--model-selection-strategy",
            "random",
        ]);
        assert_eq!(c.input_file, Some(PathBuf::from("data.jsonl")));
        assert_eq!(
            c.custom_dataset_type,
            Some(CustomDatasetType::MooncakeTrace)
        );
        assert_eq!(c.sampling_strategy, Some(SamplingStrategy::Shuffle));
        assert_eq!(c.isl_block_size, Some(16));
        assert_eq!(c.model_selection, ModelSelectionStrategy::Random);
        for alias in ["--isl-block-size", "--prompt-input-tokens-block-size"] {
            assert_eq!(config(&[alias, "8"]).isl_block_size, Some(8));
        }
        let c = config(&[
            "--public-dataset",
            "sharegpt",
            "--custom-dataset-type",
            "burst_gpt_trace",
        ]);
        assert_eq!(c.public_dataset, Some(PublicDataset::Sharegpt));
        assert_eq!(
            c.custom_dataset_type,
            Some(CustomDatasetType::BurstGptTrace)
        );
    }

    #[test]
    fn media_flags_and_aliases() {
        let c = config(&[
            "--image-width-mean",
            "64",
            "--image-width-stddev",
            "2",
            "--image-height-mean",
            "32",
            "--image-height-stddev",
            "1",
            "--batch-size-image",
            "2",
            "--image-format",
            "jpeg",
            "--audio-length-mean",
            "0.5",
            "--audio-length-stddev",
            "0.1",
            "--batch-size-audio",
            "3",
            "--audio-depths",
            "8",
            "24",
            "--audio-sample-rates",
            "8,44.1",
            "--audio-num-channels",
            "2",
            "--video-width",
            "64",
            "--video-height",
            "48",
            "--video-duration",
            "2",
            "--video-fps",
            "8",
            "--batch-size-video",
            "2",
            "--video-synth-type",
            "grid_clock",
            "--video-format",
            "mp4",
            "--video-codec",
            "libx264",
        ]);
        let i = &c.image;
        assert_eq!(
            (
                i.width_mean,
                i.width_stddev,
                i.height_mean,
                i.height_stddev,
                i.batch_size
            ),
            (64.0, 2.0, 32.0, 1.0, 2)
        );
        assert_eq!(i.format, ImageFormat::Jpeg);
        let a = &c.audio;
        assert_eq!(
            (a.length_mean, a.length_stddev, a.batch_size),
            (0.5, 0.1, 3)
        );
        assert_eq!(a.depths, [8, 24]);
        assert_eq!(a.sample_rates_khz, [8.0, 44.1]);
        assert_eq!(a.num_channels, 2);
        let v = &c.video;
        assert_eq!(
            (v.width, v.height, v.duration, v.fps),
            (Some(64), Some(48), 2.0, 8)
        );
        assert_eq!(v.batch_size, 2);
        assert_eq!(v.synth_type, VideoSynthType::GridClock);
        assert_eq!(v.format, VideoFormat::Mp4);
        assert_eq!(v.codec, "libx264");
        for (name, alias) in [
            ("--image-batch-size", "--batch-size-image"),
            ("--audio-batch-size", "--batch-size-audio"),
            ("--video-batch-size", "--batch-size-video"),
        ] {
            assert_eq!(config(&[name, "5"]), config(&[alias, "5"]), "{alias}");
        }
        assert_eq!(
            config(&["--audio-format", "mp3"]).audio.format,
            AudioFormat::Mp3
        );
    }

    #[test]
    fn rankings_flags_reach_the_config() {
        let c = config(&[
            "--rankings-passages-mean",
            "5",
            "--rankings-query-prompt-token-mean",
            "12",
        ]);
        assert_eq!(c.rankings.passages_mean, 5.0);
        assert_eq!(c.rankings.query_tokens_mean, 12.0);
    }
}
