//! [`RecordWriter`]: a per-record output of a [`MetricsSink`](crate::MetricsSink), such as
//! `profile_export.jsonl`, `profile_export.parquet`, `profile_export_raw.jsonl`, or an
//! embedder's own (a database, a socket, a live chart).

use aiperf_core::RequestRecord;

use crate::record_metrics::RecordMetrics;
use crate::MetricsError;

/// Receives every record a [`MetricsSink`](crate::MetricsSink) processes, as it arrives,
/// and is finished once after the last one.
///
/// The sink computes each profiling record's metrics once and hands the same values to
/// every writer and to the summary, so a writer sees exactly what the summary counts.
/// Warmup records get no metrics (they never reach the summary); a writer that wants them
/// anyway, as the raw export does, overrides [`RecordWriter::write_warmup_record`].
///
/// Add one with [`MetricsSink::with_writer`](crate::MetricsSink::with_writer).
///
/// ```
/// use aiperf_core::RequestRecord;
/// use aiperf_metrics::{MetricId, MetricsError, RecordMetrics, RecordWriter};
///
/// /// Keeps the request latency of each profiling record.
/// #[derive(Debug, Default)]
/// struct Latencies(Vec<f64>);
///
/// impl RecordWriter for Latencies {
///     fn write_record(
///         &mut self,
///         _record: &RequestRecord,
///         metrics: &RecordMetrics,
///         _phase_index: u32,
///     ) -> Result<(), MetricsError> {
///         self.0.extend(metrics.scalar(MetricId::RequestLatency));
///         Ok(())
///     }
///
///     fn finish(self: Box<Self>) -> Result<(), MetricsError> {
///         Ok(())
///     }
/// }
/// ```
pub trait RecordWriter: Send {
    /// Writes one profiling record with the metrics computed for it, failed records
    /// included (their metrics are `valid: false`). `phase_index` is the index of the
    /// profiling phase among the phases run: 1 after a warmup, else 0.
    fn write_record(
        &mut self,
        record: &RequestRecord,
        metrics: &RecordMetrics,
        phase_index: u32,
    ) -> Result<(), MetricsError>;

    /// Writes one warmup record (phase index 0). The default skips it: warmup records
    /// have no metrics and are not part of the results.
    fn write_warmup_record(&mut self, record: &RequestRecord) -> Result<(), MetricsError> {
        let _ = record;
        Ok(())
    }

    /// Flushes and closes the output after the last record. Called once, when the sink
    /// is summarised.
    fn finish(self: Box<Self>) -> Result<(), MetricsError>;
}
