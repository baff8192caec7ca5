//! Ours against the behaviours of real servers that the mock can imitate
//! (`aiperf_mock_server::Quirks`; `../shared/realservers` describes where each was seen):
//! every request succeeds and every metric stays exact.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{FaultConfig, MockConfig, MockServer, Quirks};
use common::{args, profile, read_json, stat};
use serde_json::Value;

const TTFT_MS: f64 = 30.0;
const REQUESTS: u64 = 12;
const OSL: f64 = 8.0;

async fn start(quirks: Quirks) -> MockServer {
    MockServer::start(MockConfig {
        quirks,
        ..MockConfig::with_timing(TTFT_MS, 1.0)
    })
    .await
    .unwrap()
}

/// Runs ours with `flags`; returns the summary JSON and the exit code.
async fn run(server: &MockServer, dir: &Path, flags: &str) -> (Value, Option<i32>) {
    let mut argv = args(&format!(
        "-m mock-model --concurrency 2 --request-count {REQUESTS} --isl 16 --osl {OSL} \
         --no-server-metrics --no-gpu-telemetry {flags}"
    ));
    argv.extend([
        "--url".into(),
        server.url(),
        "--artifact-dir".into(),
        dir.to_str().unwrap().into(),
    ]);
    let output = profile(argv).await;
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    (summary, output.status.code())
}

/// Every request succeeded with exactly `OSL` output tokens, and TTFT was the server's, not
/// the arrival of anything before the first token.
fn assert_exact(summary: &Value, streaming: bool) {
    assert_eq!(summary["error_summary"], serde_json::json!([]), "{summary}");
    assert_eq!(stat(summary, "request_count", "avg"), REQUESTS as f64);
    assert_eq!(stat(summary, "output_sequence_length", "min"), OSL);
    assert_eq!(stat(summary, "output_sequence_length", "max"), OSL);
    if streaming {
        let ttft_min = stat(summary, "time_to_first_token", "min");
        assert!(ttft_min >= TTFT_MS, "TTFT min {ttft_min} ms < {TTFT_MS} ms");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transformers_serve_completions_and_chat_succeed_with_usage_in_the_finish_chunk() {
    let server = start(Quirks::transformers_serve()).await;
    let dir = tempfile::tempdir().unwrap();
    for endpoint in ["completions", "chat"] {
        for streaming in ["--streaming", ""] {
            for token_count in ["--use-server-token-count", ""] {
                let out = dir
                    .path()
                    .join(format!("{endpoint}{streaming}{token_count}"));
                let (summary, code) = run(
                    &server,
                    &out,
                    &format!("--endpoint-type {endpoint} {streaming} {token_count}"),
                )
                .await;
                assert_eq!(code, Some(0), "{endpoint} {streaming} {token_count}");
                assert_exact(&summary, !streaming.is_empty());
            }
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_comments_are_not_tokens_and_do_not_stamp_the_first_token() {
    let server = start(Quirks {
        ping_comments: true,
        ..Quirks::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    for endpoint in ["completions", "chat"] {
        let out = dir.path().join(endpoint);
        let (summary, code) = run(
            &server,
            &out,
            &format!("--endpoint-type {endpoint} --streaming"),
        )
        .await;
        assert_eq!(code, Some(0));
        assert_exact(&summary, true);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastapi_detail_error_bodies_give_their_message() {
    let server = MockServer::start(MockConfig {
        quirks: Quirks {
            detail_errors: true,
            ..Quirks::default()
        },
        faults: FaultConfig {
            error_rate: 100.0,
            ..FaultConfig::default()
        },
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (summary, code) = run(&server, dir.path(), "--streaming").await;
    assert_eq!(code, Some(1));
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{summary}");
    assert_eq!(errors[0]["count"], REQUESTS);
    assert_eq!(errors[0]["error_details"]["code"], 500);
    assert_eq!(
        errors[0]["error_details"]["message"],
        "Injected internal server error (aiperf-mock-server --error-rate)"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_prompt_rejected_by_the_server_is_reported_with_its_detail() {
    // What a client that sends `"prompt": [...]` gets from transformers serve; ours sends
    // a string, so this uses a batch of two prompts, which must stay a list.
    let server = start(Quirks::transformers_serve()).await;
    let dir = tempfile::tempdir().unwrap();
    let (summary, code) = run(
        &server,
        dir.path(),
        "--endpoint-type completions --batch-size-text 2",
    )
    .await;
    assert_eq!(code, Some(1));
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors[0]["error_details"]["code"], 400, "{summary}");
    assert_eq!(
        errors[0]["error_details"]["message"],
        "prompt must be a string."
    );
    server.shutdown().await;
}
