use aiperf_core::Turn;
use serde_json::json;

use super::*;
use crate::test_support::{exchange, input, round_trip};

const B: &str = "aiperf-form-boundary-5f0c2e7a";

fn clip_turn(clip: &str) -> Turn {
    Turn {
        texts: vec!["Transcribe this audio.".into()],
        audios: vec![String::new(), clip.into()],
        max_tokens: Some(9),
        extra: Some(json!({"temperature": 0}).as_object().unwrap().clone()),
        ..Turn::default()
    }
}

#[test]
fn the_first_clip_is_uploaded_as_the_file_with_model_and_extra_fields() {
    let turns = [clip_turn("WAV,UklGRg==")];
    let options = EndpointOptions {
        extra_inputs: json!({"language": "en", "file": "ignored", "response_format": "json"})
            .as_object()
            .unwrap()
            .clone(),
        ..EndpointOptions::default()
    };
    let request = AudioTranscriptionEndpoint::new(options)
        .build(&input(&turns, false))
        .unwrap();
    let expected = format!(
        "--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
         Content-Type: audio/wav\r\n\r\nRIFF\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"language\"\r\n\r\nen\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"temperature\"\r\n\r\n0\r\n\
         --{B}--\r\n"
    );
    assert_eq!(std::str::from_utf8(&request.body).unwrap(), expected);
    assert_eq!(
        request.headers[0],
        (
            "Content-Type".to_string(),
            format!("multipart/form-data; boundary={B}")
        )
    );
    assert_eq!(
        std::str::from_utf8(request.recorded_payload()).unwrap(),
        r#"{"file":{"b64_data":"UklGRg==","filename":"audio.wav","content_type":"audio/wav"},"model":"m","language":"en","response_format":"json","temperature":0}"#
    );
}

#[test]
fn compressed_formats_get_their_registered_media_types() {
    for (format, name, media_type) in [
        ("mp3", "audio.mp3", "audio/mpeg"),
        ("mpga", "audio.mpga", "audio/mpeg"),
        ("m4a", "audio.m4a", "audio/mp4"),
        ("flac", "audio.flac", "audio/flac"),
        ("webm", "audio.webm", "audio/webm"),
    ] {
        assert_eq!(
            audio_file(&format!("{format},AA==")).unwrap(),
            json!({"b64_data": "AA==", "filename": name, "content_type": media_type})
        );
    }
}

#[test]
fn a_turn_without_audio_or_with_a_bare_url_is_refused() {
    let endpoint = AudioTranscriptionEndpoint::new(EndpointOptions::default());
    let error = endpoint
        .build(&input(&[Turn::text("no audio")], false))
        .unwrap_err();
    assert!(
        error.reason.starts_with("the turn has no audio"),
        "{error:?}"
    );
    let error = endpoint
        .build(&input(&[clip_turn("https://host/clip.wav")], false))
        .unwrap_err();
    assert_eq!(
        error.reason,
        "audio must be \"<format>,<base64>\" such as \"wav,UklGR…\", got \"https://host/clip.wav\""
    );
    let error = endpoint
        .build(&input(&[clip_turn("wav,not base64!")], false))
        .unwrap_err();
    assert!(
        error
            .reason
            .starts_with("the form field \"file\" is not base64"),
        "{error:?}"
    );
}

#[test]
fn openai_vllm_and_plain_text_answers_are_read() {
    let endpoint = AudioTranscriptionEndpoint::new(EndpointOptions::default());
    // OpenAI gpt-4o-transcribe (token usage) and whisper-1 (duration usage).
    let openai = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"text":"Hello there.","usage":{"type":"tokens","input_tokens":14,"input_token_details":{"text_tokens":0,"audio_tokens":14},"output_tokens":4,"total_tokens":18}}"#],
    ));
    assert_eq!(openai.error, None);
    assert_eq!(openai.responses.len(), 1);
    assert_eq!(openai.responses[0].text, "Hello there.");
    assert_eq!(
        openai.responses[0]
            .usage
            .as_ref()
            .unwrap()
            .field("total_tokens"),
        Some(18)
    );
    let whisper = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"text":"Hi","usage":{"type":"duration","seconds":9}}"#],
    ));
    assert_eq!(whisper.responses[0].text, "Hi");
    // vLLM's verbose_json: text plus segments.
    let verbose = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"task":"transcribe","language":"english","duration":2.5,"text":" One two.","segments":[{"id":0,"start":0.0,"end":2.5,"text":" One two."}]}"#],
    ));
    assert_eq!(verbose.responses[0].text, " One two.");
    // response_format=text: the body is the transcript.
    let plain = endpoint.parse(&exchange(
        200,
        Some("text/plain; charset=utf-8"),
        &["One ", "two.\n"],
    ));
    assert_eq!(plain.error, None);
    assert_eq!(plain.responses.len(), 1);
    assert_eq!(plain.responses[0].text, "One two.");
}

#[test]
fn an_empty_transcript_is_no_answer_and_an_error_body_is_an_error() {
    let endpoint = AudioTranscriptionEndpoint::new(EndpointOptions::default());
    let empty = endpoint.parse(&exchange(
        200,
        Some("application/json"),
        &[r#"{"text":""}"#],
    ));
    assert!(empty.responses.iter().all(|r| !r.has_content()));
    let refused = endpoint.parse(&exchange(
        400,
        Some("application/json"),
        &[r#"{"error":{"message":"'file' is required","type":"invalid_request_error"}}"#],
    ));
    let error = refused.error.unwrap();
    assert_eq!(error.code, Some(400));
    assert_eq!(error.message, "'file' is required");
}

#[tokio::test]
async fn the_mock_transcribes_the_upload() {
    let turns = [clip_turn("wav,UklGRiQAAABXQVZF")];
    let endpoint = AudioTranscriptionEndpoint::new(EndpointOptions::default());
    let (exchange, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200));
    assert_eq!(parsed.error, None);
    assert_eq!(parsed.responses.len(), 1);
    assert!(!parsed.responses[0].text.is_empty());
}
