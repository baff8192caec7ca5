//! Fault injection (seeded, exact), API keys, request recording.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use aiperf_mock_server::{decide_fault, FaultConfig, FaultKind, MockConfig, MockServer};
use common::*;
use hyper::Method;
use serde_json::{json, Value};

const STREAM: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}"#;

fn server_cfg(faults: FaultConfig, seed: u64) -> MockConfig {
    MockConfig {
        faults,
        random_seed: Some(seed),
        ..MockConfig::fast()
    }
}

/// What fault a streamed chat reply shows, judged from the client side only. Lateness is
/// judged only when `timed` (the server injects stalls or slow headers): on a loaded
/// machine a healthy reply can be late enough to look like one, by the client's delay.
fn observed(r: &Result<Reply, String>, timed: bool) -> Option<FaultKind> {
    let Ok(r) = r else {
        return Some(FaultKind::Drop);
    };
    match r.status.as_u16() {
        500 => return Some(FaultKind::Error),
        429 => return Some(FaultKind::RateLimit),
        503 => return Some(FaultKind::Unavailable),
        200 => {}
        s => panic!("unexpected status {s}"),
    }
    if r.error.is_some() {
        return Some(FaultKind::Drop);
    }
    if r.frames.iter().map(|(_, bytes)| bytes.len()).sum::<usize>() >= 32 * 1024 {
        return Some(FaultKind::Oversized);
    }
    let events = r.events();
    if events.iter().any(|e| e.event.as_deref() == Some("error")) {
        return Some(FaultKind::SseError);
    }
    if events
        .iter()
        .any(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
    {
        return Some(FaultKind::Malformed);
    }
    if !timed {
        return None;
    }
    if r.ms_since_sent(r.head_at) >= 25.0 {
        return Some(FaultKind::SlowHeaders);
    }
    if r.frames.windows(2).any(|w| dur_ms(w[1].0 - w[0].0) >= 25.0) {
        return Some(FaultKind::Stall);
    }
    None
}

async fn run_sequence(cfg: MockConfig, n: u64) -> (Vec<Option<FaultKind>>, MockServer) {
    let timed = cfg.faults.stall_rate > 0.0 || cfg.faults.slow_headers_rate > 0.0;
    let s = MockServer::start(cfg).await.unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM).await;
        out.push(observed(&r, timed));
    }
    (out, s)
}

