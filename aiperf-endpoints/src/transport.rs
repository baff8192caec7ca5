//! [`HttpTransport`]: the [`Transport`] over pooled keep-alive connections, plain or TLS
//! (rustls): HTTP/1.1 on connections of its own ([`h1`]), or through hyper when HTTP/2
//! may be negotiated.
//!
//! The transport stamps and collects; it never parses a body. `started_at` is taken
//! immediately before a connection is taken from the pool or opened (so connection set-up
//! counts towards time to first token, as in the Python AIPerf), `head_at` when the
//! response head arrives, and every body chunk with the arrival of the read that brought
//! it, before its bytes are looked at. Failures become a [`TransportError`] in
//! [`RawExchange::error`]; `send` never fails.
//!
//! A server may close an idle keep-alive connection at the very moment a request is
//! written to it (llama.cpp's `llama-server` closes every connection about 0.14 ms after a
//! streamed response while still advertising `Keep-Alive`). A connection found closed when
//! it is taken from the pool is dropped; for the race that check cannot see, a request
//! whose *reused* connection closed before any response byte arrived is sent once more on
//! a fresh connection ([`RawExchange::retries`]). Nothing is retried once a response byte
//! arrived, nor after a failure on a new connection: those are the server's errors to
//! report.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use aiperf_core::transport::BoxFuture;
use aiperf_core::{
    BodyChunks, HttpRequest, HttpTrace, RawExchange, SendControl, Transport, TransportError,
};
use http::header::HeaderValue;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;

pub use crate::tls::TransportBuildError;
use crate::tls::{client_config, TlsOptions};
use boxed_tls::BoxTls;
use connections::Connections;
use h1::{Connection, Event, Reuse};
use hyper_client::HyperClients;
pub use reader::ReadLateness;
use reader::SocketReader;
use traced::{ConnectTiming, TimedConnector};
use wire::{WireClock, WireConnector};

/// The most body bytes one response may hold (64 MiB): far above any real completion,
/// embedding batch or generated image, and low enough that a server sending an endless
/// body cannot exhaust the client's memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

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
    client: Client,
    settings: HttpTransportBuilder,
    uris: UriCache,
    /// The socket reader, shared with the connector, for its lateness counts.
    reader: Option<Arc<SocketReader>>,
}

/// What carries the requests.
enum Client {
    /// HTTP/1.1 on the transport's own connections (the default).
    Http1 {
        connector: Connector,
        connections: Connections,
    },
    /// hyper-util's client, when HTTP/2 may be negotiated (boxed: the clients are large
    /// and every request matches on this).
    Hyper(Box<HyperClients>),
}

type Connector = TimedConnector<BoxTls<HttpsConnector<WireConnector>>>;

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

    /// Read every connection on threads of their own (two; one on a single CPU), as soon
    /// as its bytes arrive (default on). Each read then carries its own arrival stamp
    /// however busy the runtime sending the requests is; without it, a runtime that gets
    /// round to a socket late reads the server's writes waiting there at once, and their
    /// frames share the last one's stamp (TTFT and ITL off by that delay). The threads
    /// start with the first connection and end with the transport. Off: the sending
    /// runtime reads its sockets itself, with fewer threads and no hand-over between
    /// threads (see docs/metrics.md, "Where stamps come from", for what each costs).
    #[must_use]
    pub fn socket_reader(mut self, enabled: bool) -> Self {
        self.socket_reader = enabled;
        self
    }

    /// Whether the socket reader's threads ask the kernel for a higher priority (nice
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
        let tcp = WireConnector::new(tcp, reader.clone());
        let connector = TimedConnector::new(BoxTls::new(if self.http2 {
            https.enable_http2().wrap_connector(tcp)
        } else {
            https.wrap_connector(tcp)
        }));
        let client = if self.http2 {
            Client::Hyper(Box::new(HyperClients::new(connector, &self)))
        } else {
            Client::Http1 {
                connector,
                connections: Connections::new(
                    self.pool_max_idle_per_host,
                    self.pool_idle_timeout,
                    self.sticky_sessions,
                ),
            }
        };
        Ok(HttpTransport {
            client,
            settings: self,
            uris: UriCache::default(),
            reader,
        })
    }
}

impl HttpTransport {
    /// A builder with the defaults: pooled keep-alive, no connect timeout, HTTP/1.1,
    /// bundled and platform roots.
    pub fn builder() -> HttpTransportBuilder {
        HttpTransportBuilder::default()
    }

    /// How late the socket reader read response bytes since the last call (all zero
    /// without a reader, or before its first connection); the counts start again from
    /// zero. A run takes them before and after it.
    pub fn take_read_lateness(&self) -> ReadLateness {
        self.reader
            .as_ref()
            .map(|reader| reader.take_lateness())
            .unwrap_or_default()
    }

