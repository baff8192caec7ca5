//! [`HttpTransport`]: the [`Transport`] on hyper, with pooled keep-alive connections and
//! rustls TLS.
//!
//! The transport stamps and collects; it never parses. `started_at` is taken immediately
//! before the request is handed to the connection pool (so connection set-up counts
//! towards time to first token, as in the Python AIPerf), `head_at` when the response head
//! arrives, and every body frame the moment hyper yields it, before its bytes are looked at.
//! Failures become a [`TransportError`] in [`RawExchange::error`]; `send` never fails.
//!
//! A server may close an idle keep-alive connection at the very moment a request is
//! written to it (llama.cpp's `llama-server` closes every connection about 0.14 ms after a
//! streamed response while still advertising `Keep-Alive`). hyper notices a close that
//! arrived before a connection is taken from the pool; for the race it cannot see, a
//! request whose *reused* connection closed before any response byte arrived is sent once
//! more on a fresh connection ([`RawExchange::retries`]). Nothing is retried once a
//! response head arrived, nor after a failure on a new connection: those are the server's
//! errors to report.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiperf_core::transport::BoxFuture;
use aiperf_core::{
    BodyChunks, HttpMethod, HttpRequest, HttpTrace, RawExchange, SendControl, SessionKey,
    Transport, TransportError,
};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

pub use crate::tls::TransportBuildError;
use crate::tls::{client_config, TlsOptions};
use boxed_tls::BoxTls;
use reader::SocketReader;
use traced::{request_size, response_head_size, ConnectTiming, TimedConnector};
use wire::{Arrivals, WireClock, WireConnector};

/// The most body bytes one response may hold (64 MiB): far above any real completion,
/// embedding batch or generated image, and low enough that a server sending an endless
/// body cannot exhaust the client's memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// The most one HTTP/1 connection's read buffer holds (hyper's minimum; its default is
/// ~400 KB). hyper grows the buffer whenever a read fills it, which a client that is behind
/// thousands of streams does all the time, and keeps it for the connection's life; every
/// frame is copied out of it at once, so a bigger buffer only saves read calls. It also
/// bounds a response head: heads over 8 KiB fail (servers send a few hundred bytes).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// How long an idle pooled connection is kept (the Python AIPerf keeps them 300 s).
const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// TCP keep-alive idle time (the Python AIPerf sets `TCP_KEEPIDLE` 60).
const DEFAULT_TCP_KEEPALIVE: Duration = Duration::from_secs(60);

/// Sends requests over pooled HTTP/1.1 connections (HTTP/2 over TLS when enabled and
/// offered), plain or TLS. Cheap to share: wrap it in an `Arc` and use it from every
/// worker task.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use aiperf_core::{HttpMethod, HttpRequest, Transport};
/// use aiperf_endpoints::HttpTransport;
///
/// let transport = HttpTransport::builder()
///     .connect_timeout(Duration::from_secs(5))
///     .build()?;
/// let exchange = transport
///     .send(HttpRequest {
///         method: HttpMethod::Get,
///         url: "http://127.0.0.1:8000/v1/models".into(),
///         headers: vec![],
///         body: Default::default(),
///         timeout: Some(Duration::from_secs(10)),
///     })
///     .await;
/// println!("status {:?}, {} chunks", exchange.status, exchange.chunks.len());
/// # Ok(()) }
/// ```
pub struct HttpTransport {
    client: HyperClient,
    /// Keeps no idle connection, so every request on it opens a new one: where a request
    /// goes again after a reused connection closed under it.
    fresh: HyperClient,
    /// With sticky sessions: a client (and so a connection) per conversation, by
    /// correlation id, dropped after the conversation's last turn or a failure.
    sessions: Option<Mutex<HashMap<String, HyperClient>>>,
    connector: Connector,
    settings: HttpTransportBuilder,
    uris: UriCache,
}

type Connector = TimedConnector<BoxTls<HttpsConnector<WireConnector>>>;
type HyperClient = Client<Connector, Full<Bytes>>;

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Configures an [`HttpTransport`]; see [`HttpTransport::builder`].
#[derive(Debug, Clone)]
pub struct HttpTransportBuilder {
    pool_max_idle_per_host: usize,
    pool_idle_timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
    tcp_keepalive: Option<Duration>,
    http2: bool,
    ca_file: Option<PathBuf>,
    insecure_skip_verify: bool,
    sticky_sessions: bool,
    max_response_bytes: u64,
    socket_reader: bool,
    raise_reader_priority: bool,
}

