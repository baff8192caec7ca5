//! Replaying request bodies verbatim with the built binary against the in-process mock:
//! `--endpoint-type raw` with `raw_payload` files, and `inputs_json` replays of our own
//! `inputs.json` and of the Python AIPerf 0.13's. The mock records every request, so the
//! tests compare what was sent with what the files hold.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};

use aiperf_datasets::Tokenizer;
use aiperf_mock_server::{MockConfig, MockServer};
use common::{
    args, assert_exit, profile, read_json, read_jsonl, recorded_body, recorded_header, stat,
};
use serde_json::Value;

/// A fast mock that records every inference request to `dir/<name>`.
async fn recording_mock(dir: &Path, name: &str) -> MockServer {
    MockServer::start(MockConfig {
        record_requests: Some(dir.join(name)),
        ..MockConfig::fast()
    })
    .await
    .unwrap()
}

/// Runs `aiperf profile <line> --url <url> --artifact-dir <out>` and stops the mock;
/// returns the output.
async fn run(server: MockServer, url: &str, out: &Path, line: &str) -> std::process::Output {
    let mut argv = args(line);
    argv.extend([
        "--url".to_owned(),
        url.to_owned(),
        "--artifact-dir".to_owned(),
        out.to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    server.shutdown().await;
    output
}

/// The body of every recorded request, in order.
fn sent_bodies(record: &Path) -> Vec<Value> {
    read_jsonl(record).iter().map(recorded_body).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_payload_lines_go_verbatim_to_the_url_and_are_measured() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"model":"mock-model","messages":[{"role":"user","content":"alpha beta gamma"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}"#,
        r#"{"messages":[{"role":"user","content":"delta epsilon"}],"model":"mock-model","stream":true,"max_completion_tokens":6}"#,
        r#"{"model":"mock-model","stream":true,"max_tokens":6,"messages":[{"role":"system","content":"zeta"},{"role":"user","content":"eta theta"}]}"#,
    ];
    let file = dir.path().join("bodies.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let server = recording_mock(dir.path(), "requests.jsonl").await;
    let url = format!("{}/v1/chat/completions", server.url());
    let out = dir.path().join("out");
    let output = run(
        server,
        &url,
        &out,
        &format!(
            "-m mock-model --endpoint-type raw --streaming --custom-dataset-type raw_payload \
             --input-file {} --concurrency 1 --request-count 3",
            file.display()
        ),
    )
    .await;
    assert_exit(&output, 0);

    let requests = read_jsonl(&dir.path().join("requests.jsonl"));
    assert_eq!(requests.len(), 3);
    for (request, line) in requests.iter().zip(lines) {
        assert_eq!(request["path"], "/v1/chat/completions");
        assert_eq!(
            recorded_header(request, "content-type"),
            Some("application/json")
        );
        assert_eq!(
            recorded_header(request, "accept"),
            Some("text/event-stream")
        );
        assert_eq!(
            recorded_body(request),
            serde_json::from_str::<Value>(line).unwrap()
        );
    }

    let summary = read_json(&out.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 3.0);
    assert_eq!(stat(&summary, "output_sequence_length", "avg"), 6.0);
    assert!(stat(&summary, "request_latency", "avg") > 0.0);
    for tag in ["time_to_first_token", "inter_token_latency"] {
        assert!(summary.get(tag).is_some(), "{tag}");
    }
    let tokenizer = Tokenizer::builtin();
    let lengths: Vec<f64> = read_jsonl(&out.join("profile_export.jsonl"))
        .iter()
        .map(|record| {
            record["metrics"]["input_sequence_length"]["value"]
                .as_f64()
                .unwrap()
        })
        .collect();
    let expected: Vec<f64> = ["alpha beta gamma", "delta epsilon", "zeta eta theta"]
        .iter()
        .map(|text| tokenizer.count(text) as f64)
        .collect();
    assert_eq!(lengths, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_inputs_json_sends_the_same_bodies_again() {
    let dir = tempfile::tempdir().unwrap();
    // Run A: synthetic prompts; its inputs.json holds every body it sent.
    let server = recording_mock(dir.path(), "a.jsonl").await;
    let url = server.url();
    let run_a = dir.path().join("a");
    let output = run(
        server,
        &url,
        &run_a,
        "-m mock-model --endpoint-type chat --streaming --concurrency 1 --request-count 4 \
         --isl 24 --osl 5 --random-seed 11",
    )
    .await;
    assert_exit(&output, 0);
    let sent_a = sent_bodies(&dir.path().join("a.jsonl"));
    assert_eq!(sent_a.len(), 4);

    // Run B: the raw endpoint replays A's inputs.json, its type detected.
    let server = recording_mock(dir.path(), "b.jsonl").await;
    let url = format!("{}/v1/chat/completions", server.url());
    let inputs: PathBuf = run_a.join("inputs.json");
    let run_b = dir.path().join("b");
    let output = run(
        server,
        &url,
        &run_b,
        &format!(
            "-m mock-model --endpoint-type raw --streaming --input-file {} --concurrency 1 \
             --request-count 4",
            inputs.display()
        ),
    )
    .await;
    assert_exit(&output, 0);
    // A drew its conversations in its own order; B sends the file's order.
    let sorted = |mut bodies: Vec<Value>| {
        bodies.sort_by_key(Value::to_string);
        bodies
    };
    assert_eq!(
        sorted(sent_bodies(&dir.path().join("b.jsonl"))),
        sorted(sent_a)
    );
    let summary = read_json(&run_b.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 4.0);
    assert_eq!(stat(&summary, "output_sequence_length", "avg"), 5.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_inputs_json_is_replayed_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("python_aiperf_0.13_inputs.json");
    let server = recording_mock(dir.path(), "requests.jsonl").await;
    let url = format!("{}/v1/chat/completions", server.url());
    let out = dir.path().join("out");
    let output = run(
        server,
        &url,
        &out,
        &format!(
            "-m mock-model --endpoint-type raw --streaming --custom-dataset-type inputs_json \
             --input-file {} --concurrency 1 --request-count 3",
            fixture.display()
        ),
    )
    .await;
    assert_exit(&output, 0);
    let expected: Vec<Value> = read_json(&fixture)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["payloads"][0].clone())
        .collect();
    assert_eq!(sent_bodies(&dir.path().join("requests.jsonl")), expected);
    // Our inputs.json of the replay holds the Python one's bodies, session for session.
    let ours = read_json(&out.join("inputs.json"));
    let python = read_json(&fixture);
    assert_eq!(ours, python);
    let summary = read_json(&out.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "output_sequence_length", "avg"), 128.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_line_is_a_usage_error_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bodies.jsonl");
    std::fs::write(
        &file,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"model\": \"m\"}\n\
         {\"messages\": \"x\", \"model\": \"m\"}\n",
    )
    .unwrap();
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let url = server.url();
    let output = run(
        server,
        &url,
        &dir.path().join("out"),
        &format!(
            "-m mock-model --endpoint-type raw --input-file {} --request-count 1",
            file.display()
        ),
    )
    .await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:2: messages: expected a list of messages, got a string",
            file.display()
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_endpoint_refuses_a_dataset_without_bodies_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let mut argv = args("-m mock-model --endpoint-type raw --request-count 2 --num-dataset-entries 3 --isl 8 --osl 2");
    argv.extend([
        "--url".to_owned(),
        server.url(),
        "--artifact-dir".to_owned(),
        dir.path().to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    let requests = server.stats().requests_total;
    server.shutdown().await;
    assert_exit(&output, 2);
    assert_eq!(requests, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "the raw endpoint sends complete request bodies only, and 3 turn(s) of the dataset \
             have none: use a raw_payload or inputs_json dataset file (--custom-dataset-type), \
             or another endpoint type"
        ),
        "{stderr}"
    );
}
