use aiperf_core::{ParsedResponse, Turn, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip};

/// The `usage` a response carries, from its JSON.
#[allow(clippy::unnecessary_wraps)] // reads like the optional field it fills
fn usage(value: Value) -> Option<Usage> {
    Some(Usage(value.as_object().unwrap().clone()))
}

#[test]
fn info_matches_the_catalogue() {
    let info = EmbeddingsEndpoint::new(EndpointOptions::default())
        .info()
        .clone();
    assert_eq!(
        info,
        EndpointInfo {
            name: "embeddings",
            default_path: "/v1/embeddings",
            streaming_path: None,
            supports_streaming: false,
            produces_tokens: false,
            tokenizes_input: true,
            takes_rankings: false,
            api_key_header: ApiKeyHeader::Bearer,
        }
    );
    let nim = EmbeddingsEndpoint::nim(EndpointOptions::default());
    assert_eq!(nim.info().name, "nim_embeddings");
    assert_eq!(nim.info().default_path, "/v1/embeddings");
}

#[test]
fn texts_are_the_input_batch_and_extra_inputs_come_last() {
    let turns = [Turn {
        texts: vec!["a".into(), String::new(), "b \"c\"".into()],
        max_tokens: Some(5),
        model: Some("e5".into()),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        use_server_token_count: true,
        extra_inputs: json!({"encoding_format": "float", "model": "x"})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    // Streaming asked for or not, embeddings never stream.
    let request = EmbeddingsEndpoint::new(options)
        .build(&RequestInput {
            system_message: Some("sys"),
            ..input(&turns, true)
        })
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"model":"x","input":["a","b \"c\""],"encoding_format":"float"}"#
    );
    assert!(request
        .headers
        .contains(&("Accept".into(), "application/json".into())));
}

#[test]
fn nim_pairs_texts_with_images_or_sends_either_alone() {
    let nim = EmbeddingsEndpoint::nim(EndpointOptions::default());
    let both = [Turn {
        texts: vec!["cat".into(), "dog".into()],
        images: vec!["data:image/png;base64,AA".into(), "http://i/2".into()],
        ..Turn::default()
    }];
    assert_eq!(
        body(&nim.build(&input(&both, false)).unwrap()),
        r#"{"model":"m","input":["cat data:image/png;base64,AA","dog http://i/2"]}"#
    );
    let images = [Turn {
        images: vec!["http://i/1".into()],
        ..Turn::default()
    }];
    assert_eq!(
        body(&nim.build(&input(&images, false)).unwrap()),
        r#"{"model":"m","input":["http://i/1"]}"#
    );
    let uneven = [Turn {
        texts: vec!["a".into()],
        images: vec!["i1".into(), "i2".into()],
        ..Turn::default()
    }];
    let error = nim.build(&input(&uneven, false)).unwrap_err();
    assert!(error.reason.contains("1 texts and 2 images"), "{error}");
    // The plain flavour ignores images.
    let plain = EmbeddingsEndpoint::new(EndpointOptions::default());
    assert_eq!(
        body(&plain.build(&input(&both, false)).unwrap()),
        r#"{"model":"m","input":["cat","dog"]}"#
    );
}

#[test]
fn empty_and_multi_turn_inputs_are_rejected() {
    let endpoint = EmbeddingsEndpoint::new(EndpointOptions::default());
    let error = endpoint
        .build(&input(&[Turn::text("")], false))
        .unwrap_err();
    assert!(error.reason.contains("nothing to embed"), "{error}");
    let error = endpoint
        .build(&input(&[Turn::text("a"), Turn::text("b")], false))
        .unwrap_err();
    assert!(error.reason.contains("exactly one turn"), "{error}");
}

#[test]
fn a_list_of_embeddings_is_one_data_response_with_usage() {
    let recorded = exchange(
        200,
        Some("application/json"),
        &[
            r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]},"#,
            r#"{"object":"embedding","index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}"#,
        ],
    );
    let parsed = EmbeddingsEndpoint::new(EndpointOptions::default()).parse(&recorded);
    assert_eq!(parsed.error, None);
    assert_eq!(
        parsed.responses,
        [ParsedResponse {
            at: at(recorded.started_at, 1),
            text: String::new(),
            reasoning: String::new(),
            has_other_data: true,
            usage: usage(json!({"prompt_tokens": 3, "total_tokens": 3})),
            video: None
        }]
    );
}

#[test]
fn a_non_embedding_item_or_no_data_is_not_content() {
    let endpoint = EmbeddingsEndpoint::new(EndpointOptions::default());
    let parsed = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[{"object":"embedding","embedding":[1]},{"object":"text","text":"x"}]}"#],
    ));
    assert!(parsed.responses.is_empty());
    let error = parsed.error.unwrap();
    assert_eq!(error.kind.as_deref(), Some("ValueError"));
    assert_eq!(
        error.message,
        r#"the response's data[1] is not an embedding (object "text")"#
    );

    let parsed = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[],"usage":{"prompt_tokens":0}}"#],
    ));
    assert_eq!(parsed.error, None);
    assert!(!parsed.responses[0].has_content());
}

#[test]
fn errors_keep_status_and_message() {
    let endpoint = EmbeddingsEndpoint::new(EndpointOptions::default());
    let parsed = endpoint.parse(&exchange(
        422,
        Some("application/json"),
        &[r#"{"detail":[{"msg":"input too long"}]}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (Some(422), Some("Unprocessable Entity"), "input too long")
    );
    let parsed = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"error":{"message":"overloaded","code":503}}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (Some(503), Some("ResponseError"), "overloaded")
    );
}

#[tokio::test]
async fn end_to_end_against_the_mock() {
    let endpoint = EmbeddingsEndpoint::new(EndpointOptions::default());
    let turns = [Turn {
        texts: vec!["one two".into(), "three".into()],
        ..Turn::default()
    }];
    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    let response = &parsed.responses[0];
    assert!(response.has_other_data && response.text.is_empty());
    assert_eq!(response.usage.as_ref().unwrap().prompt_tokens(), Some(3));
}
