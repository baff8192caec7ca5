use aiperf_core::{build_request, HttpMethod, HttpRequest, Transport, Turn};
use aiperf_mock_server::{MockConfig, MockServer};
use serde_json::json;

use super::*;
use crate::test_support::{body, exchange, input, stream};
use crate::{build_url, HttpTransport};

fn raw() -> RawEndpoint {
    RawEndpoint::new(EndpointOptions::default())
}

fn with_field(field: &str) -> RawEndpoint {
    RawEndpoint::new(EndpointOptions {
        extra_inputs: json!({ "response_field": field })
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    })
}

/// A turn carrying the body of one dataset line.
fn payload_turn(line: &str) -> Turn {
    Turn {
        raw_payload: Some(serde_json::from_str(line).unwrap()),
        ..Turn::default()
    }
}

#[test]
fn the_payload_is_sent_compact_in_its_own_key_order_with_json_headers() {
    let line = r#"{"model": "x", "messages": [{"role": "user", "content": "é \"q\""}], "stream": true, "max_tokens": 7, "temperature": 0.5}"#;
    let turns = [payload_turn(line)];
    for (streaming, accept) in [(false, "application/json"), (true, "text/event-stream")] {
        let built = build_request(&raw(), &input(&turns, streaming)).unwrap();
        assert_eq!(
            body(&built),
            r#"{"model":"x","messages":[{"role":"user","content":"é \"q\""}],"stream":true,"max_tokens":7,"temperature":0.5}"#
        );
        assert_eq!(
            built.headers,
            [
                ("Content-Type".to_string(), "application/json".to_string()),
                ("Accept".to_string(), accept.to_string()),
            ]
        );
    }
}

#[test]
fn a_compact_line_is_sent_byte_for_byte() {
    let line = r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":false,"max_completion_tokens":128,"stream_options":{"include_usage":true}}"#;
    let built = build_request(&raw(), &input(&[payload_turn(line)], false)).unwrap();
    assert_eq!(body(&built), line);
}

#[test]
fn extra_inputs_are_not_merged_into_a_payload() {
    let endpoint = RawEndpoint::new(EndpointOptions {
        extra_inputs: json!({"temperature": 0.1}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    });
    let built = build_request(
        &endpoint,
        &input(&[payload_turn(r#"{"prompt":"p"}"#)], false),
    )
    .unwrap();
    assert_eq!(body(&built), r#"{"prompt":"p"}"#);
}

#[test]
fn a_turn_without_a_payload_cannot_be_sent() {
    let error = build_request(&raw(), &input(&[Turn::text("hi")], false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot build the raw request: the raw endpoint only sends complete request bodies \
         from the dataset and this turn has none: use --custom-dataset-type raw_payload or \
         inputs_json"
    );
}

#[test]
fn requests_go_to_the_url_as_given() {
    let info = raw().info().clone();
    assert_eq!(info.default_path, "");
    assert_eq!(
        build_url("localhost:8000/v1/chat/completions", None, info.path(true)),
        "http://localhost:8000/v1/chat/completions"
    );
    assert_eq!(
        build_url("localhost:8000", Some("/generate"), info.path(false)),
        "http://localhost:8000/generate"
    );
}

#[test]
fn whole_answers_are_auto_detected_with_usage() {
    let parsed = raw().parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"choices":[{"message":{"content":"hi there","reasoning_content":"hmm"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#],
    ));
    assert_eq!(parsed.error, None);
    let response = &parsed.responses[0];
    assert_eq!(
        (response.text.as_str(), response.reasoning.as_str()),
        ("hi there", "hmm")
    );
    assert_eq!(
        response.usage.as_ref().unwrap().completion_tokens(),
        Some(2)
    );

    let generated = raw().parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"generated_text":"tgi says"}"#],
    ));
    assert_eq!(generated.responses[0].text, "tgi says");

    let embedding = raw().parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[{"embedding":[0.1,0.2]}]}"#],
    ));
    assert_eq!(embedding.error, None);
    assert!(embedding.responses[0].has_other_data);
    assert_eq!(embedding.responses[0].text, "");
}

#[test]
fn a_stream_is_read_event_by_event() {
    let parsed = raw().parse(&stream(&[
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
    ]));
    assert_eq!(parsed.error, None);
    let texts: Vec<&str> = parsed
        .responses
        .iter()
        .filter(|r| r.has_content())
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(texts, ["Hel", "lo"]);
    let usage = parsed.responses.iter().find_map(|r| r.usage.as_ref());
    assert_eq!(usage.unwrap().completion_tokens(), Some(2));
}

#[test]
fn the_response_field_picks_the_text_and_a_bad_one_falls_back_to_auto_detection() {
    let answer = exchange(
        200,
        Some("application/json"),
        &[r#"{"output":{"answer":"picked"},"text":"usual"}"#],
    );
    assert_eq!(
        with_field("output.answer").parse(&answer).responses[0].text,
        "picked"
    );
    assert_eq!(with_field("a[x]").parse(&answer).responses[0].text, "usual");
}

#[test]
fn a_plain_text_answer_is_the_generated_text_and_html_is_not() {
    let parsed = raw().parse(&exchange(
        200,
        Some("text/plain; charset=utf-8"),
        &["Hello ", "world"],
    ));
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    assert_eq!(parsed.responses[0].text, "Hello world");

    let page = raw().parse(&exchange(
        200,
        Some("text/html"),
        &["<html>bad gateway</html>"],
    ));
    assert!(page.responses.iter().all(|r| !r.has_content()));
    assert_eq!(
        page.error.unwrap().kind.as_deref(),
        Some("UnexpectedContentTypeError")
    );

    let failed = raw().parse(&exchange(503, Some("text/plain"), &["overloaded"]));
    assert!(failed.responses.is_empty());
    assert_eq!(failed.error.unwrap().code, Some(503));
}

#[test]
fn stream_events_that_are_not_json_are_text() {
    let parsed = raw().parse(&stream(&[
        "data: plain\n\n",
        "data: words\n\ndata: [DONE]\n\n",
    ]));
    assert_eq!(parsed.error, None);
    let texts: Vec<&str> = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, ["plain", "words"]);
}

#[tokio::test]
async fn payloads_reach_the_chat_route_of_the_mock_and_its_answers_are_read() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let transport = HttpTransport::builder().build().unwrap();
    let endpoint = raw();
    for streaming in [false, true] {
        let line = json!({
            "model": "mock-model",
            "messages": [{"role": "user", "content": "one two three"}],
            "max_tokens": 5,
            "stream": streaming,
        })
        .to_string();
        let turns = [payload_turn(&line)];
        let built = build_request(&endpoint, &input(&turns, streaming)).unwrap();
        let request = HttpRequest {
            method: HttpMethod::Post,
            url: build_url(
                &format!("{}/v1/chat/completions", server.url()),
                None,
                endpoint.info().default_path,
            ),
            headers: built.headers,
            body: built.body,
            timeout: Some(std::time::Duration::from_secs(10)),
        };
        let parsed = endpoint.parse(&transport.send(request).await);
        assert_eq!(parsed.error, None, "streaming {streaming}");
        let text: String = parsed.responses.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(text.split_whitespace().count(), 5, "streaming {streaming}");
    }
    server.shutdown().await;
}
