//! The trace formats users export from serving platforms, replayed by the built binary
//! against the recording mock server: a Baseten Parquet trace (whole sessions sampled by
//! `--trace-session-sample-ratio`), a SageMaker data capture, a weka agentic trace and
//! mooncake traces (prefix-only lines included); the agentic traces send the prompts
//! their loaders make.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::sync::Arc;

use aiperf_core::config::CustomDatasetType;
use aiperf_datasets::adjust::sample_sessions;
use aiperf_datasets::{load_custom_dataset, CustomDatasetOptions, Tokenizer};
use aiperf_mock_server::{MockConfig, MockServer};
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, ListArray, RecordBatch, StringArray};
use common::{args, assert_exit, profile, read_jsonl, recorded_body};
use serde_json::{json, Value};

/// Twelve sessions 20 ms apart; every third has a second turn 5 ms after its first. Row
/// r records the KV-cache blocks [r, r + 1].
fn write_baseten_trace(path: &Path) {
    let mut timestamps = Vec::new();
    let mut prompts = Vec::new();
    let mut sessions = Vec::new();
    for session in 0..12_i64 {
        let turns = if session % 3 == 0 { 2 } else { 1 };
        for turn in 0..turns {
            timestamps.push(1_700_000_000_000 + 20 * session + 5 * turn);
            prompts.push(format!("session {session} turn {turn}"));
            sessions.push(format!("s{session}"));
        }
    }
    let rows = timestamps.len();
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "timestamp_start_unix_ms",
            Arc::new(Int64Array::from(timestamps)),
        ),
        ("prompt", Arc::new(StringArray::from(prompts))),
        ("input_tokens", Arc::new(Int64Array::from(vec![4; rows]))),
        ("output_tokens", Arc::new(Int64Array::from(vec![3; rows]))),
        ("provided_session_id", Arc::new(StringArray::from(sessions))),
        (
            "total_hashes",
            Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
                (0..rows as i64).map(|r| Some(vec![Some(r), Some(r + 1)])),
            )),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// The bodies the recording mock received during a run of `flags`, in arrival order.
async fn recorded_bodies(dir: &Path, flags: &str) -> Vec<Value> {
    recorded_bodies_answered_after(dir, flags, 0.0).await
}

/// Replays `trace` (mooncake lines) with 20-token blocks and the builtin tokenizer from a
/// file in `dir`; the file's path and the bodies the mock received.
async fn replay_mooncake_blocks_of_20(dir: &Path, trace: &str) -> (std::path::PathBuf, Vec<Value>) {
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, trace).unwrap();
    let flags = format!(
        "--input-file {} --custom-dataset-type mooncake_trace --isl-block-size 20 \
         --tokenizer builtin",
        path.display()
    );
    let bodies = recorded_bodies(dir, &flags).await;
    (path, bodies)
}

/// The bodies a mock answering each request after `latency_ms` received while `input`
/// was replayed one request at a time for `requests` requests.
async fn replay_one_at_a_time(
    dir: &Path,
    input: &Path,
    requests: u32,
    latency_ms: f64,
) -> Vec<Value> {
    let flags = format!(
        "--input-file {} --concurrency 1 --request-count {requests}",
        input.display()
    );
    recorded_bodies_answered_after(dir, &flags, latency_ms).await
}

/// The `max_completion_tokens` of each body.
fn max_tokens(bodies: &[Value]) -> Vec<u64> {
    bodies
        .iter()
        .map(|b| b["max_completion_tokens"].as_u64().unwrap())
        .collect()
}

/// The bodies a mock answering each request after `latency_ms` received during a run
/// of `flags`, in arrival order.
async fn recorded_bodies_answered_after(dir: &Path, flags: &str, latency_ms: f64) -> Vec<Value> {
    let record = dir.join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(latency_ms, 0.0)
    })
    .await
    .unwrap();
    let argv = args(&format!(
        "-m mock-model --url {} --artifact-dir {} --random-seed 5 {flags}",
        server.url(),
        dir.join("artifacts").display()
    ));
    assert_exit(&profile(argv).await, 0);
    read_jsonl(&record).iter().map(recorded_body).collect()
}

