//! Command-line arguments, compatible with the Python AIPerf's names and aliases.

use std::path::PathBuf;

use aiperf_core::clock::saturating_secs;
use aiperf_core::RequestContentType;

use aiperf_endpoints::readiness::{Readiness, WaitMode};
use clap::{Args, Parser, Subcommand, ValueEnum};

mod accuracy;
mod input;
mod kube;
mod load;
pub(crate) mod refused;
mod runs;

pub(crate) use input::{InputArgs, RankingsArgs};
pub(crate) use kube::{KubeCommand, KubeGenerateArgs};
pub(crate) use load::LoadArgs;
pub(crate) use refused::RefusedArgs;
pub(crate) use runs::{RunsArgs, SweepType};

/// Benchmark generative-AI inference servers.
#[derive(Debug, Parser)]
#[command(name = "aiperf", version, about, long_about = None)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a benchmark against a server and write its metrics.
    // A negative number is a value (refused by its flag's parser with the rule), not an
    // unknown short flag.
    #[command(allow_negative_numbers = true)]
    Profile(Box<ProfileArgs>),
    /// Analyze a mooncake trace for ISL/OSL distributions and prefix-cache hit rates.
    AnalyzeTrace(AnalyzeTraceArgs),
    /// Synthesize a dataset workload: an agentic coding trace, or a re-synthesized
    /// mooncake trace.
    Synthesize(SynthesizeArgs),
    /// Print a shell completion script, e.g. `aiperf completions bash > /etc/bash_completion.d/aiperf`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Compare two runs' artifacts: differences, their significance, regression gates.
    Compare(CompareArgs),
    /// Draw charts (PNG and SVG) and a self-contained report.html from one run's artifacts,
    /// or compare several runs (a sweep, a multi-run folder, or several directories).
    Plot(PlotArgs),
    /// Configuration files: write a starter, check one, list a sweep's runs.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check an artifact: a mooncake trace loads as a benchmark would load it, or a run
    /// directory is whole and agrees with itself. Exit 0 when valid, 1 when not.
    Validate(ValidateArgs),
    /// List what this build provides: endpoint types, dataset formats, public datasets,
    /// accuracy benchmarks and chart kinds, with a line on each.
    Plugins(PluginsArgs),
    /// Chat with a server one message at a time, printing each reply as it streams and
    /// its TTFT, tokens/s, tokens and latency: the sanity check before a benchmark.
    Chat(ChatArgs),
    /// Post-run views of a run's records.
    #[command(subcommand)]
    Analyze(AnalyzeCommand),
    /// Run one benchmark across many machines on Kubernetes: `aiperf kube generate`.
    #[command(subcommand)]
    Kube(KubeCommand),
    /// Merge the run directories of a benchmark's shards (`profile --shard K/N`) into the
    /// run directory one machine would have written: summary recomputed from every record,
    /// records interleaved in time order.
    Merge(MergeArgs),
    /// Assemble per-category SPEED-Bench runs into a matrix report (a row per model, a
    /// column per category): run `aiperf profile` once per `speed_bench_*` variant (or
    /// `spec_al_*` dataset), then point this at the run directories.
    SpeedBenchReport(SpeedBenchReportArgs),
}

/// `aiperf speed-bench-report`.
#[derive(Debug, Args)]
pub(crate) struct SpeedBenchReportArgs {
    /// Run directories, or folders whose subfolders are run directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<std::path::PathBuf>,
    /// Where to write the CSV.
    #[arg(long = "output", value_name = "FILE", default_value = aiperf_metrics::speed_bench::DEFAULT_REPORT_FILE)]
    pub output: std::path::PathBuf,
    /// Print the table, write the CSV, or both.
    #[arg(long = "format", value_enum, default_value_t = ReportFormatArg::Both)]
    pub format: ReportFormatArg,
    /// What the cells hold: acceptance length or rate (from the server's
    /// speculative-decoding metrics in server_metrics_export.json), or output token
    /// throughput.
    #[arg(long = "metric", value_enum, default_value_t = ReportMetricArg::AcceptLength)]
    pub metric: ReportMetricArg,
}

/// `aiperf speed-bench-report --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormatArg {
    /// Write the CSV only.
    Csv,
    /// Print the table only.
    Table,
    /// Print the table and write the CSV.
    Both,
}

/// `aiperf speed-bench-report --metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum ReportMetricArg {
    /// Tokens per target-model step.
    AcceptLength,
    /// Accepted over drafted tokens.
    AcceptRate,
    /// Output tokens per second.
    Throughput,
}

