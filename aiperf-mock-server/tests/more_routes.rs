//! The Anthropic messages, image generation and chat-style embeddings routes: shapes,
//! counts, event sequences, timing and the `x-api-key` header.
#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{MockConfig, MockServer, EMBEDDING_DIMS, TINY_PNG_B64};
use common::*;
use hyper::Method;
use serde_json::{json, Value};

async fn fast() -> MockServer {
    MockServer::start(MockConfig::fast()).await.unwrap()
}

fn event_types(r: &Reply) -> Vec<String> {
    r.events()
        .iter()
        .map(|e| e.event.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn messages_whole_answer() {
    let s = fast().await;
    let body = json!({"model": "claude", "system": "be brief", "max_tokens": 7,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "one two"}]}]});
    let v = post(s.addr(), "/v1/messages", &body).await.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude");
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(v["content"][0]["type"], "text");
    assert_eq!(words(v["content"][0]["text"].as_str().unwrap()), 7);
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["usage"], json!({"input_tokens": 4, "output_tokens": 7}));
}

#[tokio::test]
async fn messages_require_max_tokens() {
    let s = fast().await;
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    let r = post(s.addr(), "/v1/messages", &body).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "max_tokens: Field required");
}

#[tokio::test]
async fn messages_stream_the_documented_event_sequence() {
    let s = fast().await;
    let body = json!({"max_tokens": 3, "stream": true,
        "messages": [{"role": "user", "content": "a b c"}]});
    let r = post(s.addr(), "/v1/messages", &body).await;
    assert_eq!(r.headers["content-type"], "text/event-stream");
    assert_eq!(
        event_types(&r),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let data = r.data_json();
    for (event, data) in r.events().iter().zip(&data) {
        assert_eq!(data["type"].as_str(), event.event.as_deref());
    }
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 3);
    assert_eq!(
        data[1]["content_block"],
        json!({"type": "text", "text": ""})
    );
    let text: String = data[3..6]
        .iter()
        .map(|d| {
            assert_eq!(d["delta"]["type"], "text_delta");
            d["delta"]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(words(&text), 3);
    assert_eq!(data[7]["delta"]["stop_reason"], "max_tokens");
    assert_eq!(data[7]["usage"], json!({"output_tokens": 3}));
}

#[tokio::test]
async fn messages_stream_thinking_first_for_reasoning_models() {
    let s = MockServer::start(MockConfig {
        reasoning: true,
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let body = json!({"max_tokens": 4, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let r = post(s.addr(), "/v1/messages", &body).await;
    let data = r.data_json();
    let shapes: Vec<(String, Value)> = data
        .iter()
        .map(|d| {
            let kind = d["type"].as_str().unwrap().to_owned();
            let detail = match kind.as_str() {
                "content_block_start" => d["content_block"]["type"].clone(),
                "content_block_delta" => json!([d["index"], d["delta"]["type"]]),
                "content_block_stop" => d["index"].clone(),
                _ => Value::Null,
            };
            (kind, detail)
        })
        .collect();
    let expected: Vec<(String, Value)> = [
        ("message_start", Value::Null),
        ("content_block_start", json!("thinking")),
        ("ping", Value::Null),
        ("content_block_delta", json!([0, "thinking_delta"])),
        ("content_block_delta", json!([0, "thinking_delta"])),
        ("content_block_stop", json!(0)),
        ("content_block_start", json!("text")),
        ("content_block_delta", json!([1, "text_delta"])),
        ("content_block_delta", json!([1, "text_delta"])),
        ("content_block_stop", json!(1)),
        ("message_delta", Value::Null),
        ("message_stop", Value::Null),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(shapes, expected);
}

#[tokio::test]
async fn messages_stream_on_the_ttft_itl_schedule() {
    let s = MockServer::start(MockConfig::with_timing(40.0, 10.0))
        .await
        .unwrap();
    let body = json!({"max_tokens": 5, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    // Never early, in every attempt; on time in some attempt (a loaded machine delays the
    // stamping client now and then: TTFT 82.5 ms in a CI run).
    in_some_attempt(|| async {
        let r = post(s.addr(), "/v1/messages", &body).await;
        let text = r.text();
        let first = text.find("text_delta").unwrap();
        let last = text.rfind("text_delta").unwrap();
        let ttft = r.ms_since_sent(r.arrival_of_offset(first));
        let end = r.ms_since_sent(r.arrival_of_offset(last));
        assert!(ttft >= 39.0, "TTFT early at {ttft}");
        assert!(end >= 79.0, "last token early at {end}");
        if ttft < 60.0 && end < 100.0 {
            Ok(())
        } else {
            Err(format!("TTFT {ttft:.1} ms, last token {end:.1} ms"))
        }
    })
    .await;
}

#[tokio::test]
async fn messages_take_the_api_key_as_x_api_key() {
    let s = MockServer::start(MockConfig {
        api_key: Some("sekret".into()),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let body = r#"{"max_tokens":2,"messages":[{"role":"user","content":"x"}]}"#;
    let status = |path: &'static str, header: (&'static str, &'static str)| {
        let addr = s.addr();
        async move {
            request(addr, Method::POST, path, &[header], body)
                .await
                .unwrap()
                .status
        }
    };
    assert_eq!(status("/v1/messages", ("x-api-key", "sekret")).await, 200);
    assert_eq!(status("/v1/messages", ("x-api-key", "wrong")).await, 401);
    assert_eq!(
        status("/v1/messages", ("authorization", "Bearer sekret")).await,
        200
    );
    // Only the Anthropic route reads x-api-key.
    assert_eq!(
        status("/v1/chat/completions", ("x-api-key", "sekret")).await,
        401
    );
}

#[tokio::test]
async fn image_generation_b64_and_url() {
    let s = fast().await;
    let body =
        json!({"model": "img", "prompt": "a red cat", "n": 2, "response_format": "b64_json"});
    let v = post(s.addr(), "/v1/images/generations", &body).await.json();
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["b64_json"], TINY_PNG_B64);
    assert_eq!(data[1]["revised_prompt"], "a red cat");
    assert_eq!(v["usage"]["input_tokens"], 3);
    assert!(v["created"].as_u64().unwrap() > 0);

    let body = json!({"prompt": "x", "response_format": "url"});
    let v = post(s.addr(), "/v1/images/generations", &body).await.json();
    assert_eq!(v["data"][0]["url"], "https://images.mock.invalid/0.png");

    let r = post(s.addr(), "/v1/images/generations", &json!({"n": 1})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "'prompt' is required");
}

#[tokio::test]
async fn image_generation_streams_partial_images_then_the_final_one() {
    let s = fast().await;
    let body = json!({"prompt": "a cat", "stream": true, "partial_images": 2});
    let r = post(s.addr(), "/v1/images/generations", &body).await;
    assert_eq!(
        event_types(&r),
        [
            "image_generation.partial_image",
            "image_generation.partial_image",
            "image_generation.completed",
        ]
    );
    let data = r.data_json();
    assert_eq!(data[1]["partial_image_index"], 1);
    assert_eq!(data[2]["b64_json"], TINY_PNG_B64);
    assert_eq!(data[2]["usage"]["input_tokens"], 2);
}

#[tokio::test]
async fn image_generation_answers_after_the_ttft() {
    let s = MockServer::start(MockConfig::with_timing(50.0, 10.0))
        .await
        .unwrap();
    let r = post(s.addr(), "/v1/images/generations", &json!({"prompt": "x"})).await;
    let latency = r.ms_since_sent(r.frames.last().unwrap().0);
    assert!((50.0..70.0).contains(&latency), "latency {latency}");
}

#[tokio::test]
async fn embeddings_take_chat_style_messages() {
    let s = fast().await;
    let body = json!({"model": "e", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "one two"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
        {"role": "user", "content": "three"}]});
    let v = post(s.addr(), "/v1/embeddings", &body).await.json();
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(
        data[0]["embedding"].as_array().unwrap().len(),
        EMBEDDING_DIMS
    );
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    let r = post(s.addr(), "/v1/embeddings", &json!({"messages": []})).await;
    assert_eq!(r.status, 400);
}

/// A video job: created from a multipart form, `queued`, then `in_progress`, then
/// `completed` with its content downloadable, at the configured duration.
#[tokio::test]
async fn video_jobs_run_their_course_and_serve_their_content() {
    let config = MockConfig {
        video_job_ms: 1500.0,
        ..MockConfig::default()
    };
    let s = MockServer::start(config).await.unwrap();
    let form = "--b0\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na cat on a sofa\r\n\
                --b0\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwan\r\n\
                --b0\r\nContent-Disposition: form-data; name=\"seconds\"\r\n\r\n8\r\n--b0--\r\n";
    let mut conn = Conn::open(s.addr()).await;
    let created = conn
        .send(Method::POST, "/v1/videos", &[], form)
        .await
        .unwrap()
        .json();
    assert_eq!(created["status"], "queued");
    assert_eq!(created["model"], "wan");
    assert_eq!(created["seconds"], "8");
    assert_eq!(created["object"], "video");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("video_"), "{id}");
    let early = get(s.addr(), &format!("/v1/videos/{id}/content")).await;
    assert_eq!(early.status, 400);
    // Queued for 150 ms, running until 1.5 s: room for a loaded machine both ways.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let running = get(s.addr(), &format!("/v1/videos/{id}")).await.json();
    assert_eq!(running["status"], "in_progress");
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let done = get(s.addr(), &format!("/v1/videos/{id}")).await.json();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["progress"], 100);
    assert_eq!(done["inference_time_s"], 1.5);
    let video = get(s.addr(), &format!("/v1/videos/{id}/content")).await;
    assert_eq!(video.status, 200);
    assert_eq!(video.headers["content-type"], "video/mp4");
    assert_eq!(video.body().len(), aiperf_mock_server::VIDEO_BYTES);
    assert_eq!(&video.body()[4..8], b"ftyp");
    assert_eq!(get(s.addr(), "/v1/videos/video_nope").await.status, 404);
    let stats = s.stats();
    assert_eq!(stats.requests_to("/v1/videos"), 1);
    assert_eq!(stats.requests_to("/v1/videos/{id}"), 3);
    assert_eq!(stats.requests_to("/v1/videos/{id}/content"), 2);
}

/// JSON bodies create jobs too; a 100 % failure rate fails every job with a message, and
/// a job without a prompt is refused.
#[tokio::test]
async fn video_jobs_fail_at_the_failure_rate_and_need_a_prompt() {
    let config = MockConfig {
        video_failure_rate: 100.0,
        ..MockConfig::fast()
    };
    let s = MockServer::start(config).await.unwrap();
    let created = post(s.addr(), "/v1/videos", &json!({"prompt": "rain"}))
        .await
        .json();
    let id = created["id"].as_str().unwrap();
    let failed = get(s.addr(), &format!("/v1/videos/{id}")).await.json();
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"]["message"],
        "Injected video generation failure (aiperf-mock-server --video-failure-rate)"
    );
    let refused = post(s.addr(), "/v1/videos", &json!({"model": "m"})).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.json()["error"]["message"], "'prompt' is required");
}
