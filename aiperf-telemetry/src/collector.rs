//! The run-level API: start scraping GPU and server endpoints beside a benchmark, then
//! summarise what they reported over the profiling phase.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use aiperf_core::transport::Transport;
//! use aiperf_telemetry::{TelemetryCollector, TelemetryConfig};
//!
//! # async fn run(transport: Arc<dyn Transport>, profiling_wall_ns: (u64, u64)) {
//! let config = TelemetryConfig::new()
//!     .default_gpu_endpoints()
//!     .server_endpoint("http://localhost:8000/metrics");
//! let handle = TelemetryCollector::start(config, transport);
//! // … the benchmark runs; its profiling phase spans `profiling_wall_ns` …
//! let report = handle.finish(profiling_wall_ns).await;
//! for gpu in report.gpus() {
//!     println!("GPU {}: {:?} J", gpu.identity.index, gpu.energy_joules());
//! }
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use aiperf_core::transport::Transport;

use crate::gpu::{gpu_summaries_with_grace, GpuSummary, DCGM_FAMILIES};
use crate::scraper::{
    EndpointKind, EndpointScrapes, PrometheusSampler, Sampler, Scraper, ScraperHandle,
    DEFAULT_INTERVAL, DEFAULT_REACHABILITY_TIMEOUT, DEFAULT_SCRAPE_TIMEOUT,
};
use crate::summary::{summarize_with_grace, EndpointSummary, Window};
use crate::wall::WallClock;

/// The DCGM exporters tried when the user names none (docs/telemetry.md#endpoints-and-urls;
/// the Python AIPerf's `AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS`).
pub const DEFAULT_DCGM_ENDPOINTS: [&str; 2] = [
    "http://localhost:9400/metrics",
    "http://localhost:9401/metrics",
];

/// How long after the profiling phase counters still take samples
/// (docs/telemetry.md#scrape-timing: the final scrape's grace of 666 ms).
pub const DEFAULT_COUNTER_GRACE: Duration = Duration::from_millis(666);

/// What to scrape and how often. A builder: every method returns the changed config.
#[derive(Clone)]
pub struct TelemetryConfig {
    gpu_urls: Vec<String>,
    quiet_gpu_urls: Vec<String>,
    gpu_samplers: Vec<Arc<dyn Sampler>>,
    server_urls: Vec<String>,
    server_samplers: Vec<Arc<dyn Sampler>>,
    gpu_interval: Duration,
    server_interval: Duration,
    scrape_timeout: Duration,
    reachability_timeout: Duration,
    counter_grace: Duration,
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |s: &[Arc<dyn Sampler>]| s.iter().map(|s| s.name().to_string()).collect();
        let gpu_samplers: Vec<String> = names(&self.gpu_samplers);
        let server_samplers: Vec<String> = names(&self.server_samplers);
        f.debug_struct("TelemetryConfig")
            .field("gpu_urls", &self.gpu_urls)
            .field("quiet_gpu_urls", &self.quiet_gpu_urls)
            .field("gpu_samplers", &gpu_samplers)
            .field("server_urls", &self.server_urls)
            .field("server_samplers", &server_samplers)
            .field("gpu_interval", &self.gpu_interval)
            .field("server_interval", &self.server_interval)
            .field("counter_grace", &self.counter_grace)
            .finish_non_exhaustive()
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig::new()
    }
}

impl TelemetryConfig {
    /// Nothing to scrape yet; the default intervals and timeouts
    /// (docs/telemetry.md#scrape-timing).
    pub fn new() -> Self {
        TelemetryConfig {
            gpu_urls: Vec::new(),
            quiet_gpu_urls: Vec::new(),
            gpu_samplers: Vec::new(),
            server_urls: Vec::new(),
            server_samplers: Vec::new(),
            gpu_interval: DEFAULT_INTERVAL,
            server_interval: DEFAULT_INTERVAL,
            scrape_timeout: DEFAULT_SCRAPE_TIMEOUT,
            reachability_timeout: DEFAULT_REACHABILITY_TIMEOUT,
            counter_grace: DEFAULT_COUNTER_GRACE,
        }
    }

    /// Scrape a DCGM exporter at `url` (absolute); unreachable, it is reported once.
    /// A URL already added is not added twice.
    #[must_use]
    pub fn gpu_endpoint(mut self, url: impl Into<String>) -> Self {
        let url = url.into();
        self.quiet_gpu_urls.retain(|u| *u != url);
        if !self.gpu_urls.contains(&url) {
            self.gpu_urls.push(url);
        }
        self
    }

