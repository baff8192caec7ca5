//! The `aiperf-mock-server` binary: flags (with `MOCK_SERVER_*` environment fallbacks) mapped
//! onto [`aiperf_mock_server::MockConfig`].

// The binary is where results and errors reach the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use aiperf_mock_server::{
    AccuracyConfig, DcgmConfig, FaultConfig, GpuModel, MockConfig, MockServer, Quirks,
};
use clap::Parser;

/// OpenAI-compatible mock inference server with exact timing and fault injection.
#[derive(Debug, Parser)]
#[command(name = "aiperf-mock-server", version, about)]
struct Args {
    /// Interface to listen on.
    #[arg(long, env = "MOCK_SERVER_HOST", default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0 = any free port; the bound address is printed).
    #[arg(short, long, env = "MOCK_SERVER_PORT", default_value_t = 8000)]
    port: u16,
    /// Base time to first token, ms.
    #[arg(short = 't', long, env = "MOCK_SERVER_TTFT", default_value_t = 20.0)]
    ttft: f64,
    /// Base inter-token latency, ms.
    #[arg(long, env = "MOCK_SERVER_ITL", default_value_t = 5.0)]
    itl: f64,
    /// TTFT += k × prompt tokens (ms).
    #[arg(long, env = "MOCK_SERVER_TTFT_PER_ISL_TOKEN_MS", default_value_t = 0.0)]
    ttft_per_isl_token_ms: f64,
    /// TTFT += k × (requests in flight at arrival)² (ms).
    #[arg(
        long,
        env = "MOCK_SERVER_TTFT_CONCURRENCY_QUAD_MS",
        default_value_t = 0.0
    )]
    ttft_concurrency_quad_ms: f64,
    /// ITL += k × requested max tokens (ms).
    #[arg(long, env = "MOCK_SERVER_ITL_PER_OSL_TOKEN_MS", default_value_t = 0.0)]
    itl_per_osl_token_ms: f64,
    /// ITL += k × requests in flight at arrival (ms).
    #[arg(
        long,
        env = "MOCK_SERVER_ITL_CONCURRENCY_LIN_MS",
        default_value_t = 0.0
    )]
    itl_concurrency_lin_ms: f64,
    /// Log-normal TTFT jitter, coefficient of variation.
    #[arg(long, env = "MOCK_SERVER_TTFT_JITTER_CV", default_value_t = 0.0)]
    ttft_jitter_cv: f64,
    /// Log-normal ITL jitter (resampled per token), coefficient of variation.
    #[arg(long, env = "MOCK_SERVER_ITL_JITTER_CV", default_value_t = 0.0)]
    itl_jitter_cv: f64,
    /// Zero latency: never sleep (for integration tests and throughput benchmarks).
    #[arg(long, env = "MOCK_SERVER_FAST")]
    fast: bool,
    /// Output tokens per SSE event.
    #[arg(long, env = "MOCK_SERVER_TOKENS_PER_EVENT", default_value_t = 1)]
    tokens_per_event: u32,
    /// Emit reasoning tokens for every model (not only qwen / gpt-oss / deepseek-r1 names).
    #[arg(long, env = "MOCK_SERVER_REASONING")]
    reasoning: bool,
    /// Model id reported by /v1/models and used when a request names none.
    #[arg(long, env = "MOCK_SERVER_DEFAULT_MODEL", default_value = "mock-model")]
    default_model: String,
    /// tokenizer.json used to count prompt tokens (default: whitespace-separated words).
    #[arg(long, env = "MOCK_SERVER_TOKENIZER")]
    tokenizer: Option<PathBuf>,
    /// Seed for fault decisions and jitter (default: random, logged at start).
    #[arg(long, env = "MOCK_SERVER_RANDOM_SEED")]
    random_seed: Option<u64>,
    /// Require `Authorization: Bearer KEY` on inference routes.
    #[arg(long, env = "MOCK_SERVER_API_KEY")]
    api_key: Option<String>,
    /// Append every inference request (auth headers masked) as a JSON line to FILE.
    #[arg(long, env = "MOCK_SERVER_RECORD_REQUESTS", value_name = "FILE")]
    record_requests: Option<PathBuf>,
    /// Behave like a real server: llama-server (--close-after-response) or
    /// transformers-serve (--string-prompt-only --no-done --usage-in-finish-chunk
    /// --detail-errors). Adds to the single quirk flags below.
    #[arg(long, env = "MOCK_SERVER_MIMIC", value_name = "SERVER")]
    mimic: Option<Mimic>,
    /// Answer one request per connection while advertising `Keep-Alive: timeout=5,
    /// max=100`, then close it, as llama.cpp's llama-server does; a request that arrives on
    /// the closing connection gets no answer.
    #[arg(long, env = "MOCK_SERVER_CLOSE_AFTER_RESPONSE")]
    close_after_response: bool,
    /// Answer a completions prompt that is not a string with 400 "prompt must be a string."
    #[arg(long, env = "MOCK_SERVER_STRING_PROMPT_ONLY")]
    string_prompt_only: bool,
    /// End streams without `data: [DONE]`.
    #[arg(long, env = "MOCK_SERVER_NO_DONE")]
    no_done: bool,
    /// Always put usage into the finish chunk, whatever stream_options asks.
    #[arg(long, env = "MOCK_SERVER_USAGE_IN_FINISH_CHUNK")]
    usage_in_finish_chunk: bool,
    /// Send `: ping - <time>` SSE comments (CRLF) when a stream opens and before each event.
    #[arg(long, env = "MOCK_SERVER_PING_COMMENTS")]
    ping_comments: bool,
    /// Error bodies as FastAPI's `{"detail": "..."}`.
    #[arg(long, env = "MOCK_SERVER_DETAIL_ERRORS")]
    detail_errors: bool,
    /// % of inference requests answered with HTTP 500.
    #[arg(long, env = "MOCK_SERVER_ERROR_RATE", default_value_t = 0.0)]
    error_rate: f64,
    /// % answered with HTTP 429.
    #[arg(long, env = "MOCK_SERVER_RATE_LIMIT_RATE", default_value_t = 0.0)]
    rate_limit_rate: f64,
    /// % answered with HTTP 503.
    #[arg(long, env = "MOCK_SERVER_UNAVAILABLE_RATE", default_value_t = 0.0)]
    unavailable_rate: f64,
    /// % whose connection is closed mid-stream.
    #[arg(long, env = "MOCK_SERVER_DROP_RATE", default_value_t = 0.0)]
    drop_rate: f64,
    /// Mid-stream faults (drop, malformed, SSE error, stall) happen after this many tokens.
    #[arg(
        long,
        alias = "fault-after-tokens",
        env = "MOCK_SERVER_DROP_AFTER_TOKENS",
        default_value_t = 5
    )]
    drop_after_tokens: u32,
    /// % of streams with one SSE event that is not valid JSON.
    #[arg(long, env = "MOCK_SERVER_MALFORMED_CHUNK_RATE", default_value_t = 0.0)]
    malformed_chunk_rate: f64,
    /// % of streams ended by an `event: error` SSE event.
    #[arg(long, env = "MOCK_SERVER_SSE_ERROR_RATE", default_value_t = 0.0)]
    sse_error_rate: f64,
    /// % of streams that stall (stop sending without closing) mid-stream.
    #[arg(long, env = "MOCK_SERVER_STALL_RATE", default_value_t = 0.0)]
    stall_rate: f64,
    /// Stall length, ms.
    #[arg(long, env = "MOCK_SERVER_STALL_MS", default_value_t = 1000.0)]
    stall_ms: f64,
    /// % of responses whose head is delayed.
    #[arg(long, env = "MOCK_SERVER_SLOW_HEADERS_RATE", default_value_t = 0.0)]
    slow_headers_rate: f64,
    /// Head delay, ms.
    #[arg(long, env = "MOCK_SERVER_SLOW_HEADERS_MS", default_value_t = 1000.0)]
    slow_headers_ms: f64,
    /// % of responses padded to be oversized (an SSE comment, or whitespace before JSON).
    #[arg(long, env = "MOCK_SERVER_OVERSIZED_RATE", default_value_t = 0.0)]
    oversized_rate: f64,
    /// Padding of an oversized response, bytes.
    #[arg(long, env = "MOCK_SERVER_OVERSIZED_BYTES", default_value_t = 2 * 1024 * 1024)]
    oversized_bytes: u64,
    /// Number of fake DCGM exporters (/dcgm1/metrics … /dcgmN/metrics).
    #[arg(long, env = "MOCK_SERVER_DCGM_INSTANCES", default_value_t = 2)]
    dcgm_instances: u32,
    /// GPUs per fake DCGM exporter (1–8).
    #[arg(long, env = "MOCK_SERVER_DCGM_NUM_GPUS", default_value_t = 2)]
    dcgm_num_gpus: u32,
    /// GPU model: rtx6000, a100, h100, h100-sxm, h200, b200, gb200.
    #[arg(long, env = "MOCK_SERVER_DCGM_GPU_NAME", default_value = "h200")]
    dcgm_gpu_name: GpuModel,
    /// `Hostname` label of the fake GPUs.
    #[arg(long, env = "MOCK_SERVER_DCGM_HOSTNAME", default_value = "localhost")]
    dcgm_hostname: String,
    /// Served tokens/s at which the fake GPUs reach 63 % load.
    #[arg(
        long,
        env = "MOCK_SERVER_DCGM_SATURATION_TPS",
        default_value_t = 1000.0
    )]
    dcgm_saturation_tps: f64,
    /// Smoothing window of the fake GPU load, seconds.
    #[arg(long, env = "MOCK_SERVER_DCGM_WINDOW_SEC", default_value_t = 1.0)]
    dcgm_window_sec: f64,
    /// Embeddings base latency, ms.
    #[arg(
        long,
        env = "MOCK_SERVER_EMBEDDING_BASE_LATENCY",
        default_value_t = 10.0
    )]
    embedding_base_latency: f64,
    /// Embeddings latency per input, ms.
    #[arg(
        long,
        env = "MOCK_SERVER_EMBEDDING_PER_INPUT_LATENCY",
        default_value_t = 2.0
    )]
    embedding_per_input_latency: f64,
    /// Rankings base latency, ms.
    #[arg(long, env = "MOCK_SERVER_RANKING_BASE_LATENCY", default_value_t = 10.0)]
    ranking_base_latency: f64,
    /// Rankings latency per passage, ms.
    #[arg(
        long,
        env = "MOCK_SERVER_RANKING_PER_PASSAGE_LATENCY",
        default_value_t = 1.0
    )]
    ranking_per_passage_latency: f64,
    /// Video jobs (`/v1/videos`): ms from creation to completion.
    #[arg(long, env = "MOCK_SERVER_VIDEO_JOB_MS", default_value_t = 300.0)]
    video_job_ms: f64,
    /// % of video jobs that end `failed` (seeded).
    #[arg(long, env = "MOCK_SERVER_VIDEO_FAILURE_RATE", default_value_t = 0.0)]
    video_failure_rate: f64,
    /// Accuracy mode: answer each benchmark question right with this probability (0–1,
    /// seeded per question; default 1 when another --accuracy-* flag is given).
    #[arg(long, env = "MOCK_SERVER_ACCURACY_PROBABILITY")]
    accuracy_probability: Option<f64>,
    /// Accuracy mode: JSONL of {"question": TEXT, "answer": A} giving the right answer of
    /// the prompt that contains TEXT (an `x-mock-answer` request header wins over it).
    #[arg(long, env = "MOCK_SERVER_ACCURACY_ANSWERS", value_name = "FILE")]
    accuracy_answers: Option<PathBuf>,
    /// Accuracy mode: the reply, {answer} standing for the answer given (e.g. "#### {answer}").
    #[arg(long, env = "MOCK_SERVER_ACCURACY_REPLY_TEMPLATE")]
    accuracy_reply_template: Option<String>,
    /// Log filter (error, warn, info, debug, trace, or a tracing filter expression).
    #[arg(long, env = "MOCK_SERVER_LOG_LEVEL", default_value = "info")]
    log_level: String,
}

