//! The `chat` endpoint: OpenAI chat completions (`/v1/chat/completions`).

use aiperf_core::conversation::Turn;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde_json::{json, Map, Value};

use crate::openai::Object;
use crate::payload::{current_turn, finish, model, UsageChunk};
use crate::response::{parse_exchange, Extracted};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "chat",
    default_path: "/v1/chat/completions",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Chat completions: builds `{"messages", "model", "stream", ["tools"],
/// ["max_completion_tokens"], …}` and reads
/// `choices[0].delta` (streamed) or `choices[0].message`.
///
/// A turn's `raw_messages` are sent verbatim in place of a message built from its
/// contents, and the current turn's `raw_tools` become `tools`. `--extra-inputs` and then
/// the turn's `extra` fields are merged over the body (the turn wins).
///
/// Text is `content` followed by the tool calls' function names and arguments; reasoning
/// is `reasoning_content` or `reasoning`. See [`crate`] docs for errors.
#[derive(Debug, Clone, Default)]
pub struct ChatEndpoint {
    options: EndpointOptions,
}

impl ChatEndpoint {
    /// A chat endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self { options }
    }
}

impl Endpoint for ChatEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        let mut body = Map::new();
        body.insert("messages".into(), Value::Array(messages(input)));
        body.insert("model".into(), model(input, turn).into());
        body.insert("stream".into(), input.streaming.into());
        if let Some(tools) = &turn.raw_tools {
            body.insert("tools".into(), Value::Array(tools.clone()));
        }
        if let Some(max_tokens) = turn.max_tokens {
            let field = if self.options.use_legacy_max_tokens {
                "max_tokens"
            } else {
                "max_completion_tokens"
            };
            body.insert(field.into(), max_tokens.into());
        }
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::WhenStreamingPerChunkOnRequest,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_exchange(exchange, extract)
    }
}

/// System message, user context, then each turn: its `raw_messages` verbatim (a trace's
/// recorded message list), else one message built from its contents.
pub(crate) fn messages(input: &RequestInput<'_>) -> Vec<Value> {
    let mut messages = Vec::with_capacity(input.turns.len() + 2);
    let starts_with_system = input.turns.first().is_some_and(|turn| {
        let first_raw_role = turn
            .raw_messages
            .as_ref()
            .and_then(|raw| raw.first())
            .and_then(|message| message.get("role"));
        match first_raw_role {
            Some(role) => role == "system",
            None => turn.role.as_deref() == Some("system"),
        }
    });
    if let Some(system) = input.system_message.filter(|_| !starts_with_system) {
        messages.push(json!({"role": "system", "content": system}));
    }
    if let Some(context) = input.user_context_message {
        messages.push(json!({"role": "user", "content": context}));
    }
    for turn in input.turns {
        if let Some(raw) = &turn.raw_messages {
            messages.extend(raw.iter().cloned());
            continue;
        }
        let role = turn.role.as_deref().unwrap_or("user");
        messages.push(json!({"role": role, "content": content(turn)}));
    }
    messages
}

/// A plain string for one text without media, else content parts: texts, images,
/// audios, videos (empty ones skipped).
fn content(turn: &Turn) -> Value {
    let has_media = !(turn.images.is_empty() && turn.audios.is_empty() && turn.videos.is_empty());
    match turn.texts.as_slice() {
        [text] if !has_media => return Value::String(text.clone()),
        [] if !has_media => return Value::String(String::new()),
        _ => {}
    }
    let non_empty = |items: &[String]| {
        items
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut parts = Vec::new();
    for text in non_empty(&turn.texts) {
        parts.push(json!({"type": "text", "text": text}));
    }
    for url in non_empty(&turn.images) {
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    for audio in non_empty(&turn.audios) {
        let (format, data) = audio_parts(&audio);
        parts.push(json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}));
    }
    for url in non_empty(&turn.videos) {
        parts.push(json!({"type": "video_url", "video_url": {"url": url}}));
    }
    Value::Array(parts)
}

/// Splits audio into `(format, base64 data)`: `wav,<b64>`, `data:audio/<fmt>;base64,<b64>`,
/// or bare base64 (taken as wav).
pub(crate) fn audio_parts(audio: &str) -> (&str, &str) {
    if let Some(rest) = audio.strip_prefix("data:audio/") {
        if let Some((mime, data)) = rest.split_once(',') {
            let format = mime.split(';').next().unwrap_or("wav");
            return (format, data);
        }
    }
    match audio.split_once(',') {
        Some((format, data))
            if !format.is_empty() && format.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (format, data)
        }
        _ => ("wav", audio),
    }
}

/// Reads `choices[0].delta` (chunks) or `choices[0].message` (whole responses). The
/// `object` field picks which one when present; servers that omit it still work.
fn extract(object: &Object<'_>) -> Extracted {
    let Some(choice) = object.first_choice() else {
        return Extracted::default();
    };
    let message = match object.object.as_deref() {
        Some("chat.completion.chunk") => choice.delta.as_ref(),
        Some("chat.completion") => choice.message.as_ref(),
        _ => choice.delta.as_ref().or(choice.message.as_ref()),
    };
    let Some(message) = message else {
        return Extracted::default();
    };
    let reasoning = [&message.reasoning_content, &message.reasoning]
        .into_iter()
        .filter_map(|field| field.as_deref())
        .find(|r| !r.is_empty())
        .unwrap_or_default();
    let mut text = message.content.as_deref().unwrap_or_default().to_owned();
    for function in message
        .tool_calls
        .iter()
        .flatten()
        .filter_map(|call| call.function.as_ref())
    {
        text.push_str(function.name.as_deref().unwrap_or_default());
        text.push_str(function.arguments.as_deref().unwrap_or_default());
    }
    Extracted {
        text,
        reasoning: reasoning.to_owned(),
    }
}

#[cfg(test)]
mod tests;