    /// Try [`DEFAULT_DCGM_ENDPOINTS`]; those that do not answer are skipped silently.
    #[must_use]
    pub fn default_gpu_endpoints(mut self) -> Self {
        for url in DEFAULT_DCGM_ENDPOINTS {
            if !self.gpu_urls.iter().any(|u| u == url) {
                self.gpu_urls.push(url.to_string());
                self.quiet_gpu_urls.push(url.to_string());
            }
        }
        self
    }

    /// Scrape a Prometheus endpoint of the inference server at `url` (absolute).
    #[must_use]
    pub fn server_endpoint(mut self, url: impl Into<String>) -> Self {
        let url = url.into();
        if !self.server_urls.contains(&url) {
            self.server_urls.push(url);
        }
        self
    }

    /// Attach an embedder's sampler whose families are read as DCGM GPU metrics.
    #[must_use]
    pub fn gpu_sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.gpu_samplers.push(sampler);
        self
    }

    /// Attach an embedder's sampler whose families are reported as server metrics.
    #[must_use]
    pub fn server_sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.server_samplers.push(sampler);
        self
    }

    /// Time between scrapes of every endpoint (default 333 ms).
    #[must_use]
    pub fn interval(self, interval: Duration) -> Self {
        self.gpu_interval(interval).server_interval(interval)
    }

    /// Time between scrapes of the GPU endpoints (`AIPERF_GPU_COLLECTION_INTERVAL`).
    #[must_use]
    pub fn gpu_interval(mut self, interval: Duration) -> Self {
        self.gpu_interval = interval;
        self
    }

    /// Time between scrapes of the server endpoints
    /// (`AIPERF_SERVER_METRICS_COLLECTION_INTERVAL`).
    #[must_use]
    pub fn server_interval(mut self, interval: Duration) -> Self {
        self.server_interval = interval;
        self
    }

    /// Bound on each scrape after the first (default 2 s).
    #[must_use]
    pub fn scrape_timeout(mut self, timeout: Duration) -> Self {
        self.scrape_timeout = timeout;
        self
    }

    /// Bound on the first scrape, which decides reachability (default 10 s). It runs in
    /// the background: the benchmark never waits for it.
    #[must_use]
    pub fn reachability_timeout(mut self, timeout: Duration) -> Self {
        self.reachability_timeout = timeout;
        self
    }

    /// How long after the window's end counters and histograms still take samples
    /// (default [`DEFAULT_COUNTER_GRACE`]).
    #[must_use]
    pub fn counter_grace(mut self, grace: Duration) -> Self {
        self.counter_grace = grace;
        self
    }

    /// Whether nothing at all would be scraped.
    pub fn is_empty(&self) -> bool {
        self.gpu_urls.is_empty()
            && self.gpu_samplers.is_empty()
            && self.server_urls.is_empty()
            && self.server_samplers.is_empty()
    }

    fn scraper(
        &self,
        urls: &[String],
        extra: &[Arc<dyn Sampler>],
        interval: Duration,
        t: &Arc<dyn Transport>,
    ) -> Option<Scraper> {
        let mut samplers: Vec<Arc<dyn Sampler>> = urls
            .iter()
            .map(|u| Arc::new(PrometheusSampler::new(u.clone(), Arc::clone(t))) as Arc<dyn Sampler>)
            .collect();
        samplers.extend(extra.iter().cloned());
        (!samplers.is_empty()).then(|| {
            Scraper::from_samplers(samplers)
                .interval(interval)
                .scrape_timeout(self.scrape_timeout)
                .reachability_timeout(self.reachability_timeout)
        })
    }
}

/// Starts the scrapers; see [`TelemetryCollector::start`].
#[derive(Debug, Clone, Copy)]
pub struct TelemetryCollector;

impl TelemetryCollector {
    /// Start scraping every endpoint of `config` on background tasks (inside a tokio
    /// runtime) and take the wall-clock anchor. Returns at once: reachability is probed in
    /// the background, and a dead or slow endpoint delays nothing.
    pub fn start(config: TelemetryConfig, transport: Arc<dyn Transport>) -> TelemetryHandle {
        let clock = WallClock::now();
        let gpu = config
            .scraper(
                &config.gpu_urls,
                &config.gpu_samplers,
                config.gpu_interval,
                &transport,
            )
            .map(|s| {
                s.kind(EndpointKind::Gpu)
                    .keep_families(DCGM_FAMILIES)
                    .quiet_when_unreachable(config.quiet_gpu_urls.clone())
                    .start()
            });
        let server = config
            .scraper(
                &config.server_urls,
                &config.server_samplers,
                config.server_interval,
                &transport,
            )
            .map(|s| s.kind(EndpointKind::Server).start());
        TelemetryHandle {
            clock,
            counter_grace: config.counter_grace,
            gpu,
            server,
        }
    }
}

