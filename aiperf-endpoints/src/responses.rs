//! The `responses` endpoint: the OpenAI Responses API (`/v1/responses`).

use std::borrow::Cow;

use aiperf_core::conversation::Turn;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ErrorDetails,
    ParsedExchange, RawExchange, RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chat::audio_parts;
use crate::payload::{current_turn, finish, model, UsageChunk};
use crate::response::{in_band_error, parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "responses",
    default_path: "/v1/responses",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// The OpenAI Responses API: builds `{"input": [items], "model", "stream",
/// ["instructions"], ["max_output_tokens"], …}` and reads typed stream events or a whole
/// `response` object.
///
/// Input items are `{"type": "message", "role", "content": [parts]}`: the user context
/// first (as a user message), then one per turn. User parts are `input_text`,
/// `input_image` (`image_url`) and `input_audio` (`{"data", "format"}`); an assistant
/// turn's texts are `output_text` parts, as the API wants replayed replies. Videos cannot
/// be sent. The system message becomes `instructions`.
///
/// Streamed events: `response.output_text.delta` and
/// `response.function_call_arguments.delta` are text,
/// `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` are
/// reasoning, and the `response` of `response.completed` (or `.incomplete`) carries the
/// usage (`input_tokens`, `output_tokens`). `response.output_text.done` repeats the whole
/// text, so it is read only when no text delta came before it (the Python AIPerf counts
/// both, doubling the output). `error` and `response.failed` events end the stream with
/// an `SSEResponseError`.
///
/// A whole `response` object: reasoning items' `summary_text`/`reasoning_text`,
/// messages' `output_text` and function calls' name and arguments, else the top-level
/// `output_text`; usage from `usage`.
#[derive(Debug, Clone, Default)]
pub struct ResponsesEndpoint {
    options: EndpointOptions,
}

impl ResponsesEndpoint {
    /// A Responses API endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self { options }
    }
}

impl Endpoint for ResponsesEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        let mut items = Vec::with_capacity(input.turns.len() + 1);
        if let Some(context) = input.user_context_message {
            items.push(message("user", vec![text_part("user", context)]));
        }
        for turn in input.turns {
            let role = turn.role.as_deref().unwrap_or("user");
            items.push(message(role, parts(role, turn)?));
        }
        let mut body = Map::new();
        body.insert("input".into(), Value::Array(items));
        body.insert("model".into(), model(input, turn).into());
        body.insert("stream".into(), input.streaming.into());
        if let Some(system) = input.system_message {
            body.insert("instructions".into(), system.into());
        }
        if let Some(max_tokens) = turn.max_tokens {
            body.insert("max_output_tokens".into(), max_tokens.into());
        }
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::WithServerTokenCount,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, ResponsesFormat::default())
    }
}

/// One input message item.
fn message(role: &str, content: Vec<Value>) -> Value {
    json!({"type": "message", "role": role, "content": content})
}

/// A text part: `output_text` for an assistant's reply, else `input_text`.
fn text_part(role: &str, text: &str) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type": kind, "text": text})
}

/// The non-empty strings of `items`.
fn non_empty(items: &[String]) -> impl Iterator<Item = &str> {
    items.iter().map(String::as_str).filter(|s| !s.is_empty())
}

/// A turn's parts: texts, images, audios (empty ones skipped).
fn parts(role: &str, turn: &Turn) -> Result<Vec<Value>, EndpointError> {
    if turn.videos.iter().any(|video| !video.is_empty()) {
        return Err(EndpointError {
            endpoint: INFO.name,
            reason: "the Responses API takes no video input".into(),
        });
    }
    let mut parts = Vec::new();
    for text in non_empty(&turn.texts) {
        parts.push(text_part(role, text));
    }
    for url in non_empty(&turn.images) {
        parts.push(json!({"type": "input_image", "image_url": url}));
    }
    for audio in non_empty(&turn.audios) {
        let (format, data) = audio_parts(audio);
        parts.push(json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}));
    }
    Ok(parts)
}

