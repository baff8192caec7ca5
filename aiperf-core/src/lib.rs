//! The heart of aiperf-rs: configuration, domain types, the traits every part plugs into,
//! and the engine that runs a benchmark.
//!
//! The engine knows nothing about HTTP, tokenizers or metrics. It drives four traits:
//! a [`DatasetSource`] supplies [`Conversation`]s, a [`Scheduler`] says when each request
//! goes, an [`Endpoint`] turns a turn into a request body and a response into data, a
//! [`Transport`] sends the bytes and stamps what comes back, and a [`RecordSink`] receives
//! every finished [`RequestRecord`] off the hot path.

pub mod clock;
pub mod config;
pub mod conversation;
pub mod dataset;
pub mod endpoint;
pub mod record;
pub mod schedule;
pub mod sink;
pub mod tokens;
pub mod transport;

pub use clock::Clock;
pub use config::{BenchmarkConfig, ConfigError};
pub use conversation::{Conversation, Turn};
pub use dataset::{ConversationSampler, DatasetSource, SamplingStrategy};
pub use endpoint::{
    BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, ParsedResponse,
    RequestInput, Usage,
};
pub use record::{Credit, ErrorDetails, Phase, RequestRecord, TimedResponse};
pub use schedule::{Arrival, ClosedLoop, RateScheduler, Scheduler};
pub use sink::{CollectRecords, RecordSink};
pub use tokens::TokenCounter;
pub use transport::{Chunk, HttpMethod, HttpRequest, RawExchange, Transport, TransportError};

/// What happened in a run, phase by phase (filled by the engine).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The run's clock.
    pub clock: Option<Clock>,
    /// Each phase that ran, in order.
    pub phases: Vec<PhaseStats>,
    /// True when the run was cancelled (Ctrl-C) before its stop condition.
    pub was_cancelled: bool,
}

/// Counters and times of one phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseStats {
    /// Which phase.
    pub phase: Phase,
    /// Perf ns when the phase started.
    pub start_ns: u64,
    /// Perf ns when the last request was sent.
    pub sending_end_ns: u64,
    /// Perf ns when the last request returned (or was cancelled).
    pub end_ns: u64,
    /// Requests sent.
    pub sent: u64,
    /// Requests that completed (with success or error).
    pub completed: u64,
    /// Requests cancelled at the grace deadline or by Ctrl-C (no record).
    pub cancelled: u64,
    /// True when the grace period expired with requests in flight.
    pub grace_expired: bool,
}

impl RunInfo {
    /// The stats of `phase`, if it ran.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseStats> {
        self.phases.iter().find(|p| p.phase == phase)
    }
}
