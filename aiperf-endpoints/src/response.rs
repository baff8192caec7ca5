//! Response handling shared by every format: HTTP errors, in-band errors, streamed (SSE)
//! and whole bodies, usage. A format only supplies how to read one JSON payload (a
//! [`Format`]); the OpenAI chat-style formats supply even less, an [`Extract`] of text and
//! reasoning from one typed [`Object`].

use std::time::Instant;

use aiperf_core::{ErrorDetails, ParsedExchange, ParsedResponse, RawExchange, Usage};
use serde_json::{Map, Value};

use crate::openai::Object;
use crate::sse::{decode_chunks, SseEvent};

/// The text and reasoning a format reads out of one JSON object.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    /// Generated text (content and tool-call text).
    pub text: String,
    /// Generated reasoning.
    pub reasoning: String,
}

/// Reads one response object of a format.
pub(crate) type Extract = fn(&Object<'_>) -> Extracted;

/// What a format read out of one JSON payload (an SSE event's data or a whole body).
#[derive(Debug, Default)]
pub(crate) struct Piece {
    /// Generated text (content and tool-call text).
    pub text: String,
    /// Generated reasoning.
    pub reasoning: String,
    /// Non-text data: embeddings, rankings.
    pub has_other_data: bool,
    /// The `usage` object, if the payload had one (empty ones are dropped later).
    pub usage: Option<Map<String, Value>>,
    /// The payload is an error object, not a response; details are read by
    /// [`Format::in_band_error`].
    pub is_error: bool,
}

/// Why a payload could not be read.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// Not JSON, or not the JSON shape of this format.
    Json(serde_json::Error),
    /// JSON of the right shape carrying something the format does not accept.
    Invalid(String),
}

impl From<serde_json::Error> for Unreadable {
    fn from(error: serde_json::Error) -> Self {
        Self::Json(error)
    }
}

/// How one response format reads its payloads. A fresh value reads each exchange, so a
/// format may keep state across the events of one stream.
pub(crate) trait Format {
    /// Reads one JSON payload without building a JSON tree.
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable>;

    /// The error that `json`, a payload [`Format::read`] flagged as an error, describes;
    /// `None` to read it as a response after all.
    fn in_band_error(&self, json: &Value, kind: &str) -> Option<ErrorDetails> {
        in_band_error(json, kind)
    }
}

/// The OpenAI chat-style formats: one typed [`Object`] read by an [`Extract`].
struct OpenAi(Extract);

impl Format for OpenAi {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let object = serde_json::from_slice::<Object>(payload)?;
        let Extracted { text, reasoning } = (self.0)(&object);
        Ok(Piece {
            text,
            reasoning,
            has_other_data: false,
            is_error: object.is_error(),
            usage: object.usage,
        })
    }
}

/// Most characters of an unparsable body quoted in an error message.
const SNIPPET_CHARS: usize = 200;

/// Parses an exchange of an OpenAI chat-style format (see [`parse_with`]).
pub(crate) fn parse_exchange(exchange: &RawExchange, extract: Extract) -> ParsedExchange {
    parse_with(exchange, OpenAi(extract))
}

/// Parses an exchange: its HTTP error, or its responses (streamed or whole) followed by
/// any error seen in the stream or below HTTP.
pub(crate) fn parse_with(exchange: &RawExchange, format: impl Format) -> ParsedExchange {
    if let Some(error) = exchange_failure(exchange) {
        return ParsedExchange {
            responses: Vec::new(),
            error: Some(error),
        };
    }
    let status = exchange.status.unwrap_or_default();
    let mut reader = Reader {
        format,
        parsed: ParsedExchange::default(),
    };
    if is_event_stream(exchange) {
        reader.read_events(decode_chunks(exchange.chunks.iter()));
    } else {
        let at = exchange.chunks.last().map_or(exchange.ended_at, |c| c.at);
        reader.read_body(exchange.body(), at);
    }
    let mut parsed = reader.parsed;
    if parsed.error.is_none() {
        parsed.error = exchange.error.as_ref().map(ErrorDetails::from);
    }
    if parsed.error.is_none() && !parsed.responses.iter().any(ParsedResponse::has_content) {
        parsed.error = unexpected_content_type(exchange);
    }
    tracing::trace!(
        status,
        responses = parsed.responses.len(),
        "parsed exchange"
    );
    parsed
}