fn with_rate(kind: FaultKind, rate: f64) -> FaultConfig {
    let mut f = FaultConfig {
        stall_ms: 40.0,
        slow_headers_ms: 40.0,
        oversized_bytes: 64 * 1024,
        ..FaultConfig::default()
    };
    match kind {
        FaultKind::Error => f.error_rate = rate,
        FaultKind::RateLimit => f.rate_limit_rate = rate,
        FaultKind::Unavailable => f.unavailable_rate = rate,
        FaultKind::Drop => f.drop_rate = rate,
        FaultKind::Malformed => f.malformed_chunk_rate = rate,
        FaultKind::SseError => f.sse_error_rate = rate,
        FaultKind::Stall => f.stall_rate = rate,
        FaultKind::SlowHeaders => f.slow_headers_rate = rate,
        FaultKind::Oversized => f.oversized_rate = rate,
    }
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_kind_happens_exactly_where_predicted() {
    for kind in FaultKind::ALL {
        let faults = with_rate(kind, 30.0);
        let n = 40;
        let (seen, s) = run_sequence(server_cfg(faults.clone(), 99), n).await;
        let predicted: Vec<Option<FaultKind>> =
            (0..n).map(|i| decide_fault(&faults, 99, i)).collect();
        assert_eq!(seen, predicted, "{kind:?}");
        let count = seen.iter().filter(|f| f.is_some()).count() as u64;
        assert!((4..=22).contains(&count), "{kind:?}: {count} of {n}");
        assert_eq!(
            s.stats().faults_of(kind),
            count,
            "{kind:?} counted in stats"
        );
        let m = parse_prometheus(&get(s.addr(), "/metrics").await.text());
        assert_eq!(
            sample(
                &m,
                &format!("aiperf_mock_faults_total{{kind=\"{}\"}}", kind.label())
            ) as u64,
            count
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_same_failures() {
    let faults = FaultConfig {
        error_rate: 25.0,
        ..FaultConfig::default()
    };
    let failing = |seen: &[Option<FaultKind>]| -> BTreeSet<usize> {
        seen.iter()
            .enumerate()
            .filter(|(_, f)| f.is_some())
            .map(|(i, _)| i)
            .collect()
    };
    let (a, _) = run_sequence(server_cfg(faults.clone(), 1234), 200).await;
    let (b, _) = run_sequence(server_cfg(faults.clone(), 1234), 200).await;
    let (c, _) = run_sequence(server_cfg(faults, 4321), 200).await;
    assert_eq!(failing(&a), failing(&b));
    assert_ne!(failing(&a), failing(&c));
    let n = failing(&a).len();
    assert!((30..=70).contains(&n), "{n} of 200 at 25 %");
    assert!(a.iter().flatten().all(|k| *k == FaultKind::Error));
}

#[tokio::test]
async fn status_faults_have_openai_error_bodies() {
    for (kind, status, ty) in [
        (FaultKind::Error, 500, "server_error"),
        (FaultKind::RateLimit, 429, "rate_limit_error"),
        (FaultKind::Unavailable, 503, "service_unavailable_error"),
    ] {
        let s = MockServer::start(server_cfg(with_rate(kind, 100.0), 1))
            .await
            .unwrap();
        let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
            .await
            .unwrap();
        assert_eq!(r.status, status);
        let e = &r.json()["error"];
        assert_eq!(e["type"], ty);
        assert_eq!(e["code"], status);
        assert!(e["message"].as_str().unwrap().contains("Injected"));
        if status != 500 {
            assert_eq!(r.headers["retry-after"], "1");
        }
        // non-inference routes are never faulted
        assert_eq!(get(s.addr(), "/health").await.status, 200);
        assert_eq!(get(s.addr(), "/v1/models").await.status, 200);
    }
}

#[tokio::test]
async fn drop_cuts_after_k_tokens() {
    let faults = FaultConfig {
        drop_rate: 100.0,
        drop_after_tokens: 7,
        ..FaultConfig::default()
    };
    let s = MockServer::start(server_cfg(faults, 1)).await.unwrap();
    let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.error.is_some(), "body must end with an error");
    let (content, _) = chat_content(&r);
    assert_eq!(words(&content), 7);
    assert!(!r.text().contains("[DONE]"));
    // non-streaming: the connection closes without a response
    let r = request(
        s.addr(),
        Method::POST,
        "/v1/chat/completions",
        &[],
        r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":3}"#,
    )
    .await;
    assert!(r.is_err() || r.unwrap().error.is_some());
}

#[tokio::test]
async fn sse_error_and_malformed_events() {
    let faults = FaultConfig {
        sse_error_rate: 100.0,
        drop_after_tokens: 4,
        ..FaultConfig::default()
    };
    let s = MockServer::start(server_cfg(faults, 1)).await.unwrap();
    let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
        .await
        .unwrap();
    let events = r.events();
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("error"));
    let e: Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(e["error"]["type"], "server_error");
    assert!(e["error"]["message"].is_string());
    assert_eq!(words(&chat_content(&r).0), 4);
    assert!(r.error.is_none(), "stream ends cleanly");

    let faults = FaultConfig {
        malformed_chunk_rate: 100.0,
        drop_after_tokens: 4,
        ..FaultConfig::default()
    };
    let s = MockServer::start(server_cfg(faults, 1)).await.unwrap();
    let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
        .await
        .unwrap();
    let events = r.events();
    let bad: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        bad,
        vec![5],
        "role chunk + 4 tokens, then the malformed event"
    );
    assert_eq!(words(&chat_content(&r).0), 12, "every token still sent");
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_pauses_then_continues_and_slow_headers_delay_the_head() {
    let faults = FaultConfig {
        stall_rate: 100.0,
        stall_ms: 400.0,
        drop_after_tokens: 3,
        ..FaultConfig::default()
    };
    let s = MockServer::start(server_cfg(faults, 1)).await.unwrap();
    let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
        .await
        .unwrap();
    assert_eq!(
        r.frames.len(),
        2,
        "fast mode: one frame before the stall, one after"
    );
    // One 400 ms stall, not none and not two. A loaded client may read the first frame
    // late (the gap shrinks) or the second late (it grows): 50 ms and 400 ms of room.
    let gap = dur_ms(r.frames[1].0 - r.frames[0].0);
    assert!((350.0..800.0).contains(&gap), "stall {gap:.1} ms");
    assert_eq!(words(&chat_content(&r).0), 12);
    assert!(r.text().ends_with("data: [DONE]\n\n"));

    let faults = FaultConfig {
        slow_headers_rate: 100.0,
        slow_headers_ms: 300.0,
        ..FaultConfig::default()
    };
    let s = MockServer::start(server_cfg(faults, 1)).await.unwrap();
    let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], STREAM)
        .await
        .unwrap();
    let head = r.ms_since_sent(r.head_at);
    assert!((300.0..600.0).contains(&head), "head after {head:.1} ms");
}