/// A real server whose behaviours `--mimic` switches on.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Mimic {
    LlamaServer,
    TransformersServe,
}

impl Args {
    fn quirks(&self) -> Quirks {
        let preset = match self.mimic {
            Some(Mimic::LlamaServer) => Quirks::llama_server(),
            Some(Mimic::TransformersServe) => Quirks::transformers_serve(),
            None => Quirks::default(),
        };
        Quirks {
            close_after_response: preset.close_after_response || self.close_after_response,
            string_prompt_only: preset.string_prompt_only || self.string_prompt_only,
            no_done: preset.no_done || self.no_done,
            usage_in_finish_chunk: preset.usage_in_finish_chunk || self.usage_in_finish_chunk,
            ping_comments: preset.ping_comments || self.ping_comments,
            detail_errors: preset.detail_errors || self.detail_errors,
        }
    }

    /// Accuracy mode, on when any `--accuracy-*` flag is given.
    fn accuracy(&mut self) -> Option<AccuracyConfig> {
        if self.accuracy_probability.is_none()
            && self.accuracy_answers.is_none()
            && self.accuracy_reply_template.is_none()
        {
            return None;
        }
        let default = AccuracyConfig::default();
        Some(AccuracyConfig {
            correct_probability: self
                .accuracy_probability
                .unwrap_or(default.correct_probability),
            answers_file: self.accuracy_answers.take(),
            reply_template: self
                .accuracy_reply_template
                .take()
                .unwrap_or(default.reply_template),
        })
    }

