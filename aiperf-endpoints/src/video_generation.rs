//! The `video_generation` endpoint: asynchronous text-to-video jobs (`/v1/videos`), as
//! OpenAI's videos API and SGLang serve them.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use aiperf_core::config::DEFAULT_VIDEO_POLL_INTERVAL;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ErrorDetails, FollowUp,
    ParsedExchange, ParsedResponse, RawExchange, RequestContentType, RequestInput, VideoReport,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::multipart::form_request;
use crate::payload::{
    current_turn, merge, merge_turn_extra, model, prompt, warn_max_tokens_ignored,
};
use crate::response::exchange_failure;
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "video_generation",
    default_path: "/v1/videos",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// How a video job is followed: the poll interval and whether the video is downloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoJobOptions {
    /// The wait between polls of a job's status (`AIPERF_HTTP_VIDEO_POLL_INTERVAL`).
    pub poll_interval: Duration,
    /// Download each finished video (`--download-video-content`); the download's time
    /// counts in the request latency, its bytes are not kept.
    pub download_content: bool,
}

impl Default for VideoJobOptions {
    fn default() -> Self {
        Self {
            poll_interval: DEFAULT_VIDEO_POLL_INTERVAL,
            download_content: false,
        }
    }
}

/// Video generation: an asynchronous job per request, as the Python AIPerf 0.13 runs it.
///
/// 1. `POST /v1/videos` with a `multipart/form-data` body of `prompt` (the current turn's
///    first text) and `model`, then `--extra-inputs` and the turn's `extra` fields
///    (`size`, `seconds`, `seed`, `num_inference_steps`, …; strings as they are, other
///    values as JSON text). The answer is a job `{"id", "status": "queued", …}`.
/// 2. `GET /v1/videos/{id}` at once, then every poll interval while the status is
///    neither `completed` nor `failed` (as 0.13 polls).
/// 3. With `download_content`, `GET` the job's `url` (when it is an absolute http(s) URL)
///    or `/v1/videos/{id}/content`.
///
/// The request is one record from the submit's start to the end of the last exchange.
/// A `completed` job is one response (non-token data, stamped at that end, so the
/// latency covers generation and any download) carrying the server's
/// `inference_time_s` and `peak_memory_mb` when it reports them; a `failed` job is a
/// `VideoGenerationError` with the server's message. Videos are not tokens: a turn's max
/// tokens are ignored with one warning.
#[derive(Debug)]
pub struct VideoGenerationEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl VideoGenerationEndpoint {
    /// A video generation endpoint with these options (the job's in
    /// [`EndpointOptions::video`]).
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }
}

impl Endpoint for VideoGenerationEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let prompt = prompt(INFO.name, turn)?;
        let mut fields = Map::new();
        fields.insert("prompt".into(), prompt.into());
        fields.insert("model".into(), model(input, turn).into());
        merge(&mut fields, &self.options.extra_inputs);
        merge_turn_extra(&mut fields, turn);
        form_request(fields).map_err(|reason| EndpointError {
            endpoint: INFO.name,
            reason,
        })
    }

    fn request_content_type(&self) -> RequestContentType {
        RequestContentType::MultipartFormData
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        let error = |message: String| ParsedExchange {
            responses: Vec::new(),
            error: Some(ErrorDetails {
                code: Some(500),
                kind: Some("VideoGenerationError".into()),
                message,
            }),
        };
        if let Some(failure) = exchange_failure(exchange) {
            return ParsedExchange {
                responses: Vec::new(),
                error: Some(failure),
            };
        }
        if let Some(transport) = &exchange.error {
            return ParsedExchange {
                responses: Vec::new(),
                error: Some(transport.into()),
            };
        }
        let body = exchange.body();
        let Ok(job) = serde_json::from_slice::<Job>(body) else {
            let text = String::from_utf8_lossy(body);
            let snippet: String = text.chars().take(200).collect();
            return error(format!("Invalid JSON in video response: {snippet}"));
        };
        match job.status.as_deref() {
            Some(status) if status.eq_ignore_ascii_case("completed") => ParsedExchange {
                responses: vec![ParsedResponse {
                    at: exchange.ended_at,
                    text: String::new(),
                    reasoning: String::new(),
                    has_other_data: true,
                    usage: job
                        .usage
                        .filter(|usage| !usage.is_empty())
                        .map(aiperf_core::Usage),
                    video: Some(VideoReport {
                        inference_time_s: job.inference_time_s,
                        peak_memory_mb: job.peak_memory_mb,
                    }),
                }],
                error: None,
            },
            Some(status) if status.eq_ignore_ascii_case("failed") => {
                error(format!("Video generation failed: {}", job.error_message()))
            }
            other => error(format!(
                "the video job ended with status {}",
                other.unwrap_or("(none)")
            )),
        }
    }

    fn follow_up(&self, request_url: &str, followed: u32, exchange: &RawExchange) -> FollowUp {
        let Ok(job) = serde_json::from_slice::<Job>(exchange.body()) else {
            return FollowUp::Done;
        };
        let Some(id) = job.id.as_deref().filter(|id| !id.is_empty()) else {
            return FollowUp::Done;
        };
        let status_url = format!("{}/{id}", request_url.trim_end_matches('/'));
        let video = self.options.video;
        match job
            .status
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("failed") => FollowUp::Done,
            Some("completed") if !video.download_content => FollowUp::Done,
            Some("completed") => FollowUp::Fetch {
                url: job
                    .url
                    .filter(|url| url.starts_with("http://") || url.starts_with("https://"))
                    .unwrap_or_else(|| format!("{status_url}/content")),
            },
            // The first poll goes right after the submit, as 0.13 polls: a job that is
            // done by then (or fast) costs no interval.
            _ => FollowUp::Poll {
                url: status_url,
                after: if followed == 0 {
                    Duration::ZERO
                } else {
                    video.poll_interval
                },
            },
        }
    }
}

/// The fields of a video job the benchmark reads: small, so reading one on the hot path
/// (to decide whether to poll again) costs little.
#[derive(Debug, Deserialize)]
struct Job {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    inference_time_s: Option<f64>,
    #[serde(default)]
    peak_memory_mb: Option<f64>,
}

impl Job {
    /// The failure's message: `error.message`, a string `error`, or "Unknown error".
    fn error_message(&self) -> String {
        match &self.error {
            Some(Value::Object(error)) => match error.get("message") {
                Some(Value::String(message)) => message.clone(),
                Some(other) => other.to_string(),
                None => "Unknown error".into(),
            },
            Some(Value::String(message)) => message.clone(),
            Some(Value::Null) | None => "Unknown error".into(),
            Some(other) => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
