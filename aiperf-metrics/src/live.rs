//! Live statistics for a display that watches a run while it happens.
//!
//! [`MetricsSink`](crate::MetricsSink) feeds a shared [`LiveStats`] once per processed
//! profiling record (opt in with
//! [`MetricsSink::with_live_stats`](crate::MetricsSink::with_live_stats)); a display takes
//! a [`LiveSnapshot`] a few times a second. Both sides hold the lock only for a few
//! histogram updates or quantile reads, and neither runs on the network thread.
//!
//! Percentiles come from HDR histograms (3 significant digits, microsecond resolution;
//! a percentile reads as the top of its bucket, within 0.1% of the value): close enough
//! to watch, cheap to update. The reported end-of-run statistics do not
//! come from here.
//!
//! ```
//! use aiperf_metrics::live::LiveStats;
//!
//! let live = LiveStats::new();
//! live.observe_success(Some(20.0), Some(5.0), Some(30.0), 0.1, 3);
//! live.observe_error("TimeoutError", 0.2);
//! let snapshot = live.snapshot();
//! assert_eq!(snapshot.requests, 2);
//! assert_eq!(snapshot.output_tokens, 3);
//! assert_eq!(snapshot.errors_by_type, vec![("TimeoutError".to_string(), 1)]);
//! ```

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use aiperf_core::{ErrorDetails, RequestRecord};
use hdrhistogram::Histogram;

use crate::catalogue::MetricId;
use crate::record_metrics::RecordMetrics;

/// The largest value a histogram keeps exactly: one hour, in microseconds. Larger values
/// are clamped to it.
const MAX_MICROS: u64 = 3_600_000_000;

/// Statistics a display reads while the run goes on. Share it behind an `Arc`.
#[derive(Debug)]
pub struct LiveStats {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    ttft: Histogram<u64>,
    itl: Histogram<u64>,
    latency: Histogram<u64>,
    schedule_lag: Histogram<u64>,
    requests: u64,
    output_tokens: u64,
    errors_by_type: BTreeMap<String, u64>,
}

/// Percentiles of one live distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value seen.
    pub max: f64,
}

/// What the live statistics held at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveSnapshot {
    /// Time to first token; `None` before the first streamed answer.
    pub ttft: Option<Percentiles>,
    /// Inter-token latency (each request's average); `None` before the first answer with
    /// two tokens.
    pub itl: Option<Percentiles>,
    /// Request latency; `None` before the first success.
    pub latency: Option<Percentiles>,
    /// How late requests were sent after their scheduled instant (successes and errors).
    pub schedule_lag: Option<Percentiles>,
    /// Records processed, successes and errors.
    pub requests: u64,
    /// Output tokens of the successful requests.
    pub output_tokens: u64,
    /// Error counts by error type, sorted by type.
    pub errors_by_type: Vec<(String, u64)>,
}