impl Default for HttpTransportBuilder {
    fn default() -> Self {
        Self {
            pool_max_idle_per_host: usize::MAX,
            pool_idle_timeout: Some(DEFAULT_POOL_IDLE_TIMEOUT),
            connect_timeout: None,
            tcp_keepalive: Some(DEFAULT_TCP_KEEPALIVE),
            http2: false,
            ca_file: None,
            insecure_skip_verify: false,
            sticky_sessions: false,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            socket_reader: true,
            raise_reader_priority: false,
        }
    }
}

impl HttpTransportBuilder {
    /// Most idle connections kept per host (default: unlimited).
    #[must_use]
    pub fn pool_max_idle_per_host(mut self, max: usize) -> Self {
        self.pool_max_idle_per_host = max;
        self
    }

    /// How long an idle connection stays in the pool (default 300 s; `None` = forever).
    #[must_use]
    pub fn pool_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// Bound on establishing one TCP connection (default: none; the request timeout
    /// still applies).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// TCP keep-alive idle time (default 60 s; `None` disables keep-alive probes).
    #[must_use]
    pub fn tcp_keepalive(mut self, idle: Option<Duration>) -> Self {
        self.tcp_keepalive = idle;
        self
    }

    /// Offer HTTP/2 in the TLS handshake (ALPN) and use it when the server accepts
    /// (default off: HTTP/1.1 only, like the Python AIPerf). Plain `http://` always uses
    /// HTTP/1.1.
    #[must_use]
    pub fn http2(mut self, enabled: bool) -> Self {
        self.http2 = enabled;
        self
    }

    /// A PEM file with CA certificates to trust besides the bundled and platform roots.
    #[must_use]
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Accept any server certificate. Only for testing against self-signed servers.
    #[must_use]
    pub fn insecure_skip_verify(mut self, skip: bool) -> Self {
        self.insecure_skip_verify = skip;
        self
    }

    /// Give every conversation a connection of its own, closed after its last turn or a
    /// failure (`--connection-reuse-strategy sticky-user-sessions`: what a server sees
    /// from real users with their own clients). Requests without a session key use the
    /// shared pool.
    #[must_use]
    pub fn sticky_sessions(mut self, sticky: bool) -> Self {
        self.sticky_sessions = sticky;
        self
    }

    /// The most body bytes one response may hold (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]). A response that grows past it ends with
    /// [`TransportError::ResponseTooLarge`]: the client stops reading, closes the
    /// connection and drops what it read.
    #[must_use]
    pub fn max_response_bytes(mut self, limit: u64) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// Read every connection on a thread of its own, as soon as its bytes arrive (default
    /// on). Each read then carries its own arrival stamp however busy the runtime sending
    /// the requests is; without it, a runtime that gets round to a socket late reads the
    /// server's writes waiting there at once, and their frames share the last one's stamp
    /// (TTFT and ITL off by that delay). The thread starts with the first connection and
    /// ends with the transport. Off: the sending runtime reads its sockets itself, one
    /// thread fewer and no hand-over between threads (see docs/metrics.md, "Where stamps
    /// come from", for what each costs).
    #[must_use]
    pub fn socket_reader(mut self, enabled: bool) -> Self {
        self.socket_reader = enabled;
        self
    }

    /// Whether the socket reader's thread asks the kernel for a higher priority (nice
    /// -15 on Linux; off by default). On a machine whose cores are all busy it then reads
    /// each server write as it arrives instead of waiting its turn, which keeps streamed
    /// chunks' stamps exact at high concurrency (on 2 cores at concurrency 512, TTFT on
    /// reused connections within 0.07 ms of a packet capture instead of 1.4–2.3 ms), at
    /// the cost of preempting the sending threads at every arrival (7–18 % less capacity
    /// against a zero-latency mock). `aiperf profile` asks for it for streaming runs.
    /// Needs root, `CAP_SYS_NICE` or a `ulimit -e` that allows it; otherwise the thread
    /// keeps the default priority.
    #[must_use]
    pub fn raise_reader_priority(mut self, raise: bool) -> Self {
        self.raise_reader_priority = raise;
        self
    }