/// Why an exchange has no response to read, the way every built-in endpoint reports it:
/// no response at all (the transport's error, e.g. "cannot connect"), or a non-2xx status
/// with the message of its error body (OpenAI `error`, FastAPI `detail`, plain text).
/// `None` for a 2xx response. A custom [`Endpoint`](aiperf_core::Endpoint) calls it first
/// in its `parse`:
///
/// ```
/// use aiperf_core::{ParsedExchange, RawExchange};
/// use aiperf_endpoints::exchange_failure;
///
/// fn parse(exchange: &RawExchange) -> ParsedExchange {
///     if let Some(error) = exchange_failure(exchange) {
///         return ParsedExchange { responses: Vec::new(), error: Some(error) };
///     }
///     // … read the body of a successful response …
///     ParsedExchange::default()
/// }
/// # let _ = parse;
/// ```
pub fn exchange_failure(exchange: &RawExchange) -> Option<ErrorDetails> {
    match exchange.status {
        None => Some(
            exchange
                .error
                .as_ref()
                .map_or_else(no_response, ErrorDetails::from),
        ),
        Some(status) if !(200..300).contains(&status) => Some(http_error(status, exchange.body())),
        Some(_) => None,
    }
}

/// The error of a non-2xx response: status, reason phrase, and the body's message.
pub(crate) fn http_error(status: u16, body: &[u8]) -> ErrorDetails {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .map_or_else(|| format!("HTTP {status}"), str::to_owned);
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|json| error_message(&json))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    ErrorDetails {
        code: Some(status),
        message: if message.is_empty() {
            reason.clone()
        } else {
            message
        },
        kind: Some(reason),
    }
}

/// The message of a JSON error body: `error` (a string or an object's `message`),
/// `detail` (FastAPI: a string or a list of `{msg}`), or `message`.
pub(crate) fn error_message(json: &Value) -> Option<String> {
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let object = json.as_object()?;
    match object.get("error") {
        Some(Value::Object(error)) => {
            return Some(
                error
                    .get("message")
                    .map_or_else(|| json["error"].to_string(), text),
            );
        }
        Some(Value::Null) | None => {}
        Some(other) => return Some(text(other)),
    }
    match object.get("detail") {
        Some(Value::Array(items)) => {
            let messages: Vec<String> = items
                .iter()
                .map(|item| item.get("msg").map_or_else(|| text(item), text))
                .collect();
            return Some(messages.join("; "));
        }
        Some(Value::Null) | None => {}
        Some(other) => return Some(text(other)),
    }
    object.get("message").map(text)
}

/// An exchange with neither a response nor a transport error (should not happen).
fn no_response() -> ErrorDetails {
    ErrorDetails {
        code: None,
        kind: Some("ServerDisconnectedError".into()),
        message: "no response was received".into(),
    }
}

/// SSE by content type; without one, anything that does not look like JSON.
fn is_event_stream(exchange: &RawExchange) -> bool {
    if let Some(content_type) = &exchange.content_type {
        let content_type = content_type.to_ascii_lowercase();
        if content_type.contains("text/event-stream") {
            return true;
        }
        if content_type.contains("json") {
            return false;
        }
    }
    let first = exchange
        .body()
        .iter()
        .find(|byte| !byte.is_ascii_whitespace());
    !matches!(first, Some(b'{' | b'['))
}

/// A 2xx response with nothing this endpoint could read whose content type is neither
/// JSON nor an event stream (a proxy's HTML error page, say): what it is, rather than
/// "no content". `None` without a content type or for an expected one.
fn unexpected_content_type(exchange: &RawExchange) -> Option<ErrorDetails> {
    let content_type = exchange.content_type.as_deref()?.trim();
    let lower = content_type.to_ascii_lowercase();
    if lower.contains("json") || lower.contains("text/event-stream") {
        return None;
    }
    let body = exchange.body();
    let text = String::from_utf8_lossy(body);
    let snippet = one_line_snippet(&text);
    let content_type = content_type.escape_debug();
    Some(ErrorDetails {
        code: None,
        kind: Some("UnexpectedContentTypeError".into()),
        message: if snippet.is_empty() {
            format!(
                "the server answered with content type {content_type} and an empty body, \
                 not JSON or an event stream"
            )
        } else {
            format!(
                "the server answered with content type {content_type}, not JSON or an event \
                 stream: {snippet}"
            )
        },
    })
}

