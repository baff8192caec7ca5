//! What a finished request leaves behind: its credit, its stamps and its parsed responses.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::conversation::Conversation;
use crate::endpoint::ParsedResponse;
use crate::transport::{BodyChunks, TransportError};

/// The phase a request belongs to. Warmup records never reach the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Requests sent to warm the server up; left out of the metrics (only the raw
    /// export keeps them).
    Warmup,
    /// The measured requests.
    Profiling,
}

impl Phase {
    /// The phase's name as artifacts spell it (`warmup`, `profiling`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Profiling => "profiling",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Permission to send one turn of one conversation, and when it was meant to go.
#[derive(Debug, Clone)]
pub struct Credit {
    /// Sequential per phase, in issue order (exported as `session_num`).
    pub id: u64,
    /// The phase.
    pub phase: Phase,
    /// The conversation this turn belongs to.
    pub conversation: Arc<Conversation>,
    /// Which turn (0-based).
    pub turn_index: usize,
    /// One id per conversation instance (sent as `X-Correlation-ID`).
    pub correlation_id: String,
    /// One id per request (sent as `X-Request-ID`).
    pub request_id: String,
    /// The instant the schedule intended the request to go. For closed-loop schedules this
    /// is the instant a slot became free.
    pub scheduled_at: Instant,
    /// The instant the credit was handed to a worker.
    pub issued_at: Instant,
}

/// A failure description, as artifacts and error summaries show it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ErrorDetails {
    /// HTTP status or a pseudo-code; `None` when there is none.
    pub code: Option<u16>,
    /// Short type, e.g. `Internal Server Error` or `TimeoutError`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Human-readable message.
    pub message: String,
}

impl ErrorDetails {
    /// The error for a successful exchange that carried no content.
    pub fn invalid_result() -> Self {
        Self {
            code: None,
            kind: Some("InvalidInferenceResultError".into()),
            message: "Invalid inference result: no responses with actual content were received \
                      from the server (only usage/metadata, null/empty data, or [DONE] markers)"
                .into(),
        }
    }
}

impl From<&TransportError> for ErrorDetails {
    fn from(error: &TransportError) -> Self {
        Self {
            code: error.code(),
            kind: Some(error.type_name().into()),
            message: error.to_string(),
        }
    }
}

/// A finished request, parsed: what record sinks and metrics receive.
///
/// Times are perf nanoseconds from the run's [`Clock`] anchor; use
/// [`RequestRecord::clock`] to turn them into wall-clock times.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// The credit that sent it.
    pub credit: Credit,
    /// The model addressed.
    pub model: String,
    /// The run's clock.
    pub clock: Clock,
    /// When the credit was issued.
    pub credit_issued_ns: u64,
    /// When the schedule meant the request to go.
    pub scheduled_ns: u64,
    /// When the request started (just before the first byte was written).
    pub start_ns: u64,
    /// When the response head arrived.
    pub head_ns: Option<u64>,
    /// When the exchange ended (last byte, or failure).
    pub end_ns: u64,
    /// HTTP status, if a response head arrived.
    pub status: Option<u16>,
    /// Parsed responses with their perf stamps, in arrival order.
    pub responses: Vec<TimedResponse>,
    /// Why the request failed, if it did.
    pub error: Option<ErrorDetails>,
    /// The text whose tokens are the input sequence length.
    pub input_text: String,
    /// The max-tokens value the request asked for.
    pub requested_max_tokens: Option<u32>,
    /// The exact body sent (kept for raw exports).
    pub payload: Bytes,
    /// Number of body chunks read off the wire.
    pub chunk_count: usize,
    /// Number of body bytes read.
    pub body_bytes: usize,
    /// The connection-level stamps, when the transport traced the exchange.
    pub http: Option<HttpTiming>,
    /// How many times the transport sent the request again after a reused connection
    /// closed before answering ([`RawExchange::retries`](crate::RawExchange::retries)).
    pub retries: u32,
    /// What went over the wire, kept only when the benchmark was asked to
    /// ([`BenchmarkBuilder::keep_raw_exchanges`](crate::BenchmarkBuilder::keep_raw_exchanges)).
    pub raw: Option<Box<RawCapture>>,
}

/// The wire-level view of one exchange, for raw exports: the headers sent and the body
/// chunks as they arrived. Kept unparsed: splitting it is the exporter's job, off the hot
/// path.
#[derive(Debug, Clone, Default)]
pub struct RawCapture {
    /// The request headers as sent, in order. Values may hold secrets (API keys):
    /// redact them before writing them anywhere.
    pub request_headers: Vec<(String, String)>,
    /// The response's `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The response body chunks with their arrival stamps (convert with
    /// [`RequestRecord::clock`]).
    pub chunks: BodyChunks,
}

/// What the connection layer saw of a request, in perf nanoseconds: the inputs of the
/// `http_req_*` metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpTiming {
    /// The request went over a connection opened before it started.
    pub connection_reused: bool,
    /// For a new connection: when connecting started and ended.
    pub connect_ns: Option<(u64, u64)>,
    /// When the body was handed to the connection.
    pub request_sent_ns: Option<u64>,
    /// When the first body byte arrived.
    pub first_chunk_ns: Option<u64>,
    /// Request line, headers and body.
    pub request_bytes: u64,
    /// Status line and headers of the response.
    pub response_head_bytes: u64,
}

/// A parsed response with its stamp converted to perf nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedResponse {
    /// Perf nanoseconds when the response's last byte was read.
    pub perf_ns: u64,
    /// The parsed response.
    pub response: ParsedResponse,
}

impl RequestRecord {
    /// A record is valid when it has no error, at least one content response and sane
    /// stamps. Only valid records contribute to the latency and token metrics.
    pub fn is_valid(&self) -> bool {
        self.error.is_none()
            && self.start_ns < self.end_ns
            && self.responses.iter().any(|r| r.response.has_content())
    }

    /// Responses that carry content, in order.
    pub fn content_responses(&self) -> impl Iterator<Item = &TimedResponse> {
        self.responses.iter().filter(|r| r.response.has_content())
    }

    /// The last non-empty usage object the server sent.
    pub fn last_usage(&self) -> Option<&crate::endpoint::Usage> {
        self.responses
            .iter()
            .rev()
            .find_map(|r| r.response.usage.as_ref().filter(|u| !u.is_empty()))
    }
}