    /// Sends one request (once more on a fresh connection if a reused one closed before
    /// answering).
    async fn exchange(&self, request: HttpRequest, mut control: SendControl) -> RawExchange {
        let first = self.attempt(&request, &mut control, false).await;
        let exchange = match first {
            Attempt::Done(exchange) => exchange,
            Attempt::ReusedConnectionClosed(first) => {
                tracing::debug!(
                    url = %request.url,
                    error = ?first.error,
                    "a reused connection closed before any response byte; \
                     sending again on a fresh connection"
                );
                // Boxed: rarely needed, inline it would take its room in every exchange's
                // state for the whole stream.
                let attempt = Box::pin(self.attempt(&request, &mut control, true)).await;
                RawExchange {
                    retries: 1,
                    ..attempt.into_exchange()
                }
            }
        };
        if let Client::Hyper(hyper) = &self.client {
            hyper.end_session(control.session.as_ref(), exchange.error.is_some());
        }
        exchange
    }

    /// One send, on a new connection when `fresh`. Stamps start here, so a request sent
    /// again is measured from its second send.
    async fn attempt(
        &self,
        request: &HttpRequest,
        control: &mut SendControl,
        fresh: bool,
    ) -> Attempt {
        match &self.client {
            Client::Http1 {
                connector,
                connections,
            } => {
                self.exchange_http1(connector, connections, request, control, fresh)
                    .await
            }
            Client::Hyper(hyper) => hyper.exchange(&self.uris, request, control, fresh).await,
        }
    }

    /// Sends one request over HTTP/1.1 on a kept connection (unless `fresh`) or a new one,
    /// and keeps the connection for the next request when the response ended cleanly.
    async fn exchange_http1(
        &self,
        connector: &Connector,
        connections: &Connections,
        request: &HttpRequest,
        control: &mut SendControl,
        fresh: bool,
    ) -> Attempt {
        let target = match self.uris.parse(&request.url) {
            Ok(target) => target,
            Err(error) => return Attempt::Done(failed_before_sending(error)),
        };
        let head = match h1::request_head(request, &target) {
            Ok(head) => head,
            Err(error) => return Attempt::Done(failed_before_sending(error)),
        };
        let started_at = Instant::now();
        let deadline = Deadline::of(started_at, request, control);
        let mut exchange = started(started_at);
        let owner = connections.owner(control.session.as_ref());
        let mut sink = BodySink::new(
            self.settings.max_response_bytes,
            &mut control.first_chunk,
            control.chunk_tap.as_ref(),
        );
        let request_bytes = (head.len() + request.body.len()) as u64;
        let sending = async {
            let kept = if fresh {
                None
            } else {
                connections.take(&target.origin, owner)
            };
            let reused = kept.is_some();
            let mut connection = match kept {
                Some(connection) => connection,
                None => Connection::open(connector, &target)
                    .await
                    .map_err(|error| (error, false))?,
            };
            if let Err(error) = connection.write_request(&head, &request.body).await {
                return Err((TransportError::Disconnected(chain(&error)), reused));
            }
            let (timing, wire) = (connection.timing(), connection.wire().cloned());
            let read = connection
                .read_response(started_at, |event| match event {
                    Event::Head(head) => {
                        stamp_head(
                            &mut exchange,
                            head.at,
                            wire.as_ref(),
                            Some(timing),
                            request_bytes,
                            head.bytes as u64,
                        );
                        take_head(&mut exchange, &head);
                        Ok(())
                    }
                    Event::Data(at, bytes) => sink.push(&mut exchange, at, bytes),
                })
                .await;
            match read {
                Ok(Reuse::Yes) => {
                    connections.put(&target.origin, owner, connection);
                    Ok(())
                }
                Ok(Reuse::No) => Ok(()),
                Err(failure) => {
                    let retry = reused && failure.before_response();
                    Err((failure.into_error(), retry))
                }
            }
        };
        match within(deadline.as_ref(), sending).await {
            Ok(Ok(())) => Attempt::Done(finish(exchange, None)),
            Ok(Err((error, retry))) => {
                tracing::debug!(url = %request.url, %error, retry, "request failed");
                let exchange = finish(exchange, Some(error));
                if retry {
                    Attempt::ReusedConnectionClosed(exchange)
                } else {
                    Attempt::Done(exchange)
                }
            }
            Err(timeout) => Attempt::Done(finish(exchange, Some(timeout))),
        }
    }
}

