//! `--wait-for-model-timeout`: a run started before its server waits for it instead of
//! recording the start-up as errors, and gives up with a clear message when the server
//! never comes.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, stat};

/// Builds the binary first, so that timing starts with the run, not the build.
async fn built() {
    tokio::task::spawn_blocking(common::aiperf_binary)
        .await
        .unwrap();
}

/// A loopback port nothing listens on (yet).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_a_server_that_starts_late() {
    built().await;
    let port = free_port();
    // Something that hangs up on the first probe stands in for a server still starting,
    // however long the run takes to get there on a loaded machine.
    let not_ready = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = tokio::spawn(profile(args(&format!(
        "-m mock-model --url http://127.0.0.1:{port} --request-count 3 --isl 16 --osl 2 --wait-for-model-timeout 30 --wait-for-model-interval 0.2 --wait-for-model-mode both --artifact-dir {}",
        dir.path().display()
    ))));
    let (first_probe, _) = tokio::time::timeout(Duration::from_secs(120), not_ready.accept())
        .await
        .expect("the run probes the server")
        .unwrap();
    drop(first_probe);
    drop(not_ready);
    let server = MockServer::start(MockConfig {
        port,
        default_model: "mock-model".into(),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let output = run.await.unwrap();
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Waiting for http://127.0.0.1:"), "{stderr}");
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 3.0);
    assert!(summary["error_summary"].as_array().unwrap().is_empty());
    // The probes (a model list and a one-token request each) reached the server too.
    assert!(server.stats().requests_total >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_comes_fails_the_run_after_the_timeout() {
    built().await;
    let port = free_port();
    let started = std::time::Instant::now();
    let output = profile(args(&format!(
        "-m mock-model --url http://127.0.0.1:{port} --request-count 3 --wait-for-model-timeout 1 --wait-for-model-interval 0.2"
    )))
    .await;
    assert_exit(&output, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "http://127.0.0.1:{port} was not ready within 1 s (--wait-for-model-timeout): a one-token request: cannot connect"
        )),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}