    /// Builds the transport. Must be called inside a Tokio runtime only when sending,
    /// not when building.
    pub fn build(self) -> Result<HttpTransport, TransportBuildError> {
        let tls = client_config(&TlsOptions {
            ca_file: self.ca_file.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
        })?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(self.connect_timeout);
        tcp.set_keepalive(self.tcp_keepalive);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1();
        let reader = self
            .socket_reader
            .then(|| Arc::new(SocketReader::new(self.raise_reader_priority)));
        let tcp = WireConnector::new(tcp, reader);
        let connector = TimedConnector::new(BoxTls::new(if self.http2 {
            https.enable_http2().wrap_connector(tcp)
        } else {
            https.wrap_connector(tcp)
        }));
        let client = self.client(connector.clone(), self.pool_max_idle_per_host);
        let fresh = self.client(connector.clone(), 0);
        Ok(HttpTransport {
            client,
            fresh,
            sessions: self.sticky_sessions.then(Mutex::default),
            connector,
            settings: self,
            uris: UriCache::default(),
        })
    }

    fn client(&self, connector: Connector, max_idle: usize) -> HyperClient {
        Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_max_idle_per_host(max_idle)
            .pool_idle_timeout(self.pool_idle_timeout)
            .http1_max_buf_size(READ_BUFFER_BYTES)
            .build(connector)
    }
}

impl HttpTransport {
    /// A builder with the defaults: pooled keep-alive, no connect timeout, HTTP/1.1,
    /// bundled and platform roots.
    pub fn builder() -> HttpTransportBuilder {
        HttpTransportBuilder::default()
    }

    /// With sticky sessions, the conversation's own client (made for its first turn);
    /// `None`: the request uses the shared pool, borrowed rather than cloned (a client is
    /// a few hundred bytes and half a dozen reference counts).
    fn session_client(&self, session: Option<&SessionKey>) -> Option<HyperClient> {
        let (Some(sessions), Some(key)) = (&self.sessions, session) else {
            return None;
        };
        let mut sessions = match sessions.lock() {
            Ok(sessions) => sessions,
            Err(poisoned) => poisoned.into_inner(),
        };
        Some(
            sessions
                .entry(key.id.clone())
                .or_insert_with(|| self.settings.client(self.connector.clone(), 1))
                .clone(),
        )
    }

    /// Closes a conversation's connection after its last turn or a failure.
    fn end_session(&self, session: Option<&SessionKey>, failed: bool) {
        if let (Some(sessions), Some(key)) = (&self.sessions, session) {
            if key.last || failed {
                let mut sessions = match sessions.lock() {
                    Ok(sessions) => sessions,
                    Err(poisoned) => poisoned.into_inner(),
                };
                sessions.remove(&key.id);
            }
        }
    }

    /// Sends one request (once more on a fresh connection if a reused one closed before
    /// answering), then releases a finished conversation's connection.
    async fn exchange(&self, request: HttpRequest, mut control: SendControl) -> RawExchange {
        let session = control.session.clone();
        let own_client = self.session_client(session.as_ref());
        let client = own_client.as_ref().unwrap_or(&self.client);
        let exchange = match self.exchange_on(client, &request, &mut control).await {
            Attempt::Done(exchange) => exchange,
            Attempt::ReusedConnectionClosed(first) => {
                tracing::debug!(
                    url = %request.url,
                    error = ?first.error,
                    "a reused connection closed before any response byte; \
                     sending again on a fresh connection"
                );
                // Boxed: rarely needed, inline it would take its room in every exchange's
                // state for the whole stream (2,696 bytes an exchange, 2,312 boxed).
                let attempt = Box::pin(self.exchange_on(&self.fresh, &request, &mut control)).await;
                RawExchange {
                    retries: 1,
                    ..attempt.into_exchange()
                }
            }
        };
        self.end_session(session.as_ref(), exchange.error.is_some());
        exchange
    }

