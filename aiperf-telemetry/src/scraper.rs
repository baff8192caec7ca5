//! Periodic scraping of Prometheus endpoints (or any [`Sampler`]) beside a benchmark.
//!
//! Each endpoint runs on its own tokio task, so a slow or dead endpoint never delays the
//! others: the first scrape is a reachability probe (an endpoint that fails it is reported
//! once and skipped), every later scrape is bounded by a per-scrape timeout, and
//! [`ScraperHandle::stop`] takes one final scrape of every reachable endpoint before it
//! returns what was collected.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, Instant};
//!
//! use aiperf_core::transport::BoxFuture;
//! use aiperf_telemetry::prometheus::parse;
//! use aiperf_telemetry::summary::{summarize, SeriesStats, Window};
//! use aiperf_telemetry::{SampleError, Sampled, Sampler, Scraper};
//!
//! /// A sampler of our own: a fixed gauge.
//! struct Fixed;
//!
//! impl Sampler for Fixed {
//!     fn name(&self) -> &str {
//!         "fixed"
//!     }
//!     fn sample(&self, _timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>> {
//!         Box::pin(async {
//!             let families = parse("temperature_celsius 21.5\n")
//!                 .map_err(|e| SampleError::Other(e.to_string()))?;
//!             Ok(Sampled { at: Instant::now(), families, skipped_lines: 0 })
//!         })
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let start = Instant::now();
//! // For HTTP endpoints: `Scraper::new(urls, transport)`.
//! let handle = Scraper::from_samplers(vec![Arc::new(Fixed)])
//!     .interval(Duration::from_millis(10))
//!     .start();
//! tokio::time::sleep(Duration::from_millis(50)).await;
//! let scrapes = handle.stop().await;
//!
//! let fixed = scrapes.endpoint("fixed").expect("scraped");
//! let summary = summarize(fixed, Window::new(start, Instant::now()));
//! let SeriesStats::Gauge(stats) = &summary.series[0].stats else { unreachable!() };
//! assert_eq!(stats.avg, 21.5);
//! assert!(stats.count >= 2);
//! # });
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiperf_core::transport::{BoxFuture, HttpMethod, HttpRequest, Transport, TransportError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use crate::prometheus::{parse_lenient, MetricFamily};

/// The default scrape interval (0.333 s, docs/telemetry.md#scrape-timing).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(333);
/// The default bound on one scrape after the first.
pub const DEFAULT_SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// The default bound on the first scrape, which decides whether an endpoint is reachable.
pub const DEFAULT_REACHABILITY_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of scrapes kept per endpoint (about 2.8 hours at 0.333 s).
pub const DEFAULT_MAX_SCRAPES: usize = 30_000;

/// One successful scrape: the parsed families, stamped when the response arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// When the response was complete (before it was parsed).
    pub at: Instant,
    /// The metric families read.
    pub families: Vec<MetricFamily>,
    /// Lines the lenient parser skipped.
    pub skipped_lines: usize,
}

/// Why one scrape failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// The request failed below HTTP (connect, timeout, reset…).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The endpoint answered with a status other than 200.
    #[error("HTTP status {0}")]
    Status(u16),
    /// The body held no metric family that parsed.
    #[error("no Prometheus metrics in the response: {0}")]
    Parse(String),
    /// The sampler did not finish within the timeout.
    #[error("scrape timed out after {0:?}")]
    Timeout(Duration),
    /// Anything else a custom sampler reports.
    #[error("{0}")]
    Other(String),
}

/// Something that can be scraped: a Prometheus endpoint over HTTP, or anything an embedder
/// provides (a local NVML reader, a test double).
///
/// The scraper calls [`Sampler::sample`] at most once at a time per sampler and bounds each
/// call by `timeout` itself; implementations may also pass `timeout` on to their own I/O.
pub trait Sampler: Send + Sync + 'static {
    /// A name that identifies the sampler in results and logs (the URL, for HTTP).
    fn name(&self) -> &str;

    /// Take one sample.
    fn sample(&self, timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>>;
}

