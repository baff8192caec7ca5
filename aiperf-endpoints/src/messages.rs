//! The `messages` endpoint: the Anthropic Messages API (`/v1/messages`).

use std::borrow::Cow;

use aiperf_core::conversation::Turn;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::payload::{current_turn, finish, model, UsageChunk};
use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "messages",
    default_path: "/v1/messages",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::XApiKey,
};

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` sent when the turn asks for no output length: the API requires the field,
/// and this is large enough not to cut a benchmark's answers short.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages API: builds `{"model", "max_tokens", ["system"], "messages",
/// "stream", ["tools"], …}` with an `anthropic-version` header, and reads typed stream
/// events or a whole `message` object.
///
/// The API key goes in an `x-api-key` header, not `Authorization`; the sender learns this
/// from [`EndpointInfo::api_key_header`](aiperf_core::EndpointInfo::api_key_header).
/// `max_tokens` is the turn's, else [`DEFAULT_MAX_TOKENS`]. The system message (and the
/// texts of turns with role `system`, which the API does not accept in `messages`) becomes
/// the top-level `system`. Messages are
/// the user context (as a user message), then one per turn: a plain string for one text
/// without images, else content blocks `{"type": "text"}` and `{"type": "image", "source":
/// …}` (a `data:` URL becomes a `base64` source, anything else a `url` source). A turn's
/// `raw_messages` are sent verbatim (they must be Anthropic-shaped) and the current turn's
/// `raw_tools` become `tools`. Audio and video cannot be sent. `--extra-inputs` and the
/// turn's `extra` are merged last; no `stream_options` is ever added (the API always
/// streams usage).
///
/// Stream events: `content_block_start` (a `text` block's text, a `tool_use` block's name),
/// `content_block_delta` with `text_delta` or `input_json_delta` (text) or
/// `thinking_delta` (reasoning); `message_start` and `message_delta` carry usage
/// (`input_tokens`, `output_tokens`, `cache_read_input_tokens`, …). `message_delta`'s usage
/// is cumulative but may hold only `output_tokens`, so it is reported merged over
/// `message_start`'s: the last usage of the stream is complete. `ping`,
/// `content_block_stop` and `message_stop` carry nothing; `event: error` ends the stream
/// with an `SSEResponseError`.
///
/// A whole message: `thinking` blocks are reasoning; `text` blocks, then each `tool_use`
/// block's name and JSON input, are text; usage from `usage`.
#[derive(Debug, Clone, Default)]
pub struct MessagesEndpoint {
    options: EndpointOptions,
}

impl MessagesEndpoint {
    /// A Messages API endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self { options }
    }
}

impl Endpoint for MessagesEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        let mut system: Vec<&str> = input.system_message.into_iter().collect();
        let mut messages = Vec::with_capacity(input.turns.len() + 1);
        if let Some(context) = input.user_context_message {
            messages.push(json!({"role": "user", "content": context}));
        }
        for turn in input.turns {
            match (&turn.raw_messages, turn.role.as_deref()) {
                (Some(raw), _) => messages.extend(raw.iter().cloned()),
                (None, Some("system")) => system.extend(non_empty(&turn.texts)),
                (None, role) => messages.push(json!({
                    "role": role.unwrap_or("user"),
                    "content": content(turn)?,
                })),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), model(input, turn).into());
        let max_tokens = turn.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        body.insert("max_tokens".into(), max_tokens.into());
        if !system.is_empty() {
            body.insert("system".into(), system.join("\n").into());
        }
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), input.streaming.into());
        if let Some(tools) = &turn.raw_tools {
            body.insert("tools".into(), Value::Array(tools.clone()));
        }
        let mut request = finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::Never,
        );
        request
            .headers
            .push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
        Ok(request)
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, MessagesFormat::default())
    }
}

/// The non-empty strings of `items`.
fn non_empty(items: &[String]) -> impl Iterator<Item = &str> {
    items.iter().map(String::as_str).filter(|s| !s.is_empty())
}

/// A plain string for one text without images, else text and image blocks.
fn content(turn: &Turn) -> Result<Value, EndpointError> {
    if non_empty(&turn.audios)
        .chain(non_empty(&turn.videos))
        .count()
        > 0
    {
        return Err(EndpointError {
            endpoint: INFO.name,
            reason: "the Messages API takes no audio or video input".into(),
        });
    }
    let has_images = non_empty(&turn.images).next().is_some();
    match turn.texts.as_slice() {
        [text] if !has_images => return Ok(Value::String(text.clone())),
        [] if !has_images => return Ok(Value::String(String::new())),
        _ => {}
    }
    let mut blocks: Vec<Value> = non_empty(&turn.texts)
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    blocks.extend(non_empty(&turn.images).map(image_block));
    Ok(Value::Array(blocks))
}

