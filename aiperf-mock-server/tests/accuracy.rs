//! Accuracy mode: the reply text (streamed and not) carries the right answer or a wrong one
//! as the seeded rule says, from the answer file or the `x-mock-answer` header.

#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{
    accuracy_reply, answers_correctly, AccuracyConfig, MockConfig, MockError, MockServer, CORPUS,
};
use common::*;
use hyper::Method;
use serde_json::{json, Value};

const SEED: u64 = 11;

async fn server(accuracy: AccuracyConfig) -> MockServer {
    MockServer::start(MockConfig {
        accuracy: Some(accuracy),
        random_seed: Some(SEED),
        ..MockConfig::fast()
    })
    .await
    .unwrap()
}

fn answers_file(dir: &tempfile::TempDir, lines: &str) -> std::path::PathBuf {
    let path = dir.path().join("answers.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

fn chat(question: &str, max_tokens: u32, stream: bool) -> Value {
    json!({
        "messages": [{"role": "user", "content": format!("Question: {question}\nAnswer:")}],
        "max_tokens": max_tokens, "stream": stream, "stream_options": {"include_usage": true}
    })
}

#[tokio::test]
async fn chat_replies_carry_the_answer_file_s_answer_streamed_and_not() {
    let dir = tempfile::tempdir().unwrap();
    let file = answers_file(
        &dir,
        "{\"question\": \"What is 6 times 7?\", \"answer\": 42}\n\n{\"question\": \"Which letter?\", \"answer\": \"C\"}\n",
    );
    let s = server(AccuracyConfig {
        answers_file: Some(file),
        reply_template: "The answer is \"{answer}\".\n#### {answer}".into(),
        ..AccuracyConfig::default()
    })
    .await;

    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &chat("What is 6 times 7?", 8, false),
    )
    .await;
    let v = r.json();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "The answer is \"42\".\n#### 42"
    );
    // the reply ends by itself within the budget: one token per word
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 6);

    // a budget smaller than the reply cuts it, as a real model's would be
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &chat("Which letter?", 5, true),
    )
    .await;
    let (content, _) = chat_content(&r);
    assert_eq!(content, "The answer is \"C\".\n####");

    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &chat("Which letter?", 6, true),
    )
    .await;
    let (content, _) = chat_content(&r);
    assert_eq!(content, "The answer is \"C\".\n#### C");
    let chunks = r.data_json();
    let deltas: Vec<&str> = chunks[1..6]
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["The", " answer", " is", " \"C\".", "\n####"]);
    assert_eq!(chunks[6]["choices"][0]["delta"]["content"], " C");
    assert_eq!(chunks[6]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[7]["usage"]["completion_tokens"], 6);

    // a question the file does not know gets the usual corpus text
    let r = post(
        s.addr(),
        "/v1/chat/completions",
        &chat("Unknown?", 5, false),
    )
    .await;
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        format!(
            " {} {} {} {} {}",
            CORPUS[0], CORPUS[1], CORPUS[2], CORPUS[3], CORPUS[4]
        )
    );
}

#[tokio::test]
async fn the_header_gives_the_answer_and_the_seed_decides_right_or_wrong() {
    let p = 0.5;
    let s = server(AccuracyConfig {
        correct_probability: p,
        ..AccuracyConfig::default()
    })
    .await;
    let mut right = 0;
    for i in 0..40 {
        let prompt = format!("Question {i}: pick one.");
        let body = json!({"prompt": prompt, "max_tokens": 5, "stream": i % 2 == 0});
        let r = request(
            s.addr(),
            Method::POST,
            "/v1/completions",
            &[("x-mock-answer", "B")],
            &body.to_string(),
        )
        .await
        .unwrap();
        let text: String = if i % 2 == 0 {
            r.data_json()
                .iter()
                .filter_map(|c| c["choices"][0]["text"].as_str().map(str::to_owned))
                .collect()
        } else {
            r.json()["choices"][0]["text"].as_str().unwrap().to_owned()
        };
        let expected = if answers_correctly(SEED, &prompt, p) {
            right += 1;
            "B"
        } else {
            "C"
        };
        assert_eq!(text, expected, "{prompt}");
        assert_eq!(text, accuracy_reply(SEED, &prompt, "B", p, "{answer}"));
    }
    // both outcomes happen at p = 0.5 (a constant reply would make the test vacuous)
    assert!((5..=35).contains(&right), "{right}");
}

#[tokio::test]
async fn a_bad_answer_file_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = answers_file(
        &dir,
        "{\"question\": \"q\", \"answer\": \"A\"}\n{\"question\": \"q2\"}\n",
    );
    let err = MockServer::start(MockConfig {
        accuracy: Some(AccuracyConfig {
            answers_file: Some(file.clone()),
            ..AccuracyConfig::default()
        }),
        ..MockConfig::fast()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, MockError::AnswerFile { line: 2, .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2: answer: expected a non-empty string or a number",
            file.display()
        )
    );
    let err = MockConfig {
        accuracy: Some(AccuracyConfig {
            correct_probability: 1.5,
            ..AccuracyConfig::default()
        }),
        ..MockConfig::fast()
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid mock server configuration: --accuracy-probability must be within 0..=1, got 1.5"
    );
}
