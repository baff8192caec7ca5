//! The [`Transport`] trait: send one HTTP request, stamp everything that comes back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

mod body;

pub use body::{BodyChunks, Chunk};

/// One HTTP request, fully formed: the transport adds nothing but connection handling.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// `POST` or `GET`.
    pub method: HttpMethod,
    /// Absolute URL (`http://` or `https://`).
    pub url: String,
    /// Headers in send order. Values may hold secrets: never log them.
    pub headers: Vec<(String, String)>,
    /// The body bytes (empty for `GET`).
    pub body: Bytes,
    /// Bound on the whole exchange: connect, send and the entire response body.
    pub timeout: Option<Duration>,
}

/// The HTTP methods the benchmark uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `GET`
    Get,
    /// `POST`
    Post,
}

/// Everything a transport observed for one request. Produced on the hot path: raw bytes
/// and stamps only, no parsing.
#[derive(Debug, Clone)]
pub struct RawExchange {
    /// Taken immediately before the request was handed to the connection; on a reused
    /// connection, a transport that sees its socket moves it to when the request's last
    /// byte was written (the instant the server can start).
    pub started_at: Instant,
    /// When the response head arrived (`None` if it never did).
    pub head_at: Option<Instant>,
    /// The HTTP status, when a response head arrived.
    pub status: Option<u16>,
    /// The response's `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The response headers, in the order received (lowercase names; values converted
    /// lossily to text); empty when no head arrived. Filled once per response from the
    /// head.
    pub headers: Vec<(String, String)>,
    /// Body chunks in arrival order.
    pub chunks: BodyChunks,
    /// When the exchange ended: body complete, or the failure observed.
    pub ended_at: Instant,
    /// Set when the exchange failed below HTTP (connect, TLS, timeout, reset).
    pub error: Option<TransportError>,
    /// What the connection layer saw, when the transport traces it.
    pub trace: Option<HttpTrace>,
    /// How many times the request was sent again because a connection reused from the
    /// pool closed before any response byte arrived (0 or 1). The stamps are those of the
    /// last send; the delay shows as schedule lag.
    pub retries: u32,
}

/// What the connection layer saw of one exchange: the inputs of the `http_req_*`
/// metrics. Stamps are taken on the hot path; nothing here is computed there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTrace {
    /// The request went over a connection opened before it started.
    pub connection_reused: bool,
    /// For a new connection: when connecting (DNS, TCP and TLS) started and ended.
    pub connect: Option<(Instant, Instant)>,
    /// When the request's last byte was written to the socket; `None` when the transport
    /// cannot tell.
    pub request_sent_at: Option<Instant>,
    /// Request bytes as written: request line, headers and body.
    pub request_bytes: u64,
    /// Response head bytes: status line and headers.
    pub response_head_bytes: u64,
}

impl RawExchange {
    /// The first response header called `name` (compared case-insensitively), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The whole body (for non-streaming responses and error messages).
    pub fn body(&self) -> &[u8] {
        self.chunks.bytes()
    }
}

/// Why an exchange failed below HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The URL could not be used.
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The request could not be formed (a bad header name or value). Never holds a
    /// header value: values may be secrets.
    #[error("the request could not be formed: {0}")]
    InvalidRequest(String),
    /// No connection could be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The TLS handshake failed (bad certificate, wrong name, protocol).
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// The request did not complete within its timeout.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The server closed the connection or sent something that is not HTTP.
    #[error("server disconnected: {0}")]
    Disconnected(String),
    /// The request was cancelled before it completed.
    #[error("request cancelled")]
    Cancelled,
    /// The client gave up on purpose (`--request-cancellation-rate`), this long after
    /// sending.
    #[error("Request cancelled {:.3}s after being sent", .0.as_secs_f64())]
    CancelledByClient(Duration),
    /// The client itself ran out of a resource (open files) while sending: the failure
    /// says nothing about the server.
    #[error("the client ran out of resources: {0}")]
    ClientResources(String),
    /// The response body grew past the most one response may hold; the client stopped
    /// reading, closed the connection and dropped what it had read.
    #[error(
        "the response body exceeded the limit of {limit} bytes; the client stopped reading it"
    )]
    ResponseTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
}

/// The error type of requests the client could not send for want of its own resources
/// (open files): such a run does not measure the server.
pub const CLIENT_RESOURCE_ERROR: &str = "ClientResourceError";

/// The error type of requests the client cancelled on purpose (`--request-cancellation-rate`).
pub const REQUEST_CANCELLATION_ERROR: &str = "RequestCancellationError";

impl TransportError {
    /// A short type name for error summaries, in the spirit of the Python AIPerf's
    /// exception class names.
    pub fn type_name(&self) -> &'static str {
        match self {
            TransportError::InvalidUrl { .. } => "InvalidURL",
            TransportError::InvalidRequest(_) => "InvalidRequest",
            TransportError::Connect(_) => "ClientConnectorError",
            TransportError::Tls(_) => "ClientConnectorCertificateError",
            TransportError::Timeout(_) => "TimeoutError",
            TransportError::Disconnected(_) => "ServerDisconnectedError",
            TransportError::Cancelled => "CancelledError",
            TransportError::CancelledByClient(_) => REQUEST_CANCELLATION_ERROR,
            TransportError::ResponseTooLarge { .. } => "ResponseTooLargeError",
            TransportError::ClientResources(_) => CLIENT_RESOURCE_ERROR,
        }
    }

    /// The pseudo status code error summaries show: 499 (client closed request) for a
    /// deliberate cancellation, as the Python AIPerf reports it; none otherwise.
    pub fn code(&self) -> Option<u16> {
        match self {
            TransportError::CancelledByClient(_) => Some(499),
            _ => None,
        }
    }
}

/// A boxed future, as trait methods return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends requests. Implementations stamp `started_at` just before the first byte is
/// written and every body chunk as it is read, and never parse the body.
pub trait Transport: Send + Sync + 'static {
    /// Sends one request and collects the stamped response. Failures are reported in
    /// [`RawExchange::error`], never by panicking.
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange>;

    /// Sends one request under the engine's per-request controls. The default ignores
    /// them and calls [`Transport::send`]; transports that can abort an exchange or
    /// report its first chunk override it.
    fn send_controlled(
        &self,
        request: HttpRequest,
        control: SendControl,
    ) -> BoxFuture<'_, RawExchange> {
        let _ = control;
        self.send(request)
    }
}

/// What the engine asks of one exchange beyond the request itself.
#[derive(Debug, Clone, Default)]
pub struct SendControl {
    /// Abort the exchange this long after the request was sent and report
    /// [`TransportError::CancelledByClient`] (simulated client cancellation).
    pub cancel_after: Option<Duration>,
    /// Notified once, right after the first body chunk was stamped (the engine frees a
    /// `--prefill-concurrency` slot on it).
    pub first_chunk: Option<Arc<Notify>>,
    /// The conversation this request belongs to, for transports that give each
    /// conversation a connection of its own.
    pub session: Option<SessionKey>,
    /// A copy of each body chunk, sent right after it was stamped, for a caller that
    /// shows the response as it arrives (`aiperf chat`). Transports that cannot tap
    /// their chunks ignore it; the exchange still holds every chunk.
    pub chunk_tap: Option<tokio::sync::mpsc::UnboundedSender<Bytes>>,
}

/// Which conversation a request belongs to, and whether it is the conversation's last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionKey {
    /// The conversation's correlation id.
    pub id: String,
    /// True for the final turn: a per-conversation connection can close after it.
    pub last: bool,
}
