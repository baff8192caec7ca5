//! `aiperf profile` with every workload source and load shape, the built binary against
//! the in-process mock server with `--record-requests`: trace replay instants and offset
//! windows, mooncake hash-id blocks, multi-turn history and pacing, session concurrency,
//! simulated users, client cancellation, determinism, and bad input files.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{
    args, assert_exit, profile, read_json, read_jsonl, recorded_body, recorded_header, stat,
};
use serde_json::Value;

/// A mock server that records every request to a file in `dir`.
async fn recording_mock(dir: &Path, ttft_ms: f64, itl_ms: f64) -> (MockServer, PathBuf) {
    let record = dir.join("requests.jsonl");
    let config = MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(ttft_ms, itl_ms)
    };
    (MockServer::start(config).await.unwrap(), record)
}

/// The recorded requests, after the server flushed them.
async fn recorded(server: MockServer, record: &Path) -> Vec<Value> {
    server.shutdown().await;
    read_jsonl(record)
}

fn header<'a>(request: &'a Value, name: &str) -> &'a str {
    recorded_header(request, name).unwrap_or_else(|| panic!("no {name} header in {request}"))
}

fn received_ms(request: &Value) -> f64 {
    request["timestamp_ns"].as_f64().unwrap() / 1e6
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn run_args(server: &MockServer, dir: &Path, rest: &str) -> Vec<String> {
    let mut argv = args(&format!(
        "-m mock-model --url {} --artifact-dir {} --random-seed 5 {rest}",
        server.url(),
        dir.join("artifacts").display()
    ));
    argv.retain(|a| !a.is_empty());
    argv
}

fn user_text(request: &Value) -> String {
    let messages = recorded_body(request)["messages"]
        .as_array()
        .unwrap()
        .clone();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

const TRACE: &str = r#"{"timestamp": 1000, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 1200, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, 3]}
{"timestamp": 1800, "input_length": 30, "output_length": 4, "hash_ids": [4, 5]}
{"timestamp": 2200, "input_length": 40, "output_length": 4, "hash_ids": [6, 7]}
"#;

/// A replay: the requests the mock received, when the client sent each (ms, in order),
/// and the client's own largest schedule lag (ms), the lateness it reports.
struct Replay {
    requests: Vec<Value>,
    sent_ms: Vec<f64>,
    max_lag_ms: f64,
}

/// Replays [`TRACE`] with `flags` against a recording mock.
async fn replay_trace(flags: &str) -> Replay {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path(), 5.0, 1.0).await;
    let trace = write(dir.path(), "trace.jsonl", TRACE);
    let argv = run_args(
        &server,
        dir.path(),
        &format!("--input-file {trace} --isl-block-size 20 {flags}"),
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let artifacts = dir.path().join("artifacts");
    let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
    let mut sent_ms: Vec<f64> = read_jsonl(&artifacts.join("profile_export.jsonl"))
        .iter()
        .map(|r| r["metadata"]["request_start_ns"].as_f64().unwrap() / 1e6)
        .collect();
    sent_ms.sort_by(f64::total_cmp);
    Replay {
        requests: recorded(server, &record).await,
        sent_ms,
        max_lag_ms: summary["schedule_lag"]["max"].as_f64().unwrap(),
    }
}

/// Each request was sent within 2 ms of its offset (ms) from the first, give or take the
/// lateness the client reported: on a saturated machine a send can start late, and the
/// schedule lag says by how much (the first request's lag shifts every offset). The mock
/// received them in that order.
fn assert_offsets(replay: &Replay, want: &[f64]) {
    let received: Vec<f64> = replay.requests.iter().map(received_ms).collect();
    assert!(received.windows(2).all(|w| w[0] <= w[1]), "{received:?}");
    let first = replay.sent_ms[0];
    let offsets: Vec<f64> = replay.sent_ms.iter().map(|at| at - first).collect();
    assert_eq!(offsets.len(), want.len(), "{offsets:?}");
    assert_eq!(received.len(), want.len(), "{received:?}");
    let tolerance = 2.0 + replay.max_lag_ms;
    for (got, want) in offsets.iter().zip(want) {
        assert!(
            (got - want).abs() < tolerance,
            "sent at {offsets:?}, the trace says {want:?}, lag up to {} ms",
            replay.max_lag_ms
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timestamped_trace_is_replayed_at_its_offsets() {
    let replay =
        replay_trace("--custom-dataset-type mooncake_trace --fixed-schedule-auto-offset").await;
    // Every trace entry once, no default count of 10.
    assert_offsets(&replay, &[0.0, 200.0, 500.0, 800.0, 1200.0]);
    let requests = replay.requests;
    // Equal hash ids give identical prompts; a shared first block a shared prefix.
    let prompts: Vec<String> = requests.iter().map(user_text).collect();
    assert_eq!(prompts[0], prompts[1]);
    assert_ne!(prompts[0], prompts[2]);
    let shared = prompts[0]
        .chars()
        .zip(prompts[2].chars())
        .take_while(|(a, b)| a == b)
        .count();
    assert!(
        shared >= 20,
        "the first block's text is shared ({shared} chars)"
    );
    assert_ne!(prompts[3][..10], prompts[0][..10]);
    // max_tokens from output_length.
    assert_eq!(recorded_body(&requests[0])["max_completion_tokens"], 4);
}

/// A replay that reached its request count ends when its last request returns: it does
/// not sit out the schedule's next gap, nor count that gap in its window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_stops_at_its_request_count_without_waiting_for_the_next_entry() {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path(), 5.0, 1.0).await;
    let trace = write(
        dir.path(),
        "gap.jsonl",
        "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [1]}\n\
         {\"timestamp\": 100, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [2]}\n\
         {\"timestamp\": 5000, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [3]}\n",
    );
    let argv = run_args(
        &server,
        dir.path(),
        &format!(
            "--input-file {trace} --custom-dataset-type mooncake_trace --isl-block-size 20 \
             --request-count 2"
        ),
    );
    assert_exit(&profile(argv).await, 0);
    assert_eq!(recorded(server, &record).await.len(), 2);
    let summary = read_json(&dir.path().join("artifacts/profile_export_aiperf.json"));
    // 2 requests over a window of ~0.1 s; waiting for the 5 s entry made it 0.4 req/s.
    let throughput = stat(&summary, "request_throughput", "avg");
    assert!(throughput > 0.8, "{throughput} requests/s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_schedule_offsets_keep_exactly_the_window() {
    // Entries at 1200, 1500 and 1800 ms.
    let replay =
        replay_trace("--fixed-schedule-start-offset 1200 --fixed-schedule-end-offset 1800").await;
    assert_offsets(&replay, &[0.0, 300.0, 600.0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_sessions_grow_their_history_and_respect_delays() {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path(), 10.0, 2.0).await;
    let file = write(
        dir.path(),
        "sessions.jsonl",
        concat!(
            r#"{"session_id": "a", "turns": [{"text": "a1"}, {"text": "a2", "delay": 300}, {"text": "a3", "delay": 300}]}"#,
            "\n",
            r#"{"session_id": "b", "turns": [{"text": "b1"}, {"text": "b2", "delay": 300}, {"text": "b3", "delay": 300}]}"#,
            "\n"
        ),
    );
    let argv = run_args(
        &server,
        dir.path(),
        &format!(
            "--input-file {file} --custom-dataset-type multi_turn --num-sessions 2 --concurrency 1 --osl 5 --streaming"
        ),
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let requests = recorded(server, &record).await;
    assert_eq!(requests.len(), 6);
    let mut sessions: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for request in &requests {
        sessions
            .entry(header(request, "x-correlation-id").to_owned())
            .or_default()
            .push(request);
    }
    assert_eq!(sessions.len(), 2);
    let mut spans = Vec::new();
    for turns in sessions.values() {
        let roles: Vec<Vec<String>> = turns
            .iter()
            .map(|r| {
                recorded_body(r)["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["role"].as_str().unwrap().to_owned())
                    .collect()
            })
            .collect();
        assert_eq!(
            roles,
            vec![
                vec!["user"],
                vec!["user", "assistant", "user"],
                vec!["user", "assistant", "user", "assistant", "user"],
            ]
        );
        let last = recorded_body(turns[2]);
        let messages = last["messages"].as_array().unwrap();
        let first_text = messages[0]["content"].as_str().unwrap();
        assert!(first_text == "a1" || first_text == "b1", "{first_text}");
        assert!(!messages[1]["content"].as_str().unwrap().is_empty());
        for pair in turns.windows(2) {
            let gap = received_ms(pair[1]) - received_ms(pair[0]);
            assert!(gap >= 300.0, "turns {gap} ms apart; the delay is 300 ms");
        }
        spans.push((received_ms(turns[0]), received_ms(turns[2])));
    }
    // --concurrency 1 holds one slot per session: the sessions never overlap.
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(spans[1].0 > spans[0].1, "sessions overlapped: {spans:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthetic_sessions_never_exceed_the_session_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _record) = recording_mock(dir.path(), 10.0, 1.0).await;
    let argv = run_args(
        &server,
        dir.path(),
        "--session-turns-mean 3 --session-turn-delay-mean 50 --num-sessions 8 --concurrency 2 --isl 16 --osl 3",
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let records = read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    assert_eq!(records.len(), 24, "8 sessions of 3 turns");
    let mut spans: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for record in &records {
        let meta = &record["metadata"];
        let id = meta["x_correlation_id"].as_str().unwrap().to_owned();
        let start = meta["request_start_ns"].as_u64().unwrap();
        let end = meta["request_end_ns"].as_u64().unwrap();
        let span = spans.entry(id).or_insert((start, end));
        span.0 = span.0.min(start);
        span.1 = span.1.max(end);
    }
    assert_eq!(spans.len(), 8);
    let mut events: Vec<(u64, i32)> = spans
        .values()
        .flat_map(|(s, e)| [(*s, 1), (*e, -1)])
        .collect();
    events.sort_unstable();
    let (mut open, mut peak) = (0, 0);
    for (_, delta) in events {
        open += delta;
        peak = peak.max(open);
    }
    assert_eq!(peak, 2, "open sessions at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_users_are_numbered_and_keep_their_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (server, record) = recording_mock(dir.path(), 5.0, 1.0).await;
    let argv = run_args(
        &server,
        dir.path(),
        "--user-centric-rate 20 --num-users 4 --session-turns-mean 3 --benchmark-duration 1.2 --isl 16 --osl 2",
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let requests = recorded(server, &record).await;
    let mut users: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for request in &requests {
        let user: u64 = header(request, "x-correlation-id").parse().unwrap();
        users.entry(user).or_default().push(received_ms(request));
    }
    // 20 QPS over 1.2 s.
    assert!(
        (18..=30).contains(&requests.len()),
        "{} requests",
        requests.len()
    );
    // Each user waits num_users / rate = 200 ms between turns. A busy machine can
    // delay one send, which stretches one gap and may shorten the next, so each gap
    // gets a wide window and the mean over every user's gaps a narrow one. (A user
    // with a single gap would otherwise hold that one gap to the narrow window.)
    let mut all_gaps = Vec::new();
    for (user, times) in &users {
        let gaps: Vec<f64> = times.windows(2).map(|pair| pair[1] - pair[0]).collect();
        for gap in &gaps {
            assert!((120.0..=320.0).contains(gap), "user {user}: {times:?}");
        }
        all_gaps.extend(gaps);
    }
    assert!(all_gaps.len() >= 8, "{users:?}");
    let mean = all_gaps.iter().sum::<f64>() / all_gaps.len() as f64;
    assert!((mean - 200.0).abs() < 30.0, "mean gap {mean}: {users:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_requests_are_errors_with_code_499() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _record) = recording_mock(dir.path(), 200.0, 5.0).await;
    let argv = run_args(
        &server,
        dir.path(),
        "--streaming --request-count 40 --concurrency 10 --isl 16 --osl 4 --request-cancellation-rate 50 --request-cancellation-delay 0.05",
    );
    let output = profile(argv).await;
    let summary = read_json(&dir.path().join("artifacts/profile_export_aiperf.json"));
    assert_exit(&output, 0);
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["error_details"]["code"], 499);
    assert_eq!(
        errors[0]["error_details"]["type"],
        "RequestCancellationError"
    );
    let cancelled = errors[0]["count"].as_u64().unwrap();
    assert!((10..=30).contains(&cancelled), "{cancelled} of 40 at 50 %");
    assert_eq!(
        stat(&summary, "request_count", "avg") as u64,
        40 - cancelled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_writes_byte_identical_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let trace = write(dir.path(), "trace.jsonl", TRACE);
    let mut inputs = Vec::new();
    for (run, source) in [
        ("a", "--session-turns-mean 2 --num-prefix-prompts 3 --prefix-prompt-length 8 --isl 20 --request-count 4".to_string()),
        ("b", "--session-turns-mean 2 --num-prefix-prompts 3 --prefix-prompt-length 8 --isl 20 --request-count 4".to_string()),
        ("c", format!("--input-file {trace} --isl-block-size 20 --no-fixed-schedule --request-count 5")),
        ("d", format!("--input-file {trace} --isl-block-size 20 --no-fixed-schedule --request-count 5")),
    ] {
        let run_dir = dir.path().join(run);
        let argv = run_args(&server, &run_dir, &source);
        let output = profile(argv).await;
        assert_exit(&output, 0);
        inputs.push(std::fs::read(run_dir.join("artifacts/inputs.json")).unwrap());
    }
    assert!(
        inputs[0] == inputs[1],
        "synthetic inputs differ between runs"
    );
    assert!(inputs[2] == inputs[3], "trace inputs differ between runs");
    assert!(inputs[0] != inputs[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_synthetic_dataset_sends_and_writes_what_the_whole_one_does() {
    // Sized by default (one conversation per session), the synthetic dataset is made as
    // the run goes, in dataset order; with --num-dataset-entries it is made whole and
    // drawn, here sequentially: the same conversations, sent in the same order through
    // warmup, profiling and a second pass, and the same inputs.json.
    let dir = tempfile::tempdir().unwrap();
    let shape = "--session-turns-mean 2 --session-turns-stddev 1 --num-sessions 6 \
                 --warmup-request-count 3 --concurrency 1 --isl 12 --osl 2";
    let mut sent = Vec::new();
    let mut inputs = Vec::new();
    for (run, sizing) in [
        ("streamed", ""),
        (
            "whole",
            "--num-dataset-entries 6 --dataset-sampling-strategy sequential",
        ),
    ] {
        let run_dir = dir.path().join(run);
        std::fs::create_dir_all(&run_dir).unwrap();
        let (server, record) = recording_mock(&run_dir, 0.0, 0.0).await;
        let output = profile(run_args(&server, &run_dir, &format!("{shape} {sizing}"))).await;
        assert_exit(&output, 0);
        let bodies: Vec<Value> = recorded(server, &record)
            .await
            .iter()
            .map(recorded_body)
            .collect();
        sent.push(bodies);
        inputs.push(std::fs::read(run_dir.join("artifacts/inputs.json")).unwrap());
    }
    assert!(sent[0] == sent[1], "{:#?}\n{:#?}", sent[0], sent[1]);
    assert!(sent[0].len() > 3 + 6, "{} requests", sent[0].len());
    assert!(inputs[0] == inputs[1], "inputs.json differs");
    let written: Value = serde_json::from_slice(&inputs[0]).unwrap();
    let ids: Vec<&str> = written["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_that_stops_early_still_writes_the_whole_dataset() {
    // A duration ends the run long before its 2,000 requests: the conversations it did
    // not make are made once sending ended, so inputs.json is byte for byte what the
    // whole dataset of 2,000 writes before its run.
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    let mut sent = Vec::new();
    for (run, sizing) in [
        (
            "stopped",
            "--request-count 2000 --benchmark-duration 0.5 --request-rate 40",
        ),
        (
            "whole",
            "--num-dataset-entries 2000 --request-count 3 --dataset-sampling-strategy sequential",
        ),
    ] {
        let run_dir = dir.path().join(run);
        std::fs::create_dir_all(&run_dir).unwrap();
        let (server, record) = recording_mock(&run_dir, 0.0, 0.0).await;
        let argv = run_args(&server, &run_dir, &format!("--isl 12 --osl 2 {sizing}"));
        let output = profile(argv).await;
        assert_exit(&output, 0);
        sent.push(recorded(server, &record).await.len());
        inputs.push(std::fs::read(run_dir.join("artifacts/inputs.json")).unwrap());
    }
    assert!((1..200).contains(&sent[0]), "{} requests sent", sent[0]);
    assert!(inputs[0] == inputs[1], "inputs.json differs");
    let written: Value = serde_json::from_slice(&inputs[0]).unwrap();
    let data = written["data"].as_array().unwrap();
    assert_eq!(data.len(), 2000);
    assert_eq!(data[1999]["session_id"], "session_001999");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_names_the_file_line_and_field_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "bad.jsonl",
        "{\"text\": \"fine\"}\n{\"text\": \"fine\"}\n{\"text\": 5}\n",
    );
    let output = profile(args(&format!(
        "-m mock-model --url http://127.0.0.1:9 --input-file {file} --custom-dataset-type single_turn"
    )))
    .await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{file}:3")) && stderr.contains("text"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_of_a_session_goes_to_the_url_of_its_first() {
    let dir = tempfile::tempdir().unwrap();
    let first_dir = dir.path().join("first");
    let second_dir = dir.path().join("second");
    std::fs::create_dir_all(&first_dir).unwrap();
    std::fs::create_dir_all(&second_dir).unwrap();
    let (first, first_record) = recording_mock(&first_dir, 2.0, 1.0).await;
    let (second, second_record) = recording_mock(&second_dir, 2.0, 1.0).await;
    let argv = args(&format!(
        "-m mock-model --url {} --url {} --session-turns-mean 3 --num-sessions 4 --concurrency 2 \
         --isl 16 --osl 2 --no-server-metrics --artifact-dir {}",
        first.url(),
        second.url(),
        dir.path().join("artifacts").display()
    ));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let sessions = |requests: &[Value]| {
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        for request in requests {
            *ids.entry(header(request, "x-correlation-id").to_owned())
                .or_default() += 1;
        }
        ids
    };
    let on_first = sessions(&recorded(first, &first_record).await);
    let on_second = sessions(&recorded(second, &second_record).await);
    // Round-robin per session, and all three turns of each on the same server.
    assert_eq!(on_first.len(), 2, "{on_first:?}");
    assert_eq!(on_second.len(), 2, "{on_second:?}");
    assert!(on_first
        .values()
        .chain(on_second.values())
        .all(|turns| *turns == 3));
    assert!(on_first.keys().all(|id| !on_second.contains_key(id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_users_need_multi_turn_conversations() {
    let output = profile(args(
        "-m mock-model --url http://127.0.0.1:9 --user-centric-rate 5 --num-users 2 --isl 8",
    ))
    .await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--user-centric-rate needs multi-turn conversations"),
        "{stderr}"
    );
}
