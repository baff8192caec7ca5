//! The [`Endpoint`] trait: how a turn becomes a request body and a response becomes data.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::conversation::Turn;
use crate::transport::RawExchange;
use crate::ErrorDetails;

/// What an endpoint format is and which metrics apply to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInfo {
    /// The `--endpoint-type` name, e.g. `chat`.
    pub name: &'static str,
    /// Path appended to the base URL unless `--endpoint` overrides it.
    pub default_path: &'static str,
    /// Where streamed requests go instead, for APIs that pick streaming by path (TGI's
    /// `/generate_stream`); `None` when streaming is a body field.
    pub streaming_path: Option<&'static str>,
    /// Whether responses can be streamed.
    pub supports_streaming: bool,
    /// Whether responses carry generated tokens (token metrics apply).
    pub produces_tokens: bool,
    /// Whether the input is tokenized (input sequence length applies).
    pub tokenizes_input: bool,
    /// Whether a request carries a query and passages to rank, so a synthetic dataset
    /// composes its turns that way.
    pub takes_rankings: bool,
    /// The header that carries an API key.
    pub api_key_header: ApiKeyHeader,
}

/// How an API expects its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and most others).
    Bearer,
    /// `x-api-key: <key>` (the Anthropic Messages API).
    XApiKey,
}

impl ApiKeyHeader {
    /// The header's name and value for `api_key`.
    pub fn header(self, api_key: &str) -> (&'static str, String) {
        match self {
            ApiKeyHeader::Bearer => ("Authorization", format!("Bearer {api_key}")),
            ApiKeyHeader::XApiKey => ("x-api-key", api_key.to_owned()),
        }
    }
}

impl EndpointInfo {
    /// The path requests go to, streamed or not.
    pub fn path(&self, streaming: bool) -> &'static str {
        match self.streaming_path {
            Some(path) if streaming => path,
            _ => self.default_path,
        }
    }

    /// The headers every request carries: the explicit ones (in order), preceded by the
    /// API-key header derived from `api_key` unless an explicit header of the same name
    /// (in any case) replaces it, so a server never sees the header twice. The flag says
    /// whether an explicit header replaced the derived one.
    pub fn request_headers(
        &self,
        api_key: Option<&str>,
        explicit: &[(String, String)],
    ) -> (Vec<(String, String)>, bool) {
        let mut headers = explicit.to_vec();
        let Some(key) = api_key else {
            return (headers, false);
        };
        let (name, value) = self.api_key_header.header(key);
        if explicit.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return (headers, true);
        }
        headers.insert(0, (name.to_owned(), value));
        (headers, false)
    }
}

/// Everything an endpoint needs to build one request body.
#[derive(Debug, Clone, Copy)]
pub struct RequestInput<'a> {
    /// The model to address.
    pub model: &'a str,
    /// The system message, if any.
    pub system_message: Option<&'a str>,
    /// The per-conversation user context, if any.
    pub user_context_message: Option<&'a str>,
    /// The turns to send: for multi-turn chat, earlier turns and replies come first.
    pub turns: &'a [Turn],
    /// Whether to ask for a streamed response.
    pub streaming: bool,
}

/// A request body and the headers that belong to this format.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltRequest {
    /// The serialised body.
    pub body: Bytes,
    /// Format-specific headers (e.g. `Accept: text/event-stream`).
    pub headers: Vec<(String, String)>,
    /// The same payload as a JSON object when the body on the wire is not JSON (a
    /// `multipart/form-data` upload): `inputs.json` and the raw export record this instead
    /// of the binary body, as the Python AIPerf 0.13 does. `None` for JSON bodies.
    pub json_view: Option<Bytes>,
}

impl BuiltRequest {
    /// The payload as artifacts record it: the [`json_view`](Self::json_view) when there
    /// is one, else the body.
    pub fn recorded_payload(&self) -> &Bytes {
        self.json_view.as_ref().unwrap_or(&self.body)
    }
}

/// Token usage as the server reported it: the raw `usage` object, with accessors for the
/// fields every OpenAI-style server sends. Vendor fields stay reachable through
/// [`Usage::field`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Usage(pub serde_json::Map<String, serde_json::Value>);

impl Usage {
    /// True when the object has no fields.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A non-negative integer at a dotted path, e.g. `prompt_tokens_details.cached_tokens`.
    pub fn field(&self, path: &str) -> Option<u64> {
        let (first, mut rest) = match path.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (path, None),
        };
        let mut value = entry(&self.0, first)?;
        while let Some(path) = rest {
            let (part, more) = match path.split_once('.') {
                Some((part, more)) => (part, Some(more)),
                None => (path, None),
            };
            value = entry(value.as_object()?, part)?;
            rest = more;
        }
        value
            .as_u64()
            .or_else(|| value.as_f64().filter(|v| *v >= 0.0).map(|v| v as u64))
    }

    /// `prompt_tokens` (or `input_tokens`, as the Responses and Messages APIs call it).
    pub fn prompt_tokens(&self) -> Option<u64> {
        self.field("prompt_tokens")
            .or_else(|| self.field("input_tokens"))
    }

    /// `completion_tokens` (or `output_tokens`), reasoning included.
    pub fn completion_tokens(&self) -> Option<u64> {
        self.field("completion_tokens")
            .or_else(|| self.field("output_tokens"))
    }

    /// `total_tokens`.
    pub fn total_tokens(&self) -> Option<u64> {
        self.field("total_tokens")
    }

    /// Reasoning tokens within the completion, wherever the server put them.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.field("completion_tokens_details.reasoning_tokens")
            .or_else(|| self.field("output_tokens_details.reasoning_tokens"))
            .or_else(|| self.field("reasoning_tokens"))
    }
}