    fn into_config(mut self) -> MockConfig {
        let quirks = self.quirks();
        let accuracy = self.accuracy();
        MockConfig {
            host: self.host,
            port: self.port,
            ttft_ms: self.ttft,
            itl_ms: self.itl,
            ttft_per_isl_token_ms: self.ttft_per_isl_token_ms,
            ttft_concurrency_quad_ms: self.ttft_concurrency_quad_ms,
            itl_per_osl_token_ms: self.itl_per_osl_token_ms,
            itl_concurrency_lin_ms: self.itl_concurrency_lin_ms,
            ttft_jitter_cv: self.ttft_jitter_cv,
            itl_jitter_cv: self.itl_jitter_cv,
            fast: self.fast,
            tokens_per_event: self.tokens_per_event,
            reasoning: self.reasoning,
            default_model: self.default_model,
            tokenizer: self.tokenizer,
            random_seed: self.random_seed,
            api_key: self.api_key,
            record_requests: self.record_requests,
            quirks,
            faults: FaultConfig {
                error_rate: self.error_rate,
                rate_limit_rate: self.rate_limit_rate,
                unavailable_rate: self.unavailable_rate,
                drop_rate: self.drop_rate,
                drop_after_tokens: self.drop_after_tokens,
                malformed_chunk_rate: self.malformed_chunk_rate,
                sse_error_rate: self.sse_error_rate,
                stall_rate: self.stall_rate,
                stall_ms: self.stall_ms,
                slow_headers_rate: self.slow_headers_rate,
                slow_headers_ms: self.slow_headers_ms,
                oversized_rate: self.oversized_rate,
                oversized_bytes: self.oversized_bytes,
            },
            dcgm: DcgmConfig {
                instances: self.dcgm_instances,
                num_gpus: self.dcgm_num_gpus,
                gpu: self.dcgm_gpu_name,
                hostname: self.dcgm_hostname,
                saturation_tps: self.dcgm_saturation_tps,
                window_sec: self.dcgm_window_sec,
            },
            embedding_base_latency_ms: self.embedding_base_latency,
            embedding_per_input_latency_ms: self.embedding_per_input_latency,
            ranking_base_latency_ms: self.ranking_base_latency,
            ranking_per_passage_latency_ms: self.ranking_per_passage_latency,
            video_job_ms: self.video_job_ms,
            video_failure_rate: self.video_failure_rate,
            accuracy,
        }
    }
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args.into_config()))
}

async fn run(config: MockConfig) -> std::process::ExitCode {
    let server = match MockServer::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("aiperf-mock-server listening on {}", server.url());
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("error: cannot wait for Ctrl-C: {e}");
    }
    tracing::info!("shutting down");
    server.shutdown().await;
    std::process::ExitCode::SUCCESS
}
