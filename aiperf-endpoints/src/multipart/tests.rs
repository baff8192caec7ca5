use serde_json::json;

use super::*;

fn payload(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn fields_and_a_decoded_file_become_parts_in_order() {
    // "AAEC" is the bytes 0, 1, 2.
    let request = form_request(payload(json!({
        "file": file_field("AAEC", "audio.wav", "audio/wav"),
        "model": "m",
        "temperature": 0.5,
        "n": 1,
        "stream": false,
        "language": null,
        "timestamp_granularities": ["word"],
    })))
    .unwrap();
    let mut expected = b"--aiperf-form-boundary-5f0c2e7a\r\n\
Content-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
Content-Type: audio/wav\r\n\r\n\x00\x01\x02\r\n"
        .to_vec();
    for (name, value) in [
        ("model", "m"),
        ("temperature", "0.5"),
        ("n", "1"),
        ("stream", "false"),
        ("timestamp_granularities", "[\"word\"]"),
    ] {
        expected.extend_from_slice(
            format!(
                "--aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; \
                 name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    expected.extend_from_slice(b"--aiperf-form-boundary-5f0c2e7a--\r\n");
    assert_eq!(request.body, expected);
    assert_eq!(
        request.headers,
        [
            (
                "Content-Type".to_string(),
                "multipart/form-data; boundary=aiperf-form-boundary-5f0c2e7a".to_string()
            ),
            ("Accept".to_string(), "application/json".to_string()),
        ]
    );
    assert_eq!(
        request.json_view.as_deref(),
        Some(
            br#"{"file":{"b64_data":"AAEC","filename":"audio.wav","content_type":"audio/wav"},"model":"m","temperature":0.5,"n":1,"stream":false,"language":null,"timestamp_granularities":["word"]}"#
                .as_slice()
        )
    );
}

#[test]
fn a_file_without_name_or_type_takes_the_field_name_and_octet_stream() {
    let request = form_request(payload(json!({"image": {"b64_data": ""}}))).unwrap();
    assert_eq!(
        request.body,
        "--aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"image\"; \
         filename=\"image\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n\
         --aiperf-form-boundary-5f0c2e7a--\r\n"
    );
}

#[test]
fn quotes_and_line_breaks_in_names_are_escaped() {
    let request = form_request(payload(json!({"a\"b\r\nc": "v"}))).unwrap();
    let body = std::str::from_utf8(&request.body).unwrap();
    assert!(body.contains("name=\"a%22b%0D%0Ac\"\r\n"), "{body}");
}

#[test]
fn a_part_holding_the_boundary_gets_a_longer_one() {
    let request = form_request(payload(json!({
        "prompt": "--aiperf-form-boundary-5f0c2e7a and --aiperf-form-boundary-5f0c2e7a-1",
    })))
    .unwrap();
    assert_eq!(
        request.headers[0].1,
        "multipart/form-data; boundary=aiperf-form-boundary-5f0c2e7a-2"
    );
    assert!(request
        .body
        .ends_with(b"\r\n--aiperf-form-boundary-5f0c2e7a-2--\r\n"));
}

#[test]
fn a_file_that_is_not_base64_names_its_field() {
    let error = form_request(payload(
        json!({"file": file_field("not base64!", "a.wav", "audio/wav")}),
    ))
    .unwrap_err();
    assert!(
        error.starts_with("the form field \"file\" is not base64: "),
        "{error}"
    );
}

#[test]
fn reserved_fields_are_not_merged() {
    let warned = AtomicBool::new(false);
    let mut body = payload(json!({"file": 1, "model": "m"}));
    merge_unreserved(
        &mut body,
        &payload(json!({"file": 2, "language": "en", "model": "x"})),
        &["file"],
        "audio_transcription",
        &warned,
    );
    assert_eq!(
        Value::Object(body),
        json!({"file": 1, "model": "x", "language": "en"})
    );
    assert!(warned.load(Ordering::Relaxed));
}
