use aiperf_core::{ParsedResponse, Turn, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip, stream};

fn responses(options: EndpointOptions) -> ResponsesEndpoint {
    ResponsesEndpoint::new(options)
}

fn response(
    exchange: &RawExchange,
    chunk: usize,
    text: &str,
    reasoning: &str,
    usage: Option<Value>,
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

#[test]
fn body_with_instructions_context_history_and_max_output_tokens() {
    let turns = [
        Turn::text("Hi"),
        Turn {
            role: Some("assistant".into()),
            ..Turn::text("Hello!")
        },
        Turn {
            max_tokens: Some(64),
            images: vec!["data:image/png;base64,AA".into()],
            audios: vec!["mp3,QUJD".into()],
            ..Turn::text("Describe")
        },
    ];
    let options = EndpointOptions {
        use_server_token_count: true,
        extra_inputs: json!({"temperature": 0}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    };
    let request = responses(options)
        .build(&RequestInput {
            system_message: Some("Be brief."),
            user_context_message: Some("ctx"),
            ..input(&turns, true)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        concat!(
            r#"{"input":["#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"ctx"}]},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]},"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello!"}]},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Describe"},"#,
            r#"{"type":"input_image","image_url":"data:image/png;base64,AA"},"#,
            r#"{"type":"input_audio","input_audio":{"data":"QUJD","format":"mp3"}}]}],"#,
            r#""model":"m","stream":true,"instructions":"Be brief.","max_output_tokens":64,"#,
            r#""temperature":0,"stream_options":{"include_usage":true}}"#
        )
    );
}

#[test]
fn a_plain_turn_and_video_rejection() {
    let request = responses(EndpointOptions::default())
        .build(&input(&[Turn::text("Hello")], false))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Hello"}]}],"model":"m","stream":false}"#
    );
    let video = [Turn {
        videos: vec!["http://v".into()],
        ..Turn::text("x")
    }];
    let error = responses(EndpointOptions::default())
        .build(&input(&video, false))
        .unwrap_err();
    assert!(error.reason.contains("no video"), "{error}");
}

#[test]
fn a_stream_reads_deltas_reasoning_and_completed_usage_once() {
    let recorded = stream(&[
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"output\":[],\"usage\":null}}\n\n",
        "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"Think\"}\n\nevent: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"ing\"}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\" Hi\"}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" there\"}\n\n",
        "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\" Hi there\"}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\" Hi there\"}]}],\"usage\":{\"input_tokens\":5,\"output_tokens\":4,\"total_tokens\":9}}}\n\n",
    ]);
    let parsed = responses(EndpointOptions::default()).parse(&recorded);
    assert_eq!(parsed.error, None);
    let usage = json!({"input_tokens": 5, "output_tokens": 4, "total_tokens": 9});
    assert_eq!(
        parsed.responses,
        [
            response(&recorded, 1, "", "Think", None),
            response(&recorded, 1, "", "ing", None),
            response(&recorded, 2, " Hi", "", None),
            response(&recorded, 3, " there", "", None),
            response(&recorded, 5, "", "", Some(usage)),
        ]
    );
    let usage = parsed.responses[4].usage.as_ref().unwrap();
    assert_eq!(
        (usage.prompt_tokens(), usage.completion_tokens()),
        (Some(5), Some(4))
    );
}

#[test]
fn done_text_counts_when_no_delta_came_and_tool_arguments_are_text() {
    let recorded = stream(&[
        "data: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\\\"a\\\":1}\"}\n\n",
        "data: {\"type\":\"response.output_text.done\",\"text\":\"Whole\"}\n\n",
    ]);
    let parsed = responses(EndpointOptions::default()).parse(&recorded);
    assert_eq!(
        parsed.responses,
        [
            response(&recorded, 0, "{\"a\":1}", "", None),
            response(&recorded, 1, "Whole", "", None),
        ]
    );
}

#[test]
fn a_whole_response_reads_reasoning_messages_and_function_calls() {
    let recorded = exchange(
        200,
        Some("application/json"),
        &[concat!(
            r#"{"id":"r","object":"response","status":"completed","error":null,"output":["#,
            r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}]},"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Yes","annotations":[]},{"type":"refusal","refusal":"no"}]},"#,
            r#"{"type":"function_call","name":"f","arguments":"{}"}],"#,
            r#""usage":{"input_tokens":3,"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1}}}"#
        )],
    );
    let parsed = responses(EndpointOptions::default()).parse(&recorded);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    let whole = &parsed.responses[0];
    assert_eq!(
        (whole.text.as_str(), whole.reasoning.as_str()),
        ("Yesf{}", "Plan.")
    );
    assert_eq!(whole.usage.as_ref().unwrap().reasoning_tokens(), Some(1));

    let fallback = exchange(
        200,
        Some("application/json"),
        &[r#"{"object":"response","output":[],"output_text":"Short"}"#],
    );
    let parsed = responses(EndpointOptions::default()).parse(&fallback);
    assert_eq!(
        parsed.responses,
        [response(&fallback, 0, "Short", "", None)]
    );
}

#[test]
fn error_and_failed_events_end_the_stream() {
    let parsed = responses(EndpointOptions::default()).parse(&stream(&[
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
        "data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\",\"param\":null}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"b\"}\n\n",
    ]));
    assert_eq!(parsed.responses.len(), 1);
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (Some(502), Some("SSEResponseError"), "slow down")
    );

    let parsed = responses(EndpointOptions::default()).parse(&stream(&[
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"},\"usage\":null}}\n\n",
    ]));
    let error = parsed.error.unwrap();
    assert_eq!((error.code, error.message.as_str()), (Some(502), "boom"));

    let parsed = responses(EndpointOptions::default()).parse(&exchange(
        400,
        Some("application/json"),
        &[r#"{"error":{"message":"Unsupported parameter: 'stream_options'","type":"invalid_request_error"}}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (Some(400), "Unsupported parameter: 'stream_options'")
    );
}

#[tokio::test]
async fn end_to_end_against_the_mock_streamed_and_whole() {
    let turns = [Turn {
        max_tokens: Some(5),
        ..Turn::text("tell me a story")
    }];
    let endpoint = responses(EndpointOptions::default());
    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, true)).await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    assert_eq!(parsed.error, None);
    let text: String = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(text.split_whitespace().count(), 5, "{text}");
    let usage = parsed.responses.last().unwrap().usage.as_ref().unwrap();
    assert_eq!(
        (usage.prompt_tokens(), usage.completion_tokens()),
        (Some(4), Some(5))
    );

    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    assert_eq!(parsed.responses[0].text, text);
    let usage = parsed.responses[0].usage.as_ref().unwrap();
    assert_eq!(usage.completion_tokens(), Some(5));
}