/// `aiperf merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The shards' run directories (each holds a shard.json).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<std::path::PathBuf>,
    /// Where to write the merged run (default: `merged` beside the first shard directory).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<std::path::PathBuf>,
    /// Merge even when shards of the benchmark are missing (merge.json lists them).
    #[arg(long = "allow-missing")]
    pub allow_missing: bool,
    /// Wait up to this many seconds for every directory to hold a finished shard (for a
    /// merge started beside the shards, as the Kubernetes merge Job is).
    #[arg(long = "wait", value_name = "SECONDS")]
    pub wait: Option<u64>,
}

/// `aiperf chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Model name served by the endpoint.
    #[arg(short = 'm', long = "model", required = true)]
    pub model: String,
    /// Base URL of the server (a `/v1` base or the full chat-completions URL also work).
    #[arg(short = 'u', long = "url", default_value = "http://localhost:8000")]
    pub url: String,
    /// A system prompt before the conversation.
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,
    /// Send this one message, print the reply and its stats, and exit.
    #[arg(short = 'q', long = "quick", value_name = "MESSAGE")]
    pub quick: Option<String>,
    /// Resend the conversation with each message (the default).
    #[arg(long = "history", overrides_with = "no_history")]
    pub history: bool,
    /// Send each message on its own, without the conversation so far.
    #[arg(long = "no-history")]
    pub no_history: bool,
    /// API key, sent as a Bearer token.
    #[arg(long = "api-key", env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Tokenizer for the client-side token counts (default: the model name; `builtin`
    /// works offline).
    #[arg(long = "tokenizer")]
    pub tokenizer: Option<String>,
}

/// `aiperf analyze …`.
#[derive(Debug, Subcommand)]
pub(crate) enum AnalyzeCommand {
    /// Draw a per-session swim-lane PNG with the in-flight count underneath, from each
    /// run directory's profile_export.jsonl (written as swim_lane.png in the run
    /// directory unless -o).
    SwimLane {
        /// One or more run directories.
        #[arg(value_name = "RUN_DIRS", required = true)]
        run_dirs: Vec<PathBuf>,
        /// The PNG to write (only with a single run directory).
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
        /// A target concurrency, drawn as a reference line under the in-flight curve.
        #[arg(short = 'c', long = "concurrency")]
        concurrency: Option<u32>,
        /// A ramp duration in seconds, marked with a vertical line.
        #[arg(long = "ramp")]
        ramp: Option<f64>,
        /// Also write an interactive HTML viewer (zoom, pan, each request's metrics on
        /// hover): swim_lane.html, or the -o path with an .html extension.
        #[arg(long = "html")]
        html: bool,
    },
    /// Write a self-contained HTML page of the messages each turn sent, conversation by
    /// conversation, from each run directory's profile_export_raw.jsonl (--export-level
    /// raw); written as turn_messages.html in the run directory unless -o.
    TurnMessages {
        /// One or more run directories.
        #[arg(value_name = "RUN_DIRS", required = true)]
        run_dirs: Vec<PathBuf>,
        /// The HTML file to write (only with a single run directory).
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
        /// Conversations shown, earliest first.
        #[arg(short = 'n', long = "limit-conversations", default_value_t = 40)]
        limit_conversations: usize,
        /// Turns shown per conversation; the rest are counted.
        #[arg(long = "max-turns", default_value_t = 60)]
        max_turns: usize,
        /// Characters kept of each message; the rest are counted.
        #[arg(long = "content-cap", default_value_t = 8000)]
        content_cap: usize,
    },
}

/// `aiperf plugins`.
#[derive(Debug, Args)]
pub(crate) struct PluginsArgs {
    /// A category to list (endpoint, custom-dataset-loader, public-dataset-loader,
    /// accuracy-benchmark, plot); without one, every category and its count.
    #[arg(value_name = "CATEGORY", conflicts_with = "category_flag")]
    pub category: Option<String>,
    /// One entry of the category to describe.
    #[arg(value_name = "NAME", conflicts_with = "name_flag")]
    pub name: Option<String>,
    /// The category, as the Python AIPerf spells it.
    #[arg(long = "category", value_name = "CATEGORY")]
    pub category_flag: Option<String>,
    /// The entry, as the Python AIPerf spells it.
    #[arg(long = "name", value_name = "NAME")]
    pub name_flag: Option<String>,
    /// Every category with every entry.
    #[arg(short = 'a', long)]
    pub all: bool,
}

