//! `aiperf profile --public-dataset NAME` with the built binary: the split comes from a
//! Hugging Face cache made by the test (`HF_HOME`, offline), its prompts are what the
//! mock receives, and a dataset missing offline is one sentence saying where it goes.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::sync::Arc;

use aiperf_mock_server::{MockConfig, MockServer};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use common::{assert_exit, profile_offline, read_jsonl, recorded_body};

/// `datasets--openai--gsm8k` at `refs/main`, with the `main` config's test split.
fn gsm8k_cache(hf_home: &Path, questions: &[&str]) {
    let repo = hf_home.join("hub/datasets--openai--gsm8k");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let folder = repo.join("snapshots").join(commit).join("main");
    std::fs::create_dir_all(&folder).unwrap();
    let batch = RecordBatch::try_from_iter([(
        "question",
        Arc::new(StringArray::from(questions.to_vec())) as ArrayRef,
    )])
    .unwrap();
    let file = std::fs::File::create(folder.join("test-00000-of-00001.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_al_gsm8k_sends_the_cached_questions_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let questions = ["How many apples are left?", "What is 12 times 7?"];
    gsm8k_cache(dir.path(), &questions);
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let output = profile_offline(
        dir.path(),
        &format!(
            "-m mock-model --public-dataset spec_al_gsm8k --concurrency 1 --request-count 2 \
             --url {} --artifact-dir {}",
            server.url(),
            dir.path().join("out").display()
        ),
    )
    .await;
    server.shutdown().await;
    assert_exit(&output, 0);
    let prompts: Vec<serde_json::Value> = read_jsonl(&record)
        .iter()
        .map(|request| recorded_body(request)["messages"][0]["content"].clone())
        .collect();
    assert_eq!(prompts, questions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_missing_offline_says_where_its_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let output = profile_offline(
        dir.path(),
        &format!(
            "-m mock-model --public-dataset spec_al_mbpp --request-count 1 --url \
             http://127.0.0.1:9 --artifact-dir {}",
            dir.path().join("out").display()
        ),
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!(
        "Hugging Face dataset google-research-datasets/mbpp (full/test) is not in the local \
         cache and HF_HUB_OFFLINE is set: put its files in {}, or unset HF_HUB_OFFLINE to \
         download them",
        dir.path()
            .join("hub/datasets--google-research-datasets--mbpp/snapshots/main/full/test")
            .display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert_ne!(output.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hf_weka_dataset_replays_the_cached_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir
        .path()
        .join("hub/datasets--semianalysisai--cc-traces-weka-test");
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let snapshot = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snapshot).unwrap();
    // One trace of two requests, the second sent as soon as the first is answered.
    let trace = serde_json::json!({
        "id": "t1", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            {"t": 0.0, "type": "n", "model": "m", "in": 30, "out": 5, "hash_ids": [1, 2],
             "api_time": 0.1},
            {"t": 0.1, "type": "n", "model": "m", "in": 45, "out": 6, "hash_ids": [1, 2, 3],
             "api_time": 0.1},
        ]
    });
    std::fs::write(snapshot.join("train.jsonl"), format!("{trace}\n")).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let output = profile_offline(
        dir.path(),
        &format!(
            "-m mock-model --hf-weka-dataset semianalysisai/cc-traces-weka-test \
             --concurrency 1 --request-count 2 --url {} --artifact-dir {}",
            server.url(),
            dir.path().join("out").display()
        ),
    )
    .await;
    server.shutdown().await;
    assert_exit(&output, 0);
    let max_tokens: Vec<serde_json::Value> = read_jsonl(&record)
        .iter()
        .map(|request| recorded_body(request)["max_completion_tokens"].clone())
        .collect();
    assert_eq!(max_tokens, [5, 6]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_bench_sends_each_question_s_first_turn() {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("question.jsonl");
    std::fs::write(
        &questions,
        "{\"question_id\": 1, \"turns\": [\"Write a haiku.\", \"Now a limerick.\"]}\n\
         {\"question_id\": 2, \"turns\": [\"Name three primes.\"]}\n",
    )
    .unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let output = profile_offline(
        dir.path(),
        &format!(
            "-m mock-model --public-dataset spec_bench --input-file {} --concurrency 1 \
             --request-count 2 --url {} --artifact-dir {}",
            questions.display(),
            server.url(),
            dir.path().join("out").display()
        ),
    )
    .await;
    server.shutdown().await;
    assert_exit(&output, 0);
    let prompts: Vec<serde_json::Value> = read_jsonl(&record)
        .iter()
        .map(|request| recorded_body(request)["messages"][0]["content"].clone())
        .collect();
    assert_eq!(prompts, ["Write a haiku.", "Name three primes."]);
}

/// One Exgentic v1 session (`harness`, `id`) of two chat calls, 0.2 s apart.
fn exgentic_session(harness: &str, id: &str) -> serde_json::Value {
    let call = |start: &str, end: &str, text: &str, max_tokens: u32| {
        serde_json::json!({"type": "llm_call", "start_time": start, "end_time": end,
            "attributes": {
                "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3,
                "gen_ai.request.max_tokens": max_tokens,
                "gen_ai.request.temperature": 0,
                "gen_ai.system_instructions": "You are an agent.",
                "gen_ai.input.messages": serde_json::json!([
                    {"role": "user", "parts": [{"type": "text", "content": text}]}]).to_string(),
                "gen_ai.tool.definitions": serde_json::json!([
                    {"type": "function", "name": "run", "description": "runs",
                     "parameters": {"type": "object"}}]).to_string()}})
    };
    serde_json::json!({"harness": harness, "session_id": id, "models": ["azure/gpt-4.1"],
        "spans": [call("2026-01-05T10:00:00Z", "2026-01-05T10:00:00.5Z", &format!("{id} first"), 16),
                  call("2026-01-05T10:00:00.7Z", "2026-01-05T10:00:01Z", &format!("{id} second"), 8)]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exgentic_replays_the_filtered_sessions_recorded_requests() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir
        .path()
        .join("hub/datasets--Exgentic--agent-llm-traces/snapshots")
        .join(aiperf_datasets::catalogue::ExgenticVersion::V1.revision());
    std::fs::create_dir_all(&snapshot).unwrap();
    let rows = [
        exgentic_session("openai_solo", "skipped"),
        exgentic_session("claude_code", "kept"),
    ];
    let lines: Vec<String> = rows.iter().map(serde_json::Value::to_string).collect();
    std::fs::write(snapshot.join("train.jsonl"), lines.join("\n")).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let run = |filter: &'static str| {
        let line = format!(
            "-m mock-model --public-dataset exgentic --dataset-filter {filter} \
             --concurrency 1 --request-count 2 --url {} --artifact-dir {}",
            server.url(),
            dir.path().join("out").display()
        );
        let hf_home = dir.path().to_path_buf();
        async move { profile_offline(&hf_home, &line).await }
    };
    let output = run("harness=claude_code").await;
    assert_exit(&output, 0);
    let refused = run("harness=cursor").await;
    server.shutdown().await;
    let bodies: Vec<serde_json::Value> = read_jsonl(&record).iter().map(recorded_body).collect();
    let expected = |text: &str, max_tokens: u32| {
        serde_json::json!({
            "messages": [{"role": "system", "content": "You are an agent."},
                         {"role": "user", "content": text}],
            "tools": [{"type": "function", "function": {"name": "run", "description": "runs",
                                                          "parameters": {"type": "object"}}}],
            "max_completion_tokens": max_tokens,
            "temperature": 0,
        })
    };
    let sent: Vec<serde_json::Value> = bodies
        .iter()
        .map(|body| {
            serde_json::json!({
                "messages": body["messages"], "tools": body["tools"],
                "max_completion_tokens": body["max_completion_tokens"],
                "temperature": body["temperature"],
            })
        })
        .collect();
    assert_eq!(
        sent,
        [expected("kept first", 16), expected("kept second", 8)]
    );

    assert_exit(&refused, 2);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "Invalid Exgentic dataset filters: unknown harness \"cursor\"; available filters: \
             harness=[claude_code, openai_solo, smolagents_code, tool_calling, \
             tool_calling_with_shortlisting]"
        ),
        "{stderr}"
    );
}
