use aiperf_core::{ParsedResponse, Turn, Usage};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip};

fn turn() -> [Turn; 1] {
    [Turn {
        texts: vec![
            "what is a cat".into(),
            "a cat is".into(),
            String::new(),
            "dogs".into(),
        ],
        ..Turn::default()
    }]
}

fn data_response(exchange: &RawExchange, usage: Option<Usage>) -> ParsedResponse {
    ParsedResponse {
        at: at(exchange.started_at, 0),
        text: String::new(),
        reasoning: String::new(),
        has_other_data: true,
        usage,
        video: None,
    }
}

#[test]
fn info_matches_the_catalogue() {
    let options = EndpointOptions::default;
    for (endpoint, name, path) in [
        (
            RankingsEndpoint::nim(options()),
            "nim_rankings",
            "/v1/ranking",
        ),
        (
            RankingsEndpoint::cohere(options()),
            "cohere_rankings",
            "/v2/rerank",
        ),
        (
            RankingsEndpoint::hf_tei(options()),
            "hf_tei_rankings",
            "/rerank",
        ),
    ] {
        assert_eq!(
            *endpoint.info(),
            EndpointInfo {
                name,
                default_path: path,
                streaming_path: None,
                supports_streaming: false,
                produces_tokens: false,
                tokenizes_input: true,
                takes_rankings: true,
                api_key_header: ApiKeyHeader::Bearer,
            }
        );
    }
}

#[test]
fn nim_body_wraps_query_and_passages_in_text_objects() {
    let options = EndpointOptions {
        extra_inputs: json!({"truncate": "END"}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    };
    let request = RankingsEndpoint::nim(options)
        .build(&input(&turn(), true))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"model":"m","query":{"text":"what is a cat"},"passages":[{"text":"a cat is"},{"text":"dogs"}],"truncate":"END"}"#
    );
    assert!(request
        .headers
        .contains(&("Accept".into(), "application/json".into())));
}

#[test]
fn cohere_and_tei_bodies() {
    let cohere = RankingsEndpoint::cohere(EndpointOptions {
        extra_inputs: json!({"top_n": 1}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    });
    assert_eq!(
        body(&cohere.build(&input(&turn(), false)).unwrap()),
        r#"{"model":"m","query":"what is a cat","documents":["a cat is","dogs"],"top_n":1}"#
    );
    let tei = RankingsEndpoint::hf_tei(EndpointOptions::default());
    assert_eq!(
        body(&tei.build(&input(&turn(), false)).unwrap()),
        r#"{"query":"what is a cat","texts":["a cat is","dogs"]}"#
    );
}

#[test]
fn a_query_without_passages_is_rejected() {
    let error = RankingsEndpoint::nim(EndpointOptions::default())
        .build(&input(&[Turn::text("q")], false))
        .unwrap_err();
    assert!(error.reason.contains("at least one passage"), "{error}");
}

#[test]
fn each_answer_shape_is_one_data_response() {
    let nim = exchange(
        200,
        Some("application/json"),
        &[
            r#"{"rankings":[{"index":1,"logit":2.5},{"index":0,"logit":-1.0}],"usage":{"prompt_tokens":9,"total_tokens":9}}"#,
        ],
    );
    let usage = Usage(
        json!({"prompt_tokens": 9, "total_tokens": 9})
            .as_object()
            .unwrap()
            .clone(),
    );
    let parsed = RankingsEndpoint::nim(EndpointOptions::default()).parse(&nim);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses, [data_response(&nim, Some(usage))]);

    let cohere = exchange(
        200,
        Some("application/json"),
        &[
            r#"{"id":"r","results":[{"index":0,"relevance_score":0.9}],"meta":{"billed_units":{"search_units":1}}}"#,
        ],
    );
    let parsed = RankingsEndpoint::cohere(EndpointOptions::default()).parse(&cohere);
    assert_eq!(parsed.responses, [data_response(&cohere, None)]);

    let tei = exchange(
        200,
        Some("application/json"),
        &[r#" [{"index":1,"score":0.8},{"index":0,"score":0.1}]"#],
    );
    let parsed = RankingsEndpoint::hf_tei(EndpointOptions::default()).parse(&tei);
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses, [data_response(&tei, None)]);
}

#[test]
fn empty_rankings_are_not_content_and_errors_are_reported() {
    let endpoint = RankingsEndpoint::hf_tei(EndpointOptions::default());
    let parsed = endpoint.parse(&exchange(200, Some("application/json"), &["[]"]));
    assert_eq!(parsed, ParsedExchange::default());

    let parsed = endpoint.parse(&exchange(
        413,
        Some("application/json"),
        &[r#"{"error":"batch size 64 > maximum allowed batch size 32","error_type":"Validation"}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.kind.as_deref(), error.message.as_str()),
        (
            Some(413),
            Some("Payload Too Large"),
            "batch size 64 > maximum allowed batch size 32"
        )
    );

    let parsed = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"error":"model is loading"}"#],
    ));
    let error = parsed.error.unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (Some(502), "model is loading")
    );

    let parsed = endpoint.parse(&exchange(200, Some("application/json"), &["[{\"index\":"]));
    assert_eq!(
        parsed.error.unwrap().kind.as_deref(),
        Some("JSONDecodeError")
    );
}

#[tokio::test]
async fn end_to_end_against_the_mock() {
    for endpoint in [
        RankingsEndpoint::nim(EndpointOptions::default()),
        RankingsEndpoint::cohere(EndpointOptions::default()),
        RankingsEndpoint::hf_tei(EndpointOptions::default()),
    ] {
        let turns = turn();
        let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
        let name = endpoint.info().name;
        assert_eq!(exchange.status, Some(200), "{name}: {:?}", exchange.error);
        assert_eq!(parsed.error, None, "{name}");
        assert_eq!(parsed.responses.len(), 1, "{name}");
        assert!(parsed.responses[0].has_other_data, "{name}");
    }
}
