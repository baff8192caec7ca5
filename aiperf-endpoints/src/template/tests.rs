use aiperf_core::{ParsedResponse, Turn};
use serde_json::json;

use super::*;
use crate::test_support::{at, body, exchange, input, round_trip, stream};

fn with(extra_inputs: Value) -> TemplateEndpoint {
    TemplateEndpoint::new(EndpointOptions {
        extra_inputs: extra_inputs.as_object().unwrap().clone(),
        ..EndpointOptions::default()
    })
}

fn build(endpoint: &TemplateEndpoint, turns: &[Turn]) -> Result<String, EndpointError> {
    endpoint
        .build(&input(turns, false))
        .map(|request| body(&request).to_owned())
}

#[test]
fn an_inline_template_sees_the_turn_and_extras_merge_over_it() {
    let endpoint = with(json!({
        "payload_template": r#"{"prompt": {{ text|tojson }}, "all": {{ texts|tojson }}, "model": {{ model|tojson }},
            "max": {{ max_tokens|tojson }}, "stream": {{ stream|tojson }}, "role": {{ role|tojson }},
            "image": {{ image|tojson }}, "n": {{ turns|length }}}"#,
        "response_field": "output.text",
        "temperature": 0.1,
    }));
    let turns = [Turn {
        max_tokens: Some(8),
        images: vec!["data:image/png;base64,AA".into()],
        extra: Some(json!({"max": 9}).as_object().unwrap().clone()),
        ..Turn::text("say \"hi\"")
    }];
    assert_eq!(
        build(&endpoint, &turns).unwrap(),
        r#"{"prompt":"say \"hi\"","all":["say \"hi\""],"model":"m","max":9,"stream":false,"role":"user","image":"data:image/png;base64,AA","n":1,"temperature":0.1}"#
    );
}

#[test]
fn named_templates_and_template_files() {
    let turns = [Turn {
        texts: vec!["a".into(), "b".into()],
        ..Turn::default()
    }];
    let named = with(json!({"payload_template": "nv-embedqa"}));
    assert_eq!(build(&named, &turns).unwrap(), r#"{"text":["a","b"]}"#);

    let dir = std::env::temp_dir().join(format!("aiperf-template-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rerank.j2");
    std::fs::write(
        &file,
        "{\"query\": {{ query|tojson }},\n \"documents\": {{ passages|tojson }},\n \"first\": {{ passage|tojson }}}\n",
    )
    .unwrap();
    let from_file = with(json!({"payload_template": file.to_str().unwrap()}));
    assert_eq!(
        build(&from_file, &turns).unwrap(),
        r#"{"query":"a","documents":["b"],"first":"b"}"#
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn template_errors_name_the_line() {
    let turns = [Turn::text("x")];
    let syntax = with(json!({"payload_template": "{\n\"a\": {{ text|tojson }\n}"}));
    let error = syntax.check().unwrap_err();
    assert_eq!(error.endpoint, "template");
    assert!(
        error
            .reason
            .starts_with("payload template line 2: syntax error"),
        "{}",
        error.reason
    );
    assert_eq!(build(&syntax, &turns).unwrap_err(), error);

    let unknown = with(json!({"payload_template": "{\n\n\"a\": {{ txt|tojson }}}"}));
    assert!(unknown.check().is_ok());
    let reason = build(&unknown, &turns).unwrap_err().reason;
    assert!(
        reason.starts_with("payload template line 3: undefined value"),
        "{reason}"
    );

    let not_json = with(json!({"payload_template": "{{ text }}"}));
    assert_eq!(
        build(&not_json, &turns).unwrap_err().reason,
        "the payload template did not render JSON (expected value at line 1 column 1): x"
    );
    let not_object = with(json!({"payload_template": "{{ texts|tojson }}"}));
    assert_eq!(
        build(&not_object, &turns).unwrap_err().reason,
        r#"the payload template must render a JSON object, got ["x"]"#
    );
    let missing = TemplateEndpoint::new(EndpointOptions::default());
    assert_eq!(
        missing.check().unwrap_err().reason,
        "no template: give one with --extra-inputs payload_template:<name, file or template> \
         (names: nv-embedqa)"
    );
    let bad_field = with(json!({"payload_template": "{}", "response_field": "a[x]"}));
    assert_eq!(
        bad_field.check().unwrap_err().reason,
        r#"response_field "a[x]" is not a path like a.b[0].c or /a/b/0/c"#
    );
}

#[test]
fn a_stream_is_read_event_by_event_through_the_response_field() {
    let endpoint = with(json!({"payload_template": "{}", "response_field": "token.text"}));
    let exchange = stream(&[
        "data: {\"token\":{\"text\":\"Hel\"}}\n\n",
        "data: {\"token\":{\"text\":\"lo\"}}\n\ndata: [DONE]\n\n",
    ]);
    let parsed = endpoint.parse(&exchange);
    assert_eq!(parsed.error, None);
    let text = |chunk, text: &str| ParsedResponse {
        at: at(exchange.started_at, chunk),
        text: text.into(),
        reasoning: String::new(),
        has_other_data: false,
        usage: None,
        video: None,
    };
    assert_eq!(parsed.responses, [text(0, "Hel"), text(1, "lo")]);
}

#[test]
fn a_whole_answer_is_auto_detected() {
    let endpoint = with(json!({"payload_template": "{}"}));
    let exchange = exchange(
        200,
        Some("application/json"),
        &[r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":1}}"#],
    );
    let parsed = endpoint.parse(&exchange);
    assert_eq!(parsed.responses[0].text, "hi");
    assert_eq!(
        parsed.responses[0].usage.as_ref().unwrap().prompt_tokens(),
        Some(1)
    );
}

#[tokio::test]
async fn round_trip_to_the_chat_route() {
    let endpoint = with(json!({
        "payload_template": r#"{"messages": [{"role": "user", "content": {{ text|tojson }}}],
            "model": {{ model|tojson }}, "max_tokens": {{ max_tokens|tojson }}, "stream": {{ stream|tojson }}}"#,
    }));
    let turns = [Turn {
        max_tokens: Some(4),
        ..Turn::text("one two")
    }];
    for streaming in [false, true] {
        let (raw, parsed) = round_trip(
            &endpoint,
            Some("/v1/chat/completions"),
            &input(&turns, streaming),
        )
        .await;
        assert_eq!(raw.status, Some(200));
        assert_eq!(parsed.error, None);
        let text: String = parsed.responses.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(text.split_whitespace().count(), 4, "streaming {streaming}");
    }
}