/// Running scrapers. [`TelemetryHandle::finish`] stops them and summarises.
#[derive(Debug)]
pub struct TelemetryHandle {
    clock: WallClock,
    counter_grace: Duration,
    gpu: Option<ScraperHandle>,
    server: Option<ScraperHandle>,
}

impl TelemetryHandle {
    /// The anchor that maps scrape instants to wall-clock nanoseconds.
    pub fn clock(&self) -> WallClock {
        self.clock
    }

    /// Stop scraping (each reachable endpoint is scraped once more, so counters cover the
    /// window's end) and summarise over the profiling phase `window_wall_ns`
    /// (`(start, end)`, Unix ns as the engine's records carry them). Call it right after the
    /// profiling phase ends: counters take samples up to the grace period after its end.
    pub async fn finish(self, window_wall_ns: (u64, u64)) -> TelemetryReport {
        // Both stop at once: each final scrape is bounded by the scrape timeout, and one
        // set of endpoints should not wait for the other's.
        let stop = |handle: Option<ScraperHandle>| async move {
            match handle {
                Some(handle) => handle.stop().await.endpoints,
                None => Vec::new(),
            }
        };
        let (gpu, server) = tokio::join!(stop(self.gpu), stop(self.server));
        TelemetryReport::new(self.clock, window_wall_ns, self.counter_grace, gpu, server)
    }
}

/// One DCGM endpoint over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuEndpoint {
    /// Everything scraped (for the JSONL export), the baseline and final scrape included.
    pub scrapes: EndpointScrapes,
    /// Per GPU over the window.
    pub gpus: Vec<GpuSummary>,
}

/// One server-metrics endpoint over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEndpoint {
    /// Everything scraped (for the JSONL export).
    pub scrapes: EndpointScrapes,
    /// Every series over the window.
    pub summary: EndpointSummary,
}

/// What the telemetry of one run amounts to: everything the exports need.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryReport {
    /// The anchor mapping scrape instants to Unix ns.
    pub clock: WallClock,
    /// The profiling phase, Unix ns.
    pub window_wall_ns: (u64, u64),
    /// The same as instants.
    pub window: Window,
    /// The DCGM endpoints, in the order configured (custom GPU samplers last).
    pub gpu: Vec<GpuEndpoint>,
    /// The server endpoints, in the order configured (custom samplers last).
    pub server: Vec<ServerEndpoint>,
}

impl TelemetryReport {
    /// Summarise scrapes over `window_wall_ns`; counters and histograms take samples up to
    /// `grace` after its end. (Public so that scrapes collected another way can be
    /// summarised the same way.)
    pub fn new(
        clock: WallClock,
        window_wall_ns: (u64, u64),
        grace: Duration,
        gpu: Vec<EndpointScrapes>,
        server: Vec<EndpointScrapes>,
    ) -> Self {
        let (start, end) = window_wall_ns;
        let window = Window::new(clock.instant(start), clock.instant(end.max(start)));
        let gpu = gpu
            .into_iter()
            .map(|scrapes| GpuEndpoint {
                gpus: gpu_summaries_with_grace(&scrapes, window, grace),
                scrapes,
            })
            .collect();
        let server = server
            .into_iter()
            .map(|scrapes| ServerEndpoint {
                summary: summarize_with_grace(&scrapes, window, grace),
                scrapes,
            })
            .collect();
        TelemetryReport {
            clock,
            window_wall_ns,
            window,
            gpu,
            server,
        }
    }

    /// Every GPU of every DCGM endpoint.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuSummary> {
        self.gpu.iter().flat_map(|e| e.gpus.iter())
    }

    /// The profiling window's length in seconds.
    pub fn window_seconds(&self) -> f64 {
        let (start, end) = self.window_wall_ns;
        end.saturating_sub(start) as f64 / 1e9
    }
}

/// The metrics URL of a `--server-metrics` or `--gpu-telemetry` value, as the Python
/// AIPerf normalises it (docs/telemetry.md#endpoints-and-urls): `http://` prepended without a scheme, trailing `/` stripped,
/// `/metrics` appended unless already the suffix. The whole path is kept.
///
/// ```
/// use aiperf_telemetry::collector::metrics_url;
///
/// assert_eq!(metrics_url("h:8000"), "http://h:8000/metrics");
/// assert_eq!(metrics_url("http://h:8000/"), "http://h:8000/metrics");
/// assert_eq!(metrics_url("https://h/v1"), "https://h/v1/metrics");
/// assert_eq!(metrics_url("h:9400/metrics/"), "http://h:9400/metrics");
/// ```
pub fn metrics_url(url: &str) -> String {
    let with_scheme = aiperf_core::url::with_default_scheme(url);
    let trimmed = with_scheme.trim_end_matches('/');
    if trimmed.ends_with("/metrics") {
        trimmed.to_string()
    } else {
        format!("{trimmed}/metrics")
    }
}