/// A [`Sampler`] that GETs a Prometheus text endpoint through a [`Transport`].
///
/// Some servers answer `/metrics` with JSON and serve Prometheus text at
/// `/prometheus/metrics` (docs/telemetry.md#endpoints-and-urls). When a `…/metrics` URL
/// answers JSON or text that does not parse, that alternative is tried once; if it works
/// the sampler stays on it (the sampler's name remains the URL it was given).
pub struct PrometheusSampler {
    url: String,
    /// `url` without credentials: what results and logs show.
    name: String,
    transport: Arc<dyn Transport>,
    /// The `/prometheus/metrics` URL, once it answered in place of `url`.
    switched: Mutex<Option<String>>,
    /// Whether the alternative was already tried (it is tried at most once).
    fallback_tried: AtomicBool,
}

impl std::fmt::Debug for PrometheusSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusSampler")
            .field("url", &self.name)
            .finish_non_exhaustive()
    }
}

impl PrometheusSampler {
    /// A sampler of `url` (absolute, e.g. `http://localhost:9400/metrics`).
    pub fn new(url: impl Into<String>, transport: Arc<dyn Transport>) -> Self {
        let url = url.into();
        PrometheusSampler {
            name: aiperf_core::url::redact_credentials(&url),
            url,
            transport,
            switched: Mutex::new(None),
            fallback_tried: AtomicBool::new(false),
        }
    }

    /// The URL scraped now: the given one, or its `/prometheus/metrics` alternative.
    pub fn current_url(&self) -> String {
        self.switched
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or_else(|| self.url.clone())
    }

    /// `<base>/prometheus/metrics` for a `<base>/metrics` URL not already that path.
    fn fallback_url(&self) -> Option<String> {
        if self.url.ends_with("/prometheus/metrics") {
            return None;
        }
        let base = self.url.strip_suffix("/metrics")?;
        Some(format!("{base}/prometheus/metrics"))
    }

    async fn fetch(&self, url: &str, timeout: Duration) -> Result<Sampled, SampleError> {
        let request = HttpRequest {
            method: HttpMethod::Get,
            url: url.to_string(),
            headers: vec![(
                "accept".to_string(),
                "text/plain;version=0.0.4;q=0.9,*/*;q=0.1".to_string(),
            )],
            body: bytes::Bytes::new(),
            timeout: Some(timeout),
        };
        let exchange = self.transport.send(request).await;
        // The stamp is the transport's: when the body was complete, before any parsing.
        let at = exchange.ended_at;
        if let Some(error) = exchange.error {
            return Err(SampleError::Transport(error));
        }
        match exchange.status {
            Some(200) => {}
            Some(status) => return Err(SampleError::Status(status)),
            None => return Err(SampleError::Other("no response head".to_string())),
        }
        let json = exchange
            .content_type
            .as_deref()
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/json"));
        if json {
            return Err(SampleError::Parse(
                "the endpoint answered JSON, not Prometheus text".to_string(),
            ));
        }
        let body = exchange.body();
        let text = String::from_utf8_lossy(body);
        let (families, errors) = parse_lenient(&text);
        if families.is_empty() && !errors.is_empty() {
            let first = errors.first().map(ToString::to_string).unwrap_or_default();
            return Err(SampleError::Parse(first));
        }
        Ok(Sampled {
            at,
            families,
            skipped_lines: errors.len(),
        })
    }
}

impl Sampler for PrometheusSampler {
    fn name(&self) -> &str {
        &self.name
    }

    fn sample(&self, timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>> {
        Box::pin(async move {
            let result = self.fetch(&self.current_url(), timeout).await;
            let Err(error @ SampleError::Parse(_)) = result else {
                return result;
            };
            let Some(fallback) = self.fallback_url() else {
                return Err(error);
            };
            if self.fallback_tried.swap(true, Ordering::SeqCst) {
                return Err(error);
            }
            match self.fetch(&fallback, timeout).await {
                Ok(sampled) => {
                    tracing::info!(
                        endpoint = %self.url,
                        using = %fallback,
                        "metrics endpoint is not Prometheus text; using its /prometheus/metrics"
                    );
                    if let Ok(mut switched) = self.switched.lock() {
                        *switched = Some(fallback);
                    }
                    Ok(sampled)
                }
                Err(_) => Err(error),
            }
        })
    }
}

/// One stored scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    /// When the scraper asked the sampler (the request was sent just after).
    pub sent_at: Instant,
    /// When the response arrived.
    pub at: Instant,
    /// The families kept (all, or those named by [`Scraper::keep_families`]).
    pub families: Vec<MetricFamily>,
}