impl Default for LiveStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveStats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                ttft: histogram(),
                itl: histogram(),
                latency: histogram(),
                schedule_lag: histogram(),
                requests: 0,
                output_tokens: 0,
                errors_by_type: BTreeMap::new(),
            }),
        }
    }

    /// Adds a successful request: its TTFT, inter-token latency, latency and schedule lag
    /// in milliseconds, and its output tokens.
    pub fn observe_success(
        &self,
        ttft_ms: Option<f64>,
        itl_ms: Option<f64>,
        latency_ms: Option<f64>,
        schedule_lag_ms: f64,
        output_tokens: u64,
    ) {
        let mut inner = self.lock();
        if let Some(ttft) = ttft_ms {
            inner.ttft.saturating_record(micros(ttft));
        }
        if let Some(itl) = itl_ms {
            inner.itl.saturating_record(micros(itl));
        }
        if let Some(latency) = latency_ms {
            inner.latency.saturating_record(micros(latency));
        }
        inner
            .schedule_lag
            .saturating_record(micros(schedule_lag_ms));
        inner.requests += 1;
        inner.output_tokens += output_tokens;
    }

    /// Adds a failed request, counted under its error type, with its schedule lag in
    /// milliseconds.
    pub fn observe_error(&self, error_type: &str, schedule_lag_ms: f64) {
        let mut inner = self.lock();
        inner
            .schedule_lag
            .saturating_record(micros(schedule_lag_ms));
        inner.requests += 1;
        match inner.errors_by_type.get_mut(error_type) {
            Some(count) => *count += 1,
            None => {
                inner.errors_by_type.insert(error_type.to_owned(), 1);
            }
        }
    }

    /// The statistics as they are now.
    pub fn snapshot(&self) -> LiveSnapshot {
        let inner = self.lock();
        LiveSnapshot {
            ttft: percentiles(&inner.ttft),
            itl: percentiles(&inner.itl),
            latency: percentiles(&inner.latency),
            schedule_lag: percentiles(&inner.schedule_lag),
            requests: inner.requests,
            output_tokens: inner.output_tokens,
            errors_by_type: inner
                .errors_by_type
                .iter()
                .map(|(kind, count)| (kind.clone(), *count))
                .collect(),
        }
    }

    /// A panic elsewhere while holding the lock leaves plain counters behind: keep going.
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Feeds one processed profiling record to `live`.
pub(crate) fn feed(live: &LiveStats, record: &RequestRecord, metrics: &RecordMetrics) {
    let lag_ms = record.start_ns.saturating_sub(record.scheduled_ns) as f64 / 1e6;
    if metrics.valid {
        live.observe_success(
            metrics.scalar(MetricId::TimeToFirstToken),
            metrics.scalar(MetricId::InterTokenLatency),
            metrics.scalar(MetricId::RequestLatency),
            lag_ms,
            metrics.tokens.osl().unwrap_or(0),
        );
    } else {
        live.observe_error(&error_type(record.error.as_ref()), lag_ms);
    }
}

/// The type a failure is counted under: its kind, else its code, else an invalid result.
fn error_type(error: Option<&ErrorDetails>) -> String {
    match error {
        Some(ErrorDetails {
            kind: Some(kind), ..
        }) => kind.clone(),
        Some(ErrorDetails {
            code: Some(code), ..
        }) => format!("HTTP {code}"),
        Some(_) => "Error".to_owned(),
        None => ErrorDetails::invalid_result().kind.unwrap_or_default(),
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to one hour at 3 significant digits: valid bounds, so this cannot fail.
    Histogram::new_with_bounds(1, MAX_MICROS, 3).unwrap_or_else(|_| unreachable!())
}

fn micros(ms: f64) -> u64 {
    (ms * 1000.0).round().clamp(0.0, MAX_MICROS as f64) as u64
}

fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    let ms = |micros: u64| micros as f64 / 1000.0;
    (!h.is_empty()).then(|| Percentiles {
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p99: ms(h.value_at_quantile(0.99)),
        max: ms(h.max()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_where_buckets_are_one_microsecond_wide() {
        let live = LiveStats::new();
        // 1 to 100 µs: below 2048 µs every microsecond has its own bucket.
        for i in 1..=100 {
            live.observe_success(Some(f64::from(i) / 1000.0), None, Some(1.0), 0.0, 2);
        }
        let snapshot = live.snapshot();
        let ttft = snapshot.ttft.expect("ttft");
        assert_eq!(ttft.p50, 0.05);
        assert_eq!(ttft.p90, 0.09);
        assert_eq!(ttft.p99, 0.099);
        assert_eq!(ttft.max, 0.1);
        assert_eq!(snapshot.latency.expect("latency").p50, 1.0);
        assert_eq!(snapshot.itl, None);
        assert_eq!(snapshot.requests, 100);
        assert_eq!(snapshot.output_tokens, 200);
    }

    #[test]
    fn errors_are_counted_by_type() {
        let live = LiveStats::new();
        live.observe_error("TimeoutError", 1.5);
        live.observe_error("Internal Server Error", 1.5);
        live.observe_error("TimeoutError", 1.5);
        let snapshot = live.snapshot();
        assert_eq!(
            snapshot.errors_by_type,
            vec![
                ("Internal Server Error".to_string(), 1),
                ("TimeoutError".to_string(), 2)
            ]
        );
        assert_eq!(snapshot.requests, 3);
        assert_eq!(snapshot.schedule_lag.expect("lag").p50, 1.5);
        assert_eq!(snapshot.ttft, None);
    }
}
