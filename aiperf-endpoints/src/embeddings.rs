//! The `embeddings` and `nim_embeddings` endpoints: OpenAI-style embeddings
//! (`/v1/embeddings`).

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::payload::{finish, model, only_turn, texts, warn_max_tokens_ignored, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const EMBEDDINGS: EndpointInfo = EndpointInfo {
    name: "embeddings",
    default_path: "/v1/embeddings",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

const NIM_EMBEDDINGS: EndpointInfo = EndpointInfo {
    name: "nim_embeddings",
    ..EMBEDDINGS
};

/// Embeddings: builds `{"model", "input": [texts…], …}` from exactly one turn and reads
/// `data[].embedding`.
///
/// The whole response is one [`ParsedResponse`](aiperf_core::ParsedResponse) with
/// `has_other_data` set when `data` holds at least one embedding; the vectors themselves
/// are skipped, not decoded. An item of `data` that is not an embedding fails the
/// request (`ValueError`). Embeddings have no output length, so a turn's max tokens are
/// ignored (with one warning), and the system message and user context are not sent.
///
/// The `nim_embeddings` flavour ([`EmbeddingsEndpoint::nim`]) also sends the turn's
/// images: images alone when there is no text, and `"<text> <image>"` pairs when there are
/// both (their counts must then match).
#[derive(Debug)]
pub struct EmbeddingsEndpoint {
    info: &'static EndpointInfo,
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl EmbeddingsEndpoint {
    /// An `embeddings` endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            info: &EMBEDDINGS,
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }

    /// A `nim_embeddings` endpoint with these options: texts and/or images.
    pub fn nim(options: EndpointOptions) -> Self {
        Self {
            info: &NIM_EMBEDDINGS,
            ..Self::new(options)
        }
    }
}

impl Endpoint for EmbeddingsEndpoint {
    fn info(&self) -> &EndpointInfo {
        self.info
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let name = self.info.name;
        let turn = only_turn(name, input)?;
        warn_max_tokens_ignored(name, turn, &self.warned_max_tokens);
        let texts: Vec<&str> = texts(turn).collect();
        let inputs: Vec<Value> = if self.info.name == NIM_EMBEDDINGS.name {
            let images: Vec<&str> = turn
                .images
                .iter()
                .map(String::as_str)
                .filter(|image| !image.is_empty())
                .collect();
            match (texts.is_empty(), images.is_empty()) {
                (_, true) => texts.iter().map(|t| Value::from(*t)).collect(),
                (true, false) => images.iter().map(|i| Value::from(*i)).collect(),
                (false, false) if texts.len() == images.len() => texts
                    .iter()
                    .zip(&images)
                    .map(|(text, image)| Value::String(format!("{text} {image}")))
                    .collect(),
                (false, false) => {
                    return Err(EndpointError {
                        endpoint: name,
                        reason: format!(
                            "a turn with both texts and images needs as many of each, got {} \
                             texts and {} images",
                            texts.len(),
                            images.len()
                        ),
                    })
                }
            }
        } else {
            texts.iter().map(|t| Value::from(*t)).collect()
        };
        if inputs.is_empty() {
            return Err(EndpointError {
                endpoint: name,
                reason: "the turn has nothing to embed".into(),
            });
        }
        let mut body = Map::new();
        body.insert("model".into(), model(input, turn).into());
        body.insert("input".into(), Value::Array(inputs));
        Ok(finish(
            body,
            &self.options,
            turn,
            false,
            UsageChunk::WithServerTokenCount,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, EmbeddingsFormat)
    }
}

/// An embeddings response: `{"object": "list", "data": [{"object": "embedding", …}], "usage"}`.
#[derive(Debug, Deserialize)]
struct EmbeddingList<'a> {
    #[serde(borrow, default)]
    data: Option<Vec<EmbeddingItem<'a>>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// One item of `data`; the vector is skipped.
#[derive(Debug, Deserialize)]
struct EmbeddingItem<'a> {
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
    #[serde(default)]
    embedding: Option<IgnoredAny>,
}

/// Reads [`EmbeddingList`]s.
pub(crate) struct EmbeddingsFormat;

impl Format for EmbeddingsFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let list: EmbeddingList = serde_json::from_slice(payload)?;
        let is_error = list.error.is_some() && list.data.is_none();
        let data = list.data.unwrap_or_default();
        if let Some((index, item)) = data.iter().enumerate().find(|(_, item)| {
            item.embedding.is_none() || item.object.as_deref().is_some_and(|o| o != "embedding")
        }) {
            return Err(Unreadable::Invalid(format!(
                "the response's data[{index}] is not an embedding (object {:?})",
                item.object.as_deref().unwrap_or("none")
            )));
        }
        Ok(Piece {
            has_other_data: !data.is_empty(),
            usage: list.usage,
            is_error,
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