/// `aiperf validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// What to check, given here or as --target.
    #[arg(value_enum, required_unless_present = "target_flag")]
    pub target: Option<ValidateTarget>,

    /// The file or directory, given here or as --input.
    #[arg(value_name = "INPUT", required_unless_present = "input_flag")]
    pub input: Option<PathBuf>,

    /// What to check, as the Python AIPerf spells it.
    #[arg(long = "target", value_enum, conflicts_with = "target")]
    pub target_flag: Option<ValidateTarget>,

    /// The file or directory, as the Python AIPerf spells it.
    #[arg(long = "input", value_name = "INPUT", conflicts_with = "input")]
    pub input_flag: Option<PathBuf>,
}

/// What `aiperf validate` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ValidateTarget {
    /// A mooncake trace (JSONL), as `--custom-dataset-type mooncake_trace` reads it.
    #[value(name = "mooncake-trace", alias = "mooncake_trace")]
    MooncakeTrace,
    /// A run's artifact directory: every file parses, the records add up to the
    /// summary's counts, the CSV shows the summary's values, the records' conversations
    /// are in inputs.json.
    Run,
}

/// `aiperf config …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Write a commented starter configuration file (to stdout unless -o).
    Init {
        /// The template (see --list).
        #[arg(short = 't', long = "template", default_value = "default")]
        template: String,
        /// List the templates.
        #[arg(short = 'l', long)]
        list: bool,
        /// The model to put in the file.
        #[arg(short = 'm', long = "model")]
        model: Option<String>,
        /// The server URL to put in the file.
        #[arg(short = 'u', long = "url")]
        url: Option<String>,
        /// Write the file here instead of to stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Check a configuration file: every key, value and rule of every run.
    Validate {
        /// The file.
        file: PathBuf,
    },
    /// Print the runs a configuration file's sweep expands to, one per point.
    Expand {
        /// The file.
        file: PathBuf,
    },
}

/// A whole number, 0 or more: a negative one is refused with that rule rather than
/// "invalid digit".
pub(crate) fn count<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    whole_number(text, "must be 0 or more")
}

/// A whole number the configuration requires to be at least 1: a negative one is refused
/// here with that rule, 0 by the configuration's validation in the same words.
pub(crate) fn count_at_least_one<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    whole_number(text, "must be at least 1")
}

fn whole_number<T>(text: &str, rule: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let trimmed = text.trim();
    let negative = trimmed
        .strip_prefix('-')
        .is_some_and(|digits| digits.parse::<f64>().is_ok());
    if negative {
        return Err(rule.to_owned());
    }
    trimmed.parse().map_err(|error: T::Err| error.to_string())
}

/// `aiperf profile`.
#[derive(Debug, Args)]
pub(crate) struct ProfileArgs {
    /// A configuration file (the Python AIPerf 0.13 YAML, or a run's run_config.json)
    /// as the base of the run; flags given beside it override its values
    /// (docs/config-file.md).
    #[arg(short = 'f', long = "config")]
    pub config_file: Option<PathBuf>,
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub rankings: RankingsArgs,
    #[command(flatten)]
    pub accuracy: accuracy::AccuracyArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub runs: RunsArgs,
    #[command(flatten)]
    pub telemetry: crate::telemetry::TelemetryArgs,
    /// The Python AIPerf options that are recognised but not offered.
    #[command(flatten)]
    pub refused: RefusedArgs,
}

