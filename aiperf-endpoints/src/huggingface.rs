//! The `huggingface_generate` endpoint: Hugging Face Text Generation Inference (TGI)
//! `/generate`, streamed from `/generate_stream`.

use std::borrow::Cow;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::payload::{merge, merge_turn_extra, only_turn, serialize, texts};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "huggingface_generate",
    default_path: "/generate",
    streaming_path: Some("/generate_stream"),
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Hugging Face TGI: builds `{"inputs": "<texts joined by a space>", "parameters":
/// {"max_new_tokens": N, <--extra-inputs>}}` from exactly one turn.
///
/// `--extra-inputs` go inside `parameters` (TGI's sampling options live there), and
/// `parameters` is always sent, empty when there is nothing to put in it. TGI picks
/// streaming by path, not by a body field: a streamed request goes to
/// `/generate_stream` ([`EndpointInfo::path`]), where each SSE event's `token.text` is the
/// text (never the cumulative `generated_text` of the last event; special tokens such as
/// `</s>` are skipped). A whole answer's text is `generated_text`, of an object or of the
/// first element of a list. TGI reports no usage.
#[derive(Debug, Clone, Default)]
pub struct HuggingFaceGenerateEndpoint {
    options: EndpointOptions,
}

impl HuggingFaceGenerateEndpoint {
    /// A TGI endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self { options }
    }
}

impl Endpoint for HuggingFaceGenerateEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = only_turn(INFO.name, input)?;
        let inputs = texts(turn).collect::<Vec<_>>().join(" ");
        if inputs.is_empty() {
            return Err(EndpointError {
                endpoint: INFO.name,
                reason: "the turn has no text to use as inputs".into(),
            });
        }
        let mut parameters = Map::new();
        if let Some(max_tokens) = turn.max_tokens {
            parameters.insert("max_new_tokens".into(), max_tokens.into());
        }
        merge(&mut parameters, &self.options.extra_inputs);
        let mut body = Map::new();
        body.insert("inputs".into(), inputs.into());
        body.insert("parameters".into(), Value::Object(parameters));
        // The dataset's per-turn fields go at the top level, beside `parameters`.
        merge_turn_extra(&mut body, turn);
        Ok(serialize(body, input.streaming))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, TgiFormat)
    }
}

/// A TGI answer or stream event: `{"token": {"text", "special"}, "generated_text", …}`
/// (streamed) or `{"generated_text"}` (whole).
#[derive(Debug, Default, Deserialize)]
struct Generation<'a> {
    #[serde(borrow, default)]
    token: Option<Token<'a>>,
    #[serde(borrow, default)]
    generated_text: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// A streamed token.
#[derive(Debug, Default, Deserialize)]
struct Token<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    special: bool,
}

/// Reads [`Generation`]s, or a list of them (the first one counts).
struct TgiFormat;

impl Format for TgiFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let generation = if payload.trim_ascii_start().first() == Some(&b'[') {
            let list: Vec<Generation> = serde_json::from_slice(payload)?;
            list.into_iter().next().unwrap_or_default()
        } else {
            serde_json::from_slice(payload)?
        };
        let text = match &generation.token {
            Some(token) if token.special => "",
            Some(token) => token.text.as_deref().unwrap_or_default(),
            None => generation.generated_text.as_deref().unwrap_or_default(),
        };
        Ok(Piece {
            text: text.to_owned(),
            is_error: generation.error.is_some()
                && generation.token.is_none()
                && generation.generated_text.is_none(),
            ..Piece::default()
        })
    }
}

#[cfg(test)]
mod tests;
