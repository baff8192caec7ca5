//! The `image_retrieval` endpoint: NVIDIA NIM image inference such as page-element or
//! table detection (`/v1/infer`).

use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::payload::{finish, only_turn, warn_max_tokens_ignored, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const IMAGE_RETRIEVAL: EndpointInfo = EndpointInfo {
    name: "image_retrieval",
    default_path: "/v1/infer",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: false,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Image retrieval: builds `{"input": [{"type": "image_url", "url": image}…], …}` from the
/// images of exactly one turn (no model field, as NIM expects and the Python AIPerf
/// sends) and reads a non-empty `data` list as the answer; its contents (bounding boxes
/// and the like) are not decoded. Max tokens are ignored with one warning.
#[derive(Debug)]
pub struct ImageRetrievalEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl ImageRetrievalEndpoint {
    /// An `image_retrieval` endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }
}

impl Endpoint for ImageRetrievalEndpoint {
    fn info(&self) -> &EndpointInfo {
        &IMAGE_RETRIEVAL
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let name = IMAGE_RETRIEVAL.name;
        let turn = only_turn(name, input)?;
        warn_max_tokens_ignored(name, turn, &self.warned_max_tokens);
        let images: Vec<Value> = turn
            .images
            .iter()
            .filter(|image| !image.is_empty())
            .map(|image| json!({"type": "image_url", "url": image}))
            .collect();
        if images.is_empty() {
            return Err(EndpointError {
                endpoint: name,
                reason: "the turn has no image (give images with --image-width-mean and \
                         --image-height-mean, or a dataset with images)"
                    .into(),
            });
        }
        let mut body = Map::new();
        body.insert("input".into(), Value::Array(images));
        Ok(finish(body, &self.options, turn, false, UsageChunk::Never))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, RetrievalFormat)
    }
}

/// An image retrieval response: `{"data": [{"index", "bounding_boxes": …}…]}`.
#[derive(Debug, Deserialize)]
struct RetrievalResponse {
    #[serde(default)]
    data: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Reads [`RetrievalResponse`]s.
struct RetrievalFormat;

impl Format for RetrievalFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let response: RetrievalResponse = serde_json::from_slice(payload)?;
        let is_error = response.error.is_some() && response.data.is_none();
        Ok(Piece {
            has_other_data: response.data.is_some_and(|data| !data.is_empty()),
            usage: response.usage,
            is_error,
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
