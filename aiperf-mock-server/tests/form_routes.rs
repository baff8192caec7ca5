//! The routes of the uploading and RAG endpoint types: `/v1/audio/transcriptions` and
//! `/v1/images/edits` (multipart/form-data) and `/rag/api/prompt` (Solido, streamed or
//! whole).
#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{MockConfig, MockServer, TINY_PNG_B64};
use common::*;
use hyper::Method;
use serde_json::json;

const FORM: &str = "multipart/form-data; boundary=B0undary";

async fn fast() -> MockServer {
    MockServer::start(MockConfig::fast()).await.unwrap()
}

/// A form of text fields and (name, filename, text data) files.
fn form(fields: &[(&str, &str)], files: &[(&str, &str, &str)]) -> String {
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--B0undary\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    for (name, filename, data) in files {
        body.push_str(&format!(
            "--B0undary\r\nContent-Disposition: form-data; name=\"{name}\"; \
             filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n{data}\r\n"
        ));
    }
    body.push_str("--B0undary--\r\n");
    body
}

async fn post_form(s: &MockServer, path: &str, body: &str) -> Reply {
    request(
        s.addr(),
        Method::POST,
        path,
        &[("content-type", FORM)],
        body,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_transcription_is_text_the_same_for_the_same_clip() {
    let s = fast().await;
    let body = form(
        &[("model", "whisper")],
        &[("file", "audio.wav", "RIFF clip one")],
    );
    let first = post_form(&s, "/v1/audio/transcriptions", &body).await;
    assert_eq!(first.status, 200);
    let text = first.json()["text"].as_str().unwrap().to_owned();
    assert!(words(&text) >= 16, "{text}");
    let again = post_form(&s, "/v1/audio/transcriptions", &body).await;
    assert_eq!(again.json()["text"], text.as_str());
}

#[tokio::test]
async fn a_transcription_needs_an_uploaded_file_in_a_form() {
    let s = fast().await;
    let no_file = form(&[("model", "whisper"), ("file", "not an upload")], &[]);
    let r = post_form(&s, "/v1/audio/transcriptions", &no_file).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "'file' is required (an uploaded audio file)"
    );
    let r = post(s.addr(), "/v1/audio/transcriptions", &json!({"file": "x"})).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "expected a multipart/form-data body with a boundary"
    );
}

#[tokio::test]
async fn a_transcription_answers_after_the_ttft() {
    let s = MockServer::start(MockConfig::with_timing(50.0, 10.0))
        .await
        .unwrap();
    let body = form(&[], &[("file", "a.wav", "RIFF")]);
    let r = post_form(&s, "/v1/audio/transcriptions", &body).await;
    let latency = r.ms_since_sent(r.frames.last().unwrap().0);
    // A loaded machine may add delay, never remove it.
    assert!((50.0..500.0).contains(&latency), "latency {latency}");
}

#[tokio::test]
async fn an_image_edit_answers_like_a_generation() {
    let s = fast().await;
    let body = form(
        &[("prompt", "make it blue"), ("model", "flux"), ("n", "2")],
        &[("image", "image.png", "\u{89}PNG")],
    );
    let v = post_form(&s, "/v1/images/edits", &body).await.json();
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["b64_json"], TINY_PNG_B64);
    assert_eq!(data[1]["revised_prompt"], "make it blue");
    assert_eq!(v["usage"]["input_tokens"], 3);

    let by_url = form(
        &[
            ("prompt", "x"),
            ("url", "https://i/cat.png"),
            ("response_format", "url"),
        ],
        &[],
    );
    let v = post_form(&s, "/v1/images/edits", &by_url).await.json();
    assert_eq!(v["data"][0]["url"], "https://images.mock.invalid/0.png");
}

#[tokio::test]
async fn an_image_edit_needs_a_prompt_and_an_image() {
    let s = fast().await;
    let r = post_form(&s, "/v1/images/edits", &form(&[("prompt", "x")], &[])).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "'image' is required (an uploaded image file, or a 'url')"
    );
    let r = post_form(
        &s,
        "/v1/images/edits",
        &form(&[], &[("image", "a.png", "x")]),
    )
    .await;
    assert_eq!(r.json()["error"]["message"], "'prompt' is required");
    let bad_n = form(&[("prompt", "x"), ("n", "two")], &[("image", "a.png", "x")]);
    let r = post_form(&s, "/v1/images/edits", &bad_n).await;
    assert_eq!(
        r.json()["error"]["message"],
        "'n' must be a number, got \"two\""
    );
}

#[tokio::test]
async fn solido_answers_content_with_sources() {
    let s = fast().await;
    let body = json!({"query": ["What is SDE?"], "filters": {"family": "Solido", "tool": "SDE"},
        "inference_model": "m"});
    let v = post(s.addr(), "/rag/api/prompt", &body).await.json();
    assert!(words(v["content"].as_str().unwrap()) >= 16, "{v}");
    assert_eq!(
        v["sources"],
        json!([{"title": "SDE User Guide", "page": 1}])
    );

    let r = post(s.addr(), "/rag/api/prompt", &json!({"query": []})).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "'query' needs at least one text"
    );
}

#[tokio::test]
async fn solido_streams_when_the_client_accepts_events() {
    let s = fast().await;
    let body = json!({"query": ["What is SDE?"], "inference_model": "m"});
    let whole = post(s.addr(), "/rag/api/prompt", &body).await.json();
    let r = request(
        s.addr(),
        Method::POST,
        "/rag/api/prompt",
        &[("accept", "text/event-stream")],
        &body.to_string(),
    )
    .await
    .unwrap();
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let events = r.data_json();
    assert!(events.len() > 1);
    let streamed: String = events
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    // The same words as the whole answer, which has no leading space.
    assert_eq!(streamed.trim_start(), whole["content"]);
    assert_eq!(events.last().unwrap()["sources"][0]["page"], 1);
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| e.get("sources").is_none()));
}
