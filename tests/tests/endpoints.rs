//! `aiperf profile`, the built binary, against the in-process mock server for the endpoint
//! types beyond chat: Anthropic `messages`, `chat_embeddings`, `image_generation`,
//! `image_retrieval`, `template`, and the form uploads `audio_transcription` and
//! `image_edit` and Solido's `solido_rag`. Each run's requests are recorded by the mock, so the
//! tests check exactly what was sent as well as the metrics that came out.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{
    args, assert_exit, profile, read_json, read_jsonl, recorded_body, recorded_header, stat,
};
use serde_json::Value;

/// A fast mock that records every inference request to `dir/requests.jsonl`.
async fn recording_mock(dir: &Path) -> MockServer {
    MockServer::start(MockConfig {
        record_requests: Some(dir.join("requests.jsonl")),
        ..MockConfig::fast()
    })
    .await
    .unwrap()
}

/// Runs `aiperf profile <line> --url <mock> --artifact-dir <dir>/out`, stops the mock, and
/// returns the summary JSON and the recorded requests.
async fn run(server: MockServer, dir: &Path, line: &str) -> (Value, Vec<Value>) {
    let mut argv = args(line);
    argv.extend([
        "--url".to_owned(),
        server.url(),
        "--artifact-dir".to_owned(),
        dir.join("out").to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    server.shutdown().await;
    assert_exit(&output, 0);
    let summary = read_json(&dir.join("out").join("profile_export_aiperf.json"));
    (summary, read_jsonl(&dir.join("requests.jsonl")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_streams_with_the_anthropic_headers_and_reads_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m mock-model --endpoint-type messages --streaming --concurrency 2 --request-count 6 \
         --isl 16 --osl 8 --random-seed 3 --api-key sk-ant-test",
    )
    .await;
    assert_eq!(requests.len(), 6);
    for request in &requests {
        assert_eq!(request["path"], "/v1/messages");
        assert_eq!(
            recorded_header(request, "anthropic-version"),
            Some("2023-06-01")
        );
        // The key goes as Anthropic expects it (the recorder masks its value).
        assert_eq!(recorded_header(request, "x-api-key"), Some("***"));
        assert_eq!(recorded_header(request, "authorization"), None);
        let sent = recorded_body(request);
        assert_eq!(sent["max_tokens"], 8);
        assert_eq!(sent["stream"], true);
        assert!(sent.get("stream_options").is_none());
        assert_eq!(sent["messages"][0]["role"], "user");
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 6.0);
    for tag in ["output_sequence_length", "usage_completion_tokens"] {
        assert_eq!(stat(&summary, tag, "min"), 8.0, "{tag}");
        assert_eq!(stat(&summary, tag, "max"), 8.0, "{tag}");
    }
    // message_start's input count survives message_delta's output-only usage.
    assert!(stat(&summary, "usage_prompt_tokens", "min") > 0.0);
    for tag in [
        "time_to_first_token",
        "inter_token_latency",
        "request_latency",
        "output_token_throughput",
    ] {
        assert!(summary.get(tag).is_some(), "summary lacks {tag}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_embeddings_sends_chat_messages_to_the_embeddings_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m mock-model --endpoint-type chat_embeddings --request-count 5 --isl 12 --random-seed 4",
    )
    .await;
    assert_eq!(requests.len(), 5);
    for request in &requests {
        assert_eq!(request["path"], "/v1/embeddings");
        let sent = recorded_body(request);
        assert!(sent["messages"][0]["content"].is_string(), "{sent}");
        assert!(sent.get("stream").is_none() && sent.get("input").is_none());
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 5.0);
    assert!(summary.get("request_latency").is_some());
    assert!(summary.get("input_sequence_length").is_some());
    // Embeddings produce no tokens.
    assert!(summary.get("output_sequence_length").is_none());
    assert!(summary.get("time_to_first_token").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_generation_streams_partial_images_as_non_token_output() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m mock-image --endpoint-type image_generation --streaming --request-count 4 \
         --isl 10 --random-seed 5 --extra-inputs partial_images:2 --extra-inputs size:256x256",
    )
    .await;
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request["path"], "/v1/images/generations");
        let sent = recorded_body(request);
        assert_eq!(sent["response_format"], "b64_json");
        assert_eq!(sent["n"], 1);
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["partial_images"], 2);
        assert_eq!(sent["size"], "256x256");
        assert!(sent["prompt"].as_str().unwrap().len() > 10);
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 4.0);
    assert!(summary.get("request_latency").is_some());
    assert!(summary.get("output_sequence_length").is_none());
    let records = read_jsonl(&dir.path().join("out").join("profile_export.jsonl"));
    assert_eq!(records.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_file_drives_the_chat_route() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("chat.j2");
    std::fs::write(
        &template,
        r#"{"messages": [{"role": {{ role|tojson }}, "content": {{ text|tojson }}}],
 "model": {{ model|tojson }},
 "max_tokens": {{ max_tokens|tojson }},
 "stream": {{ stream|tojson }}}
"#,
    )
    .unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        &format!(
            "-m mock-model --endpoint-type template --endpoint /v1/chat/completions --streaming \
             --request-count 5 --isl 16 --osl 6 --random-seed 6 \
             --extra-inputs payload_template:{} --extra-inputs ignore_eos:true",
            template.display()
        ),
    )
    .await;
    assert_eq!(requests.len(), 5);
    for request in &requests {
        assert_eq!(request["path"], "/v1/chat/completions");
        let sent = recorded_body(request);
        let keys: Vec<&str> = sent
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["messages", "model", "max_tokens", "stream", "ignore_eos"]
        );
        assert_eq!(sent["max_tokens"], 6);
        assert_eq!(sent["model"], "mock-model");
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 5.0);
    assert_eq!(stat(&summary, "output_sequence_length", "min"), 6.0);
    assert_eq!(stat(&summary, "output_sequence_length", "max"), 6.0);
    assert!(summary.get("time_to_first_token").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_retrieval_sends_each_turn_s_images_to_the_infer_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m mock-model --endpoint-type image_retrieval --request-count 3 --isl 0 \
         --image-width-mean 16 --image-height-mean 16 --image-batch-size 2 --random-seed 6",
    )
    .await;
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request["path"], "/v1/infer");
        let sent = recorded_body(request);
        let images = sent["input"].as_array().unwrap();
        assert_eq!(images.len(), 2, "{sent}");
        assert!(images.iter().all(|image| image["type"] == "image_url"
            && image["url"].as_str().unwrap().starts_with("data:image/")));
        // No model and no prompt: NIM image inference takes images only.
        assert!(sent.get("model").is_none() && sent.get("messages").is_none());
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 3.0);
    assert!(summary.get("request_latency").is_some());
    assert!(summary.get("output_sequence_length").is_none());
    assert!(summary.get("input_sequence_length").is_none());
}

