//! The input flags: synthetic prompts, input files, media and the tokenizer.

use aiperf_core::config::InputConfig;
use clap::Args;

/// What is sent.
#[derive(Debug, Args)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Mean input sequence length of synthetic prompts, in tokens.
    #[arg(long = "isl", visible_aliases = ["prompt-input-tokens-mean", "synthetic-input-tokens-mean"],
          default_value_t = 550)]
    pub isl: u32,

    /// Standard deviation of the input sequence length.
    #[arg(long = "isl-stddev",
          visible_aliases = ["prompt-input-tokens-stddev", "synthetic-input-tokens-stddev"],
          default_value_t = 0.0)]
    pub isl_stddev: f64,

    /// Mean output length: each request asks for this many tokens. Unset: no limit is sent.
    #[arg(long = "osl", visible_aliases = ["prompt-output-tokens-mean", "output-tokens-mean"])]
    pub osl: Option<u32>,

    /// Standard deviation of the output length.
    #[arg(long = "osl-stddev",
          visible_aliases = ["prompt-output-tokens-stddev", "output-tokens-stddev"],
          default_value_t = 0.0)]
    pub osl_stddev: f64,

    /// Number of distinct synthetic prompts (reused as the benchmark runs).
    #[arg(
        long = "num-dataset-entries",
        visible_alias = "num-prompts",
        default_value_t = 100
    )]
    pub num_dataset_entries: usize,

    /// Seed for every random choice: the same seed gives the same prompts and schedule.
    #[arg(long = "random-seed")]
    pub random_seed: Option<u64>,

    /// Tokenizer: `builtin` (offline), a tiktoken encoding, a path to tokenizer.json or a
    /// Hugging Face model id. Default: the model name.
    #[arg(long)]
    pub tokenizer: Option<String>,

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
pub struct RankingsArgs {
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
    pub fn apply(&self, input: &mut InputConfig) -> anyhow::Result<()> {
        input.isl_mean = self.isl;
        input.isl_stddev = self.isl_stddev;
        input.osl_mean = self.osl;
        input.osl_stddev = self.osl_stddev;
        input.num_dataset_entries = self.num_dataset_entries;
        input.random_seed = self.random_seed;
        input.tokenizer = self.tokenizer.clone();
        Ok(())
    }
}
