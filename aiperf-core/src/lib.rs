//! The heart of aiperf-rs: configuration, domain types, the traits every part plugs into,
//! and the engine that runs a benchmark.
//!
//! The engine knows nothing about HTTP, tokenizers or metrics. It drives four traits:
//! a [`DatasetSource`] supplies [`Conversation`]s, a [`Scheduler`] says when each request
//! goes, an [`Endpoint`] turns a turn into a request body and a response into data, a
//! [`Transport`] sends the bytes and stamps what comes back, and a [`RecordSink`] receives
//! every finished [`RequestRecord`] off the hot path.
//!
//! ```
//! use std::sync::Arc;
//! use aiperf_core::{
//!     Benchmark, BenchmarkConfig, BoxFuture, BuiltRequest, Chunk, CollectRecords, Conversation,
//!     Endpoint, EndpointError, ApiKeyHeader, EndpointInfo, HttpRequest, ParsedExchange, ParsedResponse,
//!     PhasePlan, RawExchange, RequestInput, SamplingStrategy, Transport, Turn,
//! };
//!
//! /// A format that sends the prompt as the body and reads the body back as text.
//! struct Echo(EndpointInfo);
//! impl Endpoint for Echo {
//!     fn info(&self) -> &EndpointInfo { &self.0 }
//!     fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
//!         Ok(BuiltRequest {
//!             body: input.turns[0].joined_text().into(), headers: vec![], json_view: None,
//!         })
//!     }
//!     fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
//!         let text = String::from_utf8_lossy(&exchange.body()).into_owned();
//!         let at = exchange.ended_at;
//!         let responses = vec![ParsedResponse::text(at, text)];
//!         ParsedExchange { responses, error: None }
//!     }
//! }
//!
//! /// A transport that answers instantly with the request body (a real one sends HTTP).
//! struct Loopback;
//! impl Transport for Loopback {
//!     fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
//!         Box::pin(async move {
//!             let started_at = std::time::Instant::now();
//!             let at = std::time::Instant::now();
//!             RawExchange {
//!                 started_at, head_at: Some(at), status: Some(200), content_type: None,
//!                 headers: Vec::new(), chunks: [Chunk { at, bytes: &request.body }].into_iter().collect(),
//!                 ended_at: at, error: None,
//!                 trace: None,
//!                 retries: 0,
//!             }
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = BenchmarkConfig::default();
//! config.endpoint.models = vec!["my-model".into()];
//! config.endpoint.urls = vec!["http://127.0.0.1:8000".into()];
//! config.load.concurrency = Some(4);
//! config.load.request_count = Some(20);
//! let config = config.validate()?;
//!
//! // The configuration decides URL, model, streaming, headers and phases; the builder
//! // takes the parts that are code and data.
//! let records = Benchmark::builder(&config)
//!     .endpoint(Arc::new(Echo(EndpointInfo {
//!         name: "echo", default_path: "/", streaming_path: None, supports_streaming: false,
//!         produces_tokens: true, tokenizes_input: true, takes_rankings: false,
//!         api_key_header: ApiKeyHeader::Bearer,
//!     })))
//!     .transport(Arc::new(Loopback))
//!     .conversations(vec![Conversation {
//!         session_id: "c0".into(),
//!         turns: vec![Turn::text("hello")],
//!         ..Conversation::default()
//!     }], SamplingStrategy::Sequential)
//!     .sink(CollectRecords::default())?
//!     .run()
//!     .await?;
//! assert_eq!(records.len(), 20);
//! assert!(records.iter().all(|r| r.is_valid()));
//! # Ok(()) }
//! ```

pub mod cache_bust;
pub mod capability;
pub mod clock;
pub mod config;
pub mod conversation;
pub mod dataset;
pub mod deferred;
pub mod endpoint;
pub mod engine;
pub mod json;
pub mod record;
pub mod schedule;
pub mod seed;
pub mod sink;
pub mod tokens;
pub mod transport;
pub mod url;

pub use clock::Clock;
pub use config::{BenchmarkConfig, ConfigError, ValidatedConfig};
pub use conversation::{Branch, BranchMode, ContextMode, Conversation, Turn};
pub use dataset::{
    ConversationSampler, ConversationStream, Dataset, DatasetSource, SamplingStrategy,
};
pub use deferred::DeferredText;
pub use endpoint::{
    build_request, check_request_content_type, ApiKeyHeader, BuiltRequest, Endpoint, EndpointError,
    EndpointInfo, FollowUp, ParsedExchange, ParsedResponse, RequestContentType, RequestInput,
    Usage, VideoReport,
};
pub use engine::{
    Benchmark, BenchmarkBuilder, Cancellation, EngineError, InFlight, PhasePlan, Progress, Waiting,
};
pub use record::{
    Credit, ErrorDetails, HttpTiming, Phase, RawCapture, RequestRecord, TimedResponse,
};
pub use schedule::{
    Arrival, ClosedLoop, FixedSchedule, PlannedSession, RateScheduler, Scheduler, TurnPacing,
    UserCentricSchedule,
};
pub use seed::derive_seed;
pub use sink::{CollectRecords, RecordSink, RunContext, Tee};
pub use tokens::{CounterId, KnownTokenCount, TokenCounter};
pub use tokio_util::sync::CancellationToken;
pub use transport::{
    BodyChunks, BoxFuture, Chunk, HttpMethod, HttpRequest, HttpTrace, RawExchange, SendControl,
    SessionKey, Transport, TransportError, CLIENT_RESOURCE_ERROR, REQUEST_CANCELLATION_ERROR,
};

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

impl PhaseStats {
    /// A phase known only by its window, `start_ns` to `end_ns` (nothing counted): what a
    /// summary of records fed by hand, or of one time slice, divides its throughputs by.
    pub fn window(phase: Phase, start_ns: u64, end_ns: u64) -> Self {
        Self {
            phase,
            start_ns,
            sending_end_ns: end_ns,
            end_ns,
            sent: 0,
            completed: 0,
            cancelled: 0,
            grace_expired: false,
        }
    }
}

impl RunInfo {
    /// The stats of `phase`, if it ran.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseStats> {
        self.phases.iter().find(|p| p.phase == phase)
    }
}
