use std::time::Duration;

use aiperf_core::{ErrorDetails, ParsedResponse, TransportError, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, failed, input, stream};

fn chat(options: EndpointOptions) -> ChatEndpoint {
    ChatEndpoint::new(options)
}

fn turn(text: &str, max_tokens: Option<u32>) -> Turn {
    Turn {
        max_tokens,
        ..Turn::text(text)
    }
}

fn response(exchange: &RawExchange, chunk: usize, text: &str, reasoning: &str) -> ParsedResponse {
    ParsedResponse {
        at: at(exchange.started_at, chunk),
        text: text.into(),
        reasoning: reasoning.into(),
        has_other_data: false,
        usage: None,
        video: None,
    }
}

/// The `usage` a response carries, from its JSON.
#[allow(clippy::unnecessary_wraps)] // reads like the optional field it fills
fn usage(value: serde_json::Value) -> Option<Usage> {
    Some(Usage(value.as_object().unwrap().clone()))
}

// ---- request bodies ----

#[test]
fn system_context_and_one_text() {
    let turns = [turn("hi", Some(10))];
    let request = chat(EndpointOptions::default())
        .build(&RequestInput {
            system_message: Some("sys"),
            user_context_message: Some("ctx"),
            ..input(&turns, false)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"ctx"},{"role":"user","content":"hi"}],"model":"m","stream":false,"max_completion_tokens":10}"#
    );
    assert_eq!(
        request.headers,
        [
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Accept".to_string(), "application/json".to_string())
        ]
    );
}

#[test]
fn an_image_turns_the_content_into_parts() {
    let turns = [Turn {
        images: vec!["data:image/png;base64,AAA".into()],
        ..Turn::text("describe")
    }];
    let request = chat(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":[{"type":"text","text":"describe"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}}]}],"model":"m","stream":false}"#
    );
}

#[test]
fn texts_audio_and_video_parts_in_order_skipping_empty_ones() {
    let turns = [Turn {
        texts: vec!["a".into(), String::new(), "b".into()],
        audios: vec![
            "mp3,QUJD".into(),
            "data:audio/wav;base64,REVG".into(),
            "R0hJ".into(),
        ],
        videos: vec!["http://v/1.mp4".into()],
        ..Turn::default()
    }];
    let request = chat(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        sent["messages"][0]["content"],
        json!([
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
            {"type": "input_audio", "input_audio": {"data": "QUJD", "format": "mp3"}},
            {"type": "input_audio", "input_audio": {"data": "REVG", "format": "wav"}},
            {"type": "input_audio", "input_audio": {"data": "R0hJ", "format": "wav"}},
            {"type": "video_url", "video_url": {"url": "http://v/1.mp4"}},
        ])
    );
}

#[test]
fn legacy_max_tokens() {
    let turns = [turn("hi", Some(7))];
    let options = EndpointOptions {
        use_legacy_max_tokens: true,
        ..EndpointOptions::default()
    };
    let request = chat(options).build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":false,"max_tokens":7}"#
    );
}

#[test]
fn extra_inputs_override_in_place_and_append_new_keys() {
    let turns = [turn("hi", Some(7))];
    let options = EndpointOptions {
        extra_inputs: json!({"model": "other", "ignore_eos": true, "max_completion_tokens": 9})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = chat(options).build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"other","stream":false,"max_completion_tokens":9,"ignore_eos":true}"#
    );
}

#[test]
fn streaming_with_server_token_count_asks_for_usage_last() {
    let turns = [turn("hi", Some(5))];
    let options = EndpointOptions {
        use_server_token_count: true,
        extra_inputs: json!({"ignore_eos": true}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    };
    let request = chat(options).build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"max_completion_tokens":5,"ignore_eos":true,"stream_options":{"include_usage":true}}"#
    );
    assert_eq!(
        request.headers[1],
        ("Accept".to_string(), "text/event-stream".to_string())
    );
}