/// Everything collected from one endpoint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndpointScrapes {
    /// The sampler's name (the URL, for HTTP endpoints).
    pub name: String,
    /// Successful scrapes in time order.
    pub scrapes: Vec<Scrape>,
    /// Set when the first scrape failed: the endpoint was skipped for the whole run.
    pub unreachable: Option<String>,
    /// Failed scrapes after the first.
    pub failures: u64,
    /// The last failure's message.
    pub last_error: Option<String>,
    /// Lines skipped by the lenient parser, over all scrapes.
    pub skipped_lines: u64,
    /// Scrapes that replaced the newest stored one because the cap was reached.
    pub overwritten: u64,
}

impl EndpointScrapes {
    fn new(name: &str) -> Self {
        EndpointScrapes {
            name: name.to_string(),
            ..EndpointScrapes::default()
        }
    }

    /// Whether the endpoint answered its first scrape.
    pub fn is_reachable(&self) -> bool {
        self.unreachable.is_none()
    }
}

/// What a [`ScraperHandle::stop`] returns: one entry per endpoint, in the order given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scrapes {
    /// Per endpoint.
    pub endpoints: Vec<EndpointScrapes>,
}

impl Scrapes {
    /// The endpoint called `name` (its URL), if scraped.
    pub fn endpoint(&self, name: &str) -> Option<&EndpointScrapes> {
        self.endpoints.iter().find(|e| e.name == name)
    }

    /// Names of the endpoints that failed their first scrape, with the reason.
    pub fn unreachable(&self) -> Vec<(&str, &str)> {
        self.endpoints
            .iter()
            .filter_map(|e| e.unreachable.as_deref().map(|r| (e.name.as_str(), r)))
            .collect()
    }
}

/// Scrapes a set of endpoints periodically until stopped. A builder: set the options, then
/// [`Scraper::start`] inside a tokio runtime.
#[derive(Clone)]
pub struct Scraper {
    samplers: Vec<Arc<dyn Sampler>>,
    options: Options,
}

#[derive(Debug, Clone)]
struct Options {
    kind: EndpointKind,
    interval: Duration,
    scrape_timeout: Duration,
    reachability_timeout: Duration,
    max_scrapes: usize,
    keep: Option<Arc<[String]>>,
    quiet: Option<Arc<[String]>>,
}

/// What a scraper's endpoints serve; it only changes how log lines name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointKind {
    /// Any Prometheus endpoint (the default).
    #[default]
    Prometheus,
    /// A GPU telemetry (DCGM exporter) endpoint.
    Gpu,
    /// An inference server's own `/metrics` (server metrics).
    Server,
}

impl EndpointKind {
    /// How log lines name such an endpoint: "GPU telemetry endpoint", "server metrics
    /// endpoint" or "metrics endpoint".
    pub fn noun(self) -> &'static str {
        match self {
            EndpointKind::Prometheus => "metrics endpoint",
            EndpointKind::Gpu => "GPU telemetry endpoint",
            EndpointKind::Server => "server metrics endpoint",
        }
    }
}

impl std::fmt::Debug for Scraper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scraper")
            .field(
                "samplers",
                &self.samplers.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("options", &self.options)
            .finish()
    }
}

impl Scraper {
    /// A scraper of Prometheus endpoints `urls` (absolute URLs) through `transport`.
    pub fn new<I, S>(urls: I, transport: Arc<dyn Transport>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let samplers = urls
            .into_iter()
            .map(|u| {
                Arc::new(PrometheusSampler::new(u, Arc::clone(&transport))) as Arc<dyn Sampler>
            })
            .collect();
        Scraper::from_samplers(samplers)
    }

