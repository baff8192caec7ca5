//! Helpers for the endpoint tests: inputs and recorded exchanges.

use std::time::{Duration, Instant};

use aiperf_core::{
    BuiltRequest, Chunk, Endpoint, HttpMethod, HttpRequest, ParsedExchange, RawExchange,
    RequestInput, Transport, TransportError, Turn,
};
use aiperf_mock_server::{MockConfig, MockServer};

use crate::{build_url, HttpTransport};

/// A request input for `turns` with model `m`.
pub(crate) fn input(turns: &[Turn], streaming: bool) -> RequestInput<'_> {
    RequestInput {
        model: "m",
        system_message: None,
        user_context_message: None,
        turns,
        streaming,
    }
}

/// The body as text.
pub(crate) fn body(request: &BuiltRequest) -> &str {
    std::str::from_utf8(&request.body).unwrap()
}

/// A recorded exchange whose chunk `i` arrived `i` ms after `base`.
pub(crate) fn exchange(status: u16, content_type: Option<&str>, chunks: &[&str]) -> RawExchange {
    let base = Instant::now();
    RawExchange {
        started_at: base,
        head_at: Some(base),
        status: Some(status),
        content_type: content_type.map(str::to_owned),
        headers: content_type
            .map(|value| vec![("content-type".to_string(), value.to_string())])
            .unwrap_or_default(),
        chunks: chunks
            .iter()
            .enumerate()
            .map(|(i, text)| Chunk {
                at: at(base, i),
                bytes: text.as_bytes(),
            })
            .collect(),
        ended_at: base + Duration::from_secs(1),
        error: None,
        trace: None,
        retries: 0,
    }
}

/// A streamed exchange (`text/event-stream`).
pub(crate) fn stream(chunks: &[&str]) -> RawExchange {
    exchange(200, Some("text/event-stream"), chunks)
}

/// A failed exchange without a response.
pub(crate) fn failed(error: TransportError) -> RawExchange {
    RawExchange {
        status: None,
        head_at: None,
        error: Some(error),
        trace: None,
        retries: 0,
        ..exchange(200, None, &[])
    }
}

/// The stamp of chunk `i`.
pub(crate) fn at(base: Instant, i: usize) -> Instant {
    base + Duration::from_millis(i as u64)
}

/// Builds a request for `input`, sends it to a fresh mock server at `path` (the endpoint's
/// default path when `None`) through [`HttpTransport`], and parses the answer.
pub(crate) async fn round_trip(
    endpoint: &dyn Endpoint,
    path: Option<&str>,
    input: &RequestInput<'_>,
) -> (RawExchange, ParsedExchange) {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let built = endpoint.build(input).unwrap();
    let request = HttpRequest {
        method: HttpMethod::Post,
        url: build_url(&server.url(), path, endpoint.info().default_path),
        headers: built.headers,
        body: built.body,
        timeout: Some(Duration::from_secs(10)),
    };
    let transport = HttpTransport::builder().build().unwrap();
    let exchange = transport.send(request).await;
    server.shutdown().await;
    let parsed = endpoint.parse(&exchange);
    (exchange, parsed)
}
