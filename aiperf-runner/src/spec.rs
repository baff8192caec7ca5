//! What to run: everything `aiperf profile` takes, as plain data (serde, no CLI types).
//!
//! A [`RunSpec`] is the benchmark configuration plus what surrounds a run: how to
//! connect, whether to wait for the server, what telemetry to scrape, which per-record
//! extras to write, how often to repeat the run and which sweep points to run.

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::config::check_urls;
use aiperf_core::{ConfigError, ValidatedConfig};
use aiperf_endpoints::readiness::{Readiness, ReadinessError, WaitMode};
use aiperf_metrics::slo::Slo;
use aiperf_telemetry::export::ServerMetricsFormat;
use serde::{Deserialize, Serialize};

use crate::Workers;

/// The URL that starts the embedded mock server instead of addressing a real one
/// (cargo feature `mock`).
pub const MOCK_URL: &str = "mock";

/// One invocation of the runner: a benchmark, or a sequence of runs of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    /// The benchmark. With a [`Sweep`], the shared set-up (tokenizer, readiness, the
    /// embedded mock) comes from here and each point brings its own configuration.
    pub benchmark: ValidatedConfig,
    /// How requests reach the server.
    #[serde(default)]
    pub transport: TransportOptions,
    /// Wait until the server serves the model before sending (`None`: send at once).
    #[serde(default)]
    pub readiness: Option<ReadinessOptions>,
    /// GPU telemetry and server metrics scraped beside the run.
    #[serde(default)]
    pub telemetry: TelemetryOptions,
    /// Extras of the per-record export.
    #[serde(default)]
    pub records: RecordOptions,
    /// Repeat each benchmark for confidence intervals.
    #[serde(default)]
    pub runs: MultiRunOptions,
    /// Run several configurations, one directory each.
    #[serde(default)]
    pub sweep: Option<Sweep>,
    /// Run-level objectives checked against each run's summary.
    #[serde(default)]
    pub slos: Vec<Slo>,
    /// The command line recorded in the artifacts (secrets already hidden).
    #[serde(default)]
    pub command_line: Option<String>,
    /// Requests on the wire longer than this are reported, once per such interval while
    /// any are ([`Notice::LongWaits`](crate::Notice::LongWaits)), so a server that
    /// accepts and never answers shows long before the request timeout (default 60 s).
    #[serde(default = "default_long_wait")]
    pub long_wait: Duration,
    /// Wait for this wall-clock instant before the first request (`--start-at`): the
    /// shards of one benchmark ([`load.shard`](aiperf_core::config::LoadConfig::shard))
    /// start together. Later runs of a multi-run or sweep do not wait again.
    #[serde(default)]
    pub start_at: Option<std::time::SystemTime>,
    /// An SNTP server (`host[:port]`) to measure this machine's clock against before the
    /// first run (`--clock-reference`): the start instant is then the reference's time,
    /// and records and `shard.json` stamp wall-clock times in it
    /// ([`crate::clock_reference`]). Measured once per session.
    #[serde(default)]
    pub clock_reference: Option<String>,
    /// The threads that send requests on [`RunSpec::runtime`] (`--workers-max`; default
    /// automatic, as in the Python AIPerf).
    #[serde(default)]
    pub workers: Workers,
}

/// The default of [`RunSpec::long_wait`].
pub const DEFAULT_LONG_WAIT: Duration = Duration::from_secs(60);

fn default_long_wait() -> Duration {
    DEFAULT_LONG_WAIT
}

impl RunSpec {
    /// A single run of `benchmark` with every other option at its default: pooled
    /// connections, no readiness wait, default telemetry (the DCGM defaults and each
    /// URL's `/metrics`), one run, no sweep, no SLOs.
    pub fn new(benchmark: ValidatedConfig) -> Self {
        Self {
            benchmark,
            transport: TransportOptions::default(),
            readiness: None,
            telemetry: TelemetryOptions::default(),
            records: RecordOptions::default(),
            runs: MultiRunOptions::default(),
            sweep: None,
            slos: Vec::new(),
            command_line: None,
            long_wait: DEFAULT_LONG_WAIT,
            start_at: None,
            clock_reference: None,
            workers: Workers::Auto,
        }
    }
}

/// How connections are made and kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TransportOptions {
    /// Which requests share a connection.
    pub connection_reuse: ConnectionReuse,
    /// Trust this PEM bundle in addition to the system's roots.
    pub tls_ca_file: Option<PathBuf>,
    /// Accept any server certificate.
    pub tls_insecure_skip_verify: bool,
    /// Speak HTTP/2 (prior knowledge on `http://`, ALPN on `https://`).
    pub http2: bool,
    /// The most body bytes one response may hold; a longer response fails with
    /// `ResponseTooLargeError` (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`](aiperf_endpoints::DEFAULT_MAX_RESPONSE_BYTES), 64 MiB).
    pub max_response_bytes: u64,
    /// Read every connection on threads of their own as soon as its bytes arrive, so each
    /// read keeps its own arrival stamp however busy the sending threads are (see
    /// [`HttpTransportBuilder::socket_reader`](aiperf_endpoints::HttpTransportBuilder::socket_reader)).
    /// `None` (the default): for streaming runs, whose chunks' stamps need it, and not for
    /// non-streaming ones, whose single response the kernel stamps however late it is
    /// read, so that there the reader would only cost a hand-over between threads per read.
    pub socket_reader: Option<bool>,
}

impl Default for TransportOptions {
    fn default() -> Self {
        Self {
            connection_reuse: ConnectionReuse::default(),
            tls_ca_file: None,
            tls_insecure_skip_verify: false,
            http2: false,
            max_response_bytes: aiperf_endpoints::DEFAULT_MAX_RESPONSE_BYTES,
            socket_reader: None,
        }
    }
}

