//! The fault matrix: one run against the mock with every fault kind at once (a slowed
//! head outlasts the request timeout). Each error type the client reports must equal the
//! mock's own count of the fault behind it, and the requests that succeeded must carry
//! exactly the lengths and timings they would have had without the faults around them.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use aiperf_mock_server::{FaultConfig, FaultKind, MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl};
use serde_json::Value;

const REQUESTS: u64 = 240;
const OSL: u64 = 12;
/// Stalls: far longer than any ordinary gap on a loaded machine.
const DELAY_MS: f64 = 1500.0;
/// A gap this long is a stall. (A stall shifts the mock's schedule by `DELAY_MS`, but the
/// gap the client sees can be a little shorter when the chunk before it was late.)
const DELAYED_MS: f64 = DELAY_MS / 2.0;
/// Slowed heads come after the request timeout (3 s): each is a `TimeoutError`.
const SLOW_HEAD_MS: f64 = 4000.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_at_once_is_counted_exactly_and_spares_the_good_requests() {
    let server = MockServer::start(MockConfig {
        random_seed: Some(3),
        faults: FaultConfig {
            error_rate: 5.0,
            rate_limit_rate: 5.0,
            unavailable_rate: 5.0,
            drop_rate: 5.0,
            malformed_chunk_rate: 5.0,
            sse_error_rate: 5.0,
            stall_rate: 5.0,
            stall_ms: DELAY_MS,
            slow_headers_rate: 5.0,
            slow_headers_ms: SLOW_HEAD_MS,
            oversized_rate: 5.0,
            oversized_bytes: 2 * 1024 * 1024,
            ..FaultConfig::default()
        },
        ..MockConfig::with_timing(20.0, 2.0)
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency 16 --request-count {REQUESTS} \
         --isl 32 --osl {OSL} --extra-inputs ignore_eos:true --max-response-mib 1 \
         --request-timeout-seconds 3",
        url = server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    let output = profile(argv).await;
    assert_exit(&output, 0);

    let stats = server.stats();
    let injected = |kind: FaultKind| stats.faults_of(kind);
    for kind in FaultKind::ALL {
        assert!(injected(kind) > 0, "the seed injects no {kind:?}");
    }
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let mut reported: Vec<(String, u64)> = summary["error_summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["error_details"]["type"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    reported.sort();
    let mut expected: Vec<(String, u64)> = [
        ("Internal Server Error", FaultKind::Error),
        ("Too Many Requests", FaultKind::RateLimit),
        ("Service Unavailable", FaultKind::Unavailable),
        ("ServerDisconnectedError", FaultKind::Drop),
        ("JSONDecodeError", FaultKind::Malformed),
        ("SSEResponseError", FaultKind::SseError),
        ("ResponseTooLargeError", FaultKind::Oversized),
        ("TimeoutError", FaultKind::SlowHeaders),
    ]
    .into_iter()
    .map(|(kind, fault)| (kind.to_owned(), injected(fault)))
    .collect();
    expected.sort();
    assert_eq!(reported, expected);

    // Stalls delay a request without failing it.
    let failed: u64 = expected.iter().map(|(_, n)| n).sum();
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len() as u64, REQUESTS);
    let good: Vec<&Value> = records
        .iter()
        .filter(|r| r.get("error").is_none())
        .collect();
    assert_eq!(good.len() as u64, REQUESTS - failed);
    let metric = |r: &Value, tag: &str| r["metrics"][tag]["value"].clone();
    for record in &good {
        assert_eq!(metric(record, "output_sequence_length"), OSL, "{record}");
        assert_eq!(metric(record, "input_sequence_length"), 32, "{record}");
    }
    // Exactly the stalls show as a long gap between two chunks, and nothing else is slow:
    // the first token at 20 ms plus the hop (and what a loaded machine adds).
    let ttft_ms = |r: &&Value| metric(r, "time_to_first_token").as_f64().unwrap();
    let longest_gap_ms = |r: &&Value| {
        metric(r, "inter_chunk_latency")
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let stalls = good
        .iter()
        .filter(|r| longest_gap_ms(r) >= DELAYED_MS)
        .count() as u64;
    assert_eq!(stalls, injected(FaultKind::Stall));
    let mut ttfts: Vec<f64> = good.iter().map(ttft_ms).collect();
    ttfts.sort_by(f64::total_cmp);
    assert!(ttfts[ttfts.len() - 1] < DELAYED_MS, "{ttfts:?}");
    let median = ttfts[ttfts.len() / 2];
    assert!((20.0..150.0).contains(&median), "median TTFT {median} ms");
}
