//! GPU and server telemetry for aiperf-rs.
//!
//! Beside a benchmark, aiperf scrapes Prometheus endpoints — NVIDIA DCGM exporters for GPU
//! power, utilisation, memory and temperature, and the inference server's own metrics
//! (vLLM, SGLang, TensorRT-LLM, Dynamo) — and summarises them over the profiling window.
//!
//! This crate holds that work. Its first part is [`prometheus`], our own parser and
//! renderer of the Prometheus text exposition format (0.0.4, and OpenMetrics text).
//! [`Scraper`] scrapes endpoints periodically (each on its own task; anything implementing
//! [`Sampler`] can be scraped), [`summary`] summarises each series over a time window
//! (counters: delta and rate; gauges: statistics; histograms: bucket deltas and estimated
//! percentiles) and [`gpu`] gives the per-GPU view of DCGM exporters, [`efficiency`] the
//! power-efficiency metrics derived from it, and [`export`] writes the files of
//! docs/telemetry.md. [`collector`] ties them into one run: [`TelemetryCollector::start`]
//! beside the benchmark, [`TelemetryHandle::finish`] after it, with the profiling window in
//! wall-clock ns.
//!
//! Cargo feature `parquet` (on by default) adds `server_metrics_export.parquet` and the
//! arrow and parquet crates; without it, asking for that format is an
//! [`export::ExportError::ParquetDisabled`].
//!
//! ```
//! use aiperf_telemetry::prometheus::{find_family, parse, MetricType};
//!
//! // (`concat!` because rustdoc hides example lines that start with `# `.)
//! let text = concat!(
//!     "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n",
//!     "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n",
//!     "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\"} 71.5\n",
//!     "# TYPE vllm:time_to_first_token_seconds histogram\n",
//!     "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 3\n",
//!     "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n",
//!     "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 0.52\n",
//!     "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 4\n",
//! );
//! let families = parse(text)?;
//!
//! let power = find_family(&families, "DCGM_FI_DEV_POWER_USAGE").expect("present");
//! assert_eq!(power.kind, MetricType::Gauge);
//! assert_eq!(power.samples[0].value, 71.5);
//!
//! let ttft = find_family(&families, "vllm:time_to_first_token_seconds").expect("present");
//! let series = &ttft.histograms()[0];
//! assert_eq!(series.labels, [("model_name".to_string(), "m".to_string())]);
//! assert_eq!(series.buckets, [(0.1, 3.0), (f64::INFINITY, 4.0)]);
//! assert_eq!((series.sum, series.count), (Some(0.52), Some(4.0)));
//! # Ok::<(), aiperf_telemetry::prometheus::ParseError>(())
//! ```

pub mod collector;
pub mod efficiency;
pub mod export;
pub mod gpu;
pub mod prometheus;
pub mod scraper;
pub mod stats;
pub mod summary;
pub mod units;
pub mod wall;

pub use collector::{
    GpuEndpoint, ServerEndpoint, TelemetryCollector, TelemetryConfig, TelemetryHandle,
    TelemetryReport, DEFAULT_COUNTER_GRACE, DEFAULT_DCGM_ENDPOINTS,
};
pub use efficiency::{power_efficiency, DerivedMetric, RunTotals};
pub use gpu::{gpu_summaries, gpu_summaries_with_grace, GpuSummary, DCGM_FAMILIES, GPU_METRICS};
pub use scraper::{
    EndpointKind, EndpointScrapes, PrometheusSampler, SampleError, Sampled, Sampler, Scrape,
    Scraper, ScraperHandle, Scrapes,
};
pub use stats::GaugeStats;
pub use summary::{
    summarize, summarize_with_grace, EndpointSummary, SeriesStats, SeriesSummary, Window,
};
pub use wall::WallClock;