#[test]
fn every_streaming_request_asks_for_usage_and_no_other_does() {
    let turns = [turn("hi", None)];
    let counting = EndpointOptions {
        use_server_token_count: true,
        ..EndpointOptions::default()
    };
    let not_streaming = chat(counting).build(&input(&turns, false)).unwrap();
    assert!(!body(&not_streaming).contains("stream_options"));
    // As the Python AIPerf 0.13: with or without --use-server-token-count.
    let streaming = chat(EndpointOptions::default())
        .build(&input(&turns, true))
        .unwrap();
    assert_eq!(
        body(&streaming),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn user_stream_options_are_respected_or_completed() {
    let turns = [turn("hi", None)];
    let with = |extra: serde_json::Value| {
        let options = EndpointOptions {
            use_server_token_count: true,
            extra_inputs: extra.as_object().unwrap().clone(),
            ..EndpointOptions::default()
        };
        let request = chat(options).build(&input(&turns, true)).unwrap();
        serde_json::from_slice::<serde_json::Value>(&request.body).unwrap()["stream_options"]
            .clone()
    };
    assert_eq!(
        with(json!({"stream_options": {"include_usage": false}})),
        json!({"include_usage": false})
    );
    assert_eq!(
        with(json!({"stream_options": {"continuous_usage_stats": true}})),
        json!({"continuous_usage_stats": true, "include_usage": true})
    );
}

#[test]
fn per_chunk_usage_asks_for_usage_on_every_chunk_when_streaming() {
    let turns = [turn("hi", None)];
    let options = EndpointOptions {
        use_server_token_count: true,
        per_chunk_usage: true,
        ..EndpointOptions::default()
    };
    let streaming = chat(options.clone()).build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&streaming),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#
    );
    let not_streaming = chat(options).build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&not_streaming),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":false}"#
    );
}

#[test]
fn the_turns_extra_wins_over_extra_inputs_and_endpoint_fields() {
    let turns = [Turn {
        extra: Some(
            json!({"temperature": 0.5, "model": "turn-model", "stream_options": {"include_usage": false}})
                .as_object()
                .unwrap()
                .clone(),
        ),
        ..turn("hi", Some(3))
    }];
    let options = EndpointOptions {
        extra_inputs: json!({"temperature": 1.0, "ignore_eos": true})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = chat(options).build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":"hi"}],"model":"turn-model","stream":true,"max_completion_tokens":3,"temperature":0.5,"ignore_eos":true,"stream_options":{"include_usage":false}}"#
    );
}

#[test]
fn raw_messages_are_spliced_verbatim_and_raw_tools_become_tools() {
    let raw = vec![
        json!({"role": "system", "content": "be brief"}),
        json!({"role": "user", "content": [{"type": "text", "text": "weather?"}]}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}),
    ];
    let tools = vec![json!({"type": "function", "function": {"name": "get", "parameters": {}}})];
    let turns = [Turn {
        raw_messages: Some(raw),
        raw_tools: Some(tools),
        // Contents are ignored when the raw messages are given.
        ..turn("ignored", Some(4))
    }];
    let request = chat(EndpointOptions::default())
        .build(&RequestInput {
            // The raw list starts with its own system message: no second one.
            system_message: Some("shared"),
            ..input(&turns, false)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"weather?"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}],"model":"m","stream":false,"tools":[{"type":"function","function":{"name":"get","parameters":{}}}],"max_completion_tokens":4}"#
    );
}

#[test]
fn raw_messages_without_a_system_message_get_the_shared_one() {
    let turns = [Turn {
        raw_messages: Some(vec![json!({"role": "user", "content": "hi"})]),
        ..Turn::default()
    }];
    let request = chat(EndpointOptions::default())
        .build(&RequestInput {
            system_message: Some("shared"),
            ..input(&turns, false)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"system","content":"shared"},{"role":"user","content":"hi"}],"model":"m","stream":false}"#
    );
}