/// The last message's text of a chat body.
fn last_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_baseten_trace_sends_exactly_the_kept_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.parquet");
    write_baseten_trace(&trace);
    // The sessions seed 5 keeps, as the library samples them.
    let loaded = load_custom_dataset(
        &trace,
        &CustomDatasetOptions::default(),
        &Tokenizer::builtin(),
    )
    .unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::BasetenTrace);
    let kept = sample_sessions(loaded.conversations, 0.5, 5);
    let mut expected: Vec<String> = kept
        .iter()
        .flat_map(|c| c.turns.iter().map(|t| t.texts.concat()))
        .collect();
    assert!((2..16).contains(&expected.len()), "{expected:?}");

    let bodies = recorded_bodies(
        dir.path(),
        &format!(
            "--input-file {} --trace-session-sample-ratio 0.5",
            trace.display()
        ),
    )
    .await;
    let mut sent: Vec<String> = bodies.iter().map(last_text).collect();
    sent.sort();
    expected.sort();
    assert_eq!(sent, expected);
    for body in &bodies {
        assert_eq!(body["min_tokens"], json!(3), "{body}");
        assert_eq!(body["hash_ids"].as_array().unwrap().len(), 2, "{body}");
        // One turn per request: a recorded prompt already holds its history.
        assert_eq!(body["messages"].as_array().unwrap().len(), 1, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_baseten_body_options_leave_the_recorded_fields_out() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.parquet");
    write_baseten_trace(&trace);
    let bodies = recorded_bodies(
        dir.path(),
        &format!(
            "--input-file {} --omit-kv-hints --no-force-min-tokens",
            trace.display()
        ),
    )
    .await;
    assert_eq!(bodies.len(), 16);
    for body in &bodies {
        assert!(body.get("min_tokens").is_none(), "{body}");
        assert!(body.get("hash_ids").is_none(), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sagemaker_capture_replays_the_captured_messages() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.jsonl");
    let lines: Vec<String> = (0..3)
        .map(|i| {
            let request = json!({
                "messages": [
                    {"role": "system", "content": "terse"},
                    {"role": "user", "content": format!("question {i}")}
                ],
                "max_tokens": 2 + i
            });
            json!({
                "captureData": {"endpointInput": {"data": request.to_string(), "encoding": "JSON"}},
                "eventMetadata": {"inferenceTime": format!("2025-01-31T12:00:00.{:03}Z", 10 * i)}
            })
            .to_string()
        })
        .collect();
    std::fs::write(&capture, lines.join("\n")).unwrap();
    let bodies = recorded_bodies(dir.path(), &format!("--input-file {}", capture.display())).await;
    let mut sent: Vec<(String, usize)> = bodies
        .iter()
        .map(|b| (last_text(b), b["messages"].as_array().unwrap().len()))
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("question 0".to_owned(), 2),
            ("question 1".to_owned(), 2),
            ("question 2".to_owned(), 2)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_capture_record_is_a_usage_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.jsonl");
    std::fs::write(
        &capture,
        "{\"captureData\": {\"endpointInput\": {\"data\": \"{}\", \"encoding\": \"JSON\"}}, \
         \"eventMetadata\": {\"inferenceTime\": \"noon\"}}\n",
    )
    .unwrap();
    let argv = args(&format!(
        "-m mock-model --url mock --artifact-dir {} --input-file {}",
        dir.path().join("artifacts").display(),
        capture.display()
    ));
    let output = profile(argv).await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:1: eventMetadata.inferenceTime: expected an ISO 8601 time such as \
             2025-01-31T12:00:00.123Z, got \"noon\"",
            capture.display()
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weka_trace_folder_replays_each_request_with_its_output_length() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("weka");
    std::fs::create_dir(&traces).unwrap();
    let trace = json!({
        "id": "w1", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            {"t": 0.0, "type": "n", "model": "m", "in": 40, "out": 5, "hash_ids": [1, 2, 3],
             "api_time": 0.01},
            {"type": "subagent", "t": 0.02, "agent_id": "a1", "subagent_type": "Explore",
             "status": "completed", "models": ["m"],
             "requests": [{"t": 0.02, "type": "s", "model": "m", "in": 20, "out": 3,
                           "hash_ids": [9, 10]}]},
            {"t": 0.03, "type": "n", "model": "m", "in": 56, "out": 6, "hash_ids": [1, 2, 3, 4]}
        ]
    });
    std::fs::write(traces.join("w1.json"), trace.to_string()).unwrap();
    let bodies = replay_one_at_a_time(dir.path(), &traces, 3, 0.0).await;
    let max_tokens = max_tokens(&bodies);
    // The subagent starts once the first request's reply is back; the second waits
    // for it (one slot: it shares its parent's).
    assert_eq!(max_tokens, [5, 3, 6]);
    for body in &bodies {
        // Each recorded request carries its whole context: one message.
        assert_eq!(body["messages"].as_array().unwrap().len(), 1, "{body}");
    }
    // inputs.json lists the subagent's session after its parent's.
    let inputs = common::read_json(&dir.path().join("artifacts").join("inputs.json"));
    let sessions: Vec<(&str, usize)> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let payloads = s["payloads"].as_array().unwrap();
            (s["session_id"].as_str().unwrap(), payloads.len())
        })
        .collect();
    assert_eq!(sessions, [("w1", 2), ("w1::sa:a1", 1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weka_parent_request_waits_for_the_subagent_it_joins() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.json");
    // The parent's second request was recorded 0.54 s after its first ended, right
    // after the subagent's two requests (0.5 s apart) ended. Against a mock taking
    // 0.5 s a request, the subagent's second request goes about 1 s after the spawn:
    // without the join the parent's would go first (0.54 s), with it only after the
    // subagent's last reply (about 1.5 s).
    let trace = json!({
        "id": "w", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            {"t": 0.0, "type": "n", "model": "m", "in": 20, "out": 5, "api_time": 0.01},
            {"type": "subagent", "t": 0.02, "agent_id": "a1", "subagent_type": "Explore",
             "status": "completed", "models": ["m"],
             "requests": [
                 {"t": 0.02, "type": "n", "model": "m", "in": 20, "out": 3, "api_time": 0.01},
                 {"t": 0.53, "type": "n", "model": "m", "in": 20, "out": 4, "api_time": 0.01}
             ]},
            {"t": 0.55, "type": "n", "model": "m", "in": 20, "out": 6}
        ]
    });
    std::fs::write(&file, trace.to_string()).unwrap();
    let bodies = replay_one_at_a_time(dir.path(), &file, 4, 500.0).await;
    let max_tokens = max_tokens(&bodies);
    assert_eq!(max_tokens, [5, 3, 4, 6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weka_agent_recorded_starting_mid_request_is_sent_while_that_request_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.json");
    // The second request does not extend the first, which was still running (0 to
    // 2 s): another agent (a one-shot sidecar, `aux:`), recorded 0.2 s after the first
    // was sent. Against a mock
    // taking 1 s a request, it goes 0.2 s after the first is sent, before the first's
    // reply; the main agent's next request (joined to it) goes after both.
    let trace = json!({
        "id": "w", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            {"t": 0.0, "type": "n", "model": "m", "in": 32, "out": 5, "hash_ids": [1, 2],
             "api_time": 2.0},
            {"t": 0.2, "type": "n", "model": "m", "in": 48, "out": 3, "hash_ids": [1, 2, 30],
             "api_time": 0.2},
            {"t": 2.05, "type": "n", "model": "m", "in": 48, "out": 6, "hash_ids": [1, 2, 3],
             "api_time": 0.1}
        ]
    });
    std::fs::write(&file, trace.to_string()).unwrap();
    let bodies = replay_one_at_a_time(dir.path(), &file, 3, 1000.0).await;
    let max_tokens = max_tokens(&bodies);
    assert_eq!(max_tokens, [5, 3, 6]);
    let records = read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    let at = |conversation: &str, turn: u64, key: &str| -> f64 {
        let record = records
            .iter()
            .find(|r| {
                r["metadata"]["conversation_id"] == conversation
                    && r["metadata"]["turn_index"] == turn
            })
            .unwrap_or_else(|| panic!("no record of {conversation} turn {turn}"));
        record["metadata"][key].as_f64().unwrap() / 1e6
    };
    let main_sent = at("w", 0, "request_start_ns");
    let agent_sent = at("w::aux:000", 0, "request_start_ns");
    // In flight: after the send (and its 0.2 s), before the 1 s reply.
    assert!(
        agent_sent - main_sent >= 150.0 && agent_sent < at("w", 0, "request_end_ns"),
        "agent sent {} ms after the main request, which ended {} ms after it",
        agent_sent - main_sent,
        at("w", 0, "request_end_ns") - main_sent
    );
    assert!(at("w", 1, "request_start_ns") >= at("w::aux:000", 0, "request_end_ns"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mooncake_trace_sends_and_records_the_prompts_its_loader_makes() {
    // Shared leading blocks, a block first seen short then whole, a line without hash
    // ids: the run makes the prompts as it goes, inputs.json beside it.
    let dir = tempfile::tempdir().unwrap();
    let (trace, bodies) = replay_mooncake_blocks_of_20(
        dir.path(),
        "{\"timestamp\": 0, \"input_length\": 30, \"output_length\": 3, \"hash_ids\": [1, 9]}\n\
         {\"timestamp\": 20, \"input_length\": 50, \"output_length\": 3, \"hash_ids\": [1, 9, 2]}\n\
         {\"timestamp\": 40, \"input_length\": 12, \"output_length\": 3}\n\
         {\"timestamp\": 60, \"input_length\": 45, \"output_length\": 3, \"hash_ids\": [1, 9, 3]}\n",
    )
    .await;
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::MooncakeTrace),
        block_size: Some(20),
        seed: 5,
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(&trace, &options, &Tokenizer::builtin()).unwrap();
    let mut made: Vec<String> = loaded
        .conversations
        .iter()
        .map(|c| c.turns[0].texts[0].clone())
        .collect();
    // Sends 20 ms apart may reach the mock out of order on a loaded machine.
    let mut sent: Vec<String> = bodies.iter().map(last_text).collect();
    made.sort();
    sent.sort();
    assert_eq!(sent, made);
    assert_inputs_json_holds(dir.path(), &bodies);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_only_mooncake_lines_are_sent_at_their_input_length() {
    // Block size 20: lines 2 and 3 ask for more than the 40 tokens of their two hash ids
    // (prefix only, as captured traces record them); line 4 is the two blocks alone.
    let dir = tempfile::tempdir().unwrap();
    let (_, bodies) = replay_mooncake_blocks_of_20(
        dir.path(),
        "{\"timestamp\": 0, \"input_length\": 30, \"output_length\": 3, \"hash_ids\": [1, 9]}\n\
         {\"timestamp\": 20, \"input_length\": 70, \"output_length\": 3, \"hash_ids\": [1, 9]}\n\
         {\"timestamp\": 40, \"input_length\": 55, \"output_length\": 3, \"hash_ids\": [1, 9]}\n\
         {\"timestamp\": 60, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 9]}\n",
    )
    .await;
    assert_eq!(bodies.len(), 4);
    let inputs = common::read_json(&dir.path().join("artifacts").join("inputs.json"));
    let tokenizer = Tokenizer::builtin();
    let prompts: Vec<Vec<u32>> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| tokenizer.encode(&last_text(&session["payloads"][0])))
        .collect();
    assert_eq!(
        prompts.iter().map(Vec::len).collect::<Vec<_>>(),
        [30, 70, 55, 40]
    );
    // The blocks of hash ids 1 and 9 lead every prompt; the fresh tails differ.
    assert_eq!(prompts[1][..40], prompts[3][..]);
    assert_eq!(prompts[2][..40], prompts[3][..]);
    assert_eq!(prompts[0][..], prompts[3][..30]);
    assert_ne!(prompts[1][40..55], prompts[2][40..55]);
    let mut sent: Vec<String> = bodies.iter().map(last_text).collect();
    let mut recorded: Vec<String> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| last_text(&session["payloads"][0]))
        .collect();
    sent.sort();
    recorded.sort();
    assert_eq!(sent, recorded);
}

/// Replays `input` (`requests` requests) one request at a time and checks that the run
/// sent, and `inputs.json` holds, exactly the prompts the loader makes when every prompt
/// is made before a run: the run makes them from recipes as it goes.
async fn assert_sends_the_prompts_made_at_load(dir: &Path, input: &Path, requests: u32) {
    let flags = format!(
        "--input-file {} --concurrency 1 --request-count {requests} --tokenizer builtin",
        input.display()
    );
    let bodies = recorded_bodies(dir, &flags).await;
    let options = CustomDatasetOptions {
        seed: 5,
        ..CustomDatasetOptions::default()
    };
    let loaded = load_custom_dataset(input, &options, &Tokenizer::builtin()).unwrap();
    let mut made: Vec<String> = loaded
        .conversations
        .iter()
        .flat_map(aiperf_core::Conversation::with_descendants)
        .flat_map(|session| &session.turns)
        .map(|turn| turn.texts.concat())
        .collect();
    assert_eq!(made.len(), requests as usize);
    let mut sent: Vec<String> = bodies.iter().map(last_text).collect();
    made.sort();
    sent.sort();
    assert_eq!(sent, made);
    assert_inputs_json_holds(dir, &bodies);
}

/// The `inputs.json` of the run under `dir` holds exactly the bodies it sent (sends may
/// reach the mock out of order on a loaded machine, so in any order).
fn assert_inputs_json_holds(dir: &Path, bodies: &[Value]) {
    let inputs = common::read_json(&dir.join("artifacts").join("inputs.json"));
    let mut recorded: Vec<String> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|session| session["payloads"].as_array().unwrap())
        .map(Value::to_string)
        .collect();
    let mut bodies: Vec<String> = bodies.iter().map(Value::to_string).collect();
    recorded.sort();
    bodies.sort();
    assert_eq!(recorded, bodies);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tracelab_trace_sends_and_records_the_prompts_its_loader_makes() {
    // Session s1's second round keeps the 2 whole 64-token blocks of its first; s2 is
    // on its own. Think times of 10 ms.
    let row = |session: &str, index: u64, input: u64, prefix: u64, at_ms: u64| {
        let time = |ms: u64| format!("2025-01-31T12:00:00.{ms:03}Z");
        json!({"session_id": session, "round_index": index, "input_tokens_total": input,
               "prefix_tokens": prefix, "newly_append_tokens": input - prefix,
               "output_tokens": 3 + index,
               "timing_events": [{"event_type": "user_message", "timestamp": time(at_ms)},
                                 {"event_type": "text", "timestamp": time(at_ms + 10)}]})
        .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rounds.jsonl");
    let rows = [
        row("s1", 0, 150, 0, 0),
        row("s1", 1, 200, 150, 20),
        row("s2", 0, 70, 0, 5),
    ];
    std::fs::write(&file, rows.join("\n")).unwrap();
    assert_sends_the_prompts_made_at_load(dir.path(), &file, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weka_trace_sends_and_records_the_prompts_its_loader_makes() {
    // Shared leading blocks, a subagent, a prefix-only request (fresh tokens after its
    // one recorded block) and one without hash ids.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.json");
    let trace = json!({
        "id": "w", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            {"t": 0.0, "type": "n", "model": "m", "in": 40, "out": 5, "hash_ids": [1, 2, 3],
             "api_time": 0.01},
            {"type": "subagent", "t": 0.02, "agent_id": "a1", "subagent_type": "Explore",
             "status": "completed", "models": ["m"],
             "requests": [{"t": 0.02, "type": "s", "model": "m", "in": 20, "out": 3,
                           "hash_ids": [9, 10]}]},
            {"t": 0.03, "type": "n", "model": "m", "in": 56, "out": 6, "hash_ids": [1, 2, 3, 4],
             "api_time": 0.01},
            {"t": 0.05, "type": "n", "model": "m", "in": 90, "out": 2, "hash_ids": [1],
             "api_time": 0.01},
            {"t": 0.07, "type": "n", "model": "m", "in": 12, "out": 2}
        ]
    });
    std::fs::write(&file, trace.to_string()).unwrap();
    assert_sends_the_prompts_made_at_load(dir.path(), &file, 5).await;
}
