//! Asynchronous video jobs through the whole engine: one record per job from the submit
//! to the last poll (or download), against the in-process mock's `/v1/videos`.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;
use std::time::Duration;

use aiperf_core::{BenchmarkConfig, CancellationToken};
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_runner::{run, NoHooks, Outcome, RunSpec, TelemetryOptions};
use serde_json::Value;

/// A video_generation benchmark of `url`: 4 requests at concurrency 2.
fn config(url: &str, dir: &Path) -> BenchmarkConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["wan".into()];
    config.endpoint.urls = vec![url.into()];
    config.endpoint.endpoint_type = "video_generation".into();
    config.input.tokenizer = Some("builtin".into());
    config.input.isl_mean = 16;
    config.load.concurrency = Some(2);
    config.load.request_count = Some(4);
    config.output.artifact_dir = Some(dir.to_path_buf());
    config
}

/// Runs `config`, checks its outcome and returns its records (`profile_export.jsonl`).
async fn records(config: BenchmarkConfig, dir: &Path, outcome: Outcome) -> Vec<Value> {
    let mut spec = RunSpec::new(config.validate().unwrap());
    spec.telemetry = TelemetryOptions {
        gpu: false,
        server_metrics: false,
        ..TelemetryOptions::default()
    };
    let report = run(&spec, &mut NoHooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, outcome);
    std::fs::read_to_string(dir.join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn latency_ms(record: &Value) -> f64 {
    record["metrics"]["request_latency"]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no request_latency in {record}"))
}

fn error_message(record: &Value) -> &str {
    record["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error in {record}"))
}

#[tokio::test]
async fn each_job_is_submitted_polled_until_done_and_downloaded_when_asked() {
    for download in [false, true] {
        // A zero-length job: queued when created, completed at the first poll.
        let server = MockServer::start(MockConfig::fast()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(&server.url(), dir.path());
        config.endpoint.download_video_content = download;
        let records = records(config, dir.path(), Outcome::Completed).await;
        assert_eq!(records.len(), 4);
        for record in &records {
            assert!(record["error"].is_null(), "{record}");
            assert!(latency_ms(record) > 0.0);
        }
        let stats = server.stats();
        assert_eq!(stats.requests_to("/v1/videos"), 4);
        assert_eq!(stats.requests_to("/v1/videos/{id}"), 4);
        let downloads = if download { 4 } else { 0 };
        assert_eq!(stats.requests_to("/v1/videos/{id}/content"), downloads);
    }
}

#[tokio::test]
async fn a_jobs_latency_covers_its_generation_at_the_poll_interval() {
    let server = MockServer::start(MockConfig {
        video_job_ms: 600.0,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.endpoint.video_poll_interval = Duration::from_millis(100);
    let records = records(config, dir.path(), Outcome::Completed).await;
    for record in &records {
        assert!(record["error"].is_null(), "{record}");
        assert!(latency_ms(record) >= 600.0, "{record}");
        assert_eq!(record["metrics"]["video_inference_time"]["value"], 600.0);
    }
    // Poll k (from 0, right after the submit) goes out at least k intervals after it, so
    // poll 6 sees the job done: at most 7 polls a job (fewer when a loaded machine
    // sleeps long).
    let polls = server.stats().requests_to("/v1/videos/{id}");
    assert!((8..=28).contains(&polls), "{polls} polls");
}

#[tokio::test]
async fn a_failed_job_is_an_error_record_with_the_servers_message() {
    let server = MockServer::start(MockConfig {
        video_failure_rate: 100.0,
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.endpoint.download_video_content = true;
    let records = records(config, dir.path(), Outcome::AllFailed).await;
    assert_eq!(records.len(), 4);
    for record in &records {
        assert_eq!(
            error_message(record),
            "Video generation failed: Injected video generation failure \
             (aiperf-mock-server --video-failure-rate)"
        );
        assert_eq!(record["error"]["type"], "VideoGenerationError");
    }
    assert_eq!(server.stats().requests_to("/v1/videos/{id}/content"), 0);
}

#[tokio::test]
async fn a_job_that_outlasts_the_request_timeout_times_out_at_the_timeout() {
    let server = MockServer::start(MockConfig {
        video_job_ms: 60_000.0,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.endpoint.request_timeout = Duration::from_millis(500);
    let started = std::time::Instant::now();
    let records = records(config, dir.path(), Outcome::AllFailed).await;
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(records.len(), 4);
    for record in &records {
        assert_eq!(error_message(record), "request timed out after 500ms");
        assert_eq!(record["error"]["type"], "TimeoutError");
        let metadata = &record["metadata"];
        let span_ns = metadata["request_end_ns"].as_u64().unwrap()
            - metadata["request_start_ns"].as_u64().unwrap();
        assert!(span_ns >= 500_000_000, "{record}");
    }
}
