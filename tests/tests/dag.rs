//! `dag_jsonl` sessions that start one another, run by the built binary against the
//! recording mock: children go after the turn that starts them, a join after every
//! child, a fork carries its parent's history; `--inter-turn-delay-cap-seconds`
//! shortens a think time.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_jsonl, recorded_body};
use serde_json::Value;

/// `root` spawns `a` and `b` on its first turn and joins them on its second, which
/// forks `f` (ending `root`). `a` waits 300 ms before its second turn, so a join that
/// did not wait would send `r1` before `a1`.
const DAG: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "r0"}], "spawns": ["a", "b"]}, {"messages": [{"role": "user", "content": "r1"}], "forks": ["f"]}]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "a0"}]}, {"messages": [{"role": "user", "content": "a1"}], "delay": 300}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "b0"}]}]}
{"session_id": "f", "turns": [{"messages": [{"role": "user", "content": "f0"}]}]}
"#;

/// The bodies the recording mock received, in arrival order, during a run of `flags`.
async fn recorded_bodies(dir: &Path, flags: &str) -> Vec<Value> {
    let record = dir.join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
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

/// The (role, content) of each message of a chat body.
fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn last_user_text(body: &Value) -> String {
    messages(body).last().unwrap().1.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_follow_their_parent_turn_and_a_join_waits_for_every_child() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dag.jsonl");
    std::fs::write(&file, DAG).unwrap();
    // No stop condition: the one root session tree is sent once, whole.
    let bodies = recorded_bodies(
        dir.path(),
        &format!("--input-file {} --concurrency 1", file.display()),
    )
    .await;
    let order: Vec<String> = bodies.iter().map(last_user_text).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, ["a0", "a1", "b0", "f0", "r0", "r1"], "{order:?}");
    let at = |text: &str| order.iter().position(|t| t == text).unwrap();
    assert_eq!(at("r0"), 0, "{order:?}");
    assert!(at("a0") < at("a1"), "{order:?}");
    assert!(at("r1") > at("a1") && at("r1") > at("b0"), "{order:?}");
    assert_eq!(at("f0"), 5, "{order:?}");
    // The spawned children start fresh; the fork continues the root's history with the
    // mock's replies.
    assert_eq!(
        messages(&bodies[at("b0")]),
        [("user".to_owned(), "b0".to_owned())]
    );
    let a1 = messages(&bodies[at("a1")]);
    let roles: Vec<&str> = a1.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let f0 = messages(&bodies[at("f0")]);
    let summary: Vec<(&str, &str)> = f0
        .iter()
        .map(|(role, text)| {
            let text = if role == "assistant" { "<reply>" } else { text };
            (role.as_str(), text)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("system", "sys"),
            ("user", "r0"),
            ("assistant", "<reply>"),
            ("user", "r1"),
            ("assistant", "<reply>"),
            ("user", "f0"),
        ]
    );
    let records = read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    assert_eq!(records.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delay_cap_shortens_a_long_think_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dag.jsonl");
    std::fs::write(
        &file,
        r#"{"session_id": "s", "turns": [{"messages": [{"role": "user", "content": "t0"}]}, {"messages": [{"role": "user", "content": "t1"}], "delay": 20000}]}"#,
    )
    .unwrap();
    let bodies = recorded_bodies(
        dir.path(),
        &format!(
            "--input-file {} --request-count 2 --inter-turn-delay-cap-seconds 0.2",
            file.display()
        ),
    )
    .await;
    assert_eq!(bodies.len(), 2);
    let records = read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    let ns = |i: usize, key: &str| records[i]["metadata"][key].as_u64().unwrap();
    let mut by_start: Vec<usize> = vec![0, 1];
    by_start.sort_by_key(|&i| ns(i, "request_start_ns"));
    let gap_ms =
        (ns(by_start[1], "request_start_ns") - ns(by_start[0], "request_end_ns")) as f64 / 1e6;
    // Uncapped, the second turn would wait 20 s after the first reply.
    assert!((200.0..10_000.0).contains(&gap_ms), "gap {gap_ms} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_dag_line_is_a_usage_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dag.jsonl");
    std::fs::write(
        &file,
        "{\"session_id\": \"p\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"spawns\": [\"ghost\"]}]}\n",
    )
    .unwrap();
    let argv = args(&format!(
        "-m mock-model --url mock --artifact-dir {} --input-file {}",
        dir.path().join("artifacts").display(),
        file.display()
    ));
    let output = profile(argv).await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:1: turns[0].spawns[0]: unknown session id 'ghost': no line has it",
            file.display()
        )),
        "{stderr}"
    );
}