#[test]
fn multi_turn_roles_and_the_turns_model() {
    let turns = [
        Turn::text("q1"),
        Turn {
            role: Some("assistant".into()),
            ..Turn::text("a1")
        },
        Turn {
            model: Some("m2".into()),
            ..Turn::text("q2")
        },
    ];
    let request = chat(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}],"model":"m2","stream":false}"#
    );
}

#[test]
fn no_system_message_is_added_before_a_system_turn() {
    let turns = [
        Turn {
            role: Some("system".into()),
            ..Turn::text("own")
        },
        Turn::text("hi"),
    ];
    let request = chat(EndpointOptions::default())
        .build(&RequestInput {
            system_message: Some("shared"),
            ..input(&turns, false)
        })
        .unwrap();
    assert!(body(&request).starts_with(
        r#"{"messages":[{"role":"system","content":"own"},{"role":"user","content":"hi"}]"#
    ));
}

#[test]
fn a_turn_without_content_sends_an_empty_string_and_no_turns_is_an_error() {
    let turns = [Turn::default()];
    let request = chat(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    assert!(body(&request).contains(r#"{"role":"user","content":""}"#));
    let error = chat(EndpointOptions::default())
        .build(&input(&[], false))
        .unwrap_err();
    assert_eq!(error.endpoint, "chat");
}

/// The body as the endpoint built it before it wrote bytes directly: a `serde_json::Value`
/// tree (system message, user context, messages, then the merges), serialised.
fn value_tree_body(options: &EndpointOptions, input: &RequestInput<'_>) -> String {
    use serde_json::{Map, Value};
    fn content(turn: &Turn) -> Value {
        let has_media =
            !(turn.images.is_empty() && turn.audios.is_empty() && turn.videos.is_empty());
        match turn.texts.as_slice() {
            [text] if !has_media => return Value::String(text.clone()),
            [] if !has_media => return Value::String(String::new()),
            _ => {}
        }
        let non_empty = |items: &[String]| {
            items
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut parts = Vec::new();
        for text in non_empty(&turn.texts) {
            parts.push(json!({"type": "text", "text": text}));
        }
        for url in non_empty(&turn.images) {
            parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        for audio in non_empty(&turn.audios) {
            let (format, data) = audio_parts(&audio);
            parts.push(
                json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}),
            );
        }
        for url in non_empty(&turn.videos) {
            parts.push(json!({"type": "video_url", "video_url": {"url": url}}));
        }
        Value::Array(parts)
    }
    let turn = input.turns.last().unwrap();
    let mut messages = Vec::new();
    let starts_with_system = input.turns.first().is_some_and(|turn| {
        match turn
            .raw_messages
            .as_ref()
            .and_then(|raw| raw.first())
            .and_then(|message| message.get("role"))
        {
            Some(role) => role == "system",
            None => turn.role.as_deref() == Some("system"),
        }
    });
    if let Some(system) = input.system_message.filter(|_| !starts_with_system) {
        messages.push(json!({"role": "system", "content": system}));
    }
    if let Some(context) = input.user_context_message {
        messages.push(json!({"role": "user", "content": context}));
    }
    for turn in input.turns {
        if let Some(raw) = &turn.raw_messages {
            messages.extend(raw.iter().cloned());
            continue;
        }
        let role = turn.role.as_deref().unwrap_or("user");
        messages.push(json!({"role": role, "content": content(turn)}));
    }
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    body.insert(
        "model".into(),
        turn.model.as_deref().unwrap_or(input.model).into(),
    );
    body.insert("stream".into(), input.streaming.into());
    if let Some(tools) = &turn.raw_tools {
        body.insert("tools".into(), Value::Array(tools.clone()));
    }
    if let Some(max_tokens) = turn.max_tokens {
        let field = if options.use_legacy_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(field.into(), max_tokens.into());
    }
    for extra in [Some(&options.extra_inputs), turn.extra.as_ref()]
        .into_iter()
        .flatten()
    {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    if input.streaming {
        if let Value::Object(stream_options) = body
            .entry("stream_options")
            .or_insert_with(|| Value::Object(Map::new()))
        {
            stream_options
                .entry("include_usage")
                .or_insert(Value::Bool(true));
            if options.per_chunk_usage {
                stream_options
                    .entry("continuous_usage_stats")
                    .or_insert(Value::Bool(true));
            }
        }
    }
    Value::Object(body).to_string()
}

#[test]
fn the_body_is_byte_for_byte_the_value_trees() {
    let object = |value: serde_json::Value| value.as_object().unwrap().clone();
    let multi_modal = Turn {
        texts: vec!["a \"quoted\" é\n".into(), String::new(), "b".into()],
        images: vec!["data:image/png;base64,AAA".into(), String::new()],
        audios: vec![
            "mp3,QUJD".into(),
            "data:audio/wav;base64,REVG".into(),
            "R0hJ".into(),
        ],
        videos: vec!["http://v/1.mp4".into()],
        max_tokens: Some(12),
        ..Turn::default()
    };
    let raw_and_tools = Turn {
        raw_messages: Some(vec![
            json!({"role": "user", "content": [{"type": "text", "text": "weather?"}], "name": "u"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]}),
        ]),
        raw_tools: Some(vec![
            json!({"type": "function", "function": {"name": "get", "parameters": {"x": 1.5e300, "y": -3}}}),
        ]),
        ..turn("ignored", Some(4))
    };
    let with_extra = Turn {
        extra: Some(object(
            json!({"temperature": 0.5, "model": "turn-model", "zeta": [1, "two"], "stream": "turn"}),
        )),
        ..Turn {
            role: Some("assistant".into()),
            model: Some("own".into()),
            ..turn("hi", Some(3))
        }
    };
    let system_turn = Turn {
        role: Some("system".into()),
        ..Turn::text("own system")
    };
    let conversations: Vec<(&str, Vec<Turn>)> = vec![
        ("one text", vec![turn("hello", None)]),
        ("no text", vec![Turn::default()]),
        ("multi-modal", vec![multi_modal]),
        ("raw messages and tools", vec![raw_and_tools]),
        ("turn extra", vec![with_extra]),
        (
            "history",
            vec![system_turn, Turn::text("q1"), turn("q2", Some(8))],
        ),
    ];
    let options = [
        EndpointOptions::default(),
        EndpointOptions {
            use_legacy_max_tokens: true,
            per_chunk_usage: true,
            extra_inputs: object(
                json!({"max_tokens": 99, "ignore_eos": true, "messages": "replaced?", "nested": {"b": 1, "a": [null]}}),
            ),
            ..EndpointOptions::default()
        },
        EndpointOptions {
            extra_inputs: object(
                json!({"stream_options": {"continuous_usage_stats": false}, "top_k": 5}),
            ),
            per_chunk_usage: true,
            ..EndpointOptions::default()
        },
        EndpointOptions {
            extra_inputs: object(json!({"stream_options": null, "model": "opt"})),
            ..EndpointOptions::default()
        },
    ];
    let mut compared = 0;
    for (name, turns) in &conversations {
        for (option_index, options) in options.iter().enumerate() {
            for (system_message, user_context_message) in
                [(None, None), (Some("sys \u{1}"), Some("ctx"))]
            {
                for streaming in [false, true] {
                    let input = RequestInput {
                        system_message,
                        user_context_message,
                        ..input(turns, streaming)
                    };
                    let request = chat(options.clone()).build(&input).unwrap();
                    assert_eq!(
                        body(&request),
                        value_tree_body(options, &input),
                        "{name}, options {option_index}, system {system_message:?}, \
                         streaming {streaming}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 6 * 4 * 2 * 2);
}

// ---- streamed responses ----

const OPENAI_STREAM: [&str; 5] = [
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},",
    "\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n",
];

#[test]
fn an_openai_stream_with_a_usage_chunk() {
    let exchange = stream(&OPENAI_STREAM);
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [
            response(&exchange, 1, "Hel", ""),
            response(&exchange, 2, "lo", ""),
            ParsedResponse {
                usage: usage(
                    json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
                ),
                ..response(&exchange, 4, "", "")
            },
        ]
    );
}

#[test]
fn a_reasoning_stream_reads_both_spellings_and_usage_in_the_finish_chunk() {
    let exchange = stream(&[
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"reasoning_content\":\"think\",\"content\":null}}]}\n\n",
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"reasoning\":\" more\"}}]}\n\n",
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"answer\"}}]}\n\n",
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":3,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n",
        "data: [DONE]\n\n",
    ]);
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [
            response(&exchange, 0, "", "think"),
            response(&exchange, 1, "", " more"),
            response(&exchange, 2, "answer", ""),
            ParsedResponse {
                usage: usage(
                    json!({"completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": 2}})
                ),
                ..response(&exchange, 3, "", "")
            },
        ]
    );
}

#[test]
fn tool_call_deltas_are_text() {
    let exchange = stream(&[
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}}]}\n\n",
    ]);
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    let texts: Vec<&str> = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, ["get_weather", "{\"city\":"]);
}

