use aiperf_core::{ErrorDetails, ParsedResponse, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip, stream};

fn messages() -> MessagesEndpoint {
    MessagesEndpoint::new(EndpointOptions::default())
}

fn response(
    exchange: &RawExchange,
    chunk: usize,
    text: &str,
    reasoning: &str,
    usage: Option<serde_json::Value>,
) -> ParsedResponse {
    ParsedResponse {
        at: at(exchange.started_at, chunk),
        text: text.into(),
        reasoning: reasoning.into(),
        has_other_data: false,
        usage: usage.map(|u| Usage(u.as_object().unwrap().clone())),
        video: None,
    }
}

// ---- request bodies ----

#[test]
fn system_context_and_one_text_with_the_version_header() {
    let turns = [Turn {
        max_tokens: Some(10),
        ..Turn::text("hi")
    }];
    let request = messages()
        .build(&RequestInput {
            system_message: Some("sys"),
            user_context_message: Some("ctx"),
            ..input(&turns, true)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"model":"m","max_tokens":10,"system":"sys","messages":[{"role":"user","content":"ctx"},{"role":"user","content":"hi"}],"stream":true}"#
    );
    assert_eq!(
        request.headers,
        [
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Accept".to_string(), "text/event-stream".to_string()),
            ("anthropic-version".to_string(), "2023-06-01".to_string()),
        ]
    );
}

#[test]
fn max_tokens_defaults_and_images_become_blocks() {
    let turns = [Turn {
        images: vec![
            "data:image/png;base64,iVBOR".into(),
            "https://h/cat.jpg".into(),
        ],
        ..Turn::text("describe")
    }];
    let request = messages().build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"describe"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},{"type":"image","source":{"type":"url","url":"https://h/cat.jpg"}}]}],"stream":false}"#
    );
}

#[test]
fn system_turns_join_the_system_prompt_and_extras_merge_last() {
    let turns = [
        Turn {
            role: Some("system".into()),
            ..Turn::text("be brief")
        },
        Turn::text("q1"),
        Turn {
            role: Some("assistant".into()),
            ..Turn::text("a1")
        },
        Turn {
            extra: Some(json!({"temperature": 0.2}).as_object().unwrap().clone()),
            raw_tools: Some(vec![json!({"name": "get", "input_schema": {}})]),
            ..Turn::text("q2")
        },
    ];
    let options = EndpointOptions {
        use_server_token_count: true,
        extra_inputs: json!({"temperature": 1.0, "top_k": 5})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = MessagesEndpoint::new(options)
        .build(&RequestInput {
            system_message: Some("sys"),
            ..input(&turns, true)
        })
        .unwrap();
    // No stream_options: the API has none.
    assert_eq!(
        body(&request),
        r#"{"model":"m","max_tokens":4096,"system":"sys\nbe brief","messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}],"stream":true,"tools":[{"name":"get","input_schema":{}}],"temperature":0.2,"top_k":5}"#
    );
}

#[test]
fn raw_messages_are_sent_verbatim_and_audio_is_refused() {
    let turns = [Turn {
        raw_messages: Some(vec![
            json!({"role": "user", "content": [{"type": "text", "text": "x"}]}),
        ]),
        ..Turn::default()
    }];
    let request = messages().build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":false}"#
    );
    let turns = [Turn {
        audios: vec!["wav,AAAA".into()],
        ..Turn::text("listen")
    }];
    let error = messages().build(&input(&turns, false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot build the messages request: the Messages API takes no audio or video input"
    );
}

// ---- streamed responses ----

/// The event sequence of the API documentation: text, thinking and a tool call.
const STREAM: [&str; 12] = [
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me think\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" \\\"world\\\"\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

#[test]
fn every_stream_event_maps_to_text_reasoning_or_usage() {
    let exchange = stream(&STREAM);
    let parsed = messages().parse(&exchange);
    assert_eq!(parsed.error, None);
    let start_usage =
        json!({"input_tokens": 25, "cache_read_input_tokens": 10, "output_tokens": 1});
    assert_eq!(
        parsed.responses,
        [
            response(&exchange, 0, "", "", Some(start_usage)),
            response(&exchange, 2, "", "Let me think", None),
            response(&exchange, 6, "Hello", "", None),
            response(&exchange, 7, " \"world\"", "", None),
            response(&exchange, 8, "get_weather", "", None),
            response(&exchange, 9, "{\"city\": \"Paris\"}", "", None),
            // The delta's cumulative output count over the start's input counts.
            response(
                &exchange,
                10,
                "",
                "",
                Some(
                    json!({"input_tokens": 25, "cache_read_input_tokens": 10, "output_tokens": 15})
                )
            ),
        ]
    );
    let last = parsed.responses.last().unwrap().usage.clone().unwrap();
    assert_eq!(
        (last.prompt_tokens(), last.completion_tokens()),
        (Some(25), Some(15))
    );
}

#[test]
fn an_error_event_ends_the_stream() {
    let exchange = stream(&[
        STREAM[0],
        STREAM[6],
        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
        STREAM[7],
    ]);
    let parsed = messages().parse(&exchange);
    assert_eq!(
        parsed.error,
        Some(ErrorDetails {
            code: Some(502),
            kind: Some("SSEResponseError".into()),
            message: "Overloaded".into(),
        })
    );
    assert_eq!(parsed.responses.len(), 2);
    assert_eq!(parsed.responses[1].text, "Hello");
}

// ---- whole responses ----

#[test]
fn a_whole_message_reads_thinking_text_tool_calls_and_usage() {
    let exchange = exchange(
        200,
        Some("application/json"),
        &[
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude",
             "content":[{"type":"thinking","thinking":"hmm","signature":"x"},
                        {"type":"tool_use","id":"t","name":"get","input":{"a":1}},
                        {"type":"text","text":"Hi"}],
             "stop_reason":"end_turn","stop_sequence":null,
             "usage":{"input_tokens":12,"output_tokens":6,"cache_creation_input_tokens":0}}"#,
        ],
    );
    let parsed = messages().parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [response(
            &exchange,
            0,
            r#"Higet{"a":1}"#,
            "hmm",
            Some(json!({"input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 0}))
        )]
    );
}

#[test]
fn an_api_error_body_keeps_its_status_and_message() {
    let exchange = exchange(
        529,
        Some("application/json"),
        &[r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#],
    );
    let parsed = messages().parse(&exchange);
    assert_eq!(parsed.error.unwrap().message, "Overloaded");
    assert!(parsed.responses.is_empty());
}

// ---- against the mock server ----

#[tokio::test]
async fn round_trip_streamed_and_whole() {
    let turns = [Turn {
        max_tokens: Some(5),
        ..Turn::text("Hello there")
    }];
    for streaming in [true, false] {
        let (raw, parsed) = round_trip(&messages(), None, &input(&turns, streaming)).await;
        assert_eq!(raw.status, Some(200));
        assert_eq!(parsed.error, None, "streaming {streaming}");
        let text: String = parsed.responses.iter().map(|r| r.text.as_str()).collect();
        assert!(!text.is_empty());
        let usage = parsed.responses.last().unwrap().usage.clone().unwrap();
        assert_eq!(usage.completion_tokens(), Some(5), "streaming {streaming}");
        assert!(usage.prompt_tokens().unwrap() > 0);
    }
}
