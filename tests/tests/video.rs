//! `aiperf profile --endpoint-type video_generation`, the built binary, against the
//! in-process mock's asynchronous video jobs: what was submitted, how often each job was
//! polled and downloaded, and the metrics of one record per job.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{MockConfig, MockServer, MockStats};
use common::{args, assert_exit, profile, read_json, read_jsonl, recorded_header, stat};
use serde_json::Value;

/// Runs `aiperf profile <line>` against `config`'s mock recording into `dir`; returns the
/// summary JSON, the recorded requests and the mock's counters.
async fn run(config: MockConfig, dir: &Path, line: &str) -> (Value, Vec<Value>, MockStats) {
    let server = MockServer::start(MockConfig {
        record_requests: Some(dir.join("requests.jsonl")),
        ..config
    })
    .await
    .unwrap();
    let mut argv = args(line);
    argv.extend([
        "--url".to_owned(),
        server.url(),
        "--artifact-dir".to_owned(),
        dir.join("out").to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    let stats = server.stats();
    server.shutdown().await;
    assert_exit(&output, 0);
    let summary = read_json(&dir.join("out").join("profile_export_aiperf.json"));
    (summary, read_jsonl(&dir.join("requests.jsonl")), stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_video_request_is_a_submitted_polled_and_downloaded_job() {
    let dir = tempfile::tempdir().unwrap();
    let config = MockConfig {
        video_job_ms: 250.0,
        api_key: Some("sk-video".into()),
        ..MockConfig::default()
    };
    let (summary, requests, stats) = run(
        config,
        dir.path(),
        "-m wan --tokenizer builtin --endpoint-type video_generation --download-video-content \
         --concurrency 2 --request-count 4 --isl 12 --random-seed 9 --api-key sk-video \
         --extra-inputs size:832x480 --extra-inputs seconds:4",
    )
    .await;
    let submits: Vec<&Value> = requests
        .iter()
        .filter(|r| r["method"] == "POST" && r["path"] == "/v1/videos")
        .collect();
    assert_eq!(submits.len(), 4);
    for submit in &submits {
        let content_type = recorded_header(submit, "content-type").unwrap();
        assert!(
            content_type == "multipart/form-data; boundary=aiperf-form-boundary-5f0c2e7a",
            "{content_type}"
        );
        let form = submit["body"].as_str().unwrap();
        for field in ["prompt", "model", "size", "seconds"] {
            assert!(form.contains(&format!("name=\"{field}\"")), "{form}");
        }
        assert!(form.contains("\r\n\r\nwan\r\n") && form.contains("\r\n\r\n832x480\r\n"));
    }
    // Every GET carries the key too (the mock refuses it otherwise).
    assert!(requests
        .iter()
        .all(|r| recorded_header(r, "authorization") == Some("***")));
    // One poll right after the submit (the job is still queued), then one every 0.1 s:
    // poll k goes out at least k intervals after the submit, so poll 3 sees the 250 ms
    // job done; from 2 to 4 polls a job.
    let polls = stats.requests_to("/v1/videos/{id}");
    assert!((2 * 4..=4 * 4).contains(&polls), "{polls} polls");
    assert_eq!(stats.requests_to("/v1/videos/{id}/content"), 4);

    assert_eq!(stat(&summary, "request_count", "avg"), 4.0);
    assert!(stat(&summary, "request_latency", "min") >= 250.0);
    assert_eq!(stat(&summary, "video_inference_time", "avg"), 250.0);
    assert_eq!(stat(&summary, "video_peak_memory", "max"), 20480.0);
    assert!(summary.get("input_sequence_length").is_some());
    for absent in [
        "time_to_first_token",
        "output_sequence_length",
        "error_request_count",
    ] {
        assert!(summary.get(absent).is_none(), "{absent}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_video_jobs_are_counted_as_errors_with_the_servers_message() {
    let dir = tempfile::tempdir().unwrap();
    let config = MockConfig {
        video_failure_rate: 50.0,
        random_seed: Some(11),
        ..MockConfig::fast()
    };
    let line = "-m wan --tokenizer builtin --endpoint-type video_generation --request-count 12 \
                --isl 8 --random-seed 9";
    let server = MockServer::start(config).await.unwrap();
    let mut argv = args(line);
    argv.extend([
        "--url".to_owned(),
        server.url(),
        "--artifact-dir".to_owned(),
        dir.path().join("out").to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    server.shutdown().await;
    assert_exit(&output, 0);
    let records = read_jsonl(&dir.path().join("out").join("profile_export.jsonl"));
    assert_eq!(records.len(), 12);
    let failed: Vec<&Value> = records.iter().filter(|r| !r["error"].is_null()).collect();
    assert!(
        !failed.is_empty() && failed.len() < 12,
        "{} failed",
        failed.len()
    );
    for record in &failed {
        assert_eq!(record["error"]["type"], "VideoGenerationError");
        assert_eq!(
            record["error"]["message"],
            "Video generation failed: Injected video generation failure \
             (aiperf-mock-server --video-failure-rate)"
        );
    }
    let summary = read_json(&dir.path().join("out").join("profile_export_aiperf.json"));
    assert_eq!(
        stat(&summary, "error_request_count", "avg"),
        failed.len() as f64
    );
    assert_eq!(
        stat(&summary, "request_count", "avg"),
        (12 - failed.len()) as f64
    );
}
