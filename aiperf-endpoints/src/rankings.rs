//! The rankings endpoints: `nim_rankings` (NVIDIA NIM, `/v1/ranking`), `cohere_rankings`
//! (`/v2/rerank`) and `hf_tei_rankings` (Hugging Face TEI, `/rerank`).

use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::payload::{finish, model, only_turn, texts, warn_max_tokens_ignored, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const NIM: EndpointInfo = EndpointInfo {
    name: "nim_rankings",
    default_path: "/v1/ranking",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: true,
    api_key_header: ApiKeyHeader::Bearer,
};

const COHERE: EndpointInfo = EndpointInfo {
    name: "cohere_rankings",
    default_path: "/v2/rerank",
    streaming_path: None,
    ..NIM
};

const TEI: EndpointInfo = EndpointInfo {
    name: "hf_tei_rankings",
    default_path: "/rerank",
    streaming_path: None,
    ..NIM
};

/// Which rankings API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Nim,
    Cohere,
    Tei,
}

/// Rankings (reranking): one query and the passages to rank against it.
///
/// The turn's first non-empty text is the query and the others are the passages (the
/// order in which the rankings dataset composes them). Bodies, with `--extra-inputs`
/// merged last:
///
/// - `nim_rankings`: `{"model", "query": {"text": q}, "passages": [{"text": p}, …]}`,
///   answered with `{"rankings": [{"index", "logit"}, …]}`;
/// - `cohere_rankings`: `{"model", "query": q, "documents": [p, …]}`, answered with
///   `{"results": [{"index", "relevance_score"}, …]}`;
/// - `hf_tei_rankings`: `{"query": q, "texts": [p, …]}` (no model), answered with a
///   top-level list of `{"index", "score"}` (or `{"results": […]}`).
///
/// The answer is one [`ParsedResponse`](aiperf_core::ParsedResponse) with
/// `has_other_data` set when the ranking list is not empty; `usage` is read when the
/// server sends one. A turn's max tokens are ignored (with one warning).
#[derive(Debug)]
pub struct RankingsEndpoint {
    flavor: Flavor,
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl RankingsEndpoint {
    fn with(flavor: Flavor, options: EndpointOptions) -> Self {
        Self {
            flavor,
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }

    /// `nim_rankings` (alias `rankings`): NVIDIA NIM `/v1/ranking`.
    pub fn nim(options: EndpointOptions) -> Self {
        Self::with(Flavor::Nim, options)
    }

    /// `cohere_rankings`: Cohere `/v2/rerank`.
    pub fn cohere(options: EndpointOptions) -> Self {
        Self::with(Flavor::Cohere, options)
    }

    /// `hf_tei_rankings`: Hugging Face Text Embeddings Inference `/rerank`.
    pub fn hf_tei(options: EndpointOptions) -> Self {
        Self::with(Flavor::Tei, options)
    }
}

impl Endpoint for RankingsEndpoint {
    fn info(&self) -> &EndpointInfo {
        match self.flavor {
            Flavor::Nim => &NIM,
            Flavor::Cohere => &COHERE,
            Flavor::Tei => &TEI,
        }
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let name = self.info().name;
        let turn = only_turn(name, input)?;
        warn_max_tokens_ignored(name, turn, &self.warned_max_tokens);
        let mut texts = texts(turn);
        let query = texts.next();
        let passages: Vec<&str> = texts.collect();
        let Some(query) = query.filter(|_| !passages.is_empty()) else {
            return Err(EndpointError {
                endpoint: name,
                reason: "a rankings turn needs a query text followed by at least one passage"
                    .into(),
            });
        };
        let mut body = Map::new();
        match self.flavor {
            Flavor::Nim => {
                body.insert("model".into(), model(input, turn).into());
                body.insert("query".into(), json!({ "text": query }));
                let passages = passages.iter().map(|p| json!({ "text": p })).collect();
                body.insert("passages".into(), Value::Array(passages));
            }
            Flavor::Cohere => {
                body.insert("model".into(), model(input, turn).into());
                body.insert("query".into(), query.into());
                body.insert("documents".into(), passages.into());
            }
            Flavor::Tei => {
                body.insert("query".into(), query.into());
                body.insert("texts".into(), passages.into());
            }
        }
        Ok(finish(
            body,
            &self.options,
            turn,
            false,
            UsageChunk::WithServerTokenCount,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, RankingsFormat)
    }
}

/// A rankings answer in object form: `rankings` (NIM) or `results` (Cohere, TEI). Items
/// are counted, not decoded.
#[derive(Debug, Deserialize)]
struct RankingsObject {
    #[serde(default)]
    rankings: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    results: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Reads rankings answers: a [`RankingsObject`] or a top-level list (TEI).
struct RankingsFormat;

impl Format for RankingsFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        // TEI answers with a top-level list.
        if payload.trim_ascii_start().first() == Some(&b'[') {
            let items: Vec<IgnoredAny> = serde_json::from_slice(payload)?;
            return Ok(Piece {
                has_other_data: !items.is_empty(),
                ..Piece::default()
            });
        }
        let object: RankingsObject = serde_json::from_slice(payload)?;
        let list = object.rankings.or(object.results);
        Ok(Piece {
            is_error: list.is_none() && object.error.is_some(),
            has_other_data: list.is_some_and(|items| !items.is_empty()),
            usage: object.usage,
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
