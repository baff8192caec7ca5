//! SPEED-Bench end to end: the built binary runs a `speed_bench_*` variant from a local
//! copy of its rows against the mock server, then `aiperf speed-bench-report` turns the
//! run directory into its matrix.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::process::Command;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{
    aiperf_binary, args, assert_exit, profile, profile_offline, read_json, read_jsonl,
    recorded_body,
};
use serde_json::json;

const QUALITATIVE: &str = concat!(
    r#"{"question_id":"00000000000000000000000000000001","category":"coding","messages":[{"role":"user","content":"Write a quicksort in Rust."}]}"#,
    "\n",
    r#"{"question_id":"00000000000000000000000000000002","category":"math","messages":[{"role":"user","content":"What is 17 * 23?"}]}"#,
    "\n",
    r#"{"question_id":"00000000000000000000000000000003","category":"coding","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Reverse a list."},{"role":"user","content":"Now in place."}]}"#,
    "\n",
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_variant_sends_its_rows_and_the_report_files_the_run_under_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("qualitative.jsonl"), QUALITATIVE).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let run_dir = dir.path().join("runs/coding");
    let output = profile(args(&format!(
        "-m mock-model --url {} --endpoint-type chat --streaming --artifact-dir {} \
         --custom-dataset-type speed_bench_coding --input-file {} --concurrency 1 \
         --request-count 3 --no-server-metrics",
        server.url(),
        run_dir.display(),
        dir.path().display()
    )))
    .await;
    assert_exit(&output, 0);
    server.shutdown().await;

    // The two coding rows, in order; the math row is left out. The second row's system
    // message leads each of its requests, and its second turn carries the first reply.
    let bodies: Vec<_> = read_jsonl(&record).iter().map(recorded_body).collect();
    assert_eq!(bodies.len(), 3);
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content": "Write a quicksort in Rust."}])
    );
    assert_eq!(
        bodies[1]["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Reverse a list."}
        ])
    );
    let history = bodies[2]["messages"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{history:?}");
    assert_eq!(history[2]["role"], "assistant");
    assert_eq!(
        history[3],
        json!({"role": "user", "content": "Now in place."})
    );
    let summary = read_json(&run_dir.join("profile_export_aiperf.json"));
    assert_eq!(
        summary["input_config"]["datasets"][0]["format"],
        "speed_bench_coding"
    );

    let csv = dir.path().join("report.csv");
    let report = Command::new(aiperf_binary())
        .arg("speed-bench-report")
        .arg(dir.path().join("runs"))
        .args(["--metric", "throughput", "--output"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_exit(&report, 0);
    let stdout = String::from_utf8_lossy(&report.stdout);
    assert!(
        stdout.starts_with("Found 1 run directories.\nThroughput Report (tokens/sec)\n"),
        "{stdout}"
    );
    let throughput = summary["output_token_throughput"]["avg"].as_f64().unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        format!("Model,coding,Overall\r\nmock-model,{throughput:.2},{throughput:.2}\r\n")
    );

    // The mock reports no speculative decoding: nothing to report, exit 1.
    let report = Command::new(aiperf_binary())
        .arg("speed-bench-report")
        .arg(&run_dir)
        .args(["--format", "table"])
        .output()
        .unwrap();
    assert_exit(&report, 1);
    assert_eq!(
        String::from_utf8_lossy(&report.stderr),
        format!(
            "warning: no server_metrics_export.json in {}\n\
             error: no SPEED-Bench results extracted\n",
            run_dir.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_input_file_a_variant_reads_the_hugging_face_cache_offline() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("hf");
    let repo = home.join("hub/datasets--nvidia--SPEED-Bench");
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let split = repo.join("snapshots").join(commit).join("qualitative");
    std::fs::create_dir_all(&split).unwrap();
    std::fs::write(split.join("test.jsonl"), QUALITATIVE).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let line = format!(
        "-m mock-model --url {} --endpoint-type chat --artifact-dir {} \
         --custom-dataset-type speed_bench_math --request-count 1 --no-server-metrics",
        server.url(),
        dir.path().join("run").display(),
    );
    let output = profile_offline(&home, &line).await;
    assert_exit(&output, 0);
    server.shutdown().await;
    let bodies: Vec<_> = read_jsonl(&record).iter().map(recorded_body).collect();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content": "What is 17 * 23?"}])
    );
}