/// Where requests go and what they look like.
#[derive(Debug, Args)]
#[command(next_help_heading = "Endpoint")]
pub(crate) struct EndpointArgs {
    /// Model name(s) to benchmark; the first is the primary model. Comma or space separated.
    #[arg(short = 'm', long = "model", visible_alias = "model-names",
          required_unless_present = "config_file",
          num_args = 1.., value_delimiter = ',')]
    pub models: Vec<String>,

    /// Base URL(s) of the server. `mock` starts the embedded mock server and benchmarks it.
    #[arg(short = 'u', long = "url", num_args = 1.., default_value = "http://localhost:8000")]
    pub urls: Vec<String>,

    /// The API the server speaks.
    #[arg(long = "endpoint-type", default_value = "chat")]
    pub endpoint_type: String,

    /// Path appended to the URL instead of the endpoint type's default path.
    #[arg(long = "endpoint", visible_alias = "custom-endpoint")]
    pub custom_endpoint: Option<String>,

    /// Ask for streamed responses (needed for TTFT and inter-token latency).
    #[arg(long)]
    pub streaming: bool,

    /// API key, sent as the endpoint expects it (`Authorization: Bearer <key>`, or
    /// `x-api-key` for messages). Never written to artifacts or logs.
    #[arg(long = "api-key", env = "AIPERF_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Extra header for every request: `Name:Value` pairs (comma separated) or a JSON object.
    #[arg(short = 'H', long = "header", num_args = 1..)]
    pub headers: Vec<String>,

    /// Extra fields merged into every request body: `key:value` pairs or a JSON object.
    #[arg(long = "extra-inputs", num_args = 1..)]
    pub extra_inputs: Vec<String>,

    /// Give up on a request after this many seconds (connect, send and whole response).
    #[arg(long = "request-timeout-seconds", default_value_t = 21_600.0)]
    pub request_timeout_seconds: f64,

    /// pooled: reuse keep-alive connections; never: a new connection for every request;
    /// sticky-user-sessions: one connection per conversation, closed after its last turn.
    #[arg(
        long = "connection-reuse-strategy",
        value_enum,
        default_value = "pooled"
    )]
    pub connection_reuse_strategy: ConnectionReuse,

    /// Before benchmarking, wait up to this many seconds for the server to serve the
    /// model (0: do not wait).
    #[arg(long = "wait-for-model-timeout", default_value_t = 0.0)]
    pub wait_for_model_timeout: f64,

    /// What "ready" means: the model list names the model, a one-token request
    /// succeeds, or both.
    #[arg(long = "wait-for-model-mode", value_enum, default_value = "inference")]
    pub wait_for_model_mode: WaitModeArg,

    /// Seconds between readiness probes.
    #[arg(long = "wait-for-model-interval", default_value_t = 5.0)]
    pub wait_for_model_interval: f64,

    /// A PEM file of CA certificates to trust for https:// URLs, besides the bundled and
    /// system roots.
    #[arg(long = "tls-ca-file", visible_alias = "ssl-ca-file")]
    pub tls_ca_file: Option<PathBuf>,

    /// Accept any server certificate (self-signed test servers). Never the default; a
    /// warning is printed. AIPERF_HTTP_SSL_VERIFY=false does the same.
    #[arg(long = "tls-insecure-skip-verify")]
    pub tls_insecure_skip_verify: bool,

    /// Offer HTTP/2 on https:// URLs (used when the server agrees); http:// stays HTTP/1.1.
    #[arg(long)]
    pub http2: bool,

    /// Read the sockets on the threads that send, not on two threads of their own (which
    /// streaming runs use by default). Those read each server write as it arrives,
    /// so TTFT and ITL keep the wire's times however busy the sending threads are; without
    /// it they gain the sending threads' delays under load (see docs/metrics.md, "Where
    /// stamps come from").
    #[arg(long = "no-socket-reader", conflicts_with = "socket_reader")]
    pub no_socket_reader: bool,

    /// Read the sockets on threads of their own in a non-streaming run too. Its
    /// responses' ends are stamped by the kernel either way; the threads read them as
    /// they arrive, at the cost of a hand-over between threads per read.
    #[arg(long = "socket-reader")]
    pub socket_reader: bool,

    /// The most one response body may hold, in MiB. A server that sends more (an endless
    /// stream, say) fails that request with ResponseTooLargeError instead of filling the
    /// client's memory.
    #[arg(long = "max-response-mib", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_response_mib: u64,

    /// Send `max_tokens` instead of `max_completion_tokens` on chat requests.
    #[arg(long = "use-legacy-max-tokens")]
    pub use_legacy_max_tokens: bool,

    /// Count tokens from the server's `usage` instead of the tokenizer (asks streaming
    /// servers to include usage).
    #[arg(long = "use-server-token-count")]
    pub use_server_token_count: bool,

    /// Ask a streaming chat server for cumulative usage on every chunk
    /// (`stream_options.continuous_usage_stats`; vLLM and TRT-LLM support it, OpenAI
    /// rejects it). Requires --use-server-token-count.
    #[arg(long = "per-chunk-usage")]
    pub per_chunk_usage: bool,

    /// Name of the header that carries each conversation's id (default X-Correlation-ID),
    /// e.g. X-Session-ID for a load balancer's session affinity.
    #[arg(long = "session-header", value_name = "NAME")]
    pub session_header: Option<String>,

    /// How requests are spread over several --url values: round-robin, the n-th request
    /// to URL n mod k (the only strategy, as in the Python AIPerf 0.13).
    #[arg(long = "url-strategy", value_enum, default_value = "round-robin")]
    pub url_strategy: UrlStrategyArg,

    /// The transport: http (the only one; chosen from the URL scheme anyway).
    #[arg(long = "transport", visible_alias = "transport-type", value_enum)]
    pub transport: Option<TransportArg>,

    /// For video_generation: download each finished video; the download's time counts in
    /// the request latency (its bytes are not kept). The poll interval of video jobs is
    /// AIPERF_HTTP_VIDEO_POLL_INTERVAL seconds (default 0.1).
    #[arg(long = "download-video-content")]
    pub download_video_content: bool,

    /// How request bodies are encoded: multipart-form-data for the endpoint types that
    /// send forms (audio_transcription, image_edit, video_generation; chosen for them
    /// anyway), application-json for every other. Checked, not converted: the other value
    /// is refused.
    #[arg(long = "request-content-type", value_enum)]
    pub request_content_type: Option<RequestContentTypeArg>,
}

