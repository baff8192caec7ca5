//! The `image_generation` endpoint: OpenAI image generation (`/v1/images/generations`).

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::payload::{current_turn, finish, model, prompt, warn_max_tokens_ignored, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "image_generation",
    default_path: "/v1/images/generations",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Image generation: builds `{"prompt", "model", "response_format": "b64_json", "n": 1,
/// ["stream": true], …}` from the current turn's first text and reads the images.
///
/// Options such as `size`, `quality` or `partial_images` come from `--extra-inputs` (or
/// the turn's `extra`), merged last; `n` and `response_format` can be overridden the same
/// way. Images are not tokens, so a turn's max tokens are ignored (with one warning) and
/// only the latency and request metrics apply (`produces_tokens` is false).
///
/// A whole answer `{"data": [{"b64_json" | "url", "revised_prompt"}], "usage"}` is one
/// [`ParsedResponse`](aiperf_core::ParsedResponse) with `has_other_data` set when an item
/// holds an image (the base64 itself is skipped, not decoded). A stream's
/// `image_generation.partial_image` and `image_generation.completed` events are one
/// response each (the first one is the time to first output); `completed` carries the
/// usage. An `error` event ends the stream with an `SSEResponseError`.
#[derive(Debug)]
pub struct ImageGenerationEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl ImageGenerationEndpoint {
    /// An image generation endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }
}

impl Endpoint for ImageGenerationEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let prompt = prompt(INFO.name, turn)?;
        let mut body = Map::new();
        body.insert("prompt".into(), prompt.into());
        body.insert("model".into(), model(input, turn).into());
        body.insert("response_format".into(), "b64_json".into());
        body.insert("n".into(), 1.into());
        if input.streaming {
            body.insert("stream".into(), true.into());
        }
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::Never,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, ImagesFormat)
    }
}

/// A stream event (`type` set) or a whole answer (`data`).
#[derive(Debug, Deserialize)]
struct Answer<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    /// A streamed image; only its presence matters.
    #[serde(default)]
    b64_json: Option<IgnoredAny>,
    #[serde(default)]
    data: Option<Vec<Image>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// One item of a whole answer's `data`; only which fields are present matters.
#[derive(Debug, Deserialize)]
struct Image {
    #[serde(default)]
    b64_json: Option<IgnoredAny>,
    #[serde(default)]
    url: Option<IgnoredAny>,
}

/// Reads [`Answer`]s (image edits answer the same way).
pub(crate) struct ImagesFormat;

impl Format for ImagesFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let answer: Answer = serde_json::from_slice(payload)?;
        let mut piece = Piece {
            usage: answer.usage,
            ..Piece::default()
        };
        match answer.kind.as_deref() {
            Some("image_generation.partial_image" | "image_generation.completed") => {
                piece.has_other_data = answer.b64_json.is_some();
            }
            Some("error") => piece.is_error = true,
            Some(_) => {}
            None => {
                piece.is_error = answer.error.is_some() && answer.data.is_none();
                piece.has_other_data = answer
                    .data
                    .iter()
                    .flatten()
                    .any(|image| image.b64_json.is_some() || image.url.is_some());
            }
        }
        Ok(piece)
    }
}

#[cfg(test)]
mod tests;
