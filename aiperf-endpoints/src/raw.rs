//! The `raw` endpoint: complete request bodies from the dataset, sent as they are.

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ErrorDetails,
    ParsedExchange, RawExchange, RequestInput,
};
use serde_json::Value;

use crate::response::{parse_with, Format, Piece, Unreadable};
use crate::response_field::{FieldPath, ResponseFieldFormat, RESPONSE_FIELD_KEY};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "raw",
    // No API of its own: the URL (or `--endpoint`) says where requests go.
    default_path: "",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Sends each turn's complete request body (`raw_payload`) exactly as the dataset gave it:
/// the `raw_payload` and `inputs_json` dataset types, or mooncake trace lines with a
/// `payload`. The bodies are sent by [`aiperf_core::build_request`] before any endpoint
/// is asked, so this endpoint only builds an error, for a turn without a body of its own;
/// `--extra-inputs` are not merged in, and whether the server streams is the body's
/// `stream` field (`--streaming` only sets the `Accept` header).
///
/// Requests go to the URL as given (plus `--endpoint`, when set): there is no default
/// path.
///
/// Responses, streamed or whole, are read as the `template` endpoint reads them: the value
/// at [`RESPONSE_FIELD_KEY`] of `--extra-inputs` when given (`a.b[0].c` or `/a/b/0/c`),
/// else embeddings, rankings, a text field (`text`, `content`, `response`, `output`,
/// `result`, `generated_text`), then OpenAI `choices[0]` (`text`, `message.content`,
/// `delta.content`; `reasoning_content` is reasoning); `usage` when present. An SSE event
/// whose data is not JSON is text, as in the Python AIPerf (a whole body must be JSON: a
/// `text/plain` answer fails the request, where the Python AIPerf takes it as text).
#[derive(Debug)]
pub struct RawEndpoint {
    response_field: Option<FieldPath>,
}

impl RawEndpoint {
    /// A raw endpoint reading responses at `options.extra_inputs`'
    /// [`RESPONSE_FIELD_KEY`], if any. A response field that is not a valid path is
    /// logged and ignored (responses are then read by auto-detection), as in the Python
    /// AIPerf; the other options do not apply.
    pub fn new(options: EndpointOptions) -> Self {
        let response_field = match options.extra_inputs.get(RESPONSE_FIELD_KEY) {
            None => None,
            Some(Value::String(path)) => FieldPath::parse(path)
                .inspect_err(|problem| {
                    tracing::warn!("{problem}; the raw endpoint reads responses by auto-detection");
                })
                .ok(),
            Some(other) => {
                tracing::warn!(
                    "{RESPONSE_FIELD_KEY} must be a string, got {other}; the raw endpoint reads \
                     responses by auto-detection"
                );
                None
            }
        };
        Self { response_field }
    }
}

impl Endpoint for RawEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, _input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        Err(EndpointError {
            endpoint: INFO.name,
            reason: "the raw endpoint only sends complete request bodies from the dataset and \
                     this turn has none: use --custom-dataset-type raw_payload or inputs_json"
                .into(),
        })
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(
            exchange,
            TextFallback(ResponseFieldFormat::new(self.response_field.as_ref())),
        )
    }
}

/// A format whose payloads that are not JSON at all are text.
struct TextFallback<F>(F);

impl<F: Format> Format for TextFallback<F> {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        match self.0.read(payload) {
            Err(Unreadable::Json(error)) if serde_json::from_slice::<Value>(payload).is_err() => {
                match std::str::from_utf8(payload) {
                    Ok(text) => Ok(Piece {
                        text: text.to_owned(),
                        ..Piece::default()
                    }),
                    Err(_) => Err(Unreadable::Json(error)),
                }
            }
            other => other,
        }
    }

    fn in_band_error(&self, json: &Value, kind: &str) -> Option<ErrorDetails> {
        self.0.in_band_error(json, kind)
    }
}

#[cfg(test)]
mod tests;
