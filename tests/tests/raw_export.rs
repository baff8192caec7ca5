//! `--export-level raw`: `profile_export_raw.jsonl` against the in-process mock server.
//! One line per request of every phase, the exact payloads the mock received, the
//! streamed packets or whole bodies it sent, failures with their status, and no secret.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use aiperf_mock_server::{decide_fault, output_text, FaultConfig, MockConfig, MockServer};
use common::{args, assert_exit, profile, read_jsonl, recorded_body, recorded_header};
use serde_json::Value;

const API_KEY: &str = "sk-secret";

/// Runs `aiperf profile <line>` against `server` with the raw export and `--api-key`,
/// artifacts in `dir/out`; stops the server and returns the output, the raw lines and
/// the bodies the mock received by `X-Request-ID`.
async fn run_raw(
    server: MockServer,
    dir: &Path,
    line: &str,
) -> (Output, Vec<Value>, HashMap<String, Value>) {
    run_raw_argv(server, dir, args(line)).await
}

/// [`run_raw`] with arguments that may hold spaces.
async fn run_raw_argv(
    server: MockServer,
    dir: &Path,
    mut argv: Vec<String>,
) -> (Output, Vec<Value>, HashMap<String, Value>) {
    argv.extend(args(&format!(
        "--url {} --export-level raw --api-key {API_KEY} --no-server-metrics \
         --no-gpu-telemetry --artifact-dir {}",
        server.url(),
        dir.join("out").display()
    )));
    let output = profile(argv).await;
    server.shutdown().await;
    let raw_path = dir.join("out/profile_export_raw.jsonl");
    let raw = if raw_path.is_file() {
        read_jsonl(&raw_path)
    } else {
        Vec::new()
    };
    let sent = read_jsonl(&dir.join("requests.jsonl"))
        .iter()
        .map(|request| {
            let id = recorded_header(request, "x-request-id").unwrap().to_owned();
            (id, recorded_body(request))
        })
        .collect();
    (output, raw, sent)
}

/// A fast mock that requires the API key and records every request it receives.
fn mock_config(dir: &Path, faults: FaultConfig) -> MockConfig {
    MockConfig {
        api_key: Some(API_KEY.into()),
        record_requests: Some(dir.join("requests.jsonl")),
        random_seed: Some(17),
        faults,
        ..MockConfig::fast()
    }
}

/// Lines per phase: (warmup, profiling), checking each phase's `phase_index`.
fn count_phases(raw: &[Value]) -> (usize, usize) {
    let of = |phase: &str, index: u64| {
        raw.iter()
            .filter(|line| line["metadata"]["benchmark_phase"] == phase)
            .inspect(|line| assert_eq!(line["metadata"]["phase_index"], index, "{line}"))
            .count()
    };
    (of("warmup", 0), of("profiling", 1))
}

/// Checks what every line shares: the payload is what the mock received, the headers
/// sent are there with the key redacted.
fn check_request_side(line: &Value, sent: &HashMap<String, Value>) {
    let request_id = line["metadata"]["x_request_id"].as_str().unwrap();
    assert_eq!(&line["payload"], &sent[request_id], "{line}");
    let headers = &line["request_headers"];
    assert_eq!(headers["X-Request-ID"], request_id);
    assert_eq!(
        headers["X-Correlation-ID"],
        line["metadata"]["x_correlation_id"]
    );
    assert_eq!(headers["Authorization"], "<redacted>");
    assert!(line.get("response_headers").is_none());
}