/// The status, headers (names in lower case, values converted lossily to text) and
/// content type of an HTTP/1 response head.
fn take_head(exchange: &mut RawExchange, head: &h1::Head<'_>) {
    exchange.status = Some(head.status);
    exchange.headers = head
        .headers
        .iter()
        .map(|header| {
            (
                header.name.to_ascii_lowercase(),
                String::from_utf8_lossy(header.value).into_owned(),
            )
        })
        .collect();
    exchange.content_type = head
        .headers
        .iter()
        .find(|header| header.name.eq_ignore_ascii_case("content-type"))
        .and_then(|header| std::str::from_utf8(header.value).ok())
        .map(str::to_owned);
}

/// Stamps the head's arrival and what the connection layer saw. On a reused connection
/// the exchange starts when the request's last byte was written: the server starts then,
/// not when a busy runtime got round to writing it (a new connection's set-up still
/// counts, as in the Python AIPerf).
fn stamp_head(
    exchange: &mut RawExchange,
    head_at: Instant,
    wire: Option<&WireClock>,
    connection: Option<ConnectTiming>,
    request_bytes: u64,
    response_head_bytes: u64,
) {
    exchange.head_at = Some(head_at);
    let started_at = exchange.started_at;
    let written = wire
        .and_then(WireClock::written_at)
        .filter(|written| *written >= started_at);
    let connection_reused = connection.is_some_and(|c| c.connected <= started_at);
    // The last byte was written before any answer arrived: a write stamp after the head's
    // arrival was taken late (the thread lost the CPU after the write), and is not used.
    let request_sent_at = written.map(|written| written.min(head_at));
    if connection_reused {
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
        response_head_bytes,
    });
}

/// Where a response's body goes: each chunk stamped into the exchange, a copy to the
/// caller's tap, the first one signalled, all within the response limit.
struct BodySink<'a> {
    limit: u64,
    bytes: u64,
    first_chunk: &'a mut Option<Arc<Notify>>,
    tap: Option<&'a UnboundedSender<bytes::Bytes>>,
}

impl<'a> BodySink<'a> {
    fn new(
        limit: u64,
        first_chunk: &'a mut Option<Arc<Notify>>,
        tap: Option<&'a UnboundedSender<bytes::Bytes>>,
    ) -> Self {
        Self {
            limit,
            bytes: 0,
            first_chunk,
            tap,
        }
    }

    /// Takes one chunk read at `at`; past the limit, drops everything read and fails.
    fn push(
        &mut self,
        exchange: &mut RawExchange,
        at: Instant,
        bytes: &[u8],
    ) -> Result<(), TransportError> {
        self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        if self.bytes > self.limit {
            // Nothing of it can be measured; holding it until the record is processed
            // would cost the memory the limit protects.
            exchange.chunks.clear();
            return Err(TransportError::ResponseTooLarge { limit: self.limit });
        }
        if bytes.is_empty() {
            return Ok(());
        }
        exchange.chunks.push(at, bytes);
        if let Some(tap) = self.tap {
            // The reader may be gone; the exchange keeps the chunk.
            let _ = tap.send(bytes::Bytes::copy_from_slice(bytes));
        }
        if let Some(notify) = self.first_chunk.take() {
            notify.notify_one();
        }
        Ok(())
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

    /// The request's timeout or the client's cancellation, whichever comes first.
    fn of(started_at: Instant, request: &HttpRequest, control: &SendControl) -> Option<Deadline> {
        Deadline::earliest(
            Deadline::after(started_at, request.timeout, TransportError::Timeout),
            Deadline::after(
                started_at,
                control.cancel_after,
                TransportError::CancelledByClient,
            ),
        )
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

/// An exchange about to be sent at `started_at`.
fn started(started_at: Instant) -> RawExchange {
    RawExchange {
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
    }
}

/// An exchange that failed before anything was sent.
fn failed_before_sending(error: TransportError) -> RawExchange {
    finish(started(Instant::now()), Some(error))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
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
    /// `scheme://host[:port]`: which kept connections can carry the request.
    origin: Arc<str>,
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
    let scheme = if default_port == 80 { "http" } else { "https" };
    let origin = String::from_utf8_lossy(host.as_bytes());
    Ok(Target {
        plain_http: default_port == 80,
        origin: format!("{scheme}://{origin}").into(),
        uri,
        host,
    })
}

/// The transport error a failure to open a connection stands for.
fn connect_error(error: &(dyn std::error::Error + 'static)) -> TransportError {
    let message = chain(error);
    if out_of_descriptors(error) {
        TransportError::ClientResources(message)
    } else if is_tls(error) {
        TransportError::Tls(message)
    } else {
        TransportError::Connect(message)
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
mod connections;
mod h1;
mod hyper_client;
mod reader;
mod traced;
mod wire;

#[cfg(test)]
mod tests;
