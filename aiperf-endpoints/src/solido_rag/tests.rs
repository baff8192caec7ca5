use aiperf_core::Turn;
use serde_json::json;

use super::*;
use crate::test_support::{body, exchange, input, round_trip, stream};

#[test]
fn every_text_is_a_query_and_extra_inputs_come_last() {
    let turns = [Turn {
        texts: vec!["What is SDE?".into(), String::new(), "Cite it.".into()],
        model: Some("turn-model".into()),
        max_tokens: Some(5),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        extra_inputs: json!({"filters": {"family": "Solido", "tool": "IPV"}, "top_k": 3})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let endpoint = SolidoRagEndpoint::new(options);
    let request = endpoint.build(&input(&turns, true)).unwrap();
    assert_eq!(
        body(&request),
        r#"{"query":["What is SDE?","Cite it."],"filters":{"family":"Solido","tool":"IPV"},"inference_model":"turn-model","top_k":3}"#
    );
    assert_eq!(
        request.headers,
        [
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Accept".to_string(), "text/event-stream".to_string()),
        ]
    );
    assert_eq!(request.json_view, None);
    let plain = SolidoRagEndpoint::new(EndpointOptions::default())
        .build(&input(&[Turn::text("q")], false))
        .unwrap();
    assert_eq!(
        body(&plain),
        r#"{"query":["q"],"filters":{"family":"Solido","tool":"SDE"},"inference_model":"m"}"#
    );
}

#[test]
fn a_whole_answer_s_content_is_the_text() {
    let endpoint = SolidoRagEndpoint::new(EndpointOptions::default());
    let parsed = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"content":"SDE is the Solido Design Environment.","sources":[{"title":"SDE User Guide","page":12}]}"#],
    ));
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    assert_eq!(
        parsed.responses[0].text,
        "SDE is the Solido Design Environment."
    );
    let empty = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"content":""}"#],
    ));
    assert!(empty.responses.iter().all(|r| !r.has_content()));
}

#[test]
fn each_streamed_event_s_content_is_a_response() {
    let endpoint = SolidoRagEndpoint::new(EndpointOptions::default());
    let parsed = endpoint.parse(&stream(&[
        "data: {\"content\":\"SDE \"}\n\ndata: {\"con",
        "tent\":\"is\"}\n\n",
        "data: {\"content\":\" a tool.\",\"sources\":[{\"title\":\"Guide\"}]}\n\ndata: [DONE]\n\n",
    ]));
    assert_eq!(parsed.error, None);
    let texts: Vec<&str> = parsed.responses.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, ["SDE ", "is", " a tool."]);
}

#[test]
fn an_error_event_or_status_is_an_error() {
    let endpoint = SolidoRagEndpoint::new(EndpointOptions::default());
    let in_stream = endpoint.parse(&stream(&[
        "data: {\"content\":\"SDE\"}\n\ndata: {\"error\":{\"message\":\"retriever down\"}}\n\n",
    ]));
    assert_eq!(in_stream.error.unwrap().message, "retriever down");
    let status = endpoint.parse(&exchange(
        422,
        Some("application/json"),
        &[r#"{"detail":[{"msg":"field required"}]}"#],
    ));
    assert_eq!(status.error.unwrap().message, "field required");
}

#[tokio::test]
async fn the_mock_answers_streamed_and_whole() {
    let turns = [Turn::text("What is SDE?")];
    let endpoint = SolidoRagEndpoint::new(EndpointOptions::default());
    for streaming in [true, false] {
        let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, streaming)).await;
        assert_eq!(exchange.status, Some(200));
        assert_eq!(parsed.error, None, "streaming {streaming}");
        let expected = if streaming {
            "text/event-stream"
        } else {
            "application/json"
        };
        assert_eq!(exchange.content_type.as_deref(), Some(expected));
        assert!(!parsed.responses.is_empty());
        assert!(parsed.responses.iter().all(|r| !r.text.is_empty()));
        if !streaming {
            assert_eq!(parsed.responses.len(), 1);
        }
    }
}