    /// Sends one request on `client`; see [`Transport::send_controlled`]. Stamps start
    /// here, so a request sent again is measured from its second send.
    async fn exchange_on(
        &self,
        client: &HyperClient,
        request: &HttpRequest,
        control: &mut SendControl,
    ) -> Attempt {
        let http_request = match to_hyper(request, &self.uris, !self.settings.http2) {
            Ok(converted) => converted,
            Err(error) => return Attempt::Done(failed_before_sending(error)),
        };
        let request_bytes = request_size(&http_request, request.body.len());
        let started_at = Instant::now();
        let deadline = Deadline::earliest(
            Deadline::after(started_at, request.timeout, TransportError::Timeout),
            Deadline::after(
                started_at,
                control.cancel_after,
                TransportError::CancelledByClient,
            ),
        );
        let mut exchange = RawExchange {
            started_at,
            head_at: None,
            status: None,
            content_type: None,
            headers: Vec::new(),
            chunks: BodyChunks::new(),
            ended_at: started_at,
            error: None,
            trace: None,
            retries: 0,
        };
        let response = match within(deadline.as_ref(), client.request(http_request)).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                let reused = !error.is_connect() && was_reused(&error, started_at);
                let error = classify(&error);
                tracing::debug!(url = %request.url, %error, reused, "request failed");
                let exchange = finish(exchange, Some(error));
                return if reused {
                    Attempt::ReusedConnectionClosed(exchange)
                } else {
                    Attempt::Done(exchange)
                };
            }
            Err(timeout) => return Attempt::Done(finish(exchange, Some(timeout))),
        };
        let (head, mut body) = response.into_parts();
        let wire = head.extensions.get::<WireClock>().cloned();
        let written = wire
            .as_ref()
            .and_then(WireClock::written_at)
            .filter(|written| *written >= started_at);
        let mut arrivals = Arrivals::new(wire, started_at);
        let head_at = arrivals.next();
        exchange.head_at = Some(head_at);
        exchange.status = Some(head.status.as_u16());
        let connection = head.extensions.get::<ConnectTiming>().copied();
        let connection_reused = connection.is_some_and(|c| c.connected <= started_at);
        // The last byte was written before any answer arrived: a write stamp after the
        // head's arrival was taken late (the thread lost the CPU after the write).
        let request_sent_at = written.map(|written| written.min(head_at));
        if connection_reused {
            // The server starts when the request's last byte reaches it, not when a busy
            // runtime got round to writing it; a new connection's set-up still counts, as
            // in the Python AIPerf. A late write stamp is not used: the request then
            // starts when it was handed to the connection.
            if let Some(written) = written.filter(|written| *written < head_at) {
                exchange.started_at = written;
            }
        }
        exchange.trace = Some(HttpTrace {
            connection_reused,
            connect: connection
                .filter(|_| !connection_reused)
                .map(|c| (c.started, c.connected)),
            request_sent_at,
            request_bytes,
            response_head_bytes: response_head_size(&head),
        });
        let headers = &head.headers;
        exchange.content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        exchange.headers = headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        // The head's header values are slices of the connection's read buffer: held
        // through the body, they keep that buffer alive and hyper allocates a second one
        // for every later read (8 KiB more per stream in flight).
        drop(head);
        let limit = self.settings.max_response_bytes;
        let mut body_bytes: u64 = 0;
        let error = loop {
            match within(deadline.as_ref(), body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    let at = arrivals.next();
                    if let Ok(bytes) = frame.into_data() {
                        body_bytes = body_bytes.saturating_add(bytes.len() as u64);
                        if body_bytes > limit {
                            // Nothing of it can be measured; holding it until the record is
                            // processed would cost the memory the limit protects.
                            exchange.chunks.clear();
                            break Some(TransportError::ResponseTooLarge { limit });
                        }
                        if !bytes.is_empty() {
                            // A copy, so the frame (a slice of hyper's read buffer) is
                            // released at once and the buffer is reused for the next read.
                            exchange.chunks.push(at, &bytes);
                            if let Some(tap) = &control.chunk_tap {
                                // The reader may be gone; the exchange keeps the chunk.
                                let _ = tap.send(bytes);
                            }
                            if let Some(notify) = control.first_chunk.take() {
                                notify.notify_one();
                            }
                        }
                    }
                }
                Ok(None) => break None,
                Ok(Some(Err(error))) => break Some(TransportError::Disconnected(chain(&error))),
                Err(timeout) => break Some(timeout),
            }
        };
        Attempt::Done(finish(exchange, error))
    }
}