#[tokio::test]
async fn api_key_is_enforced_on_inference_routes_only() {
    let s = MockServer::start(MockConfig {
        api_key: Some("sekret".into()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let body = r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":2}"#;
    for headers in [
        vec![],
        vec![("authorization", "Bearer wrong")],
        vec![("authorization", "sekret")],
    ] {
        let r = request(
            s.addr(),
            Method::POST,
            "/v1/chat/completions",
            &headers,
            body,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 401, "{headers:?}");
        assert_eq!(r.json()["error"]["code"], 401);
        assert!(r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API key"));
    }
    let r = request(
        s.addr(),
        Method::POST,
        "/v1/chat/completions",
        &[("authorization", "Bearer sekret")],
        body,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let r = request(
        s.addr(),
        Method::POST,
        "/v1/embeddings",
        &[],
        r#"{"input":"x"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(get(s.addr(), "/health").await.status, 200);
    assert_eq!(get(s.addr(), "/metrics").await.status, 200);
    assert_eq!(get(s.addr(), "/v1/models").await.status, 200);
}

#[tokio::test]
async fn record_requests_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.jsonl");
    let s = MockServer::start(MockConfig {
        record_requests: Some(path.clone()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let bodies = [
        json!({"messages": [{"role": "user", "content": "first"}], "max_tokens": 1}),
        json!({"messages": [{"role": "user", "content": "second"}], "max_tokens": 2, "stream": true}),
    ];
    for b in &bodies {
        let r = request(
            s.addr(),
            Method::POST,
            "/v1/chat/completions",
            &[
                ("authorization", "Bearer abc"),
                ("x-api-key", "k"),
                ("x-custom", "keep"),
            ],
            &b.to_string(),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200);
    }
    request(s.addr(), Method::POST, "/v1/embeddings", &[], "not json")
        .await
        .unwrap();
    get(s.addr(), "/health").await; // not recorded
    s.shutdown().await;
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for (line, body) in lines.iter().zip(&bodies) {
        assert_eq!(line["method"], "POST");
        assert_eq!(line["path"], "/v1/chat/completions");
        assert_eq!(line["headers"]["authorization"], "***");
        assert_eq!(line["headers"]["x-api-key"], "***");
        assert_eq!(line["headers"]["x-custom"], "keep");
        assert_eq!(&line["body"], body);
        assert!(line["timestamp_ns"].as_u64().unwrap() > 0);
    }
    assert_eq!(lines[2]["path"], "/v1/embeddings");
    assert_eq!(lines[2]["body"], "not json");
    assert!(!text.contains("abc"));
}
