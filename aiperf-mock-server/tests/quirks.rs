//! Real servers' behaviours, each switched on alone: exact bytes of what changes.

#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{MockConfig, MockServer, Quirks};
use common::*;
use serde_json::{json, Value};

async fn with(quirks: Quirks) -> MockServer {
    MockServer::start(MockConfig {
        quirks,
        ..MockConfig::fast()
    })
    .await
    .unwrap()
}

fn stream_request(path: &str, include_usage: bool) -> Value {
    let mut body = if path.ends_with("/chat/completions") {
        json!({"messages": [{"role": "user", "content": "a b c"}]})
    } else {
        json!({"prompt": "a b c"})
    };
    body["max_tokens"] = json!(3);
    body["stream"] = json!(true);
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// The usage of every request here (compared as JSON: its key order depends on whether
/// serde_json's `preserve_order` is on in this build).
fn usage() -> Value {
    json!({"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6})
}

#[tokio::test]
async fn no_done_ends_the_stream_after_the_last_event() {
    let s = with(Quirks {
        no_done: true,
        ..Quirks::default()
    })
    .await;
    for path in ["/v1/chat/completions", "/v1/completions"] {
        let r = post(s.addr(), path, &stream_request(path, true)).await;
        assert_eq!(r.status, 200);
        let text = r.text();
        assert!(!text.contains("[DONE]"), "{text}");
        // The usage chunk asked for is still the last event.
        let last: Value = serde_json::from_str(&r.events().pop().unwrap().data).unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"], usage());
    }
    s.shutdown().await;
}

#[tokio::test]
async fn usage_in_finish_chunk_is_sent_even_when_not_asked_for() {
    let s = with(Quirks {
        usage_in_finish_chunk: true,
        ..Quirks::default()
    })
    .await;
    for include_usage in [false, true] {
        let path = "/v1/chat/completions";
        let r = post(s.addr(), path, &stream_request(path, include_usage)).await;
        let events = r.events();
        // role chunk, 3 tokens, [DONE]: no separate usage chunk.
        assert_eq!(events.len(), 5, "{}", r.text());
        assert_eq!(events[4].data, "[DONE]");
        let finish: Value = serde_json::from_str(&events[3].data).unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], "length");
        assert_eq!(finish["usage"], usage(), "{finish}");
        assert!(events[..3].iter().all(|e| !e.data.contains("usage")));
    }
    let path = "/v1/completions";
    let r = post(s.addr(), path, &stream_request(path, false)).await;
    let finish: Value = serde_json::from_str(&r.events()[2].data).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    assert_eq!(finish["usage"], usage());
    s.shutdown().await;
}

#[tokio::test]
async fn ping_comments_open_the_stream_and_precede_every_event() {
    let s = with(Quirks {
        ping_comments: true,
        ..Quirks::default()
    })
    .await;
    let path = "/v1/completions";
    let r = post(s.addr(), path, &stream_request(path, false)).await;
    let text = r.text();
    let first = r.frames[0].1.clone();
    let first = std::str::from_utf8(&first).unwrap();
    assert!(first.starts_with(": ping - "), "{first}");
    assert!(first.ends_with("\r\n\r\n"), "{first:?}");
    assert_eq!(text.matches(": ping - ").count(), 1 + 3, "{text}");
    let events: Vec<&str> = text
        .split("\r\n\r\n")
        .flat_map(|part| part.split("\n\n"))
        .filter(|part| !part.is_empty())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| if e.starts_with(':') { "ping" } else { "data" })
        .collect();
    assert_eq!(
        kinds,
        ["ping", "ping", "data", "ping", "data", "ping", "data", "data"]
    );
    s.shutdown().await;
}

#[tokio::test]
async fn string_prompt_only_rejects_a_list_with_fastapi_detail() {
    let s = with(Quirks::transformers_serve()).await;
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": ["a b"], "max_tokens": 2}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.text(), r#"{"detail":"prompt must be a string."}"#);
    let r = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": "a b", "max_tokens": 2}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["usage"]["completion_tokens"], 2);
    s.shutdown().await;
}

#[tokio::test]
async fn detail_errors_reshape_every_error_body() {
    let s = with(Quirks {
        detail_errors: true,
        ..Quirks::default()
    })
    .await;
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [], "max_tokens": 0}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.text(), r#"{"detail":"max_tokens must be at least 1"}"#);
    let r = get(s.addr(), "/nowhere").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.text(), r#"{"detail":"No route for GET /nowhere"}"#);
    s.shutdown().await;
}