/// An image block: `data:<type>;base64,<data>` as a base64 source, else a URL source.
fn image_block(image: &str) -> Value {
    let base64 = image.strip_prefix("data:").and_then(|rest| {
        let (meta, data) = rest.split_once(',')?;
        let media_type = meta.strip_suffix(";base64")?;
        Some((media_type, data))
    });
    let source = match base64 {
        Some((media_type, data)) => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        None => json!({"type": "url", "url": image}),
    };
    json!({"type": "image", "source": source})
}

/// A stream event (`type` names it) or a whole message (`type: "message"`).
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    /// `message_start`'s message; only its usage is read.
    #[serde(default)]
    message: Option<StartedMessage>,
    /// `content_block_start`'s block.
    #[serde(borrow, default)]
    content_block: Option<Block<'a>>,
    /// `content_block_delta`'s delta (`message_delta`'s holds only the stop reason).
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    /// A whole message's blocks.
    #[serde(borrow, default)]
    content: Option<Vec<Block<'a>>>,
    /// `message_delta`'s or a whole message's usage.
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// The message of `message_start`.
#[derive(Debug, Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: Option<Map<String, Value>>,
}

/// A content block: `text`, `thinking`, `tool_use`, …
#[derive(Debug, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    /// A tool call's input, kept as the JSON text it was sent as.
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// A `content_block_delta`'s delta.
#[derive(Debug, Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

/// Reads [`Event`]s, remembering `message_start`'s usage to complete `message_delta`'s.
#[derive(Debug, Default)]
struct MessagesFormat {
    start_usage: Map<String, Value>,
}

impl Format for MessagesFormat {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let event: Event = serde_json::from_slice(payload)?;
        let owned = |field: &Option<Cow<'_, str>>| field.as_deref().unwrap_or_default().to_owned();
        let mut piece = Piece::default();
        match event.kind.as_deref() {
            Some("message_start") => {
                let usage = event.message.and_then(|m| m.usage).unwrap_or_default();
                self.start_usage = usage.clone();
                piece.usage = Some(usage);
            }
            Some("content_block_start") => {
                if let Some(block) = &event.content_block {
                    match block.kind.as_deref() {
                        Some("text") => piece.text = owned(&block.text),
                        Some("thinking") => piece.reasoning = owned(&block.thinking),
                        Some("tool_use") => piece.text = owned(&block.name),
                        _ => {}
                    }
                }
            }
            Some("content_block_delta") => {
                if let Some(delta) = &event.delta {
                    match delta.kind.as_deref() {
                        Some("text_delta") => piece.text = owned(&delta.text),
                        Some("input_json_delta") => piece.text = owned(&delta.partial_json),
                        Some("thinking_delta") => piece.reasoning = owned(&delta.thinking),
                        _ => {}
                    }
                }
            }
            Some("message_delta") => {
                let mut usage = self.start_usage.clone();
                for (key, value) in event.usage.unwrap_or_default() {
                    if !value.is_null() {
                        usage.insert(key, value);
                    }
                }
                piece.usage = Some(usage);
            }
            Some("error") => piece.is_error = true,
            Some("message") | None => {
                whole_message(event.content.as_deref().unwrap_or_default(), &mut piece);
                piece.is_error = event.error.is_some() && event.content.is_none();
                piece.usage = event.usage;
            }
            // ping, content_block_stop, message_stop and events added later.
            Some(_) => {}
        }
        Ok(piece)
    }
}

/// Reasoning from `thinking` blocks; text from `text` blocks, then tool calls.
fn whole_message(blocks: &[Block<'_>], piece: &mut Piece) {
    let mut calls = String::new();
    for block in blocks {
        match block.kind.as_deref() {
            Some("text") => piece
                .text
                .push_str(block.text.as_deref().unwrap_or_default()),
            Some("thinking") => piece
                .reasoning
                .push_str(block.thinking.as_deref().unwrap_or_default()),
            Some("tool_use") => {
                calls.push_str(block.name.as_deref().unwrap_or_default());
                calls.push_str(block.input.map(RawValue::get).unwrap_or_default());
            }
            _ => {}
        }
    }
    piece.text.push_str(&calls);
}

#[cfg(test)]
mod tests;