    /// A scraper of arbitrary samplers.
    pub fn from_samplers(samplers: Vec<Arc<dyn Sampler>>) -> Self {
        Scraper {
            samplers,
            options: Options {
                kind: EndpointKind::default(),
                interval: DEFAULT_INTERVAL,
                scrape_timeout: DEFAULT_SCRAPE_TIMEOUT,
                reachability_timeout: DEFAULT_REACHABILITY_TIMEOUT,
                max_scrapes: DEFAULT_MAX_SCRAPES,
                keep: None,
                quiet: None,
            },
        }
    }

    /// Add one more sampler.
    #[must_use]
    pub fn sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.samplers.push(sampler);
        self
    }

    /// What the endpoints serve, for the wording of log lines (default
    /// [`EndpointKind::Prometheus`]).
    #[must_use]
    pub fn kind(mut self, kind: EndpointKind) -> Self {
        self.options.kind = kind;
        self
    }

    /// Time between scrape starts (default [`DEFAULT_INTERVAL`]; at least 1 ms).
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.options.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Bound on each scrape after the first (default [`DEFAULT_SCRAPE_TIMEOUT`]).
    #[must_use]
    pub fn scrape_timeout(mut self, timeout: Duration) -> Self {
        self.options.scrape_timeout = timeout;
        self
    }

    /// Bound on the first scrape; an endpoint that fails it is skipped
    /// (default [`DEFAULT_REACHABILITY_TIMEOUT`]).
    #[must_use]
    pub fn reachability_timeout(mut self, timeout: Duration) -> Self {
        self.options.reachability_timeout = timeout;
        self
    }

    /// The most scrapes kept per endpoint (default [`DEFAULT_MAX_SCRAPES`], at least 2).
    /// Past it a warning is logged once and each new scrape replaces the newest stored one,
    /// so the first (baseline) and the latest survive.
    #[must_use]
    pub fn max_scrapes_per_endpoint(mut self, max: usize) -> Self {
        self.options.max_scrapes = max.max(2);
        self
    }

    /// Keep only the families with these names (e.g. [`crate::gpu::DCGM_FAMILIES`]);
    /// by default every family is kept.
    #[must_use]
    pub fn keep_families<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.options.keep = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Endpoints (by sampler name) whose failed reachability probe is logged at debug level
    /// instead of as a warning: guesses such as the default DCGM ports, which are usually
    /// absent and not worth a warning.
    #[must_use]
    pub fn quiet_when_unreachable<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.options.quiet = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Start one task per endpoint; the first scrape of each begins at once. Must be called
    /// inside a tokio runtime.
    pub fn start(self) -> ScraperHandle {
        let (stop, stopped) = watch::channel(false);
        let tasks = self
            .samplers
            .into_iter()
            .map(|sampler| {
                let name = sampler.name().to_string();
                let task = tokio::spawn(run(sampler, self.options.clone(), stopped.clone()));
                (name, task)
            })
            .collect();
        ScraperHandle { stop, tasks }
    }
}

/// A running [`Scraper`]. Dropping it without [`ScraperHandle::stop`] ends the tasks after
/// their final scrape and discards the results.
#[derive(Debug)]
pub struct ScraperHandle {
    stop: watch::Sender<bool>,
    tasks: Vec<(String, JoinHandle<EndpointScrapes>)>,
}

impl ScraperHandle {
    /// Stop scraping: each reachable endpoint is scraped once more (an in-flight scrape is
    /// abandoned for it), then everything collected is returned.
    pub async fn stop(self) -> Scrapes {
        // Receivers live in the tasks; a send error only means they have all ended.
        let _ = self.stop.send(true);
        let mut endpoints = Vec::with_capacity(self.tasks.len());
        for (name, task) in self.tasks {
            match task.await {
                Ok(scrapes) => endpoints.push(scrapes),
                Err(error) => {
                    tracing::warn!(endpoint = %name, %error, "telemetry scraper task failed");
                    let mut failed = EndpointScrapes::new(&name);
                    failed.last_error = Some(format!("scraper task failed: {error}"));
                    failed.failures = 1;
                    endpoints.push(failed);
                }
            }
        }
        Scrapes { endpoints }
    }
}

/// One bounded sample, with the instant it was asked for.
async fn timed(
    sampler: &dyn Sampler,
    timeout: Duration,
) -> (Instant, Result<Sampled, SampleError>) {
    let sent_at = Instant::now();
    let result = match tokio::time::timeout(timeout, sampler.sample(timeout)).await {
        Ok(result) => result,
        Err(_) => Err(SampleError::Timeout(timeout)),
    };
    (sent_at, result)
}

