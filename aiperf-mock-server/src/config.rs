//! Configuration of the mock server: every option the binary has, as plain public fields.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::accuracy::AccuracyConfig;
use crate::error::MockError;

/// Everything the mock server can be told.
///
/// Build one with [`MockConfig::default()`] (realistic latencies, no faults) or
/// [`MockConfig::fast()`] (no latency at all) and adjust the public fields with struct update
/// syntax:
///
/// ```
/// use aiperf_mock_server::MockConfig;
/// let cfg = MockConfig { ttft_ms: 50.0, itl_ms: 10.0, ..MockConfig::default() };
/// assert_eq!(cfg.port, 0);
/// ```
///
/// Note: the library default port is `0` (the OS picks a free port, so parallel tests never
/// collide); the binary's `--port` defaults to 8000.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// Interface to bind (default `127.0.0.1`).
    pub host: String,
    /// TCP port; `0` lets the OS pick one (read it back with `MockServer::addr`).
    pub port: u16,
    /// Base time to first token, milliseconds (default 20).
    pub ttft_ms: f64,
    /// Base inter-token latency, milliseconds (default 5).
    pub itl_ms: f64,
    /// TTFT grows by this many ms per prompt token.
    pub ttft_per_isl_token_ms: f64,
    /// TTFT grows by this many ms × (requests already in flight at arrival)².
    pub ttft_concurrency_quad_ms: f64,
    /// ITL grows by this many ms per requested output token (the max-tokens budget).
    pub itl_per_osl_token_ms: f64,
    /// ITL grows by this many ms per request already in flight at arrival.
    pub itl_concurrency_lin_ms: f64,
    /// Coefficient of variation of the log-normal multiplicative TTFT jitter (0 = none).
    pub ttft_jitter_cv: f64,
    /// Coefficient of variation of the log-normal multiplicative ITL jitter, resampled per token.
    pub itl_jitter_cv: f64,
    /// Zero latency everywhere: the server never sleeps (fault stalls and slow headers excepted).
    pub fast: bool,
    /// Output tokens carried by each SSE event (default 1).
    pub tokens_per_event: u32,
    /// Emit reasoning tokens for every model, not only reasoning model names.
    pub reasoning: bool,
    /// Model id reported by `/v1/models` and used when a request names none.
    pub default_model: String,
    /// A Hugging Face `tokenizer.json` used to count prompt tokens; `None` counts words.
    pub tokenizer: Option<PathBuf>,
    /// Seed for fault decisions and jitter; `None` picks a random seed at start (logged).
    pub random_seed: Option<u64>,
    /// When set, inference routes require `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Append every inference request (headers masked) as one JSON line to this file.
    pub record_requests: Option<PathBuf>,
    /// Behaviours of real servers that a client must cope with.
    pub quirks: Quirks,
    /// Fault injection rates.
    pub faults: FaultConfig,
    /// The fake DCGM exporters.
    pub dcgm: DcgmConfig,
    /// Embeddings: base latency, ms (default 10).
    pub embedding_base_latency_ms: f64,
    /// Embeddings: extra latency per input, ms (default 2).
    pub embedding_per_input_latency_ms: f64,
    /// Rankings: base latency, ms (default 10).
    pub ranking_base_latency_ms: f64,
    /// Rankings: extra latency per passage, ms (default 1).
    pub ranking_per_passage_latency_ms: f64,
    /// Video jobs: how long one takes from creation to `completed` (or `failed`), ms
    /// (default 300; 0 with `fast`). It is `queued` for the first tenth of that.
    pub video_job_ms: f64,
    /// Video jobs: % that end `failed`, decided by the seed and the job's sequence number.
    pub video_failure_rate: f64,
    /// Accuracy mode: chat and completions replies answer benchmark questions right with a
    /// seeded probability (`None`: off, replies are corpus text).
    pub accuracy: Option<AccuracyConfig>,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_string(),
            port: 0,
            ttft_ms: 20.0,
            itl_ms: 5.0,
            ttft_per_isl_token_ms: 0.0,
            ttft_concurrency_quad_ms: 0.0,
            itl_per_osl_token_ms: 0.0,
            itl_concurrency_lin_ms: 0.0,
            ttft_jitter_cv: 0.0,
            itl_jitter_cv: 0.0,
            fast: false,
            tokens_per_event: 1,
            reasoning: false,
            default_model: "mock-model".to_string(),
            tokenizer: None,
            random_seed: None,
            api_key: None,
            record_requests: None,
            quirks: Quirks::default(),
            faults: FaultConfig::default(),
            dcgm: DcgmConfig::default(),
            embedding_base_latency_ms: 10.0,
            embedding_per_input_latency_ms: 2.0,
            ranking_base_latency_ms: 10.0,
            ranking_per_passage_latency_ms: 1.0,
            video_job_ms: 300.0,
            video_failure_rate: 0.0,
            accuracy: None,
        }
    }
}