/// `--url-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UrlStrategyArg {
    /// Request n goes to URL n mod k.
    #[value(name = "round-robin", alias = "round_robin")]
    RoundRobin,
}

/// `--transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    /// HTTP/1.1, or HTTP/2 with --http2 on https:// URLs.
    Http,
}

/// `--request-content-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RequestContentTypeArg {
    /// JSON bodies (every endpoint type but the uploads).
    #[value(name = "application-json", aliases = ["application_json", "application/json"])]
    ApplicationJson,
    /// Form bodies (audio_transcription, image_edit).
    #[value(name = "multipart-form-data", aliases = ["multipart_form_data", "multipart/form-data"])]
    MultipartFormData,
}

impl RequestContentTypeArg {
    pub(crate) fn to_config(self) -> RequestContentType {
        match self {
            RequestContentTypeArg::ApplicationJson => RequestContentType::ApplicationJson,
            RequestContentTypeArg::MultipartFormData => RequestContentType::MultipartFormData,
        }
    }
}

/// How connections are reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConnectionReuse {
    Pooled,
    Never,
    /// One connection per conversation, closed after its last turn.
    #[value(name = "sticky-user-sessions", alias = "sticky_user_sessions")]
    StickyUserSessions,
}

/// `--wait-for-model-mode`: what counts as ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WaitModeArg {
    /// `GET /v1/models` lists the model.
    Models,
    /// A one-token request to the benchmarked endpoint succeeds.
    Inference,
    /// Both.
    Both,
}

impl EndpointArgs {
    /// The wait `--wait-for-model-*` asks for, if any (checked before the run starts).
    pub(crate) fn readiness(&self) -> anyhow::Result<Option<Readiness>> {
        let timeout = self.wait_for_model_timeout;
        if timeout == 0.0 {
            return Ok(None);
        }
        if !(timeout.is_finite() && timeout > 0.0) {
            anyhow::bail!("--wait-for-model-timeout must be 0 or more seconds, got {timeout}");
        }
        let interval = self.wait_for_model_interval;
        if !(interval.is_finite() && interval > 0.0) {
            anyhow::bail!("--wait-for-model-interval must be greater than 0, got {interval}");
        }
        let mode = match self.wait_for_model_mode {
            WaitModeArg::Models => WaitMode::Models,
            WaitModeArg::Inference => WaitMode::Inference,
            WaitModeArg::Both => WaitMode::Both,
        };
        Ok(Some(Readiness::new(
            saturating_secs(timeout),
            saturating_secs(interval),
            mode,
        )?))
    }
}

/// What is written and shown.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub(crate) struct OutputArgs {
    /// Directory for artifacts. Default: artifacts/<model>-openai-<endpoint>-<load>.
    #[arg(long = "artifact-dir", visible_alias = "output-artifact-dir")]
    pub artifact_dir: Option<PathBuf>,

    /// Base name of the export files instead of profile_export.
    #[arg(long = "profile-export-prefix", visible_alias = "profile-export-file")]
    pub profile_export_prefix: Option<String>,

    /// summary (JSON and CSV), records (plus one JSONL line per request) or raw (plus
    /// profile_export_raw.jsonl: each request's payload, headers and responses as received,
    /// warmup included).
    #[arg(
        long = "export-level",
        visible_alias = "profile-export-level",
        value_enum,
        default_value = "records"
    )]
    pub export_level: ExportLevelArg,

    /// Also summarise every this-many seconds of the profiling phase on its own
    /// (profile_export_aiperf_timeslices.json and .csv).
    #[arg(long = "slice-duration")]
    pub slice_duration: Option<f64>,

    /// Write the text generated for each request to <artifact dir>/outputs.json, with its
    /// ids, times and main metrics.
    #[arg(long = "export-outputs-json")]
    pub export_outputs_json: bool,

    /// After the benchmark, draw its charts and report.html as `aiperf plot` does (into
    /// <artifact dir>/plots). A failure to plot is a warning unless --plot-required.
    #[arg(long = "auto-plot", overrides_with = "no_auto_plot")]
    pub auto_plot: bool,

    /// Do not plot after the benchmark (the default).
    #[arg(long = "no-auto-plot", overrides_with = "auto_plot")]
    pub no_auto_plot: bool,

    /// With --auto-plot, a failure to plot fails the command (exit status 1).
    #[arg(long = "plot-required")]
    pub plot_required: bool,

    /// Add each request's connection-level stamps (`trace_data`) to profile_export.jsonl.
    #[arg(long = "export-http-trace")]
    pub export_http_trace: bool,

    /// Print the HTTP trace metrics (http_req_*: connecting, sending, waiting, …) table.
    #[arg(long = "show-trace-timing")]
    pub show_trace_timing: bool,

    /// Live display. Default: dashboard when stdout is a terminal (simple with -v/-vv),
    /// none otherwise.
    #[arg(long = "ui-type", visible_alias = "ui", value_enum)]
    pub ui_type: Option<UiType>,

    /// Level of the console and of <artifact dir>/logs/aiperf.log. Default: INFO in the
    /// file, only warnings and errors on the console.
    #[arg(long = "log-level", value_enum, ignore_case = true)]
    pub log_level: Option<LogLevel>,

    /// Log at DEBUG (-v) or TRACE (-vv), on the console and in the log file.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Log at TRACE (same as -vv).
    #[arg(long = "extra-verbose")]
    pub extra_verbose: bool,
}

