use std::time::Duration;

use aiperf_core::{TransportError, Turn};
use serde_json::json;

use super::*;
use crate::test_support::{body, exchange, failed, input, round_trip};

fn endpoint(video: VideoJobOptions) -> VideoGenerationEndpoint {
    VideoGenerationEndpoint::new(EndpointOptions {
        video,
        ..EndpointOptions::default()
    })
}

fn job(body: &str) -> RawExchange {
    exchange(200, Some("application/json"), &[body])
}

#[test]
fn the_payload_is_a_form_of_prompt_model_and_the_extra_inputs_in_order() {
    let turns = [Turn {
        texts: vec!["a red fox in snow".into(), "ignored".into()],
        max_tokens: Some(9),
        extra: Some(json!({"seed": 7}).as_object().unwrap().clone()),
        ..Turn::default()
    }];
    let options = EndpointOptions {
        extra_inputs: json!({"size": "1280x720", "seconds": 8, "watermark": false,
                             "negative_prompt": null})
        .as_object()
        .unwrap()
        .clone(),
        ..EndpointOptions::default()
    };
    let request = VideoGenerationEndpoint::new(options)
        .build(&input(&turns, false))
        .unwrap();
    assert_eq!(
        body(&request),
        "--aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n\
         a red fox in snow\r\n\
         --aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n\
         --aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"size\"\r\n\r\n\
         1280x720\r\n\
         --aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"seconds\"\r\n\r\n8\r\n\
         --aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"watermark\"\r\n\r\n\
         false\r\n\
         --aiperf-form-boundary-5f0c2e7a\r\nContent-Disposition: form-data; name=\"seed\"\r\n\r\n7\r\n\
         --aiperf-form-boundary-5f0c2e7a--\r\n"
    );
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
    // inputs.json and the raw export record the fields, as 0.13 does.
    assert_eq!(
        request.json_view.as_deref(),
        Some(
            &br#"{"prompt":"a red fox in snow","model":"m","size":"1280x720","seconds":8,"watermark":false,"negative_prompt":null,"seed":7}"#[..]
        )
    );
}

#[test]
fn a_turn_without_text_is_refused() {
    let turns = [Turn::default()];
    let error = endpoint(VideoJobOptions::default())
        .build(&input(&turns, false))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot build the video_generation request: the turn has no text to use as the prompt"
    );
}

/// Recorded job bodies: OpenAI's videos API (queued, completed) and SGLang's (whose `url`
/// is a server-side file path, not a download address).
const OPENAI_QUEUED: &str = r#"{"id":"video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5","object":"video","created_at":1758941485,"status":"queued","model":"sora-2","progress":0,"seconds":"4","size":"720x1280"}"#;
const OPENAI_IN_PROGRESS: &str = r#"{"id":"video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5","object":"video","created_at":1758941485,"status":"in_progress","model":"sora-2","progress":33,"seconds":"4","size":"720x1280"}"#;
const OPENAI_COMPLETED: &str = r#"{"id":"video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5","object":"video","created_at":1758941485,"completed_at":1758941612,"expires_at":1759027885,"status":"completed","model":"sora-2","progress":100,"seconds":"4","size":"720x1280","quality":"standard"}"#;
const SGLANG_COMPLETED: &str = r#"{"id":"4f3b0f53-3b1e-4c21-9a55-0e8f5e5d1a2b","object":"video","model":"Wan-AI/Wan2.1-T2V-1.3B-Diffusers","status":"completed","progress":100,"created_at":1761000000,"size":"832x480","seconds":"4","quality":"standard","url":"/sgl-workspace/outputs/4f3b0f53.mp4","completed_at":1761000093,"inference_time_s":92.41,"peak_memory_mb":21844.5}"#;
const OPENAI_FAILED: &str = r#"{"id":"video_1","object":"video","status":"failed","progress":0,"error":{"code":"moderation_blocked","message":"Your request was blocked by our moderation system."}}"#;

#[test]
fn a_completed_job_is_one_data_response_stamped_when_the_exchange_ended() {
    let sglang = VideoReport {
        inference_time_s: Some(92.41),
        peak_memory_mb: Some(21844.5),
    };
    for (body, report) in [
        (OPENAI_COMPLETED, VideoReport::default()),
        (SGLANG_COMPLETED, sglang),
    ] {
        let exchange = job(body);
        let parsed = endpoint(VideoJobOptions::default()).parse(&exchange);
        assert_eq!(parsed.error, None, "{body}");
        assert_eq!(
            parsed.responses,
            [ParsedResponse {
                at: exchange.ended_at,
                text: String::new(),
                reasoning: String::new(),
                has_other_data: true,
                usage: None,
                video: Some(report),
            }]
        );
    }
}

