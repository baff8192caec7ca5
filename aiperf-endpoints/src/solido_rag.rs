//! The `solido_rag` endpoint: Solido's retrieval-augmented generation service
//! (`/rag/api/prompt`).

use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::payload::{current_turn, finish, model, texts, warn_max_tokens_ignored, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "solido_rag",
    default_path: "/rag/api/prompt",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Solido RAG: builds `{"query": [texts], "filters": {"family": "Solido", "tool": "SDE"},
/// "inference_model": model, …}` from the current turn's texts, then `--extra-inputs` and
/// the turn's `extra` fields (which may replace `filters`), and reads the `content` of
/// the answer, or of each event of a stream, as generated text (its `sources` are not
/// decoded).
///
/// As in the Python AIPerf 0.13 the body has no streaming field: streaming only asks for
/// `text/event-stream`. There is no output-length field either, so a turn's max tokens
/// are ignored with one warning.
#[derive(Debug)]
pub struct SolidoRagEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl SolidoRagEndpoint {
    /// A `solido_rag` endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }
}

impl Endpoint for SolidoRagEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let mut body = Map::new();
        body.insert("query".into(), texts(turn).collect::<Vec<_>>().into());
        body.insert("filters".into(), json!({"family": "Solido", "tool": "SDE"}));
        body.insert("inference_model".into(), model(input, turn).into());
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::Never,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, AnswerFormat)
    }
}

/// A whole answer or one streamed event: `{"content", "sources"?}`.
#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Reads [`Answer`]s.
struct AnswerFormat;

impl Format for AnswerFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let answer: Answer = serde_json::from_slice(payload)?;
        Ok(Piece {
            is_error: answer.error.is_some() && answer.content.is_none(),
            text: answer.content.unwrap_or_default(),
            usage: answer.usage,
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