impl OutputArgs {
    /// The log level that `--log-level`, `-v` and `-vv` ask for: the most detailed one.
    pub(crate) fn effective_log_level(&self) -> LogLevel {
        let chosen = self.log_level.unwrap_or(LogLevel::Info);
        let from_flags = match (self.verbose, self.extra_verbose) {
            (_, true) | (2.., _) => LogLevel::Trace,
            (1, _) => LogLevel::Debug,
            _ => return chosen,
        };
        if from_flags.tracing_level() > chosen.tracing_level() {
            from_flags
        } else {
            chosen
        }
    }

    /// Whether the console logs at [`Self::effective_log_level`], as the Python AIPerf
    /// 0.13 does once `--log-level`, `-v` or `-vv` is given. Without them the console
    /// keeps to warnings and errors, so a plain run prints only its results.
    pub(crate) fn console_follows_log_level(&self) -> bool {
        self.log_level.is_some() || self.is_verbose()
    }

    /// Whether `-v`, `-vv` or `--extra-verbose` was given.
    pub(crate) fn is_verbose(&self) -> bool {
        self.verbose > 0 || self.extra_verbose
    }
}

/// Log levels, with the Python AIPerf's names (NOTICE and SUCCESS log as INFO,
/// CRITICAL as ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub(crate) enum LogLevel {
    Trace,
    Debug,
    Info,
    Notice,
    Warning,
    Success,
    Error,
    Critical,
}

impl LogLevel {
    /// The `tracing` level this maps to.
    pub(crate) fn tracing_level(self) -> tracing::Level {
        match self {
            Self::Trace => tracing::Level::TRACE,
            Self::Debug => tracing::Level::DEBUG,
            Self::Info | Self::Notice | Self::Success => tracing::Level::INFO,
            Self::Warning => tracing::Level::WARN,
            Self::Error | Self::Critical => tracing::Level::ERROR,
        }
    }
}

/// Export levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportLevelArg {
    Summary,
    Records,
    Raw,
}

/// Live displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UiType {
    /// No live display.
    None,
    /// A progress bar per phase with rate and errors (on stderr).
    Simple,
    /// A full-screen view of progress, rates, latencies and errors (on stdout).
    Dashboard,
}

/// Rewrites `--some_flag` as `--some-flag` (the Python AIPerf accepts both spellings).
pub(crate) fn normalise_flag_spelling(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|arg| match arg.strip_prefix("--") {
            Some(rest) if !rest.is_empty() => {
                let (name, value) = match rest.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (rest, None),
                };
                let name = name.replace('_', "-");
                match value {
                    Some(value) => format!("--{name}={value}"),
                    None => format!("--{name}"),
                }
            }
            _ => arg,
        })
        .collect()
}

/// `aiperf analyze-trace`.
#[derive(Debug, Args)]
pub(crate) struct AnalyzeTraceArgs {
    /// Mooncake-style JSONL trace (`input_length`, `output_length`, optional `hash_ids`),
    /// given here or as --input-file.
    #[arg(value_name = "INPUT_FILE", required_unless_present = "input_file_flag")]
    pub input_file: Option<PathBuf>,

