//! The [`RecordSink`] trait: where finished requests go.

use crate::record::{Phase, RequestRecord};
use crate::RunInfo;

/// An error from a sink (a full disk, a closed file).
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Receives every finished request, warmup included, in completion order, on the
/// engine's processing task (never on the request hot path), and turns them into a
/// result when the run ends.
pub trait RecordSink: Send + 'static {
    /// What the sink produces at the end, e.g. a metrics summary.
    type Output: Send + 'static;

    /// Takes one record.
    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError>;

    /// A phase began at `start_ns` (perf ns of the run's clock), before any of its
    /// records arrive. The default ignores it.
    fn on_phase_start(&mut self, phase: Phase, start_ns: u64) -> Result<(), SinkError> {
        let _ = (phase, start_ns);
        Ok(())
    }

    /// Called once after the last record.
    fn finish(self, run: &RunInfo) -> Result<Self::Output, SinkError>;
}

/// A sink that keeps every record in memory; handy in tests and small embeddings.
#[derive(Debug, Default)]
pub struct CollectRecords(pub Vec<RequestRecord>);

impl RecordSink for CollectRecords {
    type Output = Vec<RequestRecord>;

    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError> {
        self.0.push(record);
        Ok(())
    }

    fn finish(self, _run: &RunInfo) -> Result<Self::Output, SinkError> {
        Ok(self.0)
    }
}
