use aiperf_core::{ParsedResponse, Turn};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip, stream};

fn tgi() -> HuggingFaceGenerateEndpoint {
    HuggingFaceGenerateEndpoint::new(EndpointOptions::default())
}

fn text(exchange: &RawExchange, chunk: usize, text: &str) -> ParsedResponse {
    ParsedResponse {
        at: at(exchange.started_at, chunk),
        text: text.into(),
        reasoning: String::new(),
        has_other_data: false,
        usage: None,
        video: None,
    }
}

#[test]
fn texts_are_joined_and_extra_inputs_go_inside_parameters() {
    let turns = [Turn {
        texts: vec!["Hello".into(), "world".into()],
        max_tokens: Some(20),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        use_server_token_count: true,
        extra_inputs: json!({"temperature": 0.5, "max_new_tokens": 25})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = HuggingFaceGenerateEndpoint::new(options)
        .build(&input(&turns, true))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"inputs":"Hello world","parameters":{"max_new_tokens":25,"temperature":0.5}}"#
    );
    assert!(request
        .headers
        .contains(&("Accept".into(), "text/event-stream".into())));
    let request = tgi().build(&input(&[Turn::text("Hi")], false)).unwrap();
    assert_eq!(body(&request), r#"{"inputs":"Hi","parameters":{}}"#);
}

#[test]
fn textless_and_multi_turn_inputs_are_rejected() {
    let error = tgi().build(&input(&[Turn::default()], false)).unwrap_err();
    assert!(error.reason.contains("no text"), "{error}");
    let error = tgi()
        .build(&input(&[Turn::text("a"), Turn::text("b")], false))
        .unwrap_err();
    assert!(error.reason.contains("exactly one turn"), "{error}");
}

#[test]
fn a_stream_reads_token_text_not_the_final_generated_text() {
    let recorded = stream(&[
        "data:{\"index\":1,\"token\":{\"id\":7,\"text\":\" Hi\",\"logprob\":0.0,\"special\":false},\"generated_text\":null,\"details\":null}\n\n",
        "data:{\"index\":2,\"token\":{\"id\":8,\"text\":\" there\",\"logprob\":0.0,\"special\":false},\"generated_text\":null,\"details\":null}\n\n",
        "data:{\"index\":3,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":0.0,\"special\":true},\"generated_text\":\" Hi there\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":3}}\n\n",
    ]);
    let parsed = tgi().parse(&recorded);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [text(&recorded, 0, " Hi"), text(&recorded, 1, " there")]
    );
}

#[test]
fn a_whole_answer_is_an_object_or_a_list() {
    let object = exchange(
        200,
        Some("application/json"),
        &[r#"{"generated_text":" a b"}"#],
    );
    assert_eq!(tgi().parse(&object).responses, [text(&object, 0, " a b")]);
    let list = exchange(
        200,
        Some("application/json"),
        &[r#"[{"generated_text":" c"},{"generated_text":" d"}]"#],
    );
    assert_eq!(tgi().parse(&list).responses, [text(&list, 0, " c")]);
}

#[test]
fn errors_in_band_and_by_status() {
    let parsed = tgi().parse(&stream(&[
        "data:{\"token\":{\"text\":\" a\"}}\n\n",
        "data:{\"error\":\"Request failed during generation: out of memory\",\"error_type\":\"generation\"}\n\n",
    ]));
    assert_eq!(parsed.responses.len(), 1);
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (
            Some(502),
            Some("SSEResponseError"),
            "Request failed during generation: out of memory"
        )
    );
    let parsed = tgi().parse(&exchange(
        422,
        Some("application/json"),
        &[r#"{"error":"`inputs` must have less than 4096 tokens","error_type":"validation"}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (Some(422), "`inputs` must have less than 4096 tokens")
    );
}

#[tokio::test]
async fn end_to_end_against_the_mock_streamed_and_whole() {
    let turns = [Turn {
        max_tokens: Some(4),
        ..Turn::text("tell me")
    }];
    let endpoint = tgi();
    let streaming_path = endpoint.info().path(true);
    let (exchange, parsed) =
        round_trip(&endpoint, Some(streaming_path), &input(&turns, true)).await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    assert_eq!(parsed.error, None);
    assert!(parsed.responses.len() > 1, "{parsed:?}");
    let streamed: String = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(streamed.split_whitespace().count(), 4, "{streamed}");

    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    assert_eq!(parsed.responses[0].text, streamed);
}

#[test]
fn the_turns_extra_goes_at_the_top_level() {
    let turns = [Turn {
        extra: Some(json!({"details": true}).as_object().unwrap().clone()),
        ..Turn::text("hi")
    }];
    let request = tgi().build(&input(&turns, false)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"inputs":"hi","parameters":{},"details":true}"#
    );
}