    /// The trace, as the Python AIPerf's documentation spells it.
    #[arg(
        long = "input-file",
        value_name = "INPUT_FILE",
        conflicts_with = "input_file"
    )]
    pub input_file_flag: Option<PathBuf>,

    /// KV-cache block size in tokens that the trace's `hash_ids` were made with.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    pub block_size: u64,

    /// Also write the report as JSON to this path (parent folders are created).
    #[arg(long, value_name = "PATH")]
    pub output_file: Option<PathBuf>,
}

impl AnalyzeTraceArgs {
    /// The trace, positional or `--input-file` (clap requires one of them).
    pub(crate) fn input_file(&self) -> anyhow::Result<&std::path::Path> {
        self.input_file
            .as_deref()
            .or(self.input_file_flag.as_deref())
            .ok_or_else(|| anyhow::anyhow!("no trace given: pass INPUT_FILE or --input-file"))
    }
}

/// The workloads `aiperf synthesize` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SynthesizeTarget {
    /// Multi-turn agentic coding sessions with layered shared prefixes (mooncake JSONL).
    AgenticCode,
    /// A mooncake trace (--input-file) reshaped by the --synthesis-* options.
    Trace,
}

/// `aiperf synthesize`.
#[derive(Debug, Args)]
pub(crate) struct SynthesizeArgs {
    /// The workload to synthesize.
    #[arg(value_enum, value_name = "TARGET")]
    pub target: SynthesizeTarget,

    /// Number of sessions to generate (agentic-code).
    #[arg(long, default_value_t = 1000, value_parser = count_at_least_one::<usize>)]
    pub num_sessions: usize,

    /// Parent directory for the output (agentic-code: a new run directory in it; trace:
    /// `<input name>.synthesized.jsonl` in it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output: PathBuf,

    /// A bundled config name (`default`), a distribution config JSON, or the
    /// manifest.json of an earlier run (agentic-code).
    #[arg(long, value_name = "NAME|PATH")]
    pub config: Option<String>,

    /// Random seed: the same seed and options give the same file.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// agentic-code: the context limit in tokens; trace: skip requests whose input
    /// length is over this.
    #[arg(long, value_parser = count_at_least_one::<u64>)]
    pub max_isl: Option<u64>,

    /// Cap output lengths to this.
    #[arg(long, value_parser = count_at_least_one::<u32>)]
    pub max_osl: Option<u32>,

    /// The mooncake trace to re-synthesize (trace).
    #[arg(long, value_name = "PATH", required_if_eq("target", "trace"))]
    pub input_file: Option<PathBuf>,

    /// Tokens per hash_ids block of the trace (trace).
    #[arg(long, default_value_t = 512, value_parser = count_at_least_one::<u32>)]
    pub isl_block_size: u32,

    /// Divide timestamps by this (trace).
    #[arg(long = "synthesis-speedup-ratio", default_value_t = 1.0)]
    pub speedup_ratio: f64,

    /// Scale the shared-prefix blocks of each request (trace).
    #[arg(long = "synthesis-prefix-len-multiplier", default_value_t = 1.0)]
    pub prefix_len_multiplier: f64,

    /// Spread requests over this many independent prefix trees (trace).
    #[arg(long = "synthesis-prefix-root-multiplier", default_value_t = 1,
          value_parser = count_at_least_one::<u32>)]
    pub prefix_root_multiplier: u32,

    /// Scale the unique part of each prompt (trace).
    #[arg(long = "synthesis-prompt-len-multiplier", default_value_t = 1.0)]
    pub prompt_len_multiplier: f64,

    /// Scale output lengths (trace).
    #[arg(long = "synthesis-output-len-multiplier", default_value_t = 1.0)]
    pub output_len_multiplier: f64,
}

/// `aiperf compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// Artifact directory of the reference run (holds profile_export_aiperf.json).
    #[arg(value_name = "BASELINE_DIR")]
    pub baseline: PathBuf,

    /// Artifact directory of the run to judge against the baseline.
    #[arg(value_name = "CANDIDATE_DIR")]
    pub candidate: PathBuf,

    /// Folder for compare.json and compare.md (created if missing; default: CANDIDATE_DIR).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Significance level of the tests (0 < alpha < 1).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,

    /// Exit with status 4 when the candidate is worse by more than PCT percent on STAT
    /// (avg, p50, p90, p99) of METRIC and the difference is significant, e.g.
    /// "time_to_first_token:p99:10". Repeatable, or several separated by spaces.
    /// Significance: Welch's t for avg, a bootstrap CI for percentiles (Mann-Whitney when a
    /// run has too few requests for it, e.g. < 500 for p99); without per-request records
    /// the percentage alone decides.
    #[arg(long, value_name = "METRIC:STAT:PCT")]
    pub fail_on_regression: Vec<String>,

    /// Seed of the bootstrap resampling (same seed, same intervals).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Number of bootstrap resamples for the percentile confidence intervals.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub bootstrap_resamples: u32,
}

