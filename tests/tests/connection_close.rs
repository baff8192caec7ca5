//! A server that closes every keep-alive connection right after its response, as llama.cpp's
//! `llama-server` does, must not cost a single request: the client sends a request whose
//! reused connection closed before answering once more on a fresh connection, and reports
//! how often it did.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use aiperf_mock_server::{MockConfig, MockServer, Quirks};
use common::{args, assert_exit, profile, read_json, read_jsonl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_succeeds_against_a_server_that_closes_after_each_response() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig {
        quirks: Quirks::llama_server(),
        ..MockConfig::with_timing(2.0, 1.0)
    })
    .await
    .unwrap();
    for streaming in [true, false] {
        let out = dir.path().join(format!("streaming-{streaming}"));
        let mut argv = args(
            "-m mock-model --concurrency 4 --request-count 60 --isl 16 --osl 8 \
             --no-server-metrics --no-gpu-telemetry",
        );
        if streaming {
            argv.push("--streaming".into());
        }
        argv.extend([
            "--url".into(),
            server.url(),
            "--artifact-dir".into(),
            out.to_str().unwrap().into(),
        ]);
        let output = profile(argv).await;
        assert_exit(&output, 0);
        let summary = read_json(&out.join("profile_export_aiperf.json"));
        assert_eq!(summary["request_count"]["avg"], 60.0, "{summary}");
        assert_eq!(summary["error_summary"], serde_json::json!([]));
        let retries = summary["connection_retries"].as_u64().unwrap();
        assert!(retries <= 60, "{retries}");
        let records = read_jsonl(&out.join("profile_export.jsonl"));
        assert_eq!(records.len(), 60);
        assert!(records.iter().all(|r| r["error"].is_null()));
        let console = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            console.contains("Connection Retries:"),
            retries > 0,
            "{console}"
        );
        let log = std::fs::read_to_string(out.join("logs").join("aiperf.log")).unwrap();
        assert_eq!(
            log.contains(&format!(
                "{retries} requests were sent again on a fresh connection"
            )),
            retries > 0,
            "{log}"
        );
    }
    // No request was answered twice: every request that found its pooled connection
    // closing went out again on a new one.
    let stats = server.stats();
    assert_eq!(stats.requests_total, 120);
    // Each answered request had a connection of its own. hyper's pool may open one more
    // that carries nothing: a connect it started for a request that an idle connection
    // served first.
    assert!(
        (120..=122).contains(&stats.connections_accepted),
        "{stats:?}"
    );
    server.shutdown().await;
}
