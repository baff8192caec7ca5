use aiperf_core::{ErrorDetails, ParsedResponse, Turn, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip, stream};

fn images() -> ImageGenerationEndpoint {
    ImageGenerationEndpoint::new(EndpointOptions::default())
}

fn image(exchange: &RawExchange, chunk: usize, usage: Option<serde_json::Value>) -> ParsedResponse {
    ParsedResponse {
        at: at(exchange.started_at, chunk),
        text: String::new(),
        reasoning: String::new(),
        has_other_data: true,
        usage: usage.map(|u| Usage(u.as_object().unwrap().clone())),
        video: None,
    }
}

#[test]
fn the_first_text_is_the_prompt_and_extras_add_options() {
    let turns = [Turn {
        texts: vec![String::new(), "a red cat".into(), "ignored".into()],
        max_tokens: Some(5),
        extra: Some(json!({"seed": 3}).as_object().unwrap().clone()),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        extra_inputs: json!({"size": "512x512", "n": 2})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = ImageGenerationEndpoint::new(options)
        .build(&input(&turns, false))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"prompt":"a red cat","model":"m","response_format":"b64_json","n":2,"size":"512x512","seed":3}"#
    );
    let streamed = images().build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&streamed),
        r#"{"prompt":"a red cat","model":"m","response_format":"b64_json","n":1,"stream":true,"seed":3}"#
    );
    assert_eq!(streamed.headers[1].1, "text/event-stream");
    let error = images()
        .build(&input(&[Turn::default()], false))
        .unwrap_err();
    assert_eq!(error.reason, "the turn has no text to use as the prompt");
}

#[test]
fn a_whole_answer_with_b64_or_url_images_is_one_response() {
    for item in [
        r#"{"b64_json":"iVBORw0KGgo=","revised_prompt":"a red cat"}"#,
        r#"{"url":"https://x/1.png"}"#,
    ] {
        let text = format!(
            r#"{{"created":1,"data":[{item}],"usage":{{"input_tokens":4,"output_tokens":0,"total_tokens":4}}}}"#
        );
        let exchange = exchange(200, Some("application/json"), &[&text]);
        let parsed = images().parse(&exchange);
        assert_eq!(parsed.error, None);
        assert_eq!(
            parsed.responses,
            [image(
                &exchange,
                0,
                Some(json!({"input_tokens": 4, "output_tokens": 0, "total_tokens": 4}))
            )]
        );
    }
    // No image at all: not a content response, so the request fails as invalid.
    let empty = exchange(
        200,
        Some("application/json"),
        &[r#"{"created":1,"data":[]}"#],
    );
    assert!(images().parse(&empty).responses.is_empty());
}

#[test]
fn streamed_partial_images_then_the_completed_one() {
    let exchange = stream(&[
        "event: image_generation.partial_image\ndata: {\"type\":\"image_generation.partial_image\",\"b64_json\":\"AAA\",\"partial_image_index\":0}\n\n",
        "event: image_generation.partial_image\ndata: {\"type\":\"image_generation.partial_image\",\"b64_json\":\"BBB\",\"partial_image_index\":1}\n\n",
        "event: image_generation.completed\ndata: {\"type\":\"image_generation.completed\",\"b64_json\":\"CCC\",\"usage\":{\"input_tokens\":2,\"output_tokens\":0,\"total_tokens\":2}}\n\n",
    ]);
    let parsed = images().parse(&exchange);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [
            image(&exchange, 0, None),
            image(&exchange, 1, None),
            image(
                &exchange,
                2,
                Some(json!({"input_tokens": 2, "output_tokens": 0, "total_tokens": 2}))
            ),
        ]
    );
}

#[test]
fn an_error_event_ends_the_stream() {
    let exchange = stream(&[
        "event: image_generation.partial_image\ndata: {\"type\":\"image_generation.partial_image\",\"b64_json\":\"AAA\"}\n\n",
        "data: {\"type\":\"error\",\"error\":{\"message\":\"content policy\",\"code\":400}}\n\n",
    ]);
    let parsed = images().parse(&exchange);
    assert_eq!(
        parsed.error,
        Some(ErrorDetails {
            code: Some(400),
            kind: Some("SSEResponseError".into()),
            message: "content policy".into(),
        })
    );
    assert_eq!(parsed.responses.len(), 1);
}

#[tokio::test]
async fn round_trip_streamed_and_whole() {
    let turns = [Turn::text("a red cat")];
    for streaming in [false, true] {
        let (raw, parsed) = round_trip(&images(), None, &input(&turns, streaming)).await;
        assert_eq!(raw.status, Some(200));
        assert_eq!(parsed.error, None);
        assert_eq!(parsed.responses.len(), 1, "streaming {streaming}");
        assert!(parsed.responses[0].has_other_data);
        let usage = parsed.responses[0].usage.as_ref().unwrap();
        assert_eq!(usage.prompt_tokens(), Some(3));
    }
}
