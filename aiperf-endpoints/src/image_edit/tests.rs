use aiperf_core::Turn;
use serde_json::json;

use super::*;
use crate::test_support::{exchange, input, round_trip};

const B: &str = "aiperf-form-boundary-5f0c2e7a";
/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn edit_turn(image: &str) -> Turn {
    Turn {
        texts: vec![String::new(), "make it blue".into(), "second".into()],
        images: vec![image.into()],
        ..Turn::default()
    }
}

#[test]
fn prompt_model_and_the_image_file_make_the_form() {
    let turns = [edit_turn("data:image/png;base64,iVBORw0KGgo=")];
    let options = EndpointOptions {
        extra_inputs: json!({"size": "512x512", "prompt": "ignored", "mask": "ignored", "n": 2})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = ImageEditEndpoint::new(options)
        .build(&input(&turns, false))
        .unwrap();
    let mut expected = Vec::new();
    for (name, value) in [
        ("prompt", "make it blue"),
        ("model", "m"),
        ("response_format", "b64_json"),
        ("n", "2"),
    ] {
        expected.extend_from_slice(
            format!("--{B}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    expected.extend_from_slice(
        format!(
            "--{B}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"image.png\"\r\n\
             Content-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    expected.extend_from_slice(b"\x89PNG\r\n\x1a\n\r\n");
    expected.extend_from_slice(
        format!(
            "--{B}\r\nContent-Disposition: form-data; name=\"size\"\r\n\r\n512x512\r\n--{B}--\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(request.body, expected);
    assert_eq!(
        std::str::from_utf8(request.recorded_payload()).unwrap(),
        r#"{"prompt":"make it blue","model":"m","response_format":"b64_json","n":2,"image":{"b64_data":"iVBORw0KGgo=","filename":"image.png","content_type":"image/png"},"size":"512x512"}"#
    );
}

#[test]
fn the_media_type_comes_from_the_url_else_from_the_bytes() {
    let cases = [
        ("data:image/jpeg;base64,AAAA", "image.jpg", "image/jpeg"),
        (
            "data:image/svg+xml;base64,PHN2Zz4=",
            "image.svg",
            "image/svg+xml",
        ),
        // A non-image type is not believed: the bytes say PNG.
        (
            &format!("data:text/html;base64,{PNG}"),
            "image.png",
            "image/png",
        ),
        ("/9j/4AAQ", "image.jpg", "image/jpeg"),
        ("R0lGODlhAQAB", "image.gif", "image/gif"),
        ("UklGRiQAAABXRUJQ", "image.webp", "image/webp"),
        ("Qk0=", "image.bmp", "image/bmp"),
    ];
    for (image, filename, media_type) in cases {
        let field = image_file(image).unwrap();
        assert_eq!(field["filename"], filename, "{image}");
        assert_eq!(field["content_type"], media_type, "{image}");
    }
    assert_eq!(
        image_file("data:image/png;base64").unwrap_err(),
        "the image's data: URL has no comma before its data"
    );
    assert!(image_file("AAAA")
        .unwrap_err()
        .starts_with("the image is neither"));
}

#[test]
fn a_remote_image_is_sent_as_the_url_field() {
    let turns = [edit_turn("HTTPS://images.example/cat.png")];
    let request = ImageEditEndpoint::new(EndpointOptions::default())
        .build(&input(&turns, false))
        .unwrap();
    let body = std::str::from_utf8(&request.body).unwrap();
    assert!(
        body.contains("name=\"url\"\r\n\r\nHTTPS://images.example/cat.png\r\n"),
        "{body}"
    );
    assert!(!body.contains("name=\"image\""));
}

#[test]
fn a_turn_needs_a_prompt_and_an_image() {
    let endpoint = ImageEditEndpoint::new(EndpointOptions::default());
    let no_image = endpoint
        .build(&input(&[Turn::text("make it blue")], false))
        .unwrap_err();
    assert!(no_image.reason.starts_with("the turn has no image to edit"));
    let no_prompt = Turn {
        images: vec![PNG.into()],
        ..Turn::default()
    };
    let error = endpoint.build(&input(&[no_prompt], false)).unwrap_err();
    assert_eq!(error.reason, "the turn has no text to use as the prompt");
}

#[test]
fn openai_and_sglang_answers_are_images() {
    let endpoint = ImageEditEndpoint::new(EndpointOptions::default());
    let openai = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"created":1713833628,"data":[{"b64_json":"iVBORw0KGgo="}],"usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":10,"image_tokens":40}}}"#],
    ));
    assert_eq!(openai.error, None);
    assert_eq!(openai.responses.len(), 1);
    assert!(openai.responses[0].has_other_data);
    assert_eq!(
        openai.responses[0]
            .usage
            .as_ref()
            .unwrap()
            .field("total_tokens"),
        Some(100)
    );
    let sglang = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"created":1750000000,"data":[{"url":"/files/out.png","revised_prompt":"make it blue"}]}"#],
    ));
    assert!(sglang.responses[0].has_other_data);
    let nothing = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"data":[]}"#],
    ));
    assert!(nothing.responses.iter().all(|r| !r.has_other_data));
}

#[tokio::test]
async fn the_mock_edits_the_upload() {
    let turns = [edit_turn(&format!("data:image/png;base64,{PNG}"))];
    let endpoint = ImageEditEndpoint::new(EndpointOptions::default());
    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200));
    assert_eq!(parsed.error, None);
    assert!(parsed.responses[0].has_other_data);
}