/// Fails when any file under `dir` holds `needle`.
fn assert_nowhere_in(dir: &Path, needle: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_nowhere_in(&path, needle);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
            assert!(!found, "{} holds {needle:?}", path.display());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_raw_export_holds_every_request_with_its_payload_and_packets() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(mock_config(dir.path(), FaultConfig::default()))
        .await
        .unwrap();
    let (output, raw, sent) = run_raw(
        server,
        dir.path(),
        "-m mock-model --streaming --concurrency 2 --request-count 6 \
         --warmup-request-count 2 --isl 16 --osl 8 --random-seed 5",
    )
    .await;
    assert_exit(&output, 0);
    let out = dir.path().join("out");

    assert_eq!(raw.len(), 8);
    assert_eq!(count_phases(&raw), (2, 6));
    assert_eq!(sent.len(), 8);
    // Raw is a superset: the records and the summaries are still written.
    assert_eq!(read_jsonl(&out.join("profile_export.jsonl")).len(), 6);
    assert!(out.join("profile_export_aiperf.json").is_file());

    for line in &raw {
        check_request_side(line, &sent);
        assert_eq!(line["request_headers"]["Accept"], "text/event-stream");
        assert_eq!(line["status"], 200);
        assert!(line.get("error").is_none(), "{line}");
        let responses = line["responses"].as_array().unwrap();
        // Eight one-token deltas, then at least the usage chunk and [DONE].
        assert!(responses.len() >= 10, "{line}");
        let mut previous = line["start_perf_ns"].as_u64().unwrap();
        let mut text = String::new();
        for response in responses {
            let perf_ns = response["perf_ns"].as_u64().unwrap();
            assert!(perf_ns >= previous, "{line}");
            previous = perf_ns;
            for packet in response["packets"].as_array().unwrap() {
                assert_eq!(packet["name"], "data", "{line}");
                let value = packet["value"].as_str().unwrap();
                if value == "[DONE]" {
                    continue;
                }
                let chunk: Value = serde_json::from_str(value).unwrap();
                if let Some(delta) = chunk["choices"][0]["delta"]["content"].as_str() {
                    text.push_str(delta);
                }
            }
        }
        assert_eq!(text, output_text(0..8));
        assert_eq!(
            responses.last().unwrap()["packets"][0]["value"],
            "[DONE]",
            "{line}"
        );
    }

    let stdout = String::from_utf8_lossy(&output.stdout);
    let raw_path = std::path::absolute(out.join("profile_export_raw.jsonl")).unwrap();
    assert!(
        stdout.contains(&format!("Raw Records: {}", raw_path.display())),
        "{stdout}"
    );
    assert_nowhere_in(&out, API_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_raw_export_keeps_whole_bodies_and_failures() {
    let faults = FaultConfig {
        error_rate: 25.0,
        ..FaultConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let config = mock_config(dir.path(), faults.clone());
    let seed = config.random_seed.unwrap();
    let server = MockServer::start(config).await.unwrap();
    let (output, raw, sent) = run_raw(
        server,
        dir.path(),
        "-m mock-model --concurrency 2 --request-count 12 --warmup-request-count 2 \
         --isl 16 --osl 8 --random-seed 5",
    )
    .await;
    assert_exit(&output, 0);

    assert_eq!(raw.len(), 14);
    assert_eq!(count_phases(&raw), (2, 12));
    // The mock decides faults by arrival number, warmup included: a known count.
    let expected_failures = (0..14)
        .filter(|seq| decide_fault(&faults, seed, *seq).is_some())
        .count();
    assert!(expected_failures > 0);
    let mut failures = 0;
    for line in &raw {
        check_request_side(line, &sent);
        assert_eq!(line["request_headers"]["Accept"], "application/json");
        let responses = line["responses"].as_array().unwrap();
        assert_eq!(responses.len(), 1, "{line}");
        let response = &responses[0];
        assert_eq!(response["content_type"], "application/json", "{line}");
        assert!(response["perf_ns"].as_u64().unwrap() > line["start_perf_ns"].as_u64().unwrap());
        let body: Value = serde_json::from_str(response["text"].as_str().unwrap()).unwrap();
        if line["status"] == 500 {
            failures += 1;
            assert_eq!(line["error"]["code"], 500, "{line}");
            assert!(body.get("error").is_some(), "{line}");
        } else {
            assert_eq!(line["status"], 200);
            assert!(line.get("error").is_none(), "{line}");
            assert_eq!(
                body["choices"][0]["message"]["content"],
                output_text(0..8).as_str()
            );
        }
    }
    assert_eq!(failures, expected_failures);
    assert_nowhere_in(&dir.path().join("out"), API_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_way_keeps_what_arrived_with_its_error() {
    let faults = FaultConfig {
        drop_rate: 100.0,
        drop_after_tokens: 3,
        ..FaultConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(mock_config(dir.path(), faults))
        .await
        .unwrap();
    let (output, raw, sent) = run_raw(
        server,
        dir.path(),
        "-m mock-model --streaming --request-count 3 --isl 16 --osl 8 --random-seed 5",
    )
    .await;
    // Every request failed: exit status 1, the artifacts still written.
    assert_exit(&output, 1);
    assert_eq!(raw.len(), 3);
    for line in &raw {
        check_request_side(line, &sent);
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(line["error"]["type"], "ServerDisconnectedError", "{line}");
        let text: String = line["responses"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["packets"].as_array().unwrap())
            .filter_map(|packet| {
                let chunk: Value = serde_json::from_str(packet["value"].as_str()?).ok()?;
                Some(chunk["choices"][0]["delta"]["content"].as_str()?.to_owned())
            })
            .collect();
        assert_eq!(text, output_text(0..3), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_authorization_header_replaces_the_one_from_api_key() {
    // The server is keyed to the -H value; --api-key holds another. One Authorization
    // header goes out, the explicit one, and nothing is rejected.
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig {
        api_key: Some("from-header".into()),
        ..mock_config(dir.path(), FaultConfig::default())
    })
    .await
    .unwrap();
    let mut argv = args("-m mock-model --request-count 3 -H");
    argv.push("Authorization: Bearer from-header".into());
    let (output, raw, _) = run_raw_argv(server, dir.path(), argv).await;
    assert_exit(&output, 0);
    assert_eq!(raw.len(), 3);
    for line in &raw {
        assert!(line["error"].is_null(), "{line}");
        let headers = line["request_headers"].as_object().unwrap();
        let auth: Vec<&String> = headers
            .keys()
            .filter(|name| name.eq_ignore_ascii_case("authorization"))
            .collect();
        assert_eq!(auth.len(), 1, "{headers:?}");
    }
    let log = std::fs::read_to_string(dir.path().join("out/logs/aiperf.log")).unwrap();
    assert_eq!(
        log.matches("a header given with -H replaces the one --api-key would send")
            .count(),
        1,
        "{log}"
    );
    assert_nowhere_in(&dir.path().join("out"), API_KEY);
    assert_nowhere_in(&dir.path().join("out"), "from-header");
}