#[test]
fn a_stream_without_done_or_final_blank_line_reports_what_it_saw() {
    let exchange = stream(&[
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}",
    ]);
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [
            response(&exchange, 0, "a", ""),
            response(&exchange, 1, "b", "")
        ]
    );
}

#[test]
fn an_empty_200_stream_is_not_an_error_here() {
    let parsed = chat(EndpointOptions::default()).parse(&stream(&["data: [DONE]\n\n"]));
    assert_eq!(parsed, ParsedExchange::default());
}

#[test]
fn nothing_after_done_is_read() {
    let exchange =
        stream(&["data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n"]);
    assert!(chat(EndpointOptions::default())
        .parse(&exchange)
        .responses
        .is_empty());
}

#[test]
fn an_error_event_ends_the_stream_with_a_502() {
    let exchange = stream(&[
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
        "event: error\ndata: {\"error\":{\"message\":\"engine died\"}}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
    ]);
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.responses, [response(&exchange, 0, "a", "")]);
    assert_eq!(
        parsed.error,
        Some(ErrorDetails {
            code: Some(502),
            kind: Some("SSEResponseError".into()),
            message: "engine died".into()
        })
    );
    let comment_only = stream(&["event: error\n: rate limited\n\n"]);
    let error = chat(EndpointOptions::default())
        .parse(&comment_only)
        .error
        .unwrap();
    assert_eq!(error.message, "rate limited");
}

