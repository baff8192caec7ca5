//! The `chat` endpoint: OpenAI chat completions (`/v1/chat/completions`).

use aiperf_core::conversation::Turn;
use aiperf_core::json;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use crate::openai::Object;
use crate::payload::{current_turn, model, write_value, Body, Field, UsageChunk, WriteJson};
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
        let mut body = Body::with_capacity(6);
        body.insert("messages", Field::Messages(Messages(input)));
        body.insert("model", Field::Str(model(input, turn)));
        body.insert("stream", Field::Bool(input.streaming));
        if let Some(tools) = &turn.raw_tools {
            body.insert("tools", Field::List(tools));
        }
        if let Some(max_tokens) = turn.max_tokens {
            let field = if self.options.use_legacy_max_tokens {
                "max_tokens"
            } else {
                "max_completion_tokens"
            };
            body.insert(field, Field::Uint(max_tokens.into()));
        }
        Ok(body.finish(
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

/// The `messages` of a chat request, written as they are serialised: the system message,
/// the user context, then each turn: its `raw_messages` verbatim (a trace's recorded
/// message list), else one `{"role", "content"}` message built from its contents.
pub(crate) struct Messages<'a, 'b>(pub &'b RequestInput<'a>);

impl WriteJson for Messages<'_, '_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        let input = self.0;
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
        let mut list = List::open(out);
        if let Some(system) = input.system_message.filter(|_| !starts_with_system) {
            write_message(list.next(), "system", Content::Text(system));
        }
        if let Some(context) = input.user_context_message {
            write_message(list.next(), "user", Content::Text(context));
        }
        for turn in input.turns {
            if let Some(raw) = &turn.raw_messages {
                for message in raw {
                    write_value(list.next(), message);
                }
                continue;
            }
            let role = turn.role.as_deref().unwrap_or("user");
            write_message(list.next(), role, Content::of(turn));
        }
        list.close();
    }
}

/// A JSON list being written: `[`, then a comma before every element but the first.
struct List<'o> {
    out: &'o mut Vec<u8>,
    empty: bool,
}

impl<'o> List<'o> {
    fn open(out: &'o mut Vec<u8>) -> Self {
        out.push(b'[');
        Self { out, empty: true }
    }

    /// The buffer to write the next element to.
    fn next(&mut self) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out
    }

    fn close(self) {
        self.out.push(b']');
    }
}

/// Appends one message built from a turn (or the system message or user context):
/// `{"role":…,"content":…}`.
fn write_message(out: &mut Vec<u8>, role: &str, content: Content<'_>) {
    out.extend_from_slice(br#"{"role":"#);
    json::write_str(out, role);
    out.extend_from_slice(br#","content":"#);
    match content {
        Content::Text(text) => json::write_str(out, text),
        Content::Parts(turn) => write_value(out, &Parts(turn)),
    }
    out.push(b'}');
}

/// A message's `content`.
enum Content<'a> {
    /// A plain string.
    Text(&'a str),
    /// Content parts: the turn's texts, images, audios and videos (empty ones skipped).
    Parts(&'a Turn),
}

impl<'a> Content<'a> {
    /// A plain string for one text without media (an empty one for no text), else parts.
    fn of(turn: &'a Turn) -> Self {
        let has_media =
            !(turn.images.is_empty() && turn.audios.is_empty() && turn.videos.is_empty());
        match turn.texts.as_slice() {
            [text] if !has_media => Content::Text(text),
            [] if !has_media => Content::Text(""),
            _ => Content::Parts(turn),
        }
    }
}

/// The content parts of a turn, as a list of [`Part`]s.
struct Parts<'a>(&'a Turn);

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let turn = self.0;
        let mut parts = serializer.serialize_seq(None)?;
        for text in non_empty(&turn.texts) {
            parts.serialize_element(&Part::Text { text })?;
        }
        for url in non_empty(&turn.images) {
            parts.serialize_element(&Part::ImageUrl {
                image_url: Url { url },
            })?;
        }
        for audio in non_empty(&turn.audios) {
            let (format, data) = audio_parts(audio);
            parts.serialize_element(&Part::InputAudio {
                input_audio: Audio { data, format },
            })?;
        }
        for url in non_empty(&turn.videos) {
            parts.serialize_element(&Part::VideoUrl {
                video_url: Url { url },
            })?;
        }
        parts.end()
    }
}

/// The items that are not empty.
fn non_empty(items: &[String]) -> impl Iterator<Item = &str> {
    items
        .iter()
        .map(String::as_str)
        .filter(|item| !item.is_empty())
}

/// One content part: `{"type": …, <type>: …}`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url<'a> },
    InputAudio { input_audio: Audio<'a> },
    VideoUrl { video_url: Url<'a> },
}

/// `{"url": …}`.
#[derive(Serialize)]
struct Url<'a> {
    url: &'a str,
}

/// `{"data": …, "format": …}`.
#[derive(Serialize)]
struct Audio<'a> {
    data: &'a str,
    format: &'a str,
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
