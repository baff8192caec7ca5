//! The [`RecordSink`] trait: where finished requests go.

use crate::config::ValidatedConfig;
use crate::endpoint::EndpointInfo;
use crate::record::{Phase, RequestRecord};
use crate::RunInfo;

/// An error from a sink (a full disk, a closed file).
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// What a run actually sends, as the engine resolved it, handed to the sink before the
/// first record so that what it reports can never disagree with what ran.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// The configuration that runs (streaming only where the endpoint streams).
    pub config: &'a ValidatedConfig,
    /// The endpoint format.
    pub endpoint: &'a EndpointInfo,
    /// The request URLs (base URL and endpoint path).
    pub urls: &'a [String],
}

/// Receives every finished request, warmup included, in completion order, on the
/// engine's processing task (never on the request hot path), and turns them into a
/// result when the run ends.
pub trait RecordSink: Send + 'static {
    /// What the sink produces at the end, e.g. a metrics summary.
    type Output: Send + 'static;

    /// The run starts as `run` describes, before any record. The default ignores it.
    fn start(&mut self, run: &RunContext<'_>) -> Result<(), SinkError> {
        let _ = run;
        Ok(())
    }

    /// Takes one record.
    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError>;

    /// A phase began at `start_ns` (perf ns of the run's clock), before any of its
    /// records arrive. The default ignores it.
    fn on_phase_start(&mut self, phase: Phase, start_ns: u64) -> Result<(), SinkError> {
        let _ = (phase, start_ns);
        Ok(())
    }

    /// Every record the sink has not received yet started at or after `start_ns` (perf
    /// ns of the run's clock): what came before it is complete, and a sink that orders
    /// records by time can settle it and let it go. Called now and then between records
    /// on the processing thread, never decreasing. The default ignores it.
    fn on_watermark(&mut self, start_ns: u64) -> Result<(), SinkError> {
        let _ = start_ns;
        Ok(())
    }

    /// Called once after the last record.
    fn finish(self, run: &RunInfo) -> Result<Self::Output, SinkError>;

    /// This sink and `other` side by side: each gets every record and phase start, and
    /// the run's output is both outputs. A live consumer beside the standard summary is
    /// `metrics_sink.tee(live)`.
    fn tee<B: RecordSink>(self, other: B) -> Tee<Self, B>
    where
        Self: Sized,
    {
        Tee {
            first: self,
            second: other,
        }
    }
}

/// Two sinks fed the same records ([`RecordSink::tee`]). The first gets a clone of each
/// record, the second the record itself; an error from either ends the run.
#[derive(Debug)]
pub struct Tee<A, B> {
    first: A,
    second: B,
}

impl<A: RecordSink, B: RecordSink> RecordSink for Tee<A, B> {
    type Output = (A::Output, B::Output);

    fn start(&mut self, run: &RunContext<'_>) -> Result<(), SinkError> {
        self.first.start(run)?;
        self.second.start(run)
    }

    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError> {
        self.first.on_record(record.clone())?;
        self.second.on_record(record)
    }

    fn on_phase_start(&mut self, phase: Phase, start_ns: u64) -> Result<(), SinkError> {
        self.first.on_phase_start(phase, start_ns)?;
        self.second.on_phase_start(phase, start_ns)
    }

    fn on_watermark(&mut self, start_ns: u64) -> Result<(), SinkError> {
        self.first.on_watermark(start_ns)?;
        self.second.on_watermark(start_ns)
    }

    fn finish(self, run: &RunInfo) -> Result<Self::Output, SinkError> {
        Ok((self.first.finish(run)?, self.second.finish(run)?))
    }
}

/// A boxed sink is a sink, so a sink chosen at run time (`Box<S>` of one of several
/// concrete types behind a generic) passes where a sink is wanted. (`&mut S` cannot be
/// one: the engine moves its sink to the processing thread, which needs `'static`.)
impl<S: RecordSink> RecordSink for Box<S> {
    type Output = S::Output;

    fn start(&mut self, run: &RunContext<'_>) -> Result<(), SinkError> {
        (**self).start(run)
    }

    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError> {
        (**self).on_record(record)
    }

    fn on_phase_start(&mut self, phase: Phase, start_ns: u64) -> Result<(), SinkError> {
        (**self).on_phase_start(phase, start_ns)
    }

    fn on_watermark(&mut self, start_ns: u64) -> Result<(), SinkError> {
        (**self).on_watermark(start_ns)
    }

    fn finish(self, run: &RunInfo) -> Result<Self::Output, SinkError> {
        (*self).finish(run)
    }
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