#[test]
fn an_in_band_error_chunk_is_an_sse_error() {
    let exchange = stream(&[
        "data: {\"object\":\"error\",\"message\":\"too long\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
    ]);
    let error = chat(EndpointOptions::default())
        .parse(&exchange)
        .error
        .unwrap();
    assert_eq!(
        error,
        ErrorDetails {
            code: Some(400),
            kind: Some("SSEResponseError".into()),
            message: "too long".into()
        }
    );
}

#[test]
fn malformed_json_fails_the_exchange_streamed_or_not() {
    let garbage = stream(&["data: {not json\n\n"]);
    let error = chat(EndpointOptions::default())
        .parse(&garbage)
        .error
        .unwrap();
    assert_eq!(error.kind.as_deref(), Some("JSONDecodeError"));
    assert!(error.message.ends_with(": {not json"), "{}", error.message);
    // One garbled event in a good stream: its text is lost, so the request fails, and
    // the responses before it are kept as for any failure mid-stream.
    let mixed = stream(&[
        "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"cont\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"more\"}}]}\n\n",
    ]);
    let parsed = chat(EndpointOptions::default()).parse(&mixed);
    assert_eq!(parsed.responses, [response(&mixed, 0, "ok", "")]);
    let error = parsed.error.unwrap();
    assert_eq!(error.kind.as_deref(), Some("JSONDecodeError"));
    assert!(
        error.message.ends_with(r#": {"choices":[{"delta":{"cont"#),
        "{}",
        error.message
    );
    let whole = RawExchange {
        content_type: Some("application/json".into()),
        ..stream(&["{\"choices\": [oops"])
    };
    let error = chat(EndpointOptions::default())
        .parse(&whole)
        .error
        .unwrap();
    assert_eq!(error.kind.as_deref(), Some("JSONDecodeError"));
}

#[test]
fn a_transport_failure_mid_stream_keeps_the_responses() {
    let mut exchange = stream(&["data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"]);
    exchange.error = Some(TransportError::Timeout(Duration::from_secs(1)));
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.responses, [response(&exchange, 0, "a", "")]);
    assert_eq!(parsed.error.unwrap().kind.as_deref(), Some("TimeoutError"));
}