/// A stream event (`type` set) or a whole response object (`object: "response"`).
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    /// The response carried by lifecycle events; only its usage is read.
    #[serde(default)]
    response: Option<Lifecycle>,
    #[serde(borrow, default)]
    output: Option<Vec<OutputItem<'a>>>,
    #[serde(borrow, default)]
    output_text: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// The `response` of a lifecycle event (`response.created`, `.completed`, …).
#[derive(Debug, Deserialize)]
struct Lifecycle {
    #[serde(default)]
    usage: Option<Map<String, Value>>,
}

/// One item of a whole response's `output`.
#[derive(Debug, Deserialize)]
struct OutputItem<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    summary: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// A content or summary part.
#[derive(Debug, Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// Reads [`Event`]s, remembering whether text deltas were seen.
#[derive(Debug, Default)]
struct ResponsesFormat {
    saw_text_delta: bool,
}

impl Format for ResponsesFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let event: Event = serde_json::from_slice(payload)?;
        let owned = |field: &Option<Cow<'_, str>>| field.as_deref().unwrap_or_default().to_owned();
        let mut piece = Piece::default();
        match event.kind.as_deref() {
            Some("response.output_text.delta") => {
                self.saw_text_delta = true;
                piece.text = owned(&event.delta);
            }
            Some("response.output_text.done") if !self.saw_text_delta => {
                piece.text = owned(&event.text);
            }
            Some("response.function_call_arguments.delta") => piece.text = owned(&event.delta),
            Some("response.reasoning_text.delta" | "response.reasoning_summary_text.delta") => {
                piece.reasoning = owned(&event.delta);
            }
            Some("error" | "response.failed") => piece.is_error = true,
            Some(_) => piece.usage = event.response.and_then(|response| response.usage),
            None => {
                whole_response(&event, &mut piece);
                piece.is_error = event.error.is_some() && event.output.is_none();
                piece.usage = event.usage;
            }
        }
        Ok(piece)
    }

    fn in_band_error(&self, json: &Value, kind: &str) -> Option<ErrorDetails> {
        let error = match json.get("type").and_then(Value::as_str) {
            Some("error") => json,
            Some("response.failed") => json
                .get("response")
                .and_then(|response| response.get("error"))
                .filter(|error| error.is_object())
                .unwrap_or(json),
            _ => return in_band_error(json, kind),
        };
        let error = error
            .get("error")
            .filter(|e| e.is_object())
            .unwrap_or(error);
        let code = error
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|code| u16::try_from(code).ok())
            .filter(|code| (100..=599).contains(code))
            .unwrap_or(502);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        Some(ErrorDetails {
            code: Some(code),
            kind: Some(kind.into()),
            message,
        })
    }
}

/// The text and reasoning of a whole response object.
fn whole_response(event: &Event<'_>, piece: &mut Piece) {
    let texts = |parts: &Option<Vec<Part<'_>>>, kinds: &[&str], into: &mut String| {
        for part in parts.iter().flatten() {
            if part
                .kind
                .as_deref()
                .is_some_and(|kind| kinds.contains(&kind))
            {
                into.push_str(part.text.as_deref().unwrap_or_default());
            }
        }
    };
    let mut calls = String::new();
    for item in event.output.iter().flatten() {
        match item.kind.as_deref() {
            Some("reasoning") => {
                texts(&item.summary, &["summary_text"], &mut piece.reasoning);
                texts(&item.content, &["reasoning_text"], &mut piece.reasoning);
            }
            Some("message") => texts(&item.content, &["output_text"], &mut piece.text),
            Some("function_call") => {
                calls.push_str(item.name.as_deref().unwrap_or_default());
                calls.push_str(item.arguments.as_deref().unwrap_or_default());
            }
            _ => {}
        }
    }
    piece.text.push_str(&calls);
    if piece.text.is_empty() {
        piece.text = event.output_text.as_deref().unwrap_or_default().to_owned();
    }
}

#[cfg(test)]
mod tests;