impl MockConfig {
    /// The default configuration with zero latency (`fast = true`) on an OS-chosen port:
    /// what integration tests want.
    pub fn fast() -> Self {
        Self {
            fast: true,
            ..Self::default()
        }
    }

    /// The default configuration with the given TTFT and ITL in milliseconds.
    pub fn with_timing(ttft_ms: f64, itl_ms: f64) -> Self {
        Self {
            ttft_ms,
            itl_ms,
            ..Self::default()
        }
    }

    /// Check every value is in range; [`crate::MockServer::start`] calls this first.
    pub fn validate(&self) -> Result<(), MockError> {
        let non_negative = [
            ("ttft", self.ttft_ms),
            ("itl", self.itl_ms),
            ("ttft-per-isl-token-ms", self.ttft_per_isl_token_ms),
            ("ttft-concurrency-quad-ms", self.ttft_concurrency_quad_ms),
            ("itl-per-osl-token-ms", self.itl_per_osl_token_ms),
            ("itl-concurrency-lin-ms", self.itl_concurrency_lin_ms),
            ("ttft-jitter-cv", self.ttft_jitter_cv),
            ("itl-jitter-cv", self.itl_jitter_cv),
            ("stall-ms", self.faults.stall_ms),
            ("slow-headers-ms", self.faults.slow_headers_ms),
            ("embedding-base-latency", self.embedding_base_latency_ms),
            (
                "embedding-per-input-latency",
                self.embedding_per_input_latency_ms,
            ),
            ("ranking-base-latency", self.ranking_base_latency_ms),
            (
                "ranking-per-passage-latency",
                self.ranking_per_passage_latency_ms,
            ),
            ("dcgm-saturation-tps", self.dcgm.saturation_tps),
            ("video-job-ms", self.video_job_ms),
        ];
        for (name, v) in non_negative {
            if !v.is_finite() || v < 0.0 {
                return Err(MockError::InvalidConfig(format!(
                    "--{name} must be a finite number >= 0, got {v}"
                )));
            }
        }
        if self.faults.oversized_bytes > MAX_OVERSIZED_BYTES {
            return Err(MockError::InvalidConfig(format!(
                "--oversized-bytes must be at most {MAX_OVERSIZED_BYTES}, got {}",
                self.faults.oversized_bytes
            )));
        }
        let video_failure = ("video-failure-rate", self.video_failure_rate);
        for (name, v) in self.faults.rates().into_iter().chain([video_failure]) {
            if !v.is_finite() || !(0.0..=100.0).contains(&v) {
                return Err(MockError::InvalidConfig(format!(
                    "--{name} is a percentage and must be within 0..=100, got {v}"
                )));
            }
        }
        if self.tokens_per_event == 0 {
            return Err(MockError::InvalidConfig(
                "--tokens-per-event must be at least 1".into(),
            ));
        }
        if !(1..=8).contains(&self.dcgm.num_gpus) {
            return Err(MockError::InvalidConfig(format!(
                "--dcgm-num-gpus must be within 1..=8, got {}",
                self.dcgm.num_gpus
            )));
        }
        if !(1..=16).contains(&self.dcgm.instances) {
            return Err(MockError::InvalidConfig(format!(
                "--dcgm-instances must be within 1..=16, got {}",
                self.dcgm.instances
            )));
        }
        if let Some(accuracy) = &self.accuracy {
            accuracy.validate()?;
        }
        if self.default_model.is_empty() {
            return Err(MockError::InvalidConfig(
                "--default-model must not be empty".into(),
            ));
        }
        Ok(())
    }
}

/// Behaviours of real OpenAI-compatible servers, off by default, so tests can hold a
/// client to them without the servers (`../shared/realservers` describes where each was
/// seen). They are not faults: every request is still answered correctly.
///
/// ```
/// use aiperf_mock_server::{MockConfig, Quirks};
/// // What Hugging Face `transformers serve` does.
/// let cfg = MockConfig { quirks: Quirks::transformers_serve(), ..MockConfig::fast() };
/// assert!(cfg.quirks.no_done && !cfg.quirks.close_after_response);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Answer one request per connection, advertising `Keep-Alive: timeout=5, max=100`,
    /// then close it; a request that arrives on it in the meantime gets no answer
    /// (llama.cpp's `llama-server` behaves this way). Such connections do not wait for
    /// the shutdown grace period.
    pub close_after_response: bool,
    /// Answer a completions `prompt` that is not a string (a list, token ids) with 400
    /// "prompt must be a string." (`transformers serve`).
    pub string_prompt_only: bool,
    /// End streams without `data: [DONE]`: the stream just closes (`transformers serve`).
    pub no_done: bool,
    /// Put `usage` into the chunk that carries `finish_reason`, always, whatever
    /// `stream_options` asks (`transformers serve`; llama-server does it for completions).
    pub usage_in_finish_chunk: bool,
    /// Send an SSE comment `: ping - <time>` with CRLF line ends when a stream opens and
    /// before every event, as sse-starlette's keep-alive pings (llama-cpp-python).
    pub ping_comments: bool,
    /// Error bodies in FastAPI's form `{"detail": "<message>"}` instead of OpenAI's
    /// `{"error": {…}}` (`transformers serve`).
    pub detail_errors: bool,
}