/// The value under `key`, found by comparing keys rather than hashing: a usage object
/// has a handful of keys, and the record processor looks up some twenty paths per record
/// (the map's SipHash was ~3 % of the client's CPU in a non-streaming run).
fn entry<'a>(
    object: &'a serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<&'a serde_json::Value> {
    object
        .iter()
        .find_map(|(name, value)| (name == key).then_some(value))
}

/// One parsed response: an SSE event or a whole non-streaming body.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedResponse {
    /// When the bytes that completed this response were read.
    pub at: Instant,
    /// Generated text (content, or tool-call text).
    pub text: String,
    /// Generated reasoning text.
    pub reasoning: String,
    /// True when the response carries non-text data (embeddings, rankings, images).
    pub has_other_data: bool,
    /// Usage, when this response carried a non-empty usage object.
    pub usage: Option<Usage>,
    /// What a video generation server reported about the job, when this response is a
    /// finished video job.
    pub video: Option<VideoReport>,
}

/// A video generation server's account of one job (SGLang reports these fields).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VideoReport {
    /// `inference_time_s`: the generation time on the server, in seconds.
    pub inference_time_s: Option<f64>,
    /// `peak_memory_mb`: the peak GPU memory of the generation, in megabytes.
    pub peak_memory_mb: Option<f64>,
}

impl ParsedResponse {
    /// A response carrying `text` and nothing else, read at `at`. Endpoints outside this
    /// workspace build responses from it (`ParsedResponse { usage, ..ParsedResponse::text(at,
    /// text) }`), so a field added here later does not break them.
    pub fn text(at: Instant, text: impl Into<String>) -> Self {
        Self {
            at,
            text: text.into(),
            reasoning: String::new(),
            has_other_data: false,
            usage: None,
            video: None,
        }
    }

    /// Whether this response counts as content (TTFT, latency): text, reasoning or data.
    /// Usage-only chunks, role-only deltas and `[DONE]` do not.
    pub fn has_content(&self) -> bool {
        !self.text.is_empty() || !self.reasoning.is_empty() || self.has_other_data
    }
}

/// A response turned into data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedExchange {
    /// Responses in arrival order (responses that parse to nothing are left out).
    pub responses: Vec<ParsedResponse>,
    /// Set when the response reports an error (non-2xx, `event: error`, bad JSON).
    pub error: Option<ErrorDetails>,
}

/// A request/response format: chat completions, completions, embeddings, …
///
/// Both methods are pure functions of their inputs. `build` runs before the request is
/// sent; `parse` runs after, off the hot path.
pub trait Endpoint: Send + Sync + 'static {
    /// What this endpoint is.
    fn info(&self) -> &EndpointInfo;

    /// Builds the request body for `input`.
    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError>;

    /// Parses a completed exchange into responses (and an error, if the server sent one).
    fn parse(&self, exchange: &RawExchange) -> ParsedExchange;

    /// How this format encodes its request bodies: JSON, unless it uploads files.
    fn request_content_type(&self) -> RequestContentType {
        RequestContentType::ApplicationJson
    }

    /// What the engine does after `exchange`, a successful (2xx) response to a request
    /// first sent to `request_url` and followed up `followed` times before (0: `exchange`
    /// answers the request itself): for most APIs the exchange is the answer
    /// ([`FollowUp::Done`], the default); an asynchronous-job API answers with a ticket
    /// to poll. Runs on the hot path, so it may read only a small status body.
    fn follow_up(&self, request_url: &str, followed: u32, exchange: &RawExchange) -> FollowUp {
        let _ = (request_url, followed, exchange);
        FollowUp::Done
    }
}

/// The encoding of request bodies (`--request-content-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestContentType {
    /// A JSON object (every format but the file uploads).
    #[serde(rename = "application/json")]
    ApplicationJson,
    /// A `multipart/form-data` form (file uploads and video jobs).
    #[serde(rename = "multipart/form-data")]
    MultipartFormData,
}

impl RequestContentType {
    /// The media type, e.g. `application/json`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestContentType::ApplicationJson => "application/json",
            RequestContentType::MultipartFormData => "multipart/form-data",
        }
    }
}

