use aiperf_core::Turn;
use serde_json::json;

use super::*;
use crate::test_support::{body, exchange, input, round_trip};

#[test]
fn the_images_of_one_turn_are_the_input_and_extra_inputs_come_last() {
    let turns = [Turn {
        texts: vec!["ignored".into()],
        images: vec![
            "data:image/png;base64,AA".into(),
            String::new(),
            "http://i/2".into(),
        ],
        max_tokens: Some(5),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        extra_inputs: json!({"threshold": 0.5}).as_object().unwrap().clone(),
        ..EndpointOptions::default()
    };
    let request = ImageRetrievalEndpoint::new(options)
        .build(&input(&turns, true))
        .unwrap();
    assert_eq!(
        body(&request),
        r#"{"input":[{"type":"image_url","url":"data:image/png;base64,AA"},{"type":"image_url","url":"http://i/2"}],"threshold":0.5}"#
    );
    assert!(request
        .headers
        .contains(&("Accept".into(), "application/json".into())));
}

#[test]
fn a_turn_without_images_is_refused() {
    let turns = [Turn::text("no picture")];
    let error = ImageRetrievalEndpoint::new(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap_err();
    assert!(
        error.reason.starts_with("the turn has no image"),
        "{error:?}"
    );
}

#[test]
fn a_data_list_is_the_answer_and_an_empty_one_is_not() {
    let endpoint = ImageRetrievalEndpoint::new(EndpointOptions::default());
    let found = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[{"index":0,"bounding_boxes":{"table":[{"x_min":1,"y_min":2,"x_max":3,"y_max":4,"confidence":0.9}]}}]}"#],
    ));
    assert_eq!(found.error, None);
    assert_eq!(found.responses.len(), 1);
    assert!(found.responses[0].has_other_data);
    let empty = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[]}"#],
    ));
    assert!(empty.responses.iter().all(|r| !r.has_other_data));
}

#[tokio::test]
async fn the_mock_answers_with_boxes() {
    let turns = [Turn {
        images: vec!["data:image/png;base64,AA".into()],
        ..Turn::default()
    }];
    let endpoint = ImageRetrievalEndpoint::new(EndpointOptions::default());
    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200));
    assert_eq!(parsed.error, None);
    assert!(parsed.responses[0].has_other_data);
}
