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

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_waiting_for_the_model_ends_the_run_at_once_with_130() {
    use std::io::{BufRead, BufReader, Read};

    built().await;
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap().to_owned();
    let (status, stderr, waited) = tokio::task::spawn_blocking(move || {
        let mut child = std::process::Command::new(common::aiperf_binary())
            .args(args(&format!(
                "profile -m mock-model --url http://127.0.0.1:{port} --request-count 3 \
                 --wait-for-model-timeout 600 --wait-for-model-interval 30 --ui-type none \
                 --artifact-dir {dir_arg}"
            )))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Interrupt once it says it is waiting, however long the start took.
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        while !seen.contains("Waiting for http://127.0.0.1:") {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "{seen}");
            seen.push_str(&line);
        }
        let interrupted = std::time::Instant::now();
        let kill = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        stderr.read_to_string(&mut seen).unwrap();
        let status = child.wait().unwrap();
        (status, seen, interrupted.elapsed())
    })
    .await
    .unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    // The wait had 10 minutes left and 30 s to the next probe: it ended at once.
    assert!(waited < Duration::from_secs(10), "took {waited:?}");
    assert!(
        stderr.contains("Cancelled while waiting for the server"),
        "{stderr}"
    );
}
