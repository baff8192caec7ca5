//! The Python AIPerf 0.13 endpoint and output flags, end to end against the in-process
//! mock server: what the server receives (`--session-header`, `--per-chunk-usage`) and
//! what the run writes (`--export-outputs-json`, `--auto-plot`).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};

use aiperf_mock_server::{FaultConfig, MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl, recorded_body, recorded_header};
use serde_json::json;

/// A mock server that records every request to a file in `dir`.
async fn recording_mock(dir: &Path) -> (MockServer, PathBuf) {
    let record = dir.join("requests.jsonl");
    let config = MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::fast()
    };
    (MockServer::start(config).await.unwrap(), record)
}

fn run_args(server: &MockServer, dir: &Path, rest: &str) -> Vec<String> {
    let mut argv = args(&format!(
        "-m mock-model --url {} --random-seed 5 --isl 16 --osl 4 {rest}",
        server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.to_str().unwrap().into()]);
    argv
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_header_replaces_x_correlation_id() {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path()).await;
    let argv = run_args(
        &server,
        &dir.path().join("out"),
        "--request-count 3 --session-header X-Session-ID",
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;
    let requests = read_jsonl(&record);
    assert_eq!(requests.len(), 3);
    let mut sessions: Vec<&str> = requests
        .iter()
        .map(|request| {
            assert_eq!(recorded_header(request, "x-correlation-id"), None);
            recorded_header(request, "x-session-id").unwrap()
        })
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    assert_eq!(sessions.len(), 3, "one id per single-turn session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_chunk_usage_asks_the_server_for_usage_on_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path()).await;
    let argv = run_args(
        &server,
        &dir.path().join("out"),
        "--request-count 2 --streaming --use-server-token-count --per-chunk-usage",
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;
    for request in read_jsonl(&record) {
        assert_eq!(
            recorded_body(&request)["stream_options"],
            json!({"include_usage": true, "continuous_usage_stats": true})
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_chunk_usage_without_server_token_count_is_a_usage_error() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 1 --streaming --per-chunk-usage",
    ))
    .await;
    assert_exit(&output, 2);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: --per-chunk-usage requires --use-server-token-count"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_rate_series_drives_an_open_loop_run() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series.json");
    std::fs::write(
        &series,
        r#"{"points": [{"time_s": 0, "qps": 200}, {"time_s": 1, "qps": 400}]}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = profile(run_args(
        &server,
        &out,
        &format!(
            "--request-count 5 --request-rate-series {}",
            series.display()
        ),
    ))
    .await;
    assert_exit(&output, 0);
    let summary = read_json(&out.join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"], 5.0);
    // An open loop starting at the first point's rate.
    let profiling = &summary["input_config"]["phases"][0];
    assert_eq!(profiling["type"], "request_rate");
    assert_eq!(profiling["rate"], 200.0);
    assert_eq!(profiling["arrival_pattern"], "poisson");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failed_request_threshold_stops_a_failing_run_early() {
    let server = MockServer::start(MockConfig {
        faults: FaultConfig {
            error_rate: 100.0,
            ..FaultConfig::default()
        },
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 2000 --concurrency 1 --failed-request-threshold 0.5",
    ))
    .await;
    assert_exit(&output, 1);
    // Armed at the 10th record (max(concurrency, 10)), which is the 10th failure.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "error: 10 of 10 requests failed (100 %), more than the threshold of 50 %: \
             sending stopped"
        ),
        "{stderr}"
    );
    // Records are judged off the sending path, so a few more may go out before the stop
    // lands; far from all of them.
    let sent = server.stats().requests_total;
    assert!(sent < 2000, "{sent} requests sent");
    assert!(dir.path().join("profile_export_aiperf.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_json_holds_each_requests_generated_text_in_session_order() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 4 --concurrency 2 --streaming --export-outputs-json",
    ))
    .await;
    assert_exit(&output, 0);
    let outputs = read_json(&dir.path().join("outputs.json"));
    assert_eq!(outputs["schema_version"], "1.0");
    let data = outputs["data"].as_array().unwrap();
    assert_eq!(data.len(), 4);
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    for (index, entry) in data.iter().enumerate() {
        assert_eq!(entry["session_num"], index);
        assert_eq!(entry["turn_index"], 0);
        // The same request as the records export describes.
        let record = records
            .iter()
            .find(|r| r["metadata"]["x_request_id"] == entry["x_request_id"])
            .unwrap();
        for key in ["conversation_id", "request_start_ns", "request_end_ns"] {
            assert_eq!(entry[key], record["metadata"][key], "{key}");
        }
        for tag in [
            "request_latency",
            "time_to_first_token",
            "inter_token_latency",
            "input_sequence_length",
            "output_sequence_length",
        ] {
            assert_eq!(
                entry["metrics"][tag].as_f64(),
                record["metrics"][tag]["value"].as_f64(),
                "{tag}"
            );
        }
        let text = entry["response_text"].as_str().unwrap();
        assert!(!text.is_empty());
        let keys: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "session_num",
                "conversation_id",
                "turn_index",
                "x_request_id",
                "request_start_ns",
                "request_end_ns",
                "metrics",
                "response_text"
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_plot_draws_the_finished_run() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 4 --streaming --auto-plot",
    ))
    .await;
    assert_exit(&output, 0);
    let plots = dir.path().join("plots");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("Report: {}", plots.join("report.html").display())),
        "{stdout}"
    );
    assert!(plots.join("report.html").is_file());
    let charts = std::fs::read_dir(&plots)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension() == Some("png".as_ref()))
        .count();
    assert!(charts > 0, "no PNG chart in {}", plots.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auto_plot_nothing_is_drawn() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 2 --auto-plot --no-auto-plot",
    ))
    .await;
    assert_exit(&output, 0);
    assert!(!dir.path().join("plots").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_level_drives_the_console() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let console = |rest: &'static str| {
        let dir = tempfile::tempdir().unwrap();
        let argv = run_args(&server, dir.path(), rest);
        async move {
            let output = profile(argv).await;
            assert_exit(&output, 0);
            String::from_utf8(output.stderr).unwrap()
        }
    };
    let default = console("--request-count 2").await;
    assert!(!default.contains("info: "), "{default}");
    let info = console("--request-count 2 --log-level info").await;
    assert!(
        info.contains("info: profiling phase finished: 2 sent, 2 completed, 0 cancelled\n"),
        "{info}"
    );
    assert!(!info.contains("debug: "), "{info}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_python_option_stops_with_its_reason() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = profile(run_args(
        &server,
        dir.path(),
        "--request-count 2 --record-processors 4",
    ))
    .await;
    assert_exit(&output, 2);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: --record-processors (a Python AIPerf option) is not available in aiperf-rs: \
         aiperf-rs runs in one process, so there is no service, message bus or API server to \
         configure; drop the flag."
    );
    assert!(!dir.path().join("profile_export_aiperf.json").exists());
}