/// Checks a requested body encoding against what `endpoint` sends, as the Python AIPerf
/// 0.13 does: `None` (the endpoint's own) always fits; otherwise it must be the
/// endpoint's, since a form-uploading format cannot send JSON and the JSON formats have
/// no form to send.
pub fn check_request_content_type(
    requested: Option<RequestContentType>,
    endpoint: &dyn Endpoint,
) -> Result<(), ConfigError> {
    let own = endpoint.request_content_type();
    match requested {
        Some(requested) if requested != own => Err(ConfigError::Invalid {
            field: "endpoint.request_content_type",
            reason: format!(
                "endpoint type {} sends {}, not {} (multipart/form-data is for the types \
                 that send forms: audio_transcription, image_edit, video_generation)",
                endpoint.info().name,
                own.as_str(),
                requested.as_str()
            ),
        }),
        _ => Ok(()),
    }
}

/// The next step of a request whose answer comes from several exchanges (an asynchronous
/// job: submit, poll until done, perhaps download). All of them make one record, from
/// the first request's start to the end of the last exchange, bounded by the request
/// timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowUp {
    /// The exchange is the answer.
    Done,
    /// Not the answer yet: `GET url` after `after`, then ask again.
    Poll {
        /// The job's status URL.
        url: String,
        /// How long to wait before asking.
        after: Duration,
    },
    /// `GET url` now; it ends the request, and its time counts in the latency, while the
    /// answer stays the exchange that asked for it (a download of the job's result,
    /// whose bytes are not kept).
    Fetch {
        /// The result's URL.
        url: String,
    },
}

/// The request for `input`: the current turn's `raw_payload` verbatim when the dataset
/// gave one (a trace's or a `raw_payload`/`inputs_json` file's complete request body),
/// else what `endpoint` builds.
///
/// A raw payload is sent as compact JSON with its keys in the file's order (JSON-equal to
/// the line, byte-equal when the line was compact), with `Content-Type: application/json`
/// and the `Accept` header that fits `input.streaming`, as the Python AIPerf sends it;
/// `--extra-inputs` are not merged into it.
pub fn build_request(
    endpoint: &dyn Endpoint,
    input: &RequestInput<'_>,
) -> Result<BuiltRequest, EndpointError> {
    let Some(payload) = input
        .turns
        .last()
        .and_then(|turn| turn.raw_payload.as_ref())
    else {
        return endpoint.build(input);
    };
    let body = serde_json::to_vec(payload).map_err(|e| EndpointError {
        endpoint: endpoint.info().name,
        reason: format!("the raw payload cannot be serialised: {e}"),
    })?;
    let accept = if input.streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    Ok(BuiltRequest {
        body: body.into(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Accept".into(), accept.into()),
        ],
        json_view: None,
    })
}

/// Why a request body could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot build the {endpoint} request: {reason}")]
pub struct EndpointError {
    /// The endpoint type.
    pub endpoint: &'static str,
    /// What was wrong with the input.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_reads_openai_and_responses_api_spellings() {
        let openai: Usage = serde_json::from_str(
            r#"{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,
                "completion_tokens_details":{"reasoning_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(openai.prompt_tokens(), Some(5));
        assert_eq!(openai.completion_tokens(), Some(7));
        assert_eq!(openai.total_tokens(), Some(12));
        assert_eq!(openai.reasoning_tokens(), Some(3));
        let responses: Usage =
            serde_json::from_str(r#"{"input_tokens":4,"output_tokens":9}"#).unwrap();
        assert_eq!(responses.prompt_tokens(), Some(4));
        assert_eq!(responses.completion_tokens(), Some(9));
        assert_eq!(responses.reasoning_tokens(), None);
    }

    #[test]
    fn usage_field_follows_dotted_paths_into_nested_objects_only() {
        let usage: Usage = serde_json::from_str(
            r#"{"prompt_tokens":5,"cached":2.0,"negative":-1,"text":"7",
                "prompt_tokens_details":{"cached_tokens":3,"deeper":{"count":11}},
                "flat":4}"#,
        )
        .unwrap();
        assert_eq!(usage.field("prompt_tokens"), Some(5));
        assert_eq!(usage.field("prompt_tokens_details.cached_tokens"), Some(3));
        assert_eq!(usage.field("prompt_tokens_details.deeper.count"), Some(11));
        assert_eq!(usage.field("cached"), Some(2));
        // Not a count: negative, text, an object, or a path through a number.
        assert_eq!(usage.field("negative"), None);
        assert_eq!(usage.field("text"), None);
        assert_eq!(usage.field("prompt_tokens_details"), None);
        assert_eq!(usage.field("flat.count"), None);
        // Missing at the first, a middle and the last step; a dot too many or too few.
        assert_eq!(usage.field("missing"), None);
        assert_eq!(usage.field("prompt_tokens_details.missing.count"), None);
        assert_eq!(usage.field("prompt_tokens_details.deeper.missing"), None);
        assert_eq!(usage.field("prompt_tokens."), None);
        assert_eq!(usage.field(""), None);
        assert_eq!(usage.field("prompt_tokens_detailscached_tokens"), None);
    }
}
