//! The `raw` endpoint: complete request bodies from the dataset, sent as they are.

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ErrorDetails,
    ParsedExchange, ParsedResponse, RawExchange, RequestInput,
};
use serde_json::Value;

use crate::response::{exchange_failure, parse_with, Format, Piece, Unreadable};
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
/// whose data is not JSON is text, as in the Python AIPerf, and so is a whole `text/plain`
/// body. Other non-JSON bodies (a proxy's HTML error page) fail the request.
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
        if let Some(text) = plain_text_answer(exchange) {
            return ParsedExchange {
                responses: vec![ParsedResponse {
                    at: exchange.chunks.last().map_or(exchange.ended_at, |c| c.at),
                    text,
                    reasoning: String::new(),
                    has_other_data: false,
                    usage: None,
                    video: None,
                }],
                error: exchange.error.as_ref().map(ErrorDetails::from),
            };
        }
        parse_with(
            exchange,
            TextFallback(ResponseFieldFormat::new(self.response_field.as_ref())),
        )
    }
}

/// The body of a successful `text/plain` answer: a server that answers a raw payload with
/// bare text (a health or echo route, a custom service) answered, and the text is what it
/// generated. `None` for anything else, which the JSON and SSE readers handle.
fn plain_text_answer(exchange: &RawExchange) -> Option<String> {
    let content_type = exchange.content_type.as_deref()?;
    let is_plain = content_type
        .split(';')
        .next()
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/plain"));
    if !is_plain || exchange_failure(exchange).is_some() {
        return None;
    }
    let body = exchange.body();
    let text = String::from_utf8_lossy(body);
    (!text.trim().is_empty()).then(|| text.into_owned())
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