impl Quirks {
    /// llama.cpp's `llama-server`: closes each connection after its response.
    pub fn llama_server() -> Self {
        Self {
            close_after_response: true,
            ..Self::default()
        }
    }

    /// Hugging Face `transformers serve` 5.x: string prompts only, no `[DONE]`, usage in the
    /// finish chunk, FastAPI error bodies.
    pub fn transformers_serve() -> Self {
        Self {
            string_prompt_only: true,
            no_done: true,
            usage_in_finish_chunk: true,
            detail_errors: true,
            ..Self::default()
        }
    }
}

/// Fault injection: each rate is a percentage (0–100) of inference requests.
///
/// The most padding an oversized response carries (1 GiB).
const MAX_OVERSIZED_BYTES: u64 = 1 << 30;

/// A request gets at most one fault. One uniform draw per request, derived from a hash of
/// `(seed, request sequence number)`, is compared against the cumulative rates in the order of
/// the fields below, so every fault happens at exactly its configured rate as long as the rates
/// add up to at most 100 (beyond that the later ones are cut short).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// HTTP 500 with an OpenAI error body.
    pub error_rate: f64,
    /// HTTP 429 with an OpenAI error body and `Retry-After: 1`.
    pub rate_limit_rate: f64,
    /// HTTP 503 with an OpenAI error body and `Retry-After: 1`.
    pub unavailable_rate: f64,
    /// Close the connection mid-stream after `drop_after_tokens` tokens (non-streaming: close
    /// it without any response when the response would have been sent).
    pub drop_rate: f64,
    /// Mid-stream faults (drop, malformed, SSE error, stall) trigger after this many tokens,
    /// clamped so the stream never completes first (default 5).
    pub drop_after_tokens: u32,
    /// One extra SSE event whose data is not valid JSON (non-streaming: a truncated JSON body).
    pub malformed_chunk_rate: f64,
    /// An `event: error` SSE event replaces the rest of the stream (streaming requests only).
    pub sse_error_rate: f64,
    /// Stop sending for `stall_ms` mid-stream, then continue (non-streaming: respond later).
    pub stall_rate: f64,
    /// Length of a stall, ms (default 1000).
    pub stall_ms: f64,
    /// Delay the response head by `slow_headers_ms`; the whole token schedule moves with it.
    pub slow_headers_rate: f64,
    /// Length of the head delay, ms (default 1000).
    pub slow_headers_ms: f64,
    /// Pad the response with `oversized_bytes` (a client's response-size bound).
    pub oversized_rate: f64,
    /// Padding of an oversized response, bytes (default 2 MiB, at most 1 GiB).
    pub oversized_bytes: u64,
}

impl FaultConfig {
    /// The rates with their flag names, in decision order.
    pub fn rates(&self) -> [(&'static str, f64); 9] {
        [
            ("error-rate", self.error_rate),
            ("rate-limit-rate", self.rate_limit_rate),
            ("unavailable-rate", self.unavailable_rate),
            ("drop-rate", self.drop_rate),
            ("malformed-chunk-rate", self.malformed_chunk_rate),
            ("sse-error-rate", self.sse_error_rate),
            ("stall-rate", self.stall_rate),
            ("slow-headers-rate", self.slow_headers_rate),
            ("oversized-rate", self.oversized_rate),
        ]
    }
}

impl Default for FaultConfig {
    /// No faults; mid-stream faults after 5 tokens; stalls and slow heads of 1 s.
    fn default() -> Self {
        Self {
            error_rate: 0.0,
            rate_limit_rate: 0.0,
            unavailable_rate: 0.0,
            drop_rate: 0.0,
            drop_after_tokens: 5,
            malformed_chunk_rate: 0.0,
            sse_error_rate: 0.0,
            stall_rate: 0.0,
            stall_ms: 1000.0,
            slow_headers_rate: 0.0,
            slow_headers_ms: 1000.0,
            oversized_rate: 0.0,
            oversized_bytes: 2 * 1024 * 1024,
        }
    }
}

/// The fake DCGM exporters served at `/dcgm1/metrics` … `/dcgm{instances}/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmConfig {
    /// Number of exporters (default 2, like the two default DCGM ports 9400/9401).
    pub instances: u32,
    /// GPUs per exporter, 1–8 (default 2).
    pub num_gpus: u32,
    /// GPU model: picks model name, power limits, memory and clocks (default H200).
    pub gpu: GpuModel,
    /// Value of the `Hostname` label (default `localhost`).
    pub hostname: String,
    /// Token rate (tokens/s served by the whole server) at which the GPUs reach 63 % load;
    /// load = 1 − exp(−rate / saturation_tps) (default 1000).
    pub saturation_tps: f64,
    /// Smoothing time constant of the token rate, seconds (default 1).
    pub window_sec: f64,
}