/// The recorded body of a multipart request as text (its binary file bytes lossy).
fn form_text(request: &Value) -> &str {
    request["body"].as_str().unwrap()
}

/// The JSON payloads `inputs.json` holds, in order.
fn inputs_payloads(dir: &Path) -> Vec<Value> {
    let inputs = read_json(&dir.join("out").join("inputs.json"));
    inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|session| session["payloads"].as_array().unwrap().clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_transcription_reports_each_clips_duration_and_rtfx() {
    let dir = tempfile::tempdir().unwrap();
    // Every transcription takes at least the mock's 200 ms.
    let server = MockServer::start(MockConfig {
        record_requests: Some(dir.path().join("requests.jsonl")),
        ..MockConfig::with_timing(200.0, 0.0)
    })
    .await
    .unwrap();
    // Clips of exactly 2 s (16 000 frames at 8 kHz).
    let (summary, _) = run(
        server,
        dir.path(),
        "-m whisper --tokenizer builtin --endpoint-type audio_transcription --request-count 3 \
         --concurrency 1 --isl 0 --audio-length-mean 2 --audio-sample-rates 8 --random-seed 8",
    )
    .await;
    let records = read_jsonl(&dir.path().join("out").join("profile_export.jsonl"));
    assert_eq!(records.len(), 3);
    for record in &records {
        let metric = |tag: &str| record["metrics"][tag]["value"].as_f64().unwrap();
        assert_eq!(metric("audio_duration"), 2.0, "{record}");
        assert_eq!(record["metrics"]["audio_duration"]["unit"], "sec");
        let latency_s = metric("request_latency") / 1000.0;
        assert!((0.2..30.0).contains(&latency_s), "{record}");
        let rtfx = metric("rtfx");
        assert!((rtfx - 2.0 / latency_s).abs() < 1e-9, "{record}");
        assert!(rtfx <= 10.0, "{record}");
    }
    assert_eq!(stat(&summary, "audio_duration", "avg"), 2.0);
    assert!(stat(&summary, "rtfx", "max") <= 10.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_transcription_uploads_each_clip_as_a_form_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m whisper --tokenizer builtin --endpoint-type audio_transcription --request-count 4 --concurrency 2 \
         --isl 0 --audio-length-mean 0.05 --audio-sample-rates 8 --random-seed 8 \
         --extra-inputs language:en --export-level raw",
    )
    .await;
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request["path"], "/v1/audio/transcriptions");
        let content_type = recorded_header(request, "content-type").unwrap();
        assert_eq!(
            content_type,
            "multipart/form-data; boundary=aiperf-form-boundary-5f0c2e7a"
        );
        let form = form_text(request);
        assert!(
            form.starts_with(
                "--aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; \
                 name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF"
            ),
            "{form}"
        );
        assert!(form.ends_with(
            "name=\"model\"\r\n\r\nwhisper\r\n--aiperf-form-boundary-5f0c2e7a\r\n\
             Content-Disposition: form-data; name=\"language\"\r\n\r\nen\r\n\
             --aiperf-form-boundary-5f0c2e7a--\r\n"
        ));
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 4.0);
    assert!(summary.get("request_latency").is_some());
    // Like 0.13: the transcript is the answer, not generated tokens, and audio has no ISL.
    assert!(summary.get("output_sequence_length").is_none());
    assert!(summary.get("input_sequence_length").is_none());
    // The artifacts hold the payload as JSON, the clip as base64, as 0.13 writes them.
    let payloads = inputs_payloads(dir.path());
    assert_eq!(payloads.len(), 4);
    for payload in &payloads {
        assert_eq!(payload["file"]["filename"], "audio.wav");
        assert_eq!(payload["file"]["content_type"], "audio/wav");
        assert!(payload["file"]["b64_data"]
            .as_str()
            .unwrap()
            .starts_with("UklGR"));
        assert_eq!(payload["model"], "whisper");
        assert_eq!(payload["language"], "en");
    }
    let raw = read_jsonl(&dir.path().join("out").join("profile_export_raw.jsonl"));
    assert_eq!(raw.len(), 4);
    assert!(raw
        .iter()
        .all(|record| record["payload"]["file"]["filename"] == "audio.wav"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_edit_uploads_the_prompt_and_image_as_a_form() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m flux --tokenizer builtin --endpoint-type image_edit --request-count 3 --isl 8 \
         --image-width-mean 16 --image-height-mean 16 --image-format png --random-seed 9 \
         --extra-inputs size:256x256",
    )
    .await;
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request["path"], "/v1/images/edits");
        let form = form_text(request);
        for part in [
            "name=\"model\"\r\n\r\nflux\r\n",
            "name=\"response_format\"\r\n\r\nb64_json\r\n",
            "name=\"n\"\r\n\r\n1\r\n",
            "name=\"image\"; filename=\"image.png\"\r\nContent-Type: image/png\r\n\r\n",
            "name=\"size\"\r\n\r\n256x256\r\n",
        ] {
            assert!(form.contains(part), "{part:?} missing from {form}");
        }
        assert!(form.starts_with(
            "--aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; \
             name=\"prompt\"\r\n\r\n"
        ));
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 3.0);
    assert!(summary.get("request_latency").is_some());
    assert!(summary.get("output_sequence_length").is_none());
    // The prompt is tokenized, as in 0.13.
    assert_eq!(stat(&summary, "input_sequence_length", "avg"), 8.0);
    let payloads = inputs_payloads(dir.path());
    assert!(payloads
        .iter()
        .all(|p| p["image"]["content_type"] == "image/png"
            && p["image"]["b64_data"]
                .as_str()
                .unwrap()
                .starts_with("iVBORw0KGgo")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solido_rag_streams_content_from_the_rag_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = recording_mock(dir.path()).await;
    let (summary, requests) = run(
        server,
        dir.path(),
        "-m rag-model --tokenizer builtin --endpoint-type solido_rag --streaming --request-count 5 --concurrency 2 \
         --isl 12 --random-seed 10",
    )
    .await;
    assert_eq!(requests.len(), 5);
    for request in &requests {
        assert_eq!(request["path"], "/rag/api/prompt");
        assert_eq!(
            recorded_header(request, "accept"),
            Some("text/event-stream")
        );
        let sent = recorded_body(request);
        assert_eq!(
            sent["filters"],
            serde_json::json!({"family": "Solido", "tool": "SDE"})
        );
        assert_eq!(sent["inference_model"], "rag-model");
        assert_eq!(sent["query"].as_array().unwrap().len(), 1);
        assert!(sent.get("stream").is_none());
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 5.0);
    assert_eq!(stat(&summary, "input_sequence_length", "avg"), 12.0);
    assert!(stat(&summary, "output_sequence_length", "min") >= 1.0);
    assert!(summary.get("time_to_first_token").is_some());
    assert!(summary.get("inter_token_latency").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_content_type_must_be_what_the_endpoint_sends() {
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(
        "-m m --endpoint-type chat --request-content-type multipart-form-data \
         --request-count 1 --url http://127.0.0.1:9",
    );
    argv.extend([
        "--artifact-dir".to_owned(),
        dir.path().to_str().unwrap().to_owned(),
    ]);
    let output = profile(argv).await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "invalid endpoint.request_content_type: endpoint type chat sends application/json, \
             not multipart/form-data"
        ),
        "{stderr}"
    );
}
