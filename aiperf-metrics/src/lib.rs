//! Metrics for aiperf-rs: per-request metric formulas, numpy-exact statistics, goodput,
//! the concurrency-aware time-weighted metrics of AIPerf 0.13, and the exporters
//! (`profile_export_aiperf.json`, `.csv`, `profile_export.jsonl`, `profile_export_raw.jsonl`,
//! the console table).
//!
//! The engine hands every finished [`aiperf_core::RequestRecord`] to a [`MetricsSink`]
//! (an [`aiperf_core::RecordSink`]). The sink skips warmup records, counts tokens with
//! the run's [`aiperf_core::TokenCounter`], computes the record metrics
//! ([`record_metrics`]), hands each record to its [`RecordWriter`]s (e.g. a line of
//! `profile_export.jsonl`) as it arrives, and at the end returns a [`Summary`] that the exporters in [`export`] turn
//! into files and text. Every value is held in its display unit (ms, tokens/sec, …).
//!
//! Cargo feature `parquet` (on by default) adds `profile_export.parquet`
//! ([`MetricsSink::export_parquet_to`]) and with it the arrow and parquet crates; an
//! embedding that needs only the summary can leave it out (`default-features = false`).
//!
//! ```
//! use std::sync::Arc;
//! use aiperf_core::{BenchmarkConfig, ApiKeyHeader, EndpointInfo, RecordSink, RunInfo, TokenCounter};
//! use aiperf_metrics::{export, MetricsSink};
//!
//! struct Words;
//! impl TokenCounter for Words {
//!     fn count_tokens(&self, text: &str) -> usize { text.split_whitespace().count() }
//! }
//!
//! let mut config = BenchmarkConfig::default();
//! config.endpoint.models = vec!["my-model".into()];
//! config.endpoint.streaming = true;
//! config.goodput = vec![("time_to_first_token".into(), 200.0)];
//! let info = EndpointInfo {
//!     name: "chat", default_path: "/v1/chat/completions", streaming_path: None,
//!     supports_streaming: true,
//!     produces_tokens: true, tokenizes_input: true, takes_rankings: false,
//!     api_key_header: ApiKeyHeader::Bearer,
//! };
//! let sink = MetricsSink::new(&config, &info, Arc::new(Words))?;
//! // … the engine calls `sink.on_record(record)` for every finished request …
//! let summary = sink.finish(&RunInfo::default()).map_err(|e| e.to_string())?;
//! assert_eq!(summary.request_count(), 0);
//! if let Some(ttft) = summary.metric("time_to_first_token") {
//!     println!("TTFT p99 = {:?} {}", ttft.p99, ttft.unit);
//! }
//! let table: String = export::console::render_console(&summary);
//! let json: String = export::json::to_json_string(&summary)?;
//! assert!(json.contains("\"schema_version\": \"1.4\""));
//! # let _ = table;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod accuracy;
pub mod aggregate;
pub mod artifacts;
pub mod catalogue;
pub mod compare;
pub mod digest;
pub mod export;
pub mod live;
mod memo;
pub mod merge;
pub mod record_metrics;
pub mod run_check;
pub mod sink;
pub mod slo;
pub mod speed_bench;
pub mod stats;
pub mod summary;
pub mod sweep;
pub mod timeline;

use std::path::{Path, PathBuf};

pub use catalogue::{
    metric_def, ConsoleGroup, MetricDef, MetricFlags, MetricId, MetricKind, MetricsContext,
    CATALOGUE,
};
pub use export::{
    artifact_dir_name, export_paths, resolve_artifact_dir, write_summary_files, ExportPaths,
    RecordWriter,
};
pub use record_metrics::{
    compute_record_metrics, count_tokens, usage_without_cache_reporting, MetricValue,
    RecordMetrics, TokenCounts, UsageTokens, CACHE_REPORTING_HINT,
};
pub use sink::{validate_goodput, MetricsSink};
pub use stats::{Distribution, Stats};
pub use summary::{
    AddedMetric, ErrorCount, MetricResult, ScheduleLag, Summary, SummaryAdditions, TimeSlice,
};

/// What can go wrong while computing or exporting metrics.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// `--goodput` names metrics we do not know (or that cannot be an SLO).
    #[error("Unknown metric tag(s) in --goodput: {0}")]
    UnknownGoodputTags(String),
    /// `--goodput` names metrics that do not apply to this run.
    #[error("Metric tag(s) in --goodput not applicable to this run: {0}")]
    GoodputNotApplicable(String),
    /// A goodput threshold that is not a finite number.
    #[error("Invalid threshold in --goodput: {0}")]
    InvalidGoodputThreshold(String),
    /// Reading or writing a file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing a Parquet file failed.
    #[cfg(feature = "parquet")]
    #[error("cannot write {path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Serialising JSON failed.
    #[error("cannot serialise JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A [`RecordWriter`] of an embedder failed; the built-in writers report
    /// [`MetricsError::Io`] (or `Parquet`) instead.
    #[error("record writer failed: {0}")]
    Writer(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Reading a run's file failed (merging runs).
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line of a run's file cannot be read (merging runs, or writing the Parquet
    /// records from the JSONL ones).
    #[error("{path}:{line}: {message}")]
    BadLine {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl MetricsError {
    #[cfg(feature = "parquet")]
    pub(crate) fn parquet(path: &Path, source: parquet::errors::ParquetError) -> Self {
        Self::Parquet {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn read(path: &Path, source: std::io::Error) -> Self {
        Self::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