/// `aiperf plot`.
#[derive(Debug, Args)]
pub(crate) struct PlotArgs {
    /// Run artifact directories. One directory holding profile_export.jsonl (or
    /// profile_export_aiperf.json) plots that run; a directory whose subfolders hold runs, or
    /// several directories, compares the runs.
    #[arg(value_name = "PATHS", default_value = "./artifacts")]
    pub paths: Vec<PathBuf>,

    /// The run directories, as the Python AIPerf's documentation spells them (`--paths D…`);
    /// they replace the positional ones.
    #[arg(long = "paths", value_name = "PATHS", num_args = 1..)]
    pub paths_flag: Vec<PathBuf>,

    /// Folder for the charts and report.html (created if missing; default: FIRST_PATH/plots).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Colour scheme of the charts and the report.
    #[arg(long, value_enum, default_value_t = PlotTheme::Light)]
    pub theme: PlotTheme,
}

impl PlotArgs {
    /// The run directories: `--paths`, else the positional ones (default ./artifacts).
    pub(crate) fn run_paths(&self) -> &[PathBuf] {
        if self.paths_flag.is_empty() {
            &self.paths
        } else {
            &self.paths_flag
        }
    }
}

/// `aiperf plot --theme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlotTheme {
    /// Dark text on white.
    Light,
    /// Light text on a dark background.
    Dark,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> ProfileArgs {
        let argv = normalise_flag_spelling(
            ["aiperf", "profile"]
                .iter()
                .chain(args)
                .map(std::string::ToString::to_string),
        );
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Profile(args) => *args,
            other => panic!("expected the profile subcommand, got {other:?}"),
        }
    }

    #[test]
    fn models_split_on_commas_and_repeat() {
        let args = parse(&["-m", "a,b", "--model", "c"]);
        assert_eq!(args.endpoint.models, ["a", "b", "c"]);
    }

    #[test]
    fn aliases_and_underscores_work() {
        let args = parse(&[
            "--model-names",
            "m",
            "--num_requests",
            "7",
            "--synthetic-input-tokens-mean",
            "64",
            "--output_tokens_mean=32",
            "--request-rate-mode",
            "constant",
            "--request-rate",
            "5",
        ]);
        assert_eq!(args.load.request_count, Some(7));
        assert_eq!(args.input.isl, 64);
        assert_eq!(args.input.osl, Some(32));
        assert_eq!(
            args.load.arrival_pattern,
            Some(load::ArrivalPatternArg::Constant)
        );
    }

    #[test]
    fn the_python_docs_subcommand_spellings_parse() {
        let Command::AnalyzeTrace(args) =
            Cli::try_parse_from(["aiperf", "analyze-trace", "--input-file", "t.jsonl"])
                .unwrap()
                .command
        else {
            panic!("expected analyze-trace");
        };
        assert_eq!(args.input_file().unwrap(), std::path::Path::new("t.jsonl"));
        assert!(Cli::try_parse_from(["aiperf", "analyze-trace"]).is_err());
        let Command::Plot(args) = Cli::try_parse_from(["aiperf", "plot", "--paths", "a", "b"])
            .unwrap()
            .command
        else {
            panic!("expected plot");
        };
        assert_eq!(args.run_paths(), [PathBuf::from("a"), PathBuf::from("b")]);
        let Command::Plot(args) = Cli::try_parse_from(["aiperf", "plot"]).unwrap().command else {
            panic!("expected plot");
        };
        assert_eq!(args.run_paths(), [PathBuf::from("./artifacts")]);
    }

    #[test]
    fn the_log_level_reaches_the_console_only_when_chosen() {
        let quiet = parse(&["-m", "m"]);
        assert_eq!(quiet.output.effective_log_level(), LogLevel::Info);
        assert!(!quiet.output.console_follows_log_level());
        let chosen = parse(&["-m", "m", "--log-level", "debug"]);
        assert_eq!(chosen.output.effective_log_level(), LogLevel::Debug);
        assert!(chosen.output.console_follows_log_level());
        let verbose = parse(&["-m", "m", "-vv"]);
        assert_eq!(verbose.output.effective_log_level(), LogLevel::Trace);
        assert!(verbose.output.console_follows_log_level());
    }

    #[test]
    fn values_after_a_flag_are_not_rewritten() {
        let argv = normalise_flag_spelling(["--extra_inputs", "max_tokens:5"].map(String::from));
        assert_eq!(argv, ["--extra-inputs", "max_tokens:5"]);
    }
}