impl Default for DcgmConfig {
    fn default() -> Self {
        Self {
            instances: 2,
            num_gpus: 2,
            gpu: GpuModel::H200,
            hostname: "localhost".to_string(),
            saturation_tps: 1000.0,
            window_sec: 1.0,
        }
    }
}

/// GPU models the fake DCGM exporter can pretend to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuModel {
    /// NVIDIA RTX 6000 Ada Generation.
    Rtx6000,
    /// NVIDIA A100-SXM4-80GB.
    A100,
    /// NVIDIA H100 PCIe.
    H100,
    /// NVIDIA H100 80GB HBM3 (SXM).
    H100Sxm,
    /// NVIDIA H200.
    H200,
    /// NVIDIA B200.
    B200,
    /// NVIDIA GB200.
    Gb200,
}

/// Physical characteristics of a [`GpuModel`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSpec {
    /// The `modelName` label.
    pub model_name: &'static str,
    /// Idle power, W.
    pub idle_power_w: f64,
    /// Power limit, W.
    pub max_power_w: f64,
    /// Frame buffer size, MiB.
    pub memory_mib: u64,
    /// Maximum SM clock, MHz.
    pub max_sm_clock_mhz: u32,
    /// Memory clock, MHz.
    pub mem_clock_mhz: u32,
}

impl GpuModel {
    /// The model's characteristics.
    pub fn spec(self) -> GpuSpec {
        let (model_name, idle_power_w, max_power_w, memory_mib, max_sm_clock_mhz, mem_clock_mhz) =
            match self {
                GpuModel::Rtx6000 => (
                    "NVIDIA RTX 6000 Ada Generation",
                    25.0,
                    300.0,
                    49_140,
                    2505,
                    10_001,
                ),
                GpuModel::A100 => ("NVIDIA A100-SXM4-80GB", 55.0, 400.0, 81_920, 1410, 1593),
                GpuModel::H100 => ("NVIDIA H100 PCIe", 50.0, 350.0, 81_559, 1755, 1593),
                GpuModel::H100Sxm => ("NVIDIA H100 80GB HBM3", 70.0, 700.0, 81_559, 1980, 2619),
                GpuModel::H200 => ("NVIDIA H200", 75.0, 700.0, 143_771, 1980, 3201),
                GpuModel::B200 => ("NVIDIA B200", 120.0, 1000.0, 183_359, 1965, 3996),
                GpuModel::Gb200 => ("NVIDIA GB200", 140.0, 1200.0, 189_471, 2062, 3996),
            };
        GpuSpec {
            model_name,
            idle_power_w,
            max_power_w,
            memory_mib,
            max_sm_clock_mhz,
            mem_clock_mhz,
        }
    }

    /// The names accepted by [`GpuModel::from_str`].
    pub const NAMES: [&'static str; 7] = [
        "rtx6000", "a100", "h100", "h100-sxm", "h200", "b200", "gb200",
    ];
}

impl FromStr for GpuModel {
    type Err = MockError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "rtx6000" => GpuModel::Rtx6000,
            "a100" => GpuModel::A100,
            "h100" => GpuModel::H100,
            "h100-sxm" => GpuModel::H100Sxm,
            "h200" => GpuModel::H200,
            "b200" => GpuModel::B200,
            "gb200" => GpuModel::Gb200,
            other => {
                return Err(MockError::InvalidConfig(format!(
                    "unknown GPU name {other:?}; expected one of {}",
                    GpuModel::NAMES.join(", ")
                )))
            }
        })
    }
}

/// Milliseconds (validated finite and non-negative) to a [`Duration`].
pub(crate) fn ms(v: f64) -> Duration {
    if v.is_finite() && v > 0.0 {
        Duration::from_secs_f64(v / 1000.0)
    } else {
        Duration::ZERO
    }
}
