//! Requests through hyper-util's pooled client: the transport's path when HTTP/2 may be
//! negotiated (`--http2`), since [`super::h1`] speaks HTTP/1.1 only.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use aiperf_core::{HttpMethod, HttpRequest, SendControl, SessionKey, TransportError};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::traced::{request_size, response_head_size, ConnectTiming};
use super::wire::{Arrivals, WireClock};
use super::{
    chain, connect_error, failed_before_sending, finish, lock, stamp_head, started, within,
    Attempt, BodySink, Connector, Deadline, HttpTransportBuilder, Target, UriCache,
};

/// The most one HTTP/1 connection's read buffer holds (hyper's minimum; its default is
/// ~400 KB). hyper grows the buffer whenever a read fills it and keeps it for the
/// connection's life; every frame is copied out of it at once, so a bigger buffer only
/// saves read calls. It also bounds a response head: heads over 8 KiB fail.
const READ_BUFFER_BYTES: usize = 8 * 1024;

type HyperClient = Client<Connector, Full<Bytes>>;

/// hyper-util clients: the shared pool, one that keeps no idle connection (for a request
/// sent again after a reused connection closed under it), and with sticky sessions one
/// per conversation, by correlation id, dropped after its last turn or a failure.
pub(crate) struct HyperClients {
    client: HyperClient,
    fresh: HyperClient,
    sessions: Option<Mutex<HashMap<String, HyperClient>>>,
    connector: Connector,
    settings: HttpTransportBuilder,
}

impl HyperClients {
    pub(crate) fn new(connector: Connector, settings: &HttpTransportBuilder) -> Self {
        Self {
            client: client(connector.clone(), settings, settings.pool_max_idle_per_host),
            fresh: client(connector.clone(), settings, 0),
            sessions: settings.sticky_sessions.then(Mutex::default),
            connector,
            settings: settings.clone(),
        }
    }

    /// With sticky sessions, the conversation's own client (made for its first turn);
    /// `None`: the request uses the shared pool, borrowed rather than cloned.
    fn session_client(&self, session: Option<&SessionKey>) -> Option<HyperClient> {
        let (Some(sessions), Some(key)) = (&self.sessions, session) else {
            return None;
        };
        Some(
            lock(sessions)
                .entry(key.id.clone())
                .or_insert_with(|| client(self.connector.clone(), &self.settings, 1))
                .clone(),
        )
    }

    /// Closes a conversation's connection after its last turn or a failure.
    pub(crate) fn end_session(&self, session: Option<&SessionKey>, failed: bool) {
        if let (Some(sessions), Some(key)) = (&self.sessions, session) {
            if key.last || failed {
                lock(sessions).remove(&key.id);
            }
        }
    }

    /// Sends one request, on a client that keeps no idle connection when `fresh`.
    pub(crate) async fn exchange(
        &self,
        uris: &UriCache,
        request: &HttpRequest,
        control: &mut SendControl,
        fresh: bool,
    ) -> Attempt {
        let own_client = if fresh {
            None
        } else {
            self.session_client(control.session.as_ref())
        };
        let client = match (&own_client, fresh) {
            (_, true) => &self.fresh,
            (Some(own), false) => own,
            (None, false) => &self.client,
        };
        let http_request = match to_hyper(request, uris, !self.settings.http2) {
            Ok(converted) => converted,
            Err(error) => return Attempt::Done(failed_before_sending(error)),
        };
        let request_bytes = request_size(&http_request, request.body.len());
        let started_at = Instant::now();
        let deadline = Deadline::of(started_at, request, control);
        let mut exchange = started(started_at);
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
        let mut arrivals = Arrivals::new(wire.clone(), started_at);
        stamp_head(
            &mut exchange,
            arrivals.next(),
            wire.as_ref(),
            head.extensions.get::<ConnectTiming>().copied(),
            request_bytes,
            response_head_size(&head),
        );
        exchange.status = Some(head.status.as_u16());
        exchange.content_type = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        exchange.headers = head
            .headers
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
        let mut sink = BodySink::new(
            self.settings.max_response_bytes,
            &mut control.first_chunk,
            control.chunk_tap.as_ref(),
        );
        let error = loop {
            match within(deadline.as_ref(), body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    let at = arrivals.next();
                    if let Ok(bytes) = frame.into_data() {
                        if let Err(error) = sink.push(&mut exchange, at, &bytes) {
                            break Some(error);
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

fn client(connector: Connector, settings: &HttpTransportBuilder, max_idle: usize) -> HyperClient {
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_max_idle_per_host(max_idle)
        .pool_idle_timeout(settings.pool_idle_timeout)
        .http1_max_buf_size(READ_BUFFER_BYTES)
        .build(connector)
}

/// True when the request failed on a connection opened before it started. hyper-util
/// attaches the connection's metadata to every failure after the pool handed one out (a
/// connection that failed to open leaves none).
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

/// Maps a client error to the transport error it stands for.
fn classify(error: &hyper_util::client::legacy::Error) -> TransportError {
    if error.is_connect() {
        connect_error(error)
    } else {
        match connect_error(error) {
            // Not a failure to connect, whatever the chain holds otherwise.
            TransportError::Connect(message) => TransportError::Disconnected(message),
            other => other,
        }
    }
}

/// Converts the request, checking the URL and headers (header values never appear in
/// errors: they may hold secrets). With `http1_host`, the `Host` header is added here from
/// the cache (unless the request has one), as hyper-util would add it to an HTTP/1 request
/// by formatting it anew each time.
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
    let target: Target = uris.parse(&request.url)?;
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