impl TransportOptions {
    /// Whether a run reads its connections on the socket reader:
    /// [`TransportOptions::socket_reader`] when set, else for streaming runs only.
    pub fn uses_socket_reader(&self, streaming: bool) -> bool {
        self.socket_reader.unwrap_or(streaming)
    }
}

/// Which requests share a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionReuse {
    /// Any idle pooled connection serves the next request.
    #[default]
    Pooled,
    /// Every request opens its own connection (and pays the handshake inside its TTFT).
    Never,
    /// The turns of one session share a connection.
    StickyUserSessions,
}

/// Waiting for the server before the first request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadinessOptions {
    /// Give up after this long.
    pub timeout: Duration,
    /// Time between probes.
    pub interval: Duration,
    /// What counts as ready.
    pub mode: WaitMode,
}

impl ReadinessOptions {
    /// The checked form the probe takes.
    pub fn to_readiness(self) -> Result<Readiness, ReadinessError> {
        Readiness::new(self.timeout, self.interval, self.mode)
    }
}

/// GPU telemetry and server metrics collected beside a run (docs/telemetry.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TelemetryOptions {
    /// Scrape GPU telemetry: the DCGM exporter defaults plus [`gpu_urls`](Self::gpu_urls).
    pub gpu: bool,
    /// More DCGM exporters (`http://` and `/metrics` are added as needed).
    pub gpu_urls: Vec<String>,
    /// Scrape each benchmark URL's `/metrics` plus [`server_urls`](Self::server_urls).
    pub server_metrics: bool,
    /// More Prometheus endpoints.
    pub server_urls: Vec<String>,
    /// The server-metrics files to write.
    pub server_metrics_formats: Vec<ServerMetricsFormat>,
    /// Time between GPU scrapes (`None`: the collector's default).
    pub gpu_interval: Option<Duration>,
    /// Time between server-metrics scrapes (`None`: the collector's default).
    pub server_interval: Option<Duration>,
}

impl TelemetryOptions {
    /// Every URL that will be scraped can be sent to (read as `--url` values are: `http://`
    /// is added when missing). [`run`](crate::run) checks this before anything is sent.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.gpu {
            check_urls("telemetry.gpu_urls", &self.gpu_urls)?;
        }
        if self.server_metrics {
            check_urls("telemetry.server_urls", &self.server_urls)?;
        }
        Ok(())
    }
}

impl Default for TelemetryOptions {
    fn default() -> Self {
        Self {
            gpu: true,
            gpu_urls: Vec::new(),
            server_metrics: true,
            server_urls: Vec::new(),
            server_metrics_formats: vec![ServerMetricsFormat::Json, ServerMetricsFormat::Csv],
            gpu_interval: None,
            server_interval: None,
        }
    }
}

/// Extras of the per-record export.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordOptions {
    /// Also summarise each slice of the profiling phase this long.
    pub slice_duration: Option<Duration>,
    /// Add the HTTP trace (connection, send and receive timings) to every record.
    pub export_http_trace: bool,
    /// Write each profiling request's generated text to `outputs.json`.
    pub export_outputs_json: bool,
}

/// Repeating a benchmark to put confidence intervals on its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MultiRunOptions {
    /// Runs per benchmark (1: no repetition, no aggregate).
    pub count: u32,
    /// Pause between runs.
    pub cooldown: Duration,
    /// Confidence level of the aggregate's intervals (0 < x < 1).
    pub confidence_level: f64,
    /// Warm up before the first run only.
    pub warmup_only_before_first_run: bool,
    /// Without a random seed, give every run the same one ([`CONSISTENT_SEED`]).
    pub consistent_seed: bool,
}

/// The dataset seed of every run of a multi-run without a configured seed (as the
/// Python AIPerf's `--set-consistent-seed`).
pub const CONSISTENT_SEED: u64 = 42;

impl Default for MultiRunOptions {
    fn default() -> Self {
        Self {
            count: 1,
            cooldown: Duration::ZERO,
            confidence_level: 0.95,
            warmup_only_before_first_run: true,
            consistent_seed: true,
        }
    }
}

/// Several configurations run one after another, each in its own directory under the
/// sweep's artifact directory, summarised in `sweep_aggregate/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// How the swept values were combined (written into the sweep summary).
    pub sweep_type: SweepType,
    /// The points, in the order they run.
    pub points: Vec<SweepPoint>,
    /// Pause between points.
    #[serde(default)]
    pub cooldown: Duration,
}

/// How the value lists of a sweep combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepType {
    /// Every combination.
    Grid,
    /// The i-th value of every list together.
    Zip,
}

impl SweepType {
    /// The name written in the sweep summary.
    pub fn name(self) -> &'static str {
        match self {
            Self::Grid => "grid",
            Self::Zip => "zip",
        }
    }
}

/// One configuration of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The point's directory name, e.g. `concurrency_4_isl_128`.
    pub label: String,
    /// Each swept parameter (e.g. `request_rate`) and its value as given.
    pub parameters: Vec<(String, String)>,
    /// The point's benchmark.
    pub benchmark: ValidatedConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_reader_serves_streaming_runs_unless_told_otherwise() {
        let reader = |socket_reader, streaming| {
            TransportOptions {
                socket_reader,
                ..TransportOptions::default()
            }
            .uses_socket_reader(streaming)
        };
        assert!(reader(None, true));
        assert!(!reader(None, false));
        assert!(reader(Some(true), false));
        assert!(!reader(Some(false), true));
    }
}