/// `text` on one line (every run of whitespace a single space), at most
/// [`SNIPPET_CHARS`] characters, `…` where it was cut.
fn one_line_snippet(text: &str) -> String {
    let mut snippet = String::new();
    let mut count = 0;
    let mut cut = false;
    'words: for (i, word) in text.split_whitespace().enumerate() {
        for c in (i > 0).then_some(' ').into_iter().chain(word.chars()) {
            if count == SNIPPET_CHARS {
                cut = true;
                break 'words;
            }
            snippet.push(if c.is_control() { '\u{fffd}' } else { c });
            count += 1;
        }
    }
    if cut {
        snippet.push('…');
    }
    snippet
}

/// Collects responses and errors.
struct Reader<F> {
    format: F,
    parsed: ParsedExchange,
}

impl<F: Format> Reader<F> {
    /// Streamed events until `[DONE]` or an error.
    fn read_events(&mut self, events: Vec<SseEvent>) {
        for event in events {
            if event.event.as_deref() == Some("error") {
                self.parsed.error = Some(sse_error(&event));
                return;
            }
            let data = event.data.trim();
            if data == "[DONE]" {
                return;
            }
            if !data.is_empty() && !self.read_json(data.as_bytes(), event.at, "SSEResponseError") {
                return;
            }
        }
    }

    /// A whole (non-streamed) body.
    fn read_body(&mut self, body: &[u8], at: Instant) {
        if !body.trim_ascii().is_empty() {
            self.read_json(body, at, "ResponseError");
        }
    }

    /// Reads one JSON payload; false when it carried an error or could not be read
    /// (either ends the stream).
    ///
    /// A payload that cannot be read fails the request, streamed or not: its text is
    /// lost, so the output token count and every metric built on it would be wrong. (The
    /// Python AIPerf 0.13 skips such a stream event silently and counts the request as
    /// good.)
    fn read_json(&mut self, payload: &[u8], at: Instant, error_kind: &str) -> bool {
        let piece = match self.format.read(payload) {
            Ok(piece) => piece,
            Err(unreadable) => {
                self.parsed.error = Some(match unreadable {
                    Unreadable::Json(error) => malformed(payload, &error),
                    Unreadable::Invalid(message) => ErrorDetails {
                        code: None,
                        kind: Some("ValueError".into()),
                        message,
                    },
                });
                return false;
            }
        };
        if piece.is_error {
            // Rare: read the whole object again for the error's code and message.
            if let Some(error) = serde_json::from_slice::<Value>(payload)
                .ok()
                .and_then(|json| self.format.in_band_error(&json, error_kind))
            {
                self.parsed.error = Some(error);
                return false;
            }
        }
        let Piece {
            text,
            reasoning,
            has_other_data,
            usage,
            ..
        } = piece;
        let usage = usage.filter(|usage| !usage.is_empty()).map(Usage);
        if !text.is_empty() || !reasoning.is_empty() || has_other_data || usage.is_some() {
            self.parsed.responses.push(ParsedResponse {
                at,
                text,
                reasoning,
                has_other_data,
                usage,
                video: None,
            });
        }
        true
    }
}

/// `event: error`: code 502, message from the data (JSON error message or text), else
/// from the comment.
fn sse_error(event: &SseEvent) -> ErrorDetails {
    let data = event.data.trim();
    let message = serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|json| error_message(&json))
        .or_else(|| (!data.is_empty()).then(|| data.to_owned()))
        .or_else(|| event.comment.clone().filter(|c| !c.trim().is_empty()))
        .unwrap_or_else(|| "the server sent an error event".into());
    ErrorDetails {
        code: Some(502),
        kind: Some("SSEResponseError".into()),
        message,
    }
}

