//! Request pieces shared by the OpenAI-style formats: the turn being sent, the merge of
//! `--extra-inputs` and of the turn's own `extra` fields, `stream_options` and the body's
//! serialisation and headers.

use aiperf_core::conversation::Turn;
use aiperf_core::{BuiltRequest, EndpointError, RequestInput};
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
    mut body: Map<String, Value>,
    options: &EndpointOptions,
    turn: &Turn,
    streaming: bool,
    usage: UsageChunk,
) -> BuiltRequest {
    merge(&mut body, &options.extra_inputs);
    merge_turn_extra(&mut body, turn);
    let wanted = match usage {
        UsageChunk::WhenStreaming | UsageChunk::WhenStreamingPerChunkOnRequest => true,
        UsageChunk::WithServerTokenCount => options.use_server_token_count,
        UsageChunk::Never => false,
    };
    let per_chunk = usage == UsageChunk::WhenStreamingPerChunkOnRequest && options.per_chunk_usage;
    if streaming && wanted {
        request_usage(&mut body, per_chunk);
    }
    serialize(body, streaming)
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
    let accept = if streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    BuiltRequest {
        body: Value::Object(body).to_string().into(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Accept".into(), accept.into()),
        ],
        json_view: None,
    }
}

/// Asks for a usage chunk at the end of the stream (and, `per_chunk`, cumulative usage on
/// every chunk), unless the user already decided.
fn request_usage(body: &mut Map<String, Value>, per_chunk: bool) {
    let Value::Object(stream_options) = body
        .entry("stream_options")
        .or_insert_with(|| Value::Object(Map::new()))
    else {
        // A non-object value is the user's explicit choice; leave it alone.
        return;
    };
    stream_options
        .entry("include_usage")
        .or_insert(Value::Bool(true));
    if per_chunk {
        stream_options
            .entry("continuous_usage_stats")
            .or_insert(Value::Bool(true));
    }
}
