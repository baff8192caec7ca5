//! Request pieces shared by the OpenAI-style formats: the turn being sent, the merge of
//! `--extra-inputs` and of the turn's own `extra` fields, `stream_options` and the body's
//! serialisation and headers.

use aiperf_core::conversation::Turn;
use aiperf_core::json;
use aiperf_core::{BuiltRequest, EndpointError, RequestInput};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::EndpointOptions;

/// The turn the request is for: the last of `input.turns` (earlier ones are history).
pub(crate) fn current_turn<'a>(
    endpoint: &'static str,
    input: &RequestInput<'a>,
) -> Result<&'a Turn, EndpointError> {
    input.turns.last().ok_or_else(|| EndpointError {
        endpoint,
        reason: "there is no turn to send".into(),
    })
}

/// The only turn of a single-turn format; more than one turn is an error.
pub(crate) fn only_turn<'a>(
    endpoint: &'static str,
    input: &RequestInput<'a>,
) -> Result<&'a Turn, EndpointError> {
    let turn = current_turn(endpoint, input)?;
    if input.turns.len() != 1 {
        return Err(EndpointError {
            endpoint,
            reason: format!(
                "{endpoint} takes exactly one turn, got {} (use the chat endpoint for \
                 multi-turn conversations)",
                input.turns.len()
            ),
        });
    }
    Ok(turn)
}

/// The turn's non-empty texts.
pub(crate) fn texts(turn: &Turn) -> impl Iterator<Item = &str> {
    turn.texts
        .iter()
        .map(String::as_str)
        .filter(|text| !text.is_empty())
}

/// The turn's first non-empty text, as the prompt of a generation API (images, video);
/// an error naming `endpoint` when it has none.
pub(crate) fn prompt<'a>(endpoint: &'static str, turn: &'a Turn) -> Result<&'a str, EndpointError> {
    texts(turn).next().ok_or_else(|| EndpointError {
        endpoint,
        reason: "the turn has no text to use as the prompt".into(),
    })
}

/// Logs, once per endpoint value, that a format has no max-tokens field.
pub(crate) fn warn_max_tokens_ignored(
    endpoint: &'static str,
    turn: &Turn,
    warned: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    if turn.max_tokens.is_some() && !warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            endpoint,
            "the {endpoint} endpoint has no output length; the requested max tokens are ignored"
        );
    }
}

/// The model for `turn`: its own, else the primary model.
pub(crate) fn model<'a>(input: &RequestInput<'a>, turn: &'a Turn) -> &'a str {
    turn.model.as_deref().unwrap_or(input.model)
}

/// When a streaming request asks for the trailing usage chunk
/// (`stream_options.include_usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageChunk {
    /// Every streaming request (chat and completions, as the Python AIPerf 0.13 does:
    /// usage and its discrepancy metrics need it, and vLLM puts per-request metrics there).
    WhenStreaming,
    /// Every streaming request, plus `stream_options.continuous_usage_stats` when
    /// [`EndpointOptions::per_chunk_usage`] asks for usage on every chunk (chat).
    WhenStreamingPerChunkOnRequest,
    /// Only with `--use-server-token-count`.
    WithServerTokenCount,
    /// Never: the API has no `stream_options` (Anthropic Messages always streams usage).
    Never,
}

/// Merges the extra inputs and then the turn's `extra` fields (shallow: a key replaces the
/// whole value, keeping the key's position when it already exists; the turn wins, as the
/// dataset knows this one request best), adds `stream_options.include_usage` when
/// streaming as `usage` says (unless the user or the turn set it), and serialises the
/// body compactly.
pub(crate) fn finish(
    body: Map<String, Value>,
    options: &EndpointOptions,
    turn: &Turn,
    streaming: bool,
    usage: UsageChunk,
) -> BuiltRequest {
    let mut fields = Body::<NoMessages>::with_capacity(body.len() + 1);
    for (key, value) in &body {
        fields.insert(key, Field::Json(value));
    }
    fields.finish(options, turn, streaming, usage)
}

/// A JSON request body as an ordered list of fields that borrow what they hold (the
/// turn's texts, the options' extra inputs), written straight to bytes: building a
/// `serde_json::Value` tree per request copied every string twice and was ~4.5 % of the
/// client's CPU in a non-streaming run. The bytes are those of the tree it replaces.
/// Strings are written with [`json::write_str`], which copies the ones that need no
/// escaping (most prompts) instead of escaping them byte by byte.
pub(crate) struct Body<'a, M = NoMessages> {
    fields: Vec<(&'a str, Field<'a, M>)>,
}

