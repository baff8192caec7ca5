//! `aiperf chat` against the in-process mock: the quick form, the interactive form through
//! a pseudo-terminal (`script` from util-linux), history, and a failed request.
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(clippy::print_stderr)] // a test says on the terminal which optional tool it skipped

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use aiperf_mock_server::{FaultConfig, MockConfig, MockServer};
use common::{aiperf_binary, assert_exit, read_jsonl, recorded_body, recorded_header};
use serde_json::{json, Value};

async fn recording_server(record: &Path, faults: FaultConfig) -> MockServer {
    MockServer::start(MockConfig {
        record_requests: Some(record.to_path_buf()),
        faults,
        ..MockConfig::with_timing(20.0, 2.0)
    })
    .await
    .unwrap()
}

fn chat(args: &[&str]) -> Output {
    Command::new(aiperf_binary())
        .arg("chat")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

/// The TTFT of a stats block, ms.
fn ttft_ms(stdout: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("TTFT: "))
        .unwrap_or_else(|| panic!("no TTFT line in {stdout}"));
    line["TTFT: ".len()..line.len() - " ms".len()]
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_sends_one_message_and_prints_the_reply_and_its_stats() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    // The mock refuses a request without this key (401), so a reply proves it was sent.
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        api_key: Some("sk-secret-123".into()),
        ..MockConfig::with_timing(20.0, 2.0)
    })
    .await
    .unwrap();
    let url = server.url();
    let output = tokio::task::spawn_blocking(move || {
        chat(&[
            "-m",
            "mock-model",
            "-u",
            &url,
            "--tokenizer",
            "builtin",
            "--system-prompt",
            "Be brief.",
            "--api-key",
            "sk-secret-123",
            "-q",
            "Hello there",
        ])
    })
    .await
    .unwrap();
    server.shutdown().await;
    assert_exit(&output, 0);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(
        !lines[0].trim().is_empty(),
        "the reply comes first: {stdout}"
    );
    assert!(
        lines[2].starts_with("TPS:  ") && lines[2].ends_with("s)"),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("ITL:  ") && lines[3].contains("ms/token"),
        "{stdout}"
    );
    // The mock waits 20 ms before the first token.
    assert!(ttft_ms(&stdout) >= 20.0, "{stdout}");
    assert!(
        !stdout.contains("sk-secret")
            && !String::from_utf8_lossy(&output.stderr).contains("sk-secret")
    );

    let requests = read_jsonl(&record);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["path"], "/v1/chat/completions");
    // The mock's own record redacts it.
    assert_eq!(recorded_header(&requests[0], "authorization"), Some("***"));
    let body = recorded_body(&requests[0]);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello there"}
        ])
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_quick_message_shows_the_server_s_error_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let faults = FaultConfig {
        error_rate: 100.0,
        ..FaultConfig::default()
    };
    let server = recording_server(&record, faults).await;
    let url = server.url();
    let output = tokio::task::spawn_blocking(move || {
        chat(&[
            "-m",
            "mock-model",
            "-u",
            &url,
            "--tokenizer",
            "builtin",
            "-q",
            "hi",
        ])
    })
    .await
    .unwrap();
    server.shutdown().await;
    assert_exit(&output, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("request failed: HTTP 500: {"),
        "{stderr}"
    );
}

/// `aiperf chat` at a pseudo-terminal, typing `lines` and then Ctrl-D; `None` (skip) when
/// `script` is missing outside CI.
fn chat_at_a_terminal(url: &str, extra: &str, lines: &[&str]) -> Option<Output> {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`script` (util-linux) is missing and CI=true"
        );
        eprintln!("skipping: `script` is not installed");
        return None;
    }
    let command = format!(
        "{} chat -m mock-model -u {url} --tokenizer builtin {extra}",
        aiperf_binary().display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    // Ctrl-D at the terminal: the end of the chat's input.
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    Some(child.wait_with_output().unwrap())
}

fn messages(request: &Value) -> Vec<(String, String)> {
    recorded_body(request)["messages"]
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_terminal_each_message_resends_the_conversation_unless_no_history() {
    for (extra, history) in [("", true), ("--no-history", false)] {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("requests.jsonl");
        let server = recording_server(&record, FaultConfig::default()).await;
        let url = server.url();
        let output = tokio::task::spawn_blocking(move || {
            chat_at_a_terminal(&url, extra, &["first question", "second question"])
        })
        .await
        .unwrap();
        server.shutdown().await;
        let Some(output) = output else { return };
        assert_exit(&output, 0);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("Please enter a message for the chat model (Ctrl-D to exit):"),
            "{stdout}"
        );
        assert_eq!(stdout.matches("TTFT: ").count(), 2, "{stdout}");

        let requests = read_jsonl(&record);
        assert_eq!(requests.len(), 2, "{stdout}");
        assert_eq!(
            messages(&requests[0]),
            [("user".to_owned(), "first question".to_owned())]
        );
        let second = messages(&requests[1]);
        if history {
            assert_eq!(second.len(), 3, "{second:?}");
            assert_eq!(second[1].0, "assistant");
            // The assistant's turn is the reply the terminal showed.
            assert!(stdout.contains(second[1].1.trim()), "{stdout}");
        } else {
            assert_eq!(second, [("user".to_owned(), "second question".to_owned())]);
        }
    }
}