/// How one send ended.
enum Attempt {
    /// With a response, or with a failure to report.
    Done(RawExchange),
    /// A connection taken from the pool closed before any response byte arrived: most
    /// likely the server closed it as idle while the request was being written.
    ReusedConnectionClosed(RawExchange),
}

impl Attempt {
    fn into_exchange(self) -> RawExchange {
        match self {
            Attempt::Done(exchange) | Attempt::ReusedConnectionClosed(exchange) => exchange,
        }
    }
}

/// True when the request failed on a connection opened before it started. hyper-util
/// attaches the connection's metadata to every failure after the pool handed one out (a
/// connection that failed to open leaves none), so no per-request `capture_connection`
/// (a channel and an extensions map per request) is needed to tell.
fn was_reused(error: &hyper_util::client::legacy::Error, started_at: Instant) -> bool {
    let Some(connected) = error.connect_info() else {
        return false;
    };
    let mut extensions = http::Extensions::new();
    connected.get_extras(&mut extensions);
    extensions
        .get::<ConnectTiming>()
        .is_some_and(|timing| timing.connected <= started_at)
}

impl Transport for HttpTransport {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(self.exchange(request, SendControl::default()))
    }

    fn send_controlled(
        &self,
        request: HttpRequest,
        control: SendControl,
    ) -> BoxFuture<'_, RawExchange> {
        Box::pin(self.exchange(request, control))
    }
}

/// When an exchange is cut short, and the error it then reports.
struct Deadline {
    at: tokio::time::Instant,
    error: TransportError,
}

impl Deadline {
    /// `after` past `start`, reported as `error(after)`; none without a duration or when
    /// the duration is too large to add to the clock.
    fn after(
        start: Instant,
        after: Option<Duration>,
        error: fn(Duration) -> TransportError,
    ) -> Option<Deadline> {
        let after = after?;
        let at = start.checked_add(after)?;
        Some(Deadline {
            at: tokio::time::Instant::from_std(at),
            error: error(after),
        })
    }

    fn earliest(a: Option<Deadline>, b: Option<Deadline>) -> Option<Deadline> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.at < a.at { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// Runs `future` until the deadline, if there is one.
async fn within<F: Future>(
    deadline: Option<&Deadline>,
    future: F,
) -> Result<F::Output, TransportError> {
    match deadline {
        None => Ok(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline.at, future)
            .await
            .map_err(|_| deadline.error.clone()),
    }
}

/// Stamps the end and records the failure, if any.
fn finish(mut exchange: RawExchange, error: Option<TransportError>) -> RawExchange {
    exchange.ended_at = Instant::now();
    exchange.error = error;
    exchange
}

/// An exchange that failed before anything was sent.
fn failed_before_sending(error: TransportError) -> RawExchange {
    let now = Instant::now();
    RawExchange {
        started_at: now,
        head_at: None,
        status: None,
        content_type: None,
        headers: Vec::new(),
        chunks: BodyChunks::new(),
        ended_at: now,
        error: Some(error),
        trace: None,
        retries: 0,
    }
}

/// Converts the request, checking the URL and headers (header values never appear in
/// errors: they may hold secrets). Built in place rather than through
/// `http::request::Builder`, which moves the whole request at every step. With
/// `http1_host`, the `Host` header is added here from the cache (unless the request has
/// one), as hyper-util would add it to an HTTP/1 request by formatting it anew each time.
fn to_hyper(
    request: &HttpRequest,
    uris: &UriCache,
    http1_host: bool,
) -> Result<http::Request<Full<Bytes>>, TransportError> {
    let mut converted = http::Request::new(Full::new(request.body.clone()));
    *converted.method_mut() = match request.method {
        HttpMethod::Get => http::Method::GET,
        HttpMethod::Post => http::Method::POST,
    };
    let target = uris.parse(&request.url)?;
    *converted.uri_mut() = target.uri;
    let headers = converted.headers_mut();
    headers.reserve(request.headers.len() + 1);
    for (name, value) in &request.headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            TransportError::InvalidRequest(format!("invalid header name `{}`", name.escape_debug()))
        })?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            TransportError::InvalidRequest(format!("invalid value for header `{name}`"))
        })?;
        headers.append(header, value);
    }
    if http1_host || target.plain_http {
        headers.entry(HOST).or_insert(target.host);
    }
    Ok(converted)
}