/// One field's value.
pub(crate) enum Field<'a, M> {
    /// A format's message list, serialised as it is written.
    Messages(M),
    /// A string.
    Str(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A list of JSON values (e.g. a turn's raw tools).
    List(&'a [Value]),
    /// A JSON value from the options or the dataset.
    Json(&'a Value),
    /// `stream_options` made here: `{"include_usage":true}`, with
    /// `"continuous_usage_stats":true` after it when `per_chunk`.
    UsageRequest {
        /// Ask for cumulative usage on every chunk too.
        per_chunk: bool,
    },
    /// `stream_options` from the user, completed with what it lacked.
    Completed(Map<String, Value>),
}

/// The message type of a body without a [`Field::Messages`].
pub(crate) enum NoMessages {}

/// What a body's buffer starts with: room for a short prompt and the fields around it,
/// so most bodies grow at most once or twice.
const INITIAL_BODY_CAPACITY: usize = 1024;

impl<'a, M: WriteJson> Body<'a, M> {
    /// An empty body with room for `fields` fields.
    pub(crate) fn with_capacity(fields: usize) -> Self {
        Self {
            fields: Vec::with_capacity(fields),
        }
    }

    /// Sets `key` to `value`: in its place when the key is already there, else last.
    pub(crate) fn insert(&mut self, key: &'a str, value: Field<'a, M>) {
        match self.fields.iter_mut().find(|(name, _)| *name == key) {
            Some((_, old)) => *old = value,
            None => self.fields.push((key, value)),
        }
    }

    /// Merges `extra` over the body, shallowly and in order.
    fn merge(&mut self, extra: &'a Map<String, Value>) {
        for (key, value) in extra {
            self.insert(key, Field::Json(value));
        }
    }

    /// The request: the extra inputs and then the turn's `extra` merged over the body,
    /// usage asked for as `usage` says, serialised compactly; see [`finish`].
    pub(crate) fn finish(
        mut self,
        options: &'a EndpointOptions,
        turn: &'a Turn,
        streaming: bool,
        usage: UsageChunk,
    ) -> BuiltRequest {
        self.merge(&options.extra_inputs);
        if let Some(extra) = &turn.extra {
            self.merge(extra);
        }
        let wanted = match usage {
            UsageChunk::WhenStreaming | UsageChunk::WhenStreamingPerChunkOnRequest => true,
            UsageChunk::WithServerTokenCount => options.use_server_token_count,
            UsageChunk::Never => false,
        };
        let per_chunk =
            usage == UsageChunk::WhenStreamingPerChunkOnRequest && options.per_chunk_usage;
        if streaming && wanted {
            self.request_usage(per_chunk);
        }
        let mut body = Vec::with_capacity(INITIAL_BODY_CAPACITY);
        self.write_json(&mut body);
        BuiltRequest {
            // Exactly sized: `Bytes` would keep a vector's spare room as long as the
            // record keeps the body (10,000 short requests waiting: ~8 MB of it).
            body: body.into_boxed_slice().into(),
            headers: json_headers(streaming),
            json_view: None,
        }
    }

    /// Asks for a usage chunk at the end of the stream (and, `per_chunk`, cumulative
    /// usage on every chunk), unless the user already decided.
    fn request_usage(&mut self, per_chunk: bool) {
        let Some((_, field)) = self
            .fields
            .iter_mut()
            .find(|(name, _)| *name == "stream_options")
        else {
            self.fields
                .push(("stream_options", Field::UsageRequest { per_chunk }));
            return;
        };
        // Only a user's object is completed; any other value is the user's explicit
        // choice, left alone.
        let Field::Json(Value::Object(user)) = field else {
            return;
        };
        let mut completed = user.clone();
        completed
            .entry("include_usage")
            .or_insert(Value::Bool(true));
        if per_chunk {
            completed
                .entry("continuous_usage_stats")
                .or_insert(Value::Bool(true));
        }
        *field = Field::Completed(completed);
    }
}

/// A value a [`Body`] writes as JSON itself: a format's message list.
pub(crate) trait WriteJson {
    /// Appends the value's JSON to `out`.
    fn write_json(&self, out: &mut Vec<u8>);
}

impl WriteJson for NoMessages {
    fn write_json(&self, _: &mut Vec<u8>) {
        match *self {}
    }
}

impl<M: WriteJson> Body<'_, M> {
    /// Appends `{"<key>":<value>,…}` to `out`, byte for byte as serde_json writes a map.
    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (index, (key, value)) in self.fields.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            json::write_str(out, key);
            out.push(b':');
            value.write_json(out);
        }
        out.push(b'}');
    }
}

impl<M: WriteJson> Field<'_, M> {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Field::Messages(messages) => messages.write_json(out),
            Field::Str(text) => json::write_str(out, text),
            Field::Bool(value) => write_value(out, value),
            Field::Uint(value) => write_value(out, value),
            Field::List(values) => write_value(out, values),
            Field::Json(value) => write_value(out, value),
            Field::UsageRequest { per_chunk: false } => {
                out.extend_from_slice(br#"{"include_usage":true}"#);
            }
            Field::UsageRequest { per_chunk: true } => {
                out.extend_from_slice(br#"{"include_usage":true,"continuous_usage_stats":true}"#);
            }
            Field::Completed(object) => write_value(out, object),
        }
    }
}

/// Appends `value` as serde_json writes it compactly.
pub(crate) fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serialising numbers, borrowed strings and JSON values into a vector cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Merges `extra` over `body`, shallowly and in order: a key replaces the whole value,
/// keeping its position when it already exists.
pub(crate) fn merge(body: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (key, value) in extra {
        body.insert(key.clone(), value.clone());
    }
}

/// Merges the turn's own body fields (a dataset line's `extra`) over `body`, shallowly.
pub(crate) fn merge_turn_extra(body: &mut Map<String, Value>, turn: &Turn) {
    if let Some(extra) = &turn.extra {
        merge(body, extra);
    }
}

/// Serialises the body compactly, with the JSON content type and the `Accept` header that
/// fits `streaming`.
pub(crate) fn serialize(body: Map<String, Value>, streaming: bool) -> BuiltRequest {
    BuiltRequest {
        body: Value::Object(body).to_string().into(),
        headers: json_headers(streaming),
        json_view: None,
    }
}

/// The JSON content type and the `Accept` header that fits `streaming`.
fn json_headers(streaming: bool) -> Vec<(String, String)> {
    let accept = if streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    vec![
        ("Content-Type".into(), "application/json".into()),
        ("Accept".into(), accept.into()),
    ]
}