/// Resolves once stop was requested (or the handle was dropped).
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

struct Store {
    out: EndpointScrapes,
    options: Options,
    warned_cap: bool,
    warned_non_finite: bool,
}

impl Store {
    fn record(&mut self, (sent_at, result): (Instant, Result<Sampled, SampleError>)) {
        match result {
            Ok(sampled) => self.push(sent_at, sampled),
            Err(error) => {
                self.out.failures += 1;
                if self.out.failures == 1 {
                    tracing::warn!(endpoint = %self.out.name, %error, "telemetry scrape failed");
                } else {
                    tracing::debug!(endpoint = %self.out.name, %error, "telemetry scrape failed");
                }
                self.out.last_error = Some(error.to_string());
            }
        }
    }

    fn push(&mut self, sent_at: Instant, sampled: Sampled) {
        let mut families = sampled.families;
        if let Some(keep) = &self.options.keep {
            families.retain(|f| keep.contains(&f.name));
        }
        if !self.warned_non_finite {
            let odd = families
                .iter()
                .flat_map(|f| f.samples.iter())
                .find(|s| !s.value.is_finite());
            if let Some(sample) = odd {
                self.warned_non_finite = true;
                tracing::warn!(
                    endpoint = %self.out.name,
                    sample = %sample.name,
                    "telemetry samples with NaN or infinite values are left out of the statistics"
                );
            }
        }
        self.out.skipped_lines += sampled.skipped_lines as u64;
        let scrape = Scrape {
            sent_at,
            at: sampled.at,
            families,
        };
        if self.out.scrapes.len() >= self.options.max_scrapes {
            if !self.warned_cap {
                self.warned_cap = true;
                tracing::warn!(
                    endpoint = %self.out.name,
                    max = self.options.max_scrapes,
                    "telemetry scrape cap reached; later scrapes replace the newest one"
                );
            }
            self.out.overwritten += 1;
            if let Some(last) = self.out.scrapes.last_mut() {
                *last = scrape;
            }
        } else {
            self.out.scrapes.push(scrape);
        }
    }
}

async fn run(
    sampler: Arc<dyn Sampler>,
    options: Options,
    mut stop: watch::Receiver<bool>,
) -> EndpointScrapes {
    let sampler = sampler.as_ref();
    let mut store = Store {
        out: EndpointScrapes::new(sampler.name()),
        options: options.clone(),
        warned_cap: false,
        warned_non_finite: false,
    };

    // Reachability probe. If stop comes first, one bounded attempt decides instead.
    let first = tokio::select! {
        biased;
        () = stopped(&mut stop) => None,
        result = timed(sampler, options.reachability_timeout) => Some(result),
    };
    let (first, stopping) = match first {
        Some(result) => (result, false),
        None => (timed(sampler, options.scrape_timeout).await, true),
    };
    let (sent_at, first) = first;
    match first {
        Ok(sampled) => store.push(sent_at, sampled),
        Err(error) => {
            let quiet = options
                .quiet
                .as_ref()
                .is_some_and(|q| q.iter().any(|n| n == sampler.name()));
            if quiet {
                tracing::debug!(
                    endpoint = %sampler.name(),
                    %error,
                    "{} absent",
                    options.kind.noun()
                );
            } else {
                tracing::warn!(
                    endpoint = %sampler.name(),
                    %error,
                    "{} unreachable; skipping it",
                    options.kind.noun()
                );
            }
            store.out.unreachable = Some(error.to_string());
            return store.out;
        }
    }
    if stopping {
        return store.out;
    }

    let start = tokio::time::Instant::now() + options.interval;
    let mut ticker = tokio::time::interval_at(start, options.interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            _ = ticker.tick() => {}
        }
        let result = tokio::select! {
            biased;
            () = stopped(&mut stop) => break,
            result = timed(sampler, options.scrape_timeout) => result,
        };
        store.record(result);
    }
    // The final scrape, started after stop so counters cover the whole window.
    let result = timed(sampler, options.scrape_timeout).await;
    store.record(result);
    store.out
}