/// The last URL sent to and its parsed form: a benchmark sends every request to one URL
/// (or a few, round-robin), and parsing it copied and scanned it per request (~0.6 % of
/// the client's CPU in a non-streaming run). A parsed URI and a header value clone
/// without copying.
#[derive(Debug, Default)]
struct UriCache(Mutex<Option<(String, Target)>>);

/// A parsed request URL.
#[derive(Debug, Clone)]
struct Target {
    uri: http::Uri,
    /// The `Host` header an HTTP/1 request carries: the host, and the port unless it is
    /// the scheme's default (as hyper-util writes it).
    host: HeaderValue,
    /// `http://`, which always goes over HTTP/1.1.
    plain_http: bool,
}

impl UriCache {
    /// The parsed `url`: from the cache when it was the last one, else parsed and checked
    /// (an `http` or `https` scheme and a host), then kept.
    fn parse(&self, url: &str) -> Result<Target, TransportError> {
        let mut last = match self.0.lock() {
            Ok(last) => last,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((cached, target)) = last.as_ref() {
            if cached == url {
                return Ok(target.clone());
            }
        }
        let target = parse_target(url)?;
        *last = Some((url.to_owned(), target.clone()));
        Ok(target)
    }
}

/// Parses and checks a request URL: an `http` or `https` scheme and a host.
fn parse_target(url: &str) -> Result<Target, TransportError> {
    let invalid = |reason: String| TransportError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
    let default_port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        Some(other) => return Err(invalid(format!("unsupported scheme `{other}`"))),
        None => return Err(invalid("missing scheme (http:// or https://)".into())),
    };
    let host = match uri.host() {
        Some(host) if !host.is_empty() => host,
        _ => return Err(invalid("missing host".into())),
    };
    let host = match uri.port_u16().filter(|port| *port != default_port) {
        Some(port) => HeaderValue::from_str(&format!("{host}:{port}")),
        None => HeaderValue::from_str(host),
    }
    .map_err(|_| invalid("the host is not a valid header value".into()))?;
    Ok(Target {
        plain_http: default_port == 80,
        uri,
        host,
    })
}

/// Maps a client error to the transport error it stands for.
fn classify(error: &hyper_util::client::legacy::Error) -> TransportError {
    let message = chain(error);
    if out_of_descriptors(error) {
        TransportError::ClientResources(message)
    } else if is_tls(error) {
        TransportError::Tls(message)
    } else if error.is_connect() {
        TransportError::Connect(message)
    } else {
        TransportError::Disconnected(message)
    }
}

/// True when the process or the system ran out of file descriptors (`EMFILE`, `ENFILE`:
/// 24 and 23 on Linux, macOS and the BSDs) somewhere in the chain.
fn out_of_descriptors(error: &(dyn std::error::Error + 'static)) -> bool {
    const ENFILE: i32 = 23;
    const EMFILE: i32 = 24;
    causes(error).any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|code| code == EMFILE || code == ENFILE)
    })
}

/// True when a rustls error is somewhere in the chain.
fn is_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    causes(error).any(<dyn std::error::Error + 'static>::is::<rustls::Error>)
}

/// The error and its causes, `outer: inner: innermost`, without repeating a cause its
/// parent's message already shows.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = String::new();
    for cause in causes(error) {
        let text = cause.to_string();
        if !message.contains(&text) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
    }
    message
}

/// The error followed by its causes. `io::Error::source` skips the error an `io::Error`
/// wraps (hyper-rustls wraps rustls errors twice), so wrapped errors are visited too.
fn causes<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(error), |current| {
        match current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => current.source(),
        }
    })
}

mod boxed_tls;
mod reader;
mod traced;
mod wire;

#[cfg(test)]
mod tests;
