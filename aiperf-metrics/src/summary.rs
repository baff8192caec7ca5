//! The result of a run: the [`Summary`] a [`MetricsSink`](crate::MetricsSink) produces,
//! one [`MetricResult`] per metric, the errors and the schedule lag.

use aiperf_core::{BenchmarkConfig, ErrorDetails};

use crate::catalogue::{ConsoleGroup, MetricDef, MetricId, MetricKind, MetricsContext};
use crate::stats::{Stats, WeightedStats};

/// Schedule lag above which a send counts as late (1 ms).
pub const LATE_THRESHOLD_NS: u64 = 1_000_000;

/// The run-level result of one metric, in its display unit.
///
/// Record metrics carry every statistic; time-weighted metrics carry avg, min, max, std,
/// p50, p90, p95, p99; aggregate and derived metrics carry `avg` only (the value).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricResult {
    /// Machine name, e.g. `time_to_first_token`.
    pub tag: &'static str,
    /// Display name, e.g. `Time to First Token`.
    pub header: &'static str,
    /// Display unit, e.g. `ms`.
    pub unit: &'static str,
    /// How the metric is produced.
    pub kind: MetricKind,
    /// Console table.
    pub group: ConsoleGroup,
    /// Console sort key.
    pub order: u32,
    /// Mean (or the value of a single-value metric).
    pub avg: f64,
    /// Minimum.
    pub min: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
    /// 1st percentile.
    pub p1: Option<f64>,
    /// 5th percentile.
    pub p5: Option<f64>,
    /// 10th percentile.
    pub p10: Option<f64>,
    /// 25th percentile.
    pub p25: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 75th percentile.
    pub p75: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Population standard deviation.
    pub std: Option<f64>,
    /// Number of values (record metrics).
    pub count: Option<u64>,
    /// Sum of the values (record metrics).
    pub sum: Option<f64>,
}

impl MetricResult {
    fn empty(def: &MetricDef, avg: f64) -> Self {
        Self {
            tag: def.tag,
            header: def.header,
            unit: def.unit,
            kind: def.kind,
            group: def.group,
            order: def.order,
            avg,
            min: None,
            max: None,
            p1: None,
            p5: None,
            p10: None,
            p25: None,
            p50: None,
            p75: None,
            p90: None,
            p95: None,
            p99: None,
            std: None,
            count: None,
            sum: None,
        }
    }

    /// A single-value metric.
    pub fn single(def: &MetricDef, value: f64) -> Self {
        Self::empty(def, value)
    }

    /// A record metric from its statistics.
    pub fn from_stats(def: &MetricDef, s: &Stats) -> Self {
        let [p1, p5, p10, p25, p50, p75, p90, p95, p99] = s.percentiles;
        Self {
            min: Some(s.min),
            max: Some(s.max),
            p1: Some(p1),
            p5: Some(p5),
            p10: Some(p10),
            p25: Some(p25),
            p50: Some(p50),
            p75: Some(p75),
            p90: Some(p90),
            p95: Some(p95),
            p99: Some(p99),
            std: Some(s.std),
            count: Some(s.count),
            sum: Some(s.sum),
            ..Self::empty(def, s.avg)
        }
    }

    /// A time-weighted metric from its statistics.
    pub fn from_weighted(def: &MetricDef, s: &WeightedStats) -> Self {
        Self {
            min: Some(s.min),
            max: Some(s.max),
            p50: Some(s.p50),
            p90: Some(s.p90),
            p95: Some(s.p95),
            p99: Some(s.p99),
            std: Some(s.std),
            ..Self::empty(def, s.avg)
        }
    }

    /// True when the metric carries a distribution (percentiles).
    pub fn has_distribution(&self) -> bool {
        self.p50.is_some()
    }
}

/// One kind of error (its type and code) and how many requests failed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCount {
    /// The error: its type and code, and the message of the first request that failed
    /// with it (a sample; later messages may differ).
    pub error: ErrorDetails,
    /// How many records carried an error of this type and code.
    pub count: u64,
}

/// How late requests left compared to their schedule (`start − scheduled`), our addition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleLag {
    /// Median lag, ms.
    pub p50_ms: f64,
    /// 99th-percentile lag, ms.
    pub p99_ms: f64,
    /// Largest lag, ms.
    pub max_ms: f64,
    /// Requests sent more than 1 ms late.
    pub late_count: u64,
    /// Requests measured.
    pub count: u64,
}