#[test]
fn a_failure_before_any_response() {
    let parsed =
        chat(EndpointOptions::default()).parse(&failed(TransportError::Connect("refused".into())));
    assert_eq!(
        parsed.error,
        Some(ErrorDetails {
            code: None,
            kind: Some("ClientConnectorError".into()),
            message: "cannot connect: refused".into()
        })
    );
}

// ---- whole responses ----

#[test]
fn a_non_streaming_response_is_stamped_at_its_last_chunk() {
    let exchange = exchange(
        200,
        Some("application/json"),
        &[
            "{\"object\":\"chat.completion\",\"choices\":[{\"message\":{\"role\":\"assistant\",",
            "\"content\":\"Hi\",\"reasoning_content\":\"hmm\"}}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
        ],
    );
    let parsed = chat(EndpointOptions::default()).parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [ParsedResponse {
            usage: usage(json!({"prompt_tokens": 1, "completion_tokens": 2})),
            ..response(&exchange, 1, "Hi", "hmm")
        }]
    );
}

#[test]
fn without_content_type_the_body_decides() {
    let json_body = exchange(
        200,
        None,
        &["{\"choices\":[{\"message\":{\"content\":\"x\"}}]}"],
    );
    assert_eq!(
        chat(EndpointOptions::default()).parse(&json_body).responses[0].text,
        "x"
    );
    let sse_body = exchange(
        200,
        Some("text/plain"),
        &["data: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\n"],
    );
    assert_eq!(
        chat(EndpointOptions::default()).parse(&sse_body).responses[0].text,
        "y"
    );
}

#[test]
fn error_statuses_take_the_message_from_the_body() {
    let cases = [
        (
            400,
            r#"{"error":{"message":"max_completion_tokens is not supported","type":"invalid_request_error"}}"#,
            "max_completion_tokens is not supported",
        ),
        (
            422,
            r#"{"detail":[{"loc":["body","x"],"msg":"extra fields not permitted"},{"msg":"bad"}]}"#,
            "extra fields not permitted; bad",
        ),
        (404, r#"{"detail":"Not Found"}"#, "Not Found"),
        (503, r#"{"message":"loading model"}"#, "loading model"),
        (500, r#"{"error":"boom"}"#, "boom"),
        (502, "upstream connect error\n", "upstream connect error"),
        (429, "", "Too Many Requests"),
    ];
    for (status, text, message) in cases {
        let parsed = chat(EndpointOptions::default()).parse(&exchange(
            status,
            Some("application/json"),
            &[text],
        ));
        assert!(parsed.responses.is_empty());
        let error = parsed.error.unwrap();
        assert_eq!(error.code, Some(status));
        assert_eq!(error.message, message, "{status}");
    }
    let error = chat(EndpointOptions::default())
        .parse(&exchange(500, None, &["x"]))
        .error
        .unwrap();
    assert_eq!(error.kind.as_deref(), Some("Internal Server Error"));
    let unknown = chat(EndpointOptions::default())
        .parse(&exchange(599, None, &[]))
        .error
        .unwrap();
    assert_eq!(unknown.kind.as_deref(), Some("HTTP 599"));
}

#[test]
fn async_job_statuses_are_success() {
    let parsed = chat(EndpointOptions::default()).parse(&exchange(
        201,
        None,
        &["{\"choices\":[{\"message\":{\"content\":\"x\"}}]}"],
    ));
    assert_eq!(parsed.error, None);
}
