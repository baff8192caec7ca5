use aiperf_core::{ParsedResponse, Turn};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, stream};

fn completions(options: EndpointOptions) -> CompletionsEndpoint {
    CompletionsEndpoint::new(options)
}

#[test]
fn one_text_is_a_string_prompt_with_max_tokens() {
    let turns = [Turn {
        max_tokens: Some(12),
        ..Turn::text("Once")
    }];
    let request = completions(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"prompt":"Once","model":"m","stream":false,"max_tokens":12}"#
    );
}

#[test]
fn several_texts_are_a_batch_and_system_and_context_prefix_each() {
    let turns = [Turn {
        texts: vec!["a".into(), "b".into()],
        ..Turn::default()
    }];
    let request = completions(EndpointOptions::default())
        .build(&RequestInput {
            system_message: Some("warmup"),
            user_context_message: Some("ctx"),
            ..input(&turns, false)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"prompt":["warmup\nctx\na","warmup\nctx\nb"],"model":"m","stream":false}"#
    );
}

#[test]
fn streaming_with_usage_legacy_flag_and_extra_inputs() {
    let turns = [Turn {
        max_tokens: Some(3),
        ..Turn::text("x")
    }];
    let options = EndpointOptions {
        use_legacy_max_tokens: true,
        use_server_token_count: true,
        // Chat alone asks for per-chunk usage, as in the Python AIPerf.
        per_chunk_usage: true,
        extra_inputs: json!({"max_tokens": 4, "min_tokens": 4})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = completions(options).build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"prompt":"x","model":"m","stream":true,"max_tokens":4,"min_tokens":4,"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn multi_turn_and_textless_turns_are_rejected() {
    let two = [Turn::text("a"), Turn::text("b")];
    let error = completions(EndpointOptions::default())
        .build(&input(&two, false))
        .unwrap_err();
    assert!(error.reason.contains("exactly one turn"), "{error}");
    let none = [Turn {
        images: vec!["http://i".into()],
        ..Turn::default()
    }];
    let error = completions(EndpointOptions::default())
        .build(&input(&none, false))
        .unwrap_err();
    assert!(error.reason.contains("no text"), "{error}");
}

#[test]
fn streamed_and_whole_responses_read_choice_text() {
    let streamed = stream(&[
        "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" upon\"}]}\n\n",
        "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
    ]);
    let parsed = completions(EndpointOptions::default()).parse(&streamed);
    assert_eq!(parsed.error, None);
    let texts: Vec<&str> = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, [" upon", " a", ""]);
    assert_eq!(
        parsed.responses[2]
            .usage
            .as_ref()
            .unwrap()
            .completion_tokens(),
        Some(2)
    );
    assert_eq!(parsed.responses[1].at, at(streamed.started_at, 1));

    let whole = exchange(
        200,
        Some("application/json"),
        &["{\"object\":\"text_completion\",\"choices\":[{\"text\":\" time\"}]}"],
    );
    let parsed = completions(EndpointOptions::default()).parse(&whole);
    assert_eq!(
        parsed.responses,
        [ParsedResponse {
            at: at(whole.started_at, 0),
            text: " time".into(),
            reasoning: String::new(),
            has_other_data: false,
            usage: None,
            video: None
        }]
    );
}

#[test]
fn errors_are_handled_as_for_chat() {
    let parsed = completions(EndpointOptions::default()).parse(&exchange(
        400,
        Some("application/json"),
        &[r#"{"error":{"message":"bad prompt"}}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (Some(400), Some("Bad Request"), "bad prompt")
    );
}