/// An error object sent with a 2xx status (`{"error": …}` or `{"object": "error", …}`,
/// without `choices`): code from the object when it is an HTTP status, else 502.
pub(crate) fn in_band_error(json: &Value, kind: &str) -> Option<ErrorDetails> {
    if json.get("choices").is_some() {
        return None;
    }
    let error = match json.get("error") {
        Some(Value::Null) | None if json.get("object").and_then(Value::as_str) == Some("error") => {
            json
        }
        Some(Value::Null) | None => return None,
        Some(error) => error,
    };
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .filter(|code| (100..=599).contains(code))
        .and_then(|code| u16::try_from(code).ok())
        .unwrap_or(502);
    Some(ErrorDetails {
        code: Some(code),
        kind: Some(kind.into()),
        message: error_message(json).unwrap_or_else(|| error.to_string()),
    })
}

/// A payload that is not JSON.
fn malformed(payload: &[u8], error: &serde_json::Error) -> ErrorDetails {
    let text = String::from_utf8_lossy(payload);
    let mut snippet: String = text.chars().take(SNIPPET_CHARS).collect();
    if text.chars().nth(SNIPPET_CHARS).is_some() {
        snippet.push('…');
    }
    ErrorDetails {
        code: None,
        kind: Some("JSONDecodeError".into()),
        message: format!("the response is not valid JSON ({error}): {snippet}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::exchange;

    #[test]
    fn exchange_failure_is_the_status_and_the_body_message_or_nothing_for_2xx() {
        let failed = exchange(
            422,
            Some("application/json"),
            &[r#"{"detail":"bad field"}"#],
        );
        assert_eq!(
            exchange_failure(&failed),
            Some(ErrorDetails {
                code: Some(422),
                kind: Some("Unprocessable Entity".into()),
                message: "bad field".into(),
            })
        );
        let ok = exchange(200, Some("application/json"), &["{}"]);
        assert_eq!(exchange_failure(&ok), None);
        let silent = RawExchange {
            status: None,
            ..exchange(200, None, &[])
        };
        assert_eq!(exchange_failure(&silent), Some(no_response()));
    }

    #[test]
    fn an_html_page_with_status_200_is_reported_as_such() {
        let page =
            "<!DOCTYPE html>\n<html>\n  <body>\r\n\t<h1>502 Bad   Gateway</h1></body>\n</html>\n";
        let parsed = parse_exchange(
            &exchange(200, Some("text/html; charset=utf-8"), &[page]),
            |_| Extracted::default(),
        );
        assert!(parsed.responses.is_empty());
        assert_eq!(
            parsed.error,
            Some(ErrorDetails {
                code: None,
                kind: Some("UnexpectedContentTypeError".into()),
                message: "the server answered with content type text/html; charset=utf-8, not \
                          JSON or an event stream: <!DOCTYPE html> <html> <body> <h1>502 Bad \
                          Gateway</h1></body> </html>"
                    .into(),
            })
        );
    }

    #[test]
    fn a_long_unexpected_body_is_cut_to_one_short_line() {
        let body = format!("{}\n{}", "a".repeat(150), "b".repeat(150));
        let parsed = parse_exchange(&exchange(200, Some("text/plain"), &[&body]), |_| {
            Extracted::default()
        });
        let message = parsed.error.unwrap().message;
        let snippet = message.split_once("stream: ").unwrap().1;
        assert_eq!(snippet, format!("{} {}…", "a".repeat(150), "b".repeat(49)));
        let empty = parse_exchange(&exchange(200, Some("text/html"), &[]), |_| {
            Extracted::default()
        });
        assert_eq!(
            empty.error.unwrap().message,
            "the server answered with content type text/html and an empty body, not JSON or \
             an event stream"
        );
    }

    #[test]
    fn expected_content_types_and_readable_bodies_keep_their_own_reports() {
        // JSON without content: the engine's "no content" error, not this one.
        let parsed = parse_exchange(&exchange(200, Some("application/json"), &["{}"]), |_| {
            Extracted::default()
        });
        assert_eq!(parsed.error, None);
        // A mislabelled body that reads fine is a response.
        let parsed = parse_exchange(&exchange(200, Some("text/plain"), &["{}"]), |_| Extracted {
            text: "hi".into(),
            reasoning: String::new(),
        });
        assert_eq!(parsed.error, None);
        assert_eq!(parsed.responses.len(), 1);
    }
}
