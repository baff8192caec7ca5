//! The `audio_transcription` endpoint: OpenAI speech to text
//! (`/v1/audio/transcriptions`), as Whisper-style servers (OpenAI, vLLM, NIM, SGLang)
//! take it.

use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange,
    ParsedResponse, RawExchange, RequestContentType, RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::multipart::{file_field, form_request, merge_unreserved};
use crate::payload::{current_turn, model, warn_max_tokens_ignored};
use crate::response::{exchange_failure, parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "audio_transcription",
    default_path: "/v1/audio/transcriptions",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: false,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// The form field that carries the audio; the extra inputs cannot replace it.
const RESERVED: &[&str] = &["file"];

/// Audio transcription: uploads the current turn's first audio clip as the `file` of a
/// `multipart/form-data` form with the `model`, then `--extra-inputs` and the turn's
/// `extra` fields (`language`, `response_format`, `temperature`, …) as further fields.
///
/// Clips are `"<format>,<base64>"` strings (synthetic audio, audio datasets); the file is
/// named `audio.<format>` with its media type (`wav` → `audio/wav`, `mp3` → `audio/mpeg`,
/// …). As in the Python AIPerf 0.13 the request never streams, and the transcript counts
/// as the answer but not as generated tokens (`produces_tokens` is false): a run reports
/// latency and throughput.
///
/// The answer is `{"text": …}` (`response_format` `json`, `verbose_json`), or the body
/// itself when the server sends plain text (`text`, `srt`, `vtt`); an empty transcript
/// is no answer.
#[derive(Debug)]
pub struct AudioTranscriptionEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
    warned_reserved: AtomicBool,
}

impl AudioTranscriptionEndpoint {
    /// An `audio_transcription` endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
            warned_reserved: AtomicBool::new(false),
        }
    }
}

impl Endpoint for AudioTranscriptionEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let error = |reason: String| EndpointError {
            endpoint: INFO.name,
            reason,
        };
        let clip = turn
            .audios
            .iter()
            .find(|audio| !audio.is_empty())
            .ok_or_else(|| {
                error(
                    "the turn has no audio (give synthetic clips with --audio-length-mean, \
                     or a dataset with audio)"
                        .into(),
                )
            })?;
        let mut payload = Map::new();
        payload.insert("file".into(), audio_file(clip).map_err(error)?);
        payload.insert("model".into(), model(input, turn).into());
        let extra = turn.extra.clone().unwrap_or_default();
        for extra in [&self.options.extra_inputs, &extra] {
            merge_unreserved(
                &mut payload,
                extra,
                RESERVED,
                INFO.name,
                &self.warned_reserved,
            );
        }
        form_request(payload).map_err(error)
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        if exchange_failure(exchange).is_none() && is_plain_text(exchange) {
            return plain_transcript(exchange);
        }
        parse_with(exchange, TranscriptFormat)
    }

    fn request_content_type(&self) -> RequestContentType {
        RequestContentType::MultipartFormData
    }
}

/// The `file` field for a `"<format>,<base64>"` clip.
fn audio_file(clip: &str) -> Result<Value, String> {
    let Some((format, b64)) = clip.split_once(',') else {
        let start: String = clip.chars().take(40).collect();
        return Err(format!(
            "audio must be \"<format>,<base64>\" such as \"wav,UklGR…\", got {start:?}"
        ));
    };
    let format = format.to_ascii_lowercase();
    let media_type = match format.as_str() {
        "mp3" | "mpga" | "mpeg" => "audio/mpeg".to_owned(),
        "m4a" | "mp4" => "audio/mp4".to_owned(),
        other => format!("audio/{other}"),
    };
    Ok(file_field(b64, &format!("audio.{format}"), &media_type))
}

/// A successful answer in plain text (`response_format` `text`, `srt` or `vtt`).
fn is_plain_text(exchange: &RawExchange) -> bool {
    exchange
        .content_type
        .as_deref()
        .is_some_and(|content_type| {
            let content_type = content_type.to_ascii_lowercase();
            content_type.starts_with("text/") && !content_type.contains("event-stream")
        })
}

/// The whole body as the transcript.
fn plain_transcript(exchange: &RawExchange) -> ParsedExchange {
    let text = String::from_utf8_lossy(exchange.body()).trim().to_owned();
    let at = exchange.chunks.last().map_or(exchange.ended_at, |c| c.at);
    let responses = if text.is_empty() {
        Vec::new()
    } else {
        vec![ParsedResponse {
            at,
            text,
            reasoning: String::new(),
            has_other_data: false,
            usage: None,
            video: None,
        }]
    };
    ParsedExchange {
        error: exchange.error.as_ref().map(Into::into),
        responses,
    }
}

/// A JSON answer: `{"text", "usage"?, …}` (verbose answers add segments and words).
#[derive(Debug, Deserialize)]
struct Transcript {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Reads [`Transcript`]s.
struct TranscriptFormat;

impl Format for TranscriptFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let transcript: Transcript = serde_json::from_slice(payload)?;
        Ok(Piece {
            is_error: transcript.error.is_some() && transcript.text.is_none(),
            text: transcript.text.unwrap_or_default(),
            usage: transcript.usage,
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
