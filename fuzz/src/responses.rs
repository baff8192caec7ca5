//! AFL++ target: every endpoint's response parsing (`Endpoint::parse` on a `RawExchange`),
//! streamed (SSE) and whole bodies, 2xx and error statuses.
//!
//! Input: byte 0 picks the endpoint (every type `endpoint_for` builds, `template` both
//! with its default fields and with a `response_field`); byte 1 picks the content type
//! (bits 0–1: `text/event-stream`, `application/json`, none, `text/plain`), the status
//! (bits 2–3: 200, 200, 429, 500) and whether a transport error ended the exchange
//! (bit 4); byte 2 picks the chunking (see [`aiperf_fuzz::split`]); the rest is the body.
//! Asserts, besides "never panics": the parse does not depend on how the body was split
//! into reads (all reads share one stamp). With `AIPERF_FUZZ_SHOW=1` set, the binary
//! prints each parse.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::{Chunk, Endpoint, RawExchange, TransportError};
use aiperf_endpoints::{endpoint_for, EndpointOptions, SUPPORTED_ENDPOINT_TYPES};
use serde_json::{Map, Value};

const CONTENT_TYPES: [Option<&str>; 4] = [
    Some("text/event-stream; charset=utf-8"),
    Some("application/json"),
    None,
    Some("text/plain"),
];
const STATUSES: [u16; 4] = [200, 200, 429, 500];

/// Every endpoint, built once.
fn endpoints() -> Vec<Arc<dyn Endpoint>> {
    let mut endpoints: Vec<Arc<dyn Endpoint>> = SUPPORTED_ENDPOINT_TYPES
        .iter()
        .filter(|name| **name != "template")
        .map(|name| endpoint_for(name, EndpointOptions::default()).expect("a supported type"))
        .collect();
    for field in [None, Some("choices[0].text"), Some("/output/0/content")] {
        let mut extra_inputs = Map::new();
        extra_inputs.insert("payload_template".into(), Value::from("{\"p\": 1}"));
        if let Some(field) = field {
            extra_inputs.insert("response_field".into(), Value::from(field));
        }
        let options = EndpointOptions {
            extra_inputs,
            ..EndpointOptions::default()
        };
        endpoints.push(endpoint_for("template", options).expect("templates feature"));
    }
    endpoints
}

fn exchange(flags: u8, pieces: &[&[u8]], at: Instant) -> RawExchange {
    let content_type = CONTENT_TYPES[usize::from(flags & 3)];
    RawExchange {
        started_at: at,
        head_at: Some(at),
        status: Some(STATUSES[usize::from((flags >> 2) & 3)]),
        content_type: content_type.map(str::to_owned),
        headers: content_type
            .map(|value| vec![("content-type".to_owned(), value.to_owned())])
            .unwrap_or_default(),
        chunks: pieces
            .iter()
            .map(|piece| Chunk { at, bytes: piece })
            .collect(),
        ended_at: at,
        error: (flags & 16 != 0).then(|| TransportError::Timeout(Duration::from_secs(1))),
        trace: None,
        retries: 0,
    }
}

fn main() {
    // Parsing is a pure function of the exchange: nothing a panic could leave half-done.
    let endpoints = std::panic::AssertUnwindSafe(endpoints());
    let at = Instant::now();
    let show = std::env::var_os("AIPERF_FUZZ_SHOW").is_some();
    afl::fuzz!(|data: &[u8]| {
        let mut body = data;
        let (Some(which), Some(flags), Some(seed)) = (
            aiperf_fuzz::take_byte(&mut body),
            aiperf_fuzz::take_byte(&mut body),
            aiperf_fuzz::take_byte(&mut body),
        ) else {
            return;
        };
        let endpoint = &endpoints[usize::from(which) % endpoints.len()];
        let whole = endpoint.parse(&exchange(flags, &[body], at));
        if show {
            println!("{}: {whole:?}", endpoint.info().name);
        }
        let pieces = aiperf_fuzz::split(body, seed);
        let chunked = endpoint.parse(&exchange(flags, &pieces, at));
        assert_eq!(
            whole,
            chunked,
            "{}: chunking changed the parse: {pieces:?}",
            endpoint.info().name
        );
    });
}