#[test]
fn a_failed_job_is_an_error_with_the_servers_message() {
    let parsed = endpoint(VideoJobOptions::default()).parse(&job(OPENAI_FAILED));
    assert!(parsed.responses.is_empty());
    assert_eq!(
        parsed.error,
        Some(ErrorDetails {
            code: Some(500),
            kind: Some("VideoGenerationError".into()),
            message: "Video generation failed: Your request was blocked by our moderation \
                      system."
                .into(),
        })
    );
    let plain = endpoint(VideoJobOptions::default()).parse(&job(
        r#"{"id":"v","status":"FAILED","error":"out of memory"}"#,
    ));
    assert_eq!(
        plain.error.unwrap().message,
        "Video generation failed: out of memory"
    );
    let bare = endpoint(VideoJobOptions::default()).parse(&job(r#"{"status":"failed"}"#));
    assert_eq!(
        bare.error.unwrap().message,
        "Video generation failed: Unknown error"
    );
}

#[test]
fn unfinished_unreadable_and_refused_jobs_are_errors() {
    let video = endpoint(VideoJobOptions::default());
    let unfinished = video.parse(&job(OPENAI_QUEUED)).error.unwrap();
    assert_eq!(unfinished.message, "the video job ended with status queued");
    let garbage = video.parse(&job("<html>oops</html>")).error.unwrap();
    assert_eq!(
        garbage.message,
        "Invalid JSON in video response: <html>oops</html>"
    );
    let refused = video
        .parse(&exchange(
            404,
            Some("application/json"),
            &[r#"{"error":{"message":"Video not found","type":"invalid_request_error"}}"#],
        ))
        .error
        .unwrap();
    assert_eq!(refused.code, Some(404));
    assert_eq!(refused.message, "Video not found");
    let mut timed_out = job(OPENAI_IN_PROGRESS);
    timed_out.error = Some(TransportError::Timeout(Duration::from_secs(5)));
    let timeout = video.parse(&timed_out).error.unwrap();
    assert_eq!(timeout.kind.as_deref(), Some("TimeoutError"));
    let dead = video
        .parse(&failed(TransportError::Connect("refused".into())))
        .error
        .unwrap();
    assert_eq!(dead.message, "cannot connect: refused");
}

#[test]
fn unfinished_jobs_are_polled_at_once_then_at_the_interval_and_finished_ones_end() {
    let video = endpoint(VideoJobOptions {
        poll_interval: Duration::from_millis(250),
        download_content: false,
    });
    let status_url = "http://h/v1/videos/video_68d7512d07848190b3e45da0ecbebcde004da08e1e0678d5";
    for body in [OPENAI_QUEUED, OPENAI_IN_PROGRESS] {
        for request_url in ["http://h/v1/videos", "http://h/v1/videos/"] {
            for (followed, after) in [(0, 0), (1, 250), (7, 250)] {
                assert_eq!(
                    video.follow_up(request_url, followed, &job(body)),
                    FollowUp::Poll {
                        url: status_url.into(),
                        after: Duration::from_millis(after),
                    }
                );
            }
        }
    }
    for body in [
        OPENAI_COMPLETED,
        SGLANG_COMPLETED,
        OPENAI_FAILED,
        "not json",
        "{}",
    ] {
        assert_eq!(
            video.follow_up("http://h/v1/videos", 1, &job(body)),
            FollowUp::Done,
            "{body}"
        );
    }
}

#[test]
fn with_download_a_completed_job_fetches_its_content() {
    let video = endpoint(VideoJobOptions {
        poll_interval: Duration::from_millis(100),
        download_content: true,
    });
    assert_eq!(
        video.follow_up("http://h/v1/videos", 1, &job(SGLANG_COMPLETED)),
        FollowUp::Fetch {
            url: "http://h/v1/videos/4f3b0f53-3b1e-4c21-9a55-0e8f5e5d1a2b/content".into()
        }
    );
    let with_address = r#"{"id":"v9","status":"completed","url":"https://cdn.example/v9.mp4"}"#;
    assert_eq!(
        video.follow_up("http://h/v1/videos", 1, &job(with_address)),
        FollowUp::Fetch {
            url: "https://cdn.example/v9.mp4".into()
        }
    );
    assert_eq!(
        video.follow_up("http://h/v1/videos", 1, &job(OPENAI_FAILED)),
        FollowUp::Done
    );
}

#[tokio::test]
async fn the_mock_accepts_the_form_and_answers_with_a_queued_job() {
    let turns = [Turn::text("a lighthouse at dusk")];
    let video = endpoint(VideoJobOptions::default());
    let (exchange, _) = round_trip(&video, None, &input(&turns, false)).await;
    assert_eq!(exchange.status, Some(200));
    let FollowUp::Poll { url, after } = video.follow_up("http://mock/v1/videos", 0, &exchange)
    else {
        panic!(
            "a queued job is polled: {:?}",
            String::from_utf8_lossy(exchange.body())
        );
    };
    assert!(url.starts_with("http://mock/v1/videos/video_"), "{url}");
    assert_eq!(after, Duration::ZERO);
}
