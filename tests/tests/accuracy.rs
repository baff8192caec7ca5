//! Accuracy mode end to end: the built binary asks a benchmark's questions from a JSONL
//! fixture of the mock server, grades the replies, and writes the accuracy artifacts.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl, recorded_body};
use serde_json::{json, Value};

const VALIDATION: &str = r#"{"activity_label": "Baking", "ctx": "She mixes the flour", "endings": ["and eggs.", "and sand.", "into tea.", "with glue."], "label": "0"}
{"activity_label": "Baking", "ctx": "He opens the oven", "endings": ["and sings.", "and checks the cake.", "and leaves.", "to sleep."], "label": "1"}
{"activity_label": "Rowing", "ctx": "The crew pulls", "endings": ["the oars.", "a car.", "the rug.", "a tooth."], "label": "0"}
"#;

fn run_args(url: &str, dir: &Path, rest: &str) -> Vec<String> {
    args(&format!(
        "-m mock-model --url {url} --endpoint-type chat --artifact-dir {} --random-seed 5 {rest}",
        dir.join("artifacts").display()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hellaswag_asks_every_question_once_and_grades_each_reply() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("hellaswag");
    std::fs::create_dir_all(&rows).unwrap();
    std::fs::write(rows.join("validation.jsonl"), VALIDATION).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let argv = run_args(
        &server.url(),
        dir.path(),
        &format!(
            "--accuracy-benchmark hellaswag --accuracy-n-shots 0 --input-file {}",
            rows.display()
        ),
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;

    // one request per question, with 0.13's prompt, budget and no stop sequence
    let requests = read_jsonl(&record);
    assert_eq!(requests.len(), 3);
    let mut bodies: Vec<Value> = requests.iter().map(recorded_body).collect();
    bodies.sort_by_key(|b| b["messages"][0]["content"].as_str().unwrap().to_owned());
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content":
            "The following are multiple choice questions (with answers) are sentence \
             completion problems about Baking.\n\nHe opens the oven\nA. and sings.\nB. and \
             checks the cake.\nC. and leaves.\nD. to sleep.\nAnswer:\n\nOutput 'A', 'B', \
             'C', or 'D'. Full answer not needed."}])
    );
    assert_eq!(bodies[0]["max_completion_tokens"], json!(5));

    // the mock's filler text is never exactly a letter: every reply is wrong
    let artifacts = dir.path().join("artifacts");
    let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
    let accuracy = &summary["accuracy"];
    assert_eq!(accuracy["grader"], "exact_match");
    assert_eq!(accuracy["confidence_interval"], "wilson_95");
    assert_eq!(accuracy["overall"]["total"], 3);
    assert_eq!(accuracy["overall"]["correct"], 0);
    assert_eq!(accuracy["overall"]["accuracy"], 0.0);
    assert_eq!(accuracy["tasks"]["Baking"]["total"], 2);
    assert_eq!(accuracy["tasks"]["Rowing"]["total"], 1);
    assert_eq!(
        std::fs::read_to_string(artifacts.join("accuracy_results.csv")).unwrap(),
        "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
         OVERALL,0,3,0,0.0000,0.0000,0.5615\n\
         Baking,0,2,0,0.0000,0.0000,0.6576\n\
         Rowing,0,1,0,0.0000,0.0000,0.7935\n"
    );
    let csv = std::fs::read_to_string(artifacts.join("profile_export_aiperf.csv")).unwrap();
    assert!(
        csv.contains("\r\nOVERALL,0,3,0,0.0000,0.0000,0.5615\r\n"),
        "{csv}"
    );

    let lines = read_jsonl(&artifacts.join("profile_export.jsonl"));
    assert_eq!(lines.len(), 3);
    for line in &lines {
        assert_eq!(line["accuracy"]["correct"], false, "{line}");
        assert!(["A", "B"].contains(&line["accuracy"]["expected"].as_str().unwrap()));
    }
    let graded = read_jsonl(&artifacts.join("accuracy_export.jsonl"));
    assert_eq!(graded.len(), 3);
    assert_eq!(graded[0]["grader_name"], "exact_match");
    assert_eq!(graded[0]["passed"], false);

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Accuracy Benchmark Results (exact_match)"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_generation_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let argv = run_args(
        "http://127.0.0.1:9",
        dir.path(),
        "--accuracy-benchmark lcb_codegeneration --input-file /nonexistent",
    );
    let output = profile(argv).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("aiperf-rs refuses to: time and memory limits on a child process"),
        "{stderr}"
    );
    assert_ne!(output.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accuracy_flag_without_a_benchmark_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let argv = run_args("http://127.0.0.1:9", dir.path(), "--accuracy-n-shots 3");
    let output = profile(argv).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--accuracy-n-shots set without --accuracy-benchmark, which accuracy mode needs"
        ),
        "{stderr}"
    );
    assert_ne!(output.status.code(), Some(0));
}
