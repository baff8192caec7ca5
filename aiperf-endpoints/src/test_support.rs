//! Helpers for the endpoint tests: inputs and recorded exchanges.

use std::time::{Duration, Instant};

use aiperf_core::{BuiltRequest, Chunk, RawExchange, RequestInput, TransportError, Turn};

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
                bytes: text.to_string().into(),
            })
            .collect(),
        ended_at: base + Duration::from_secs(1),
        error: None,
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
        ..exchange(200, None, &[])
    }
}

/// The stamp of chunk `i`.
pub(crate) fn at(base: Instant, i: usize) -> Instant {
    base + Duration::from_millis(i as u64)
}