/// The result of a run: every metric, the errors, the time window.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Every metric that produced a value, in catalogue order.
    pub metrics: Vec<MetricResult>,
    /// Errors grouped by type and code, with counts, most frequent first.
    pub errors: Vec<ErrorCount>,
    /// Schedule lag of the profiling requests.
    pub schedule_lag: Option<ScheduleLag>,
    /// Profiling requests sent again on a fresh connection because the reused one closed
    /// before answering (a server closing idle keep-alive connections).
    pub connection_retries: u64,
    /// True when the run was cancelled before its stop condition.
    pub was_cancelled: bool,
    /// True when the profiling phase ran to its stop condition.
    pub is_complete: bool,
    /// Profiling requests still in flight when the run ended early, which have no record
    /// and are in no metric: cut off when the grace period after `--benchmark-duration`
    /// expired, or abandoned when the run was cancelled.
    pub cancelled_in_flight: u64,
    /// True when the grace period after the duration expired with requests in flight.
    pub grace_period_expired: bool,
    /// The first error writing a per-record export (`profile_export.jsonl` on a full
    /// disk, say), naming the file and the OS error. Nothing was written after it; every
    /// line written before it is whole.
    pub export_failure: Option<String>,
    /// Why sending stopped early because too many requests failed
    /// (`load.failed_request_threshold`), e.g. `6 of 10 requests failed (60 %), more than
    /// the threshold of 50 %`.
    pub failure_threshold_exceeded: Option<String>,
    /// Short random id of this benchmark (12 hex digits).
    pub benchmark_id: String,
    /// Unix ns of the start of the measurement window.
    pub start_time_ns: Option<u64>,
    /// Unix ns of the end of the measurement window.
    pub end_time_ns: Option<u64>,
    /// Which metrics applied.
    pub context: MetricsContext,
    /// The configuration of the run (echoed as `input_config`).
    pub config: BenchmarkConfig,
    /// The command line, echoed in `run_info.cli_command` when set.
    pub cli_command: Option<String>,
    /// With `--slice-duration`: the profiling phase summarised slice by slice.
    pub timeslices: Vec<TimeSlice>,
    /// What collectors beside the run add to its summary files.
    pub additions: SummaryAdditions,
    /// Accuracy mode: the accuracy of the graded replies.
    pub accuracy: Option<crate::accuracy::AccuracySummary>,
}

/// What collectors beside a run (GPU telemetry) add to its summary files, written after
/// the run's own entries: the Python AIPerf puts its power-efficiency metrics and
/// `telemetry_data` there.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SummaryAdditions {
    /// Single-value metrics: `{"unit", "avg"}` in the JSON, `Header (unit),value` rows at
    /// the end of the CSV.
    pub metrics: Vec<AddedMetric>,
    /// Top-level JSON entries, in order (e.g. `telemetry_data`).
    pub json_sections: Vec<(String, serde_json::Value)>,
    /// Text appended to the CSV after the metric rows (e.g. the GPU table).
    pub csv_appendix: String,
}

/// A single-value metric another collector computed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AddedMetric {
    /// The JSON key, e.g. `total_gpu_energy`.
    pub tag: String,
    /// The CSV label, e.g. `Total GPU Energy (2 GPUs)`.
    pub header: String,
    /// The unit, e.g. `J`.
    pub unit: String,
    /// The value.
    pub value: f64,
}

/// One slice of the profiling phase, summarised on its own.
#[derive(Debug, Clone)]
pub struct TimeSlice {
    /// Unix ns of the slice start (the profiling start plus whole slices).
    pub start_ns: u64,
    /// Unix ns of the slice end (the phase end for the last one).
    pub end_ns: u64,
    /// The metrics of the requests that started in the slice; throughputs over the slice.
    pub summary: Summary,
}

impl Summary {
    /// An empty summary for `config` (embedders and tests fill `metrics` themselves).
    pub fn new(config: BenchmarkConfig, context: MetricsContext) -> Self {
        Self {
            metrics: Vec::new(),
            errors: Vec::new(),
            schedule_lag: None,
            connection_retries: 0,
            was_cancelled: false,
            is_complete: true,
            cancelled_in_flight: 0,
            grace_period_expired: false,
            export_failure: None,
            failure_threshold_exceeded: None,
            benchmark_id: new_benchmark_id(),
            start_time_ns: None,
            end_time_ns: None,
            context,
            config,
            cli_command: None,
            timeslices: Vec::new(),
            additions: SummaryAdditions::default(),
            accuracy: None,
        }
    }

    /// The result of `tag`, if it produced a value.
    pub fn metric(&self, tag: &str) -> Option<&MetricResult> {
        self.metrics.iter().find(|m| m.tag == tag)
    }

    /// The server reported prompt tokens in `usage` but never how many of them were read
    /// from its prompt cache: [`CACHE_REPORTING_HINT`](crate::CACHE_REPORTING_HINT) applies. A reported total of 0
    /// (caching on, no hits) does not count.
    pub fn lacks_cache_reporting(&self) -> bool {
        self.metric(MetricId::TotalUsagePromptTokens.tag())
            .is_some()
            && self
                .metric(MetricId::TotalUsagePromptCacheReadTokens.tag())
                .is_none()
    }

    /// Valid (successful) requests.
    pub fn request_count(&self) -> u64 {
        self.metric(MetricId::RequestCount.tag())
            .map_or(0, |m| m.avg as u64)
    }

    /// Failed requests.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }

    /// Requests the client could not send for want of its own resources (open files):
    /// a run with any does not measure the server.
    pub fn client_resource_errors(&self) -> u64 {
        self.errors
            .iter()
            .filter(|e| e.error.kind.as_deref() == Some(aiperf_core::CLIENT_RESOURCE_ERROR))
            .map(|e| e.count)
            .sum()
    }

    /// Distinct errors with counts.
    pub fn error_summary(&self) -> &[ErrorCount] {
        &self.errors
    }

    /// The benchmark duration in seconds, if known.
    pub fn benchmark_duration_secs(&self) -> Option<f64> {
        self.metric(MetricId::BenchmarkDuration.tag())
            .map(|m| m.avg)
    }

    /// The console title, e.g. `LLM Metrics`.
    pub fn title(&self) -> &'static str {
        let t = self.config.endpoint.endpoint_type.as_str();
        if t.contains("embedding") {
            "Embeddings Metrics"
        } else if t.contains("ranking") {
            "Ranking Metrics"
        } else if t.contains("image") {
            "Image Generation Metrics"
        } else {
            "LLM Metrics"
        }
    }
}

/// A 12-hex-digit id, as the Python AIPerf writes (`benchmark_id`).
pub fn new_benchmark_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}
